//! The forward pass on the CPU, from the weights as PyTorch stores them: each convolution
//! followed by its batch norm as a separate step (so the comparison also checks the folding),
//! accumulated in f64, over channels-last activations.

use super::config::{Block, ResNetConfig};
use super::weights::{HostWeights, BN_EPS};
use super::ResNetError;

/// Channels-last activations: `[batch, h, w, c]`.
#[derive(Clone, Debug, PartialEq)]
pub struct Nhwc {
    /// Images.
    pub batch: usize,
    /// Height.
    pub h: usize,
    /// Width.
    pub w: usize,
    /// Channels.
    pub c: usize,
    /// The values, `[batch, h, w, c]` row-major.
    pub data: Vec<f32>,
}

impl Nhwc {
    /// Zeros of this shape.
    fn zeros(batch: usize, h: usize, w: usize, c: usize) -> Nhwc {
        let data = vec![0.0; batch * h * w * c];
        Nhwc {
            batch,
            h,
            w,
            c,
            data,
        }
    }

    /// The index of (n, y, x, 0).
    fn at(&self, n: usize, y: usize, x: usize) -> usize {
        ((n * self.h + y) * self.w + x) * self.c
    }
}

/// The logits `[batch, classes]` of `input` (`[batch, h, w, 3]`, channels-last) through the
/// network of `cfg` with `weights`.
pub fn forward(
    cfg: &ResNetConfig,
    weights: &HostWeights,
    input: &[f32],
    shape: [usize; 4],
) -> Result<Vec<f32>, ResNetError> {
    let [batch, h, w, c] = shape;
    let x = Nhwc {
        batch,
        h,
        w,
        c,
        data: input.to_vec(),
    };
    let x = conv_bn(weights, &x, "conv1", "bn1", 2, 3, true)?;
    let mut x = max_pool(&x);
    for b in cfg.block_list() {
        x = block(weights, &x, &b)?;
    }
    fc(weights, &global_avg_pool(&x))
}

/// One bottleneck block: three convolutions with batch norm, the shortcut, the sum's ReLU.
fn block(weights: &HostWeights, x: &Nhwc, b: &Block) -> Result<Nhwc, ResNetError> {
    let p = b.prefix();
    let y = conv_bn(
        weights,
        x,
        &format!("{p}.conv1"),
        &format!("{p}.bn1"),
        1,
        0,
        true,
    )?;
    let y = conv_bn(
        weights,
        &y,
        &format!("{p}.conv2"),
        &format!("{p}.bn2"),
        b.stride,
        1,
        true,
    )?;
    let mut y = conv_bn(
        weights,
        &y,
        &format!("{p}.conv3"),
        &format!("{p}.bn3"),
        1,
        0,
        false,
    )?;
    let shortcut = if b.downsample {
        let (conv, bn) = (format!("{p}.downsample.0"), format!("{p}.downsample.1"));
        conv_bn(weights, x, &conv, &bn, b.stride, 0, false)?
    } else {
        x.clone()
    };
    for (v, s) in y.data.iter_mut().zip(&shortcut.data) {
        *v = (*v + s).max(0.0);
    }
    Ok(y)
}

/// Convolution `conv` (no bias, PyTorch's `[outc, c, kh, kw]`), then batch norm `bn`, then
/// ReLU where `relu`.
fn conv_bn(
    weights: &HostWeights,
    x: &Nhwc,
    conv: &str,
    bn: &str,
    stride: usize,
    pad: usize,
    relu: bool,
) -> Result<Nhwc, ResNetError> {
    let w = weights.get(&format!("{conv}.weight"))?;
    let mut y = conv2d(x, &w.data, &w.shape, stride, pad);
    batch_norm(weights, bn, &mut y)?;
    if relu {
        y.data.iter_mut().for_each(|v| *v = v.max(0.0));
    }
    Ok(y)
}

/// The convolution of `x` with `weight` (`[outc, c, kh, kw]`), zero padding `pad`.
fn conv2d(x: &Nhwc, weight: &[f32], shape: &[usize], stride: usize, pad: usize) -> Nhwc {
    let [outc, c, kh, kw] = [shape[0], shape[1], shape[2], shape[3]];
    let oh = (x.h + 2 * pad - kh) / stride + 1;
    let ow = (x.w + 2 * pad - kw) / stride + 1;
    let mut y = Nhwc::zeros(x.batch, oh, ow, outc);
    let mut acc = vec![0f64; outc];
    for n in 0..x.batch {
        for oy in 0..oh {
            for ox in 0..ow {
                acc.iter_mut().for_each(|a| *a = 0.0);
                for ky in 0..kh {
                    for kx in 0..kw {
                        let (iy, ix) = ((oy * stride + ky) as isize, (ox * stride + kx) as isize);
                        let (iy, ix) = (iy - pad as isize, ix - pad as isize);
                        if iy < 0 || ix < 0 || iy >= x.h as isize || ix >= x.w as isize {
                            continue;
                        }
                        let base = x.at(n, iy as usize, ix as usize);
                        for ci in 0..c {
                            let v = x.data[base + ci] as f64;
                            for (o, a) in acc.iter_mut().enumerate() {
                                *a += v * weight[((o * c + ci) * kh + ky) * kw + kx] as f64;
                            }
                        }
                    }
                }
                let at = y.at(n, oy, ox);
                for (o, a) in acc.iter().enumerate() {
                    y.data[at + o] = *a as f32;
                }
            }
        }
    }
    y
}

/// Inference-mode batch norm `bn` over `x`'s channels, in place.
fn batch_norm(weights: &HostWeights, bn: &str, x: &mut Nhwc) -> Result<(), ResNetError> {
    let part = |p: &str| weights.get(&format!("{bn}.{p}")).map(|t| &t.data);
    let (gamma, beta) = (part("weight")?, part("bias")?);
    let (mean, var) = (part("running_mean")?, part("running_var")?);
    for (i, v) in x.data.iter_mut().enumerate() {
        let o = i % x.c;
        let norm = (*v as f64 - mean[o] as f64) / (var[o] as f64 + BN_EPS as f64).sqrt();
        *v = (norm * gamma[o] as f64 + beta[o] as f64) as f32;
    }
    Ok(())
}

/// Max pooling, 3×3 window, stride 2, padding 1 (never the maximum).
fn max_pool(x: &Nhwc) -> Nhwc {
    let (oh, ow) = ((x.h - 1) / 2 + 1, (x.w - 1) / 2 + 1);
    let mut y = Nhwc::zeros(x.batch, oh, ow, x.c);
    for n in 0..x.batch {
        for oy in 0..oh {
            for ox in 0..ow {
                let at = y.at(n, oy, ox);
                for o in 0..x.c {
                    y.data[at + o] = window_max(x, n, oy, ox, o);
                }
            }
        }
    }
    y
}

/// The maximum of channel `o` over the 3×3 window of output pixel (oy, ox).
fn window_max(x: &Nhwc, n: usize, oy: usize, ox: usize, o: usize) -> f32 {
    let mut m = f32::NEG_INFINITY;
    for iy in (2 * oy).saturating_sub(1)..(2 * oy + 2).min(x.h) {
        for ix in (2 * ox).saturating_sub(1)..(2 * ox + 2).min(x.w) {
            m = m.max(x.data[x.at(n, iy, ix) + o]);
        }
    }
    m
}

/// The mean of each image's channels over its pixels: `[batch, c]`.
fn global_avg_pool(x: &Nhwc) -> Nhwc {
    let mut y = Nhwc::zeros(x.batch, 1, 1, x.c);
    let hw = x.h * x.w;
    for n in 0..x.batch {
        for o in 0..x.c {
            let sum: f64 = (0..hw).map(|p| x.data[(n * hw + p) * x.c + o] as f64).sum();
            y.data[n * x.c + o] = (sum / hw as f64) as f32;
        }
    }
    y
}

/// `fc`: `x · weightᵀ + bias`, `[batch, classes]`.
fn fc(weights: &HostWeights, x: &Nhwc) -> Result<Vec<f32>, ResNetError> {
    let (w, b) = (weights.get("fc.weight")?, weights.get("fc.bias")?);
    let classes = w.shape[0];
    let mut out = vec![0.0; x.batch * classes];
    for n in 0..x.batch {
        let row = &x.data[n * x.c..(n + 1) * x.c];
        for k in 0..classes {
            let wk = &w.data[k * x.c..(k + 1) * x.c];
            let dot: f64 = row.iter().zip(wk).map(|(&a, &b)| a as f64 * b as f64).sum();
            out[n * classes + k] = (dot + b.data[k] as f64) as f32;
        }
    }
    Ok(out)
}
