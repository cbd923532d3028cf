//! CPU references for the kernels, on `f32`.

pub use crate::reference_attention::attention;
/// Decode, RoPE, pooling and batch-norm references (`reference_layers.rs`).
pub use crate::reference_layers::*;
pub use crate::reference_movement::{
    concat, dequantize, embedding, pad, permute, quantize, quotient, slice,
};

/// The activation with the same `op` numbering as the kernel.
pub fn activation(op: i32, alpha: f32, x: &[f32]) -> Vec<f32> {
    x.iter()
        .map(|&v| match op {
            0 => v.max(0.0),
            1 => {
                if v > 0.0 {
                    v
                } else {
                    v * alpha
                }
            }
            2 => 1.0 / (1.0 + (-v).exp()),
            3 => v.tanh(),
            _ => v * (v + 3.0).clamp(0.0, 6.0) / 6.0,
        })
        .collect()
}

/// The binary op with the same `op` numbering as the kernel.
pub fn binary_op(op: i32, a: &[f32], b: &[f32]) -> Vec<f32> {
    a.iter()
        .zip(b)
        .map(|(&a, &b)| match op {
            0 => a + b,
            1 => a - b,
            2 => a * b,
            3 => a / b,
            4 => a.max(b),
            _ => a.min(b),
        })
        .collect()
}

/// The shape of a 2D convolution.
#[derive(Copy, Clone, Debug)]
pub struct Conv2d {
    /// Input channels.
    pub c: usize,
    /// Input height.
    pub h: usize,
    /// Input width.
    pub w: usize,
    /// Output channels.
    pub outc: usize,
    /// Kernel size (square).
    pub k: usize,
    /// Stride, both directions.
    pub stride: usize,
    /// Zero padding on every side.
    pub pad: usize,
}

impl Conv2d {
    /// Output height.
    pub fn out_h(&self) -> usize {
        (self.h + 2 * self.pad - self.k) / self.stride + 1
    }
    /// Output width.
    pub fn out_w(&self) -> usize {
        (self.w + 2 * self.pad - self.k) / self.stride + 1
    }
}

/// The convolution as the kernel computes it, in f64; also returns sum |w·x| + |bias| per
/// output (the scale of the rounding error).
pub fn conv2d(s: Conv2d, input: &[f32], weight: &[f32], bias: &[f32]) -> (Vec<f32>, Vec<f32>) {
    let (oh, ow) = (s.out_h(), s.out_w());
    let mut out = vec![0f32; s.outc * oh * ow];
    let mut scale = vec![0f32; s.outc * oh * ow];
    for o in 0..s.outc {
        for y in 0..oh {
            for x in 0..ow {
                let (mut acc, mut mag) = (bias[o] as f64, bias[o].abs() as f64);
                for c in 0..s.c {
                    for ky in 0..s.k {
                        for kx in 0..s.k {
                            let iy = (y * s.stride + ky) as isize - s.pad as isize;
                            let ix = (x * s.stride + kx) as isize - s.pad as isize;
                            if iy < 0 || ix < 0 || iy >= s.h as isize || ix >= s.w as isize {
                                continue;
                            }
                            let v = input[(c * s.h + iy as usize) * s.w + ix as usize] as f64
                                * weight[((o * s.c + c) * s.k + ky) * s.k + kx] as f64;
                            acc += v;
                            mag += v.abs();
                        }
                    }
                }
                out[(o * oh + y) * ow + x] = acc as f32;
                scale[(o * oh + y) * ow + x] = mag as f32;
            }
        }
    }
    (out, scale)
}

/// The options of a GEMM, as the kernel's specialization and push constants give them.
#[derive(Copy, Clone, Debug, Default)]
pub struct Gemm {
    /// A is stored K×M.
    pub transpose_a: bool,
    /// B is stored N×K.
    pub transpose_b: bool,
    /// Scale of the product.
    pub alpha: f32,
    /// 0 none, 1 relu, 2 leaky relu with `slope`, 3 sigmoid, 4 GELU (erf form), 5 SiLU.
    pub activation: i32,
    /// Leaky relu's slope.
    pub slope: f32,
}

/// The channels-last convolution as `conv2d_nhwc` computes it, in f64 (no activation, alpha
/// 1), and the error scale sum |w·x| + |bias| per output.
pub fn conv2d_nhwc(
    s: crate::Conv2dShape,
    input: &[f32],
    weight: &[f32],
    bias: &[f32],
) -> (Vec<f32>, Vec<f32>) {
    let (oh, ow) = (s.outh(), s.outw());
    let len = s.batch * oh * ow * s.outc;
    let (mut out, mut scale) = (vec![0f32; len], vec![0f32; len]);
    for b in 0..s.batch {
        for y in 0..oh {
            for x in 0..ow {
                for (o, &beta) in bias.iter().enumerate().take(s.outc) {
                    let (mut acc, mut mag) = (beta as f64, beta.abs() as f64);
                    for ky in 0..s.kh {
                        for kx in 0..s.kw {
                            let iy = (y * s.stride + ky) as isize - s.pad as isize;
                            let ix = (x * s.stride + kx) as isize - s.pad as isize;
                            if iy < 0 || ix < 0 || iy >= s.h as isize || ix >= s.w as isize {
                                continue;
                            }
                            let px = ((b * s.h + iy as usize) * s.w + ix as usize) * s.c;
                            for c in 0..s.c {
                                let wi = ((ky * s.kw + kx) * s.c + c) * s.outc + o;
                                let v = input[px + c] as f64 * weight[wi] as f64;
                                acc += v;
                                mag += v.abs();
                            }
                        }
                    }
                    let i = ((b * oh + y) * ow + x) * s.outc + o;
                    out[i] = acc as f32;
                    scale[i] = mag as f32;
                }
            }
        }
    }
    (out, scale)
}

/// The depthwise convolution as `conv2d_dw_nhwc` computes it, in f64 (no activation), and
/// the error scale sum |w·x| + |bias| per output.
pub fn conv2d_dw_nhwc(
    s: crate::Conv2dDwShape,
    input: &[f32],
    weight: &[f32],
    bias: &[f32],
) -> (Vec<f32>, Vec<f32>) {
    let (oh, ow) = (s.outh(), s.outw());
    let (mut out, mut scale) = (vec![0f32; s.pixels() * s.c], vec![0f32; s.pixels() * s.c]);
    for (m, (out_px, scale_px)) in out.chunks_mut(s.c).zip(scale.chunks_mut(s.c)).enumerate() {
        let (x, y, b) = (m % ow, (m / ow) % oh, m / (ow * oh));
        for c in 0..s.c {
            let (mut acc, mut mag) = (bias[c] as f64, bias[c].abs() as f64);
            for ky in 0..s.kh {
                for kx in 0..s.kw {
                    let iy = (y * s.stride + ky) as isize - s.pad as isize;
                    let ix = (x * s.stride + kx) as isize - s.pad as isize;
                    if iy < 0 || ix < 0 || iy >= s.h as isize || ix >= s.w as isize {
                        continue;
                    }
                    let px = (b * s.h + iy as usize) * s.w + ix as usize;
                    let v = input[px * s.c + c] as f64 * weight[(ky * s.kw + kx) * s.c + c] as f64;
                    acc += v;
                    mag += v.abs();
                }
            }
            out_px[c] = acc as f32;
            scale_px[c] = mag as f32;
        }
    }
    (out, scale)
}

/// Row-major C = A × B, accumulated in f64; also returns sum |A||B| per element (the scale
/// of the rounding error a precision can make).
pub fn gemm(m: usize, n: usize, k: usize, a: &[f32], b: &[f32]) -> (Vec<f32>, Vec<f32>) {
    let o = Gemm {
        alpha: 1.0,
        ..Default::default()
    };
    gemm_with(o, m, n, k, a, b, None)
}

/// `act(alpha · op(A) · op(B) + bias)` as the kernel computes it, accumulated in f64, and the
/// error scale `|alpha| · sum |A||B| + |bias|` per element.
pub fn gemm_with(
    o: Gemm,
    m: usize,
    n: usize,
    k: usize,
    a: &[f32],
    b: &[f32],
    bias: Option<&[f32]>,
) -> (Vec<f32>, Vec<f32>) {
    let at = |i: usize, l: usize| {
        if o.transpose_a {
            a[l * m + i]
        } else {
            a[i * k + l]
        }
    };
    let bt = |l: usize, j: usize| {
        if o.transpose_b {
            b[j * k + l]
        } else {
            b[l * n + j]
        }
    };
    let mut c = vec![0f32; m * n];
    let mut scale = vec![0f32; m * n];
    for i in 0..m {
        for j in 0..n {
            let (mut s, mut t) = (0f64, 0f64);
            for l in 0..k {
                let p = at(i, l) as f64 * bt(l, j) as f64;
                s += p;
                t += p.abs();
            }
            let beta = bias.map_or(0.0, |b| b[j] as f64);
            let v = o.alpha as f64 * s + beta;
            let v = match o.activation {
                1 => v.max(0.0),
                2 => {
                    if v > 0.0 {
                        v
                    } else {
                        v * o.slope as f64
                    }
                }
                3 => 1.0 / (1.0 + (-v).exp()),
                4 => gelu(v),
                5 => v / (1.0 + (-v).exp()),
                _ => v,
            };
            c[i * n + j] = v as f32;
            scale[i * n + j] = (o.alpha.abs() as f64 * t + beta.abs()) as f32;
        }
    }
    (c, scale)
}

/// erf(x) in f64, to about 1e-15: the Maclaurin series below |x| = 2.5, erfc's continued
/// fraction above (the exact function the kernels' approximations are tested against).
pub fn erf(x: f64) -> f64 {
    let z = x.abs();
    let r = if z < 2.5 {
        // erf(z) = 2/√π Σ (-1)^k z^(2k+1) / (k! (2k+1))
        let (mut term, mut sum, mut k) = (z, z, 0.0);
        while term.abs() > 1e-17 * sum.abs() {
            k += 1.0;
            term *= -z * z / k;
            sum += term / (2.0 * k + 1.0);
        }
        sum * 2.0 / std::f64::consts::PI.sqrt()
    } else {
        // erfc(z) = e^(-z²)/√π · 1/(z + (1/2)/(z + 1/(z + (3/2)/(z + ...))))
        let mut f = z;
        for k in (1..=80).rev() {
            f = z + (k as f64 / 2.0) / f;
        }
        1.0 - (-z * z).exp() / (std::f64::consts::PI.sqrt() * f)
    };
    r.copysign(x)
}

/// GELU, erf form, in f64: x/2 · (1 + erf(x/√2)).
pub fn gelu(x: f64) -> f64 {
    0.5 * x * (1.0 + erf(x / std::f64::consts::SQRT_2))
}

/// `op` (the operation layer's [`UnaryOp`](crate::UnaryOp)) of each element, in f64.
pub fn unary(op: crate::UnaryOp, x: &[f32]) -> Vec<f32> {
    use crate::UnaryOp as U;
    let sigmoid = |v: f64| 1.0 / (1.0 + (-v).exp());
    x.iter()
        .map(|&v| {
            let v = v as f64;
            let r = match op {
                U::Relu => v.max(0.0),
                U::LeakyRelu(s) => {
                    if v > 0.0 {
                        v
                    } else {
                        v * s as f64
                    }
                }
                U::Clip { min, max } => v.max(min as f64).min(max as f64),
                U::Sigmoid => sigmoid(v),
                U::Tanh => v.tanh(),
                U::Gelu => gelu(v),
                U::GeluTanh => {
                    let u = (2.0 / std::f64::consts::PI).sqrt() * (v + 0.044715 * v * v * v);
                    0.5 * v * (1.0 + u.tanh())
                }
                U::Silu => v * sigmoid(v),
                U::HardSwish => v * (v + 3.0).clamp(0.0, 6.0) / 6.0,
                U::Mish => v * v.exp().ln_1p().tanh(),
                U::Exp => v.exp(),
                U::Log => v.ln(),
                U::Sqrt => v.sqrt(),
                U::Rsqrt => 1.0 / v.sqrt(),
                U::Abs => v.abs(),
                U::Neg => -v,
            };
            r as f32
        })
        .collect()
}

/// `a op b` with numpy broadcasting (the operation layer's [`BinaryOp`](crate::BinaryOp)), in
/// f64, by plain index arithmetic: the result, row-major in the broadcast shape (`None` where
/// the shapes don't broadcast).
pub fn binary_broadcast(
    op: crate::BinaryOp,
    a: &[f32],
    a_shape: &[usize],
    b: &[f32],
    b_shape: &[usize],
) -> Option<Vec<f32>> {
    use crate::BinaryOp as B;
    let shape = crate::broadcast_shape(a_shape, b_shape)?;
    let rank = shape.len();
    let index = |s: &[usize], coord: &[usize]| {
        let lead = rank - s.len();
        s.iter().enumerate().fold(0, |acc, (i, &d)| {
            acc * d + if d == 1 { 0 } else { coord[lead + i] }
        })
    };
    let len: usize = shape.iter().product();
    let mut coord = vec![0usize; rank];
    let mut out = Vec::with_capacity(len);
    for _ in 0..len {
        let x = a[index(a_shape, &coord)] as f64;
        let y = b[index(b_shape, &coord)] as f64;
        out.push(match op {
            B::Add => x + y,
            B::Sub => x - y,
            B::Mul => x * y,
            B::Div => x / y,
            B::Max => x.max(y),
            B::Min => x.min(y),
            B::Pow => x.powf(y),
        } as f32);
        for i in (0..rank).rev() {
            coord[i] += 1;
            if coord[i] < shape[i] {
                break;
            }
            coord[i] = 0;
        }
    }
    Some(out)
}

/// The reductions of `x` viewed as `[outer, axis, inner]` along its middle dimension, in f64:
/// `op` 0 sum, 1 mean, 2 max, 3 min, 4 argmax (the index as f32, the first on ties). Also
/// returns, per output, the scale of its rounding error: `Σ |x|` (divided by the length for
/// the mean), `|result|` for max and min.
pub fn reduce(op: i32, outer: usize, axis: usize, inner: usize, x: &[f32]) -> (Vec<f32>, Vec<f32>) {
    let mut out = Vec::with_capacity(outer * inner);
    let mut scale = Vec::with_capacity(outer * inner);
    for o in 0..outer {
        for i in 0..inner {
            let v = |a: usize| x[(o * axis + a) * inner + i] as f64;
            let abs: f64 = (0..axis).map(|a| v(a).abs()).sum();
            let (r, s) = match op {
                0 => ((0..axis).map(v).sum::<f64>(), abs),
                1 => (
                    (0..axis).map(v).sum::<f64>() / axis as f64,
                    abs / axis as f64,
                ),
                2 => {
                    let m = (0..axis).map(v).fold(f64::NEG_INFINITY, f64::max);
                    (m, m.abs())
                }
                3 => {
                    let m = (0..axis).map(v).fold(f64::INFINITY, f64::min);
                    (m, m.abs())
                }
                _ => {
                    let mut best = 0;
                    for a in 1..axis {
                        if v(a) > v(best) {
                            best = a;
                        }
                    }
                    (best as f64, 0.0)
                }
            };
            out.push(r as f32);
            scale.push(s as f32);
        }
    }
    (out, scale)
}

/// Softmax of `scale · x` along rows of `cols`, in f64; with `causal`, row r of each block of
/// `block` rows sees only columns `c <= r % block + offset` (the others 0, an empty row all 0).
pub fn softmax(cols: usize, block: usize, scale: f32, causal: Option<i32>, x: &[f32]) -> Vec<f32> {
    let mut y = vec![0f32; x.len()];
    for (r, (row, out)) in x.chunks(cols).zip(y.chunks_mut(cols)).enumerate() {
        let visible = match causal {
            Some(offset) => ((r % block) as i64 + offset as i64 + 1).clamp(0, cols as i64) as usize,
            None => cols,
        };
        let s: Vec<f64> = row[..visible]
            .iter()
            .map(|v| *v as f64 * scale as f64)
            .collect();
        let m = s.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let sum: f64 = s.iter().map(|v| (v - m).exp()).sum();
        for (o, v) in out.iter_mut().zip(&s) {
            *o = ((v - m).exp() / sum) as f32;
        }
    }
    y
}

/// Normalization of a channels-last `[batch, hw, c]` tensor over `groups` groups of channels,
/// in f64: `(x - mean) / sqrt(var + eps) · gamma + beta` per group of `hw · c / groups`
/// values, or with `rms`, `x / sqrt(mean(x²) + eps) · gamma + beta` (layer and RMS norm: hw 1,
/// one group). Also returns, per value, the scale of its rounding error:
/// `|normalized · gamma| + |beta|`.
#[allow(clippy::too_many_arguments)]
pub fn norm(
    batch: usize,
    hw: usize,
    c: usize,
    groups: usize,
    rms: bool,
    gamma: Option<&[f32]>,
    beta: Option<&[f32]>,
    eps: f32,
    x: &[f32],
) -> (Vec<f32>, Vec<f32>) {
    let cpg = c / groups;
    let mut y = vec![0f32; x.len()];
    let mut scale = vec![0f32; x.len()];
    for n in 0..batch {
        for g in 0..groups {
            let at: Vec<usize> = (0..hw)
                .flat_map(|p| (0..cpg).map(move |k| (n * hw + p) * c + g * cpg + k))
                .collect();
            let len = at.len() as f64;
            let mean = if rms {
                0.0
            } else {
                at.iter().map(|&i| x[i] as f64).sum::<f64>() / len
            };
            let var = at
                .iter()
                .map(|&i| (x[i] as f64 - mean).powi(2))
                .sum::<f64>()
                / len;
            let r = 1.0 / (var + eps as f64).sqrt();
            for &i in &at {
                let ch = i % c;
                let mut v = (x[i] as f64 - mean) * r;
                if let Some(gm) = gamma {
                    v *= gm[ch] as f64;
                }
                let b = beta.map_or(0.0, |b| b[ch] as f64);
                y[i] = (v + b) as f32;
                scale[i] = (v.abs() + b.abs()) as f32;
            }
        }
    }
    (y, scale)
}

/// `gumbel.glsl`'s 32-bit integer hash.
pub fn gumbel_hash(mut x: u32) -> u32 {
    x ^= x >> 16;
    x = x.wrapping_mul(0x7feb_352d);
    x ^= x >> 15;
    x = x.wrapping_mul(0x846c_a68b);
    x ^= x >> 16;
    x
}

/// The standard Gumbel noise `Ops::sample` adds to element `index` of its input under `seed`
/// (`gumbel.glsl`'s `gumbel_noise`), in f64: `-ln(-ln(u))`, u on a grid of 2⁻²⁴ in (0, 1).
pub fn gumbel_noise(index: u32, seed: u64) -> f64 {
    let k0 = gumbel_hash(seed as u32);
    let k1 = gumbel_hash((seed >> 32) as u32 ^ 0x9e37_79b9);
    let h = gumbel_hash(gumbel_hash(index ^ k0).wrapping_add(k1));
    let u = ((h >> 8) as f64 + 0.5) / 16_777_216.0;
    -(-u.ln()).ln()
}

/// Each row's `x / temperature + gumbel_noise` (f64) of `x` `[rows, n]`: the values whose
/// argmax `Ops::sample` draws.
pub fn gumbel_values(x: &[f32], temperature: f32, seed: u64) -> Vec<f64> {
    x.iter()
        .enumerate()
        .map(|(i, &v)| v as f64 / temperature as f64 + gumbel_noise(i as u32, seed))
        .collect()
}

/// The smallest scaled logit (`x / T` in f32) that `Ops::sample`'s cuts keep of one row `v`:
/// the `top_k`-th largest (0 or past the row: no cut), then the smallest of the largest whose
/// probabilities (softmax in f64 over what the first cut kept) reach `top_p` of it, values
/// tied with either kept.
pub fn draw_kept_from(v: &[f32], top_k: usize, top_p: f64) -> f32 {
    let mut sorted: Vec<f32> = v.to_vec();
    sorted.sort_by(|a, b| b.total_cmp(a));
    let mut from = if top_k > 0 && top_k < v.len() {
        sorted[top_k - 1]
    } else {
        f32::NEG_INFINITY
    };
    if top_p < 1.0 {
        let m = sorted[0] as f64;
        let kept: Vec<f64> = sorted
            .iter()
            .filter(|&&x| x >= from)
            .map(|&x| x as f64)
            .collect();
        let total: f64 = kept.iter().map(|x| (x - m).exp()).sum();
        let mut reached = 0.0;
        for &x in &kept {
            // Every value tied with x comes in at once: `from` is x from its first.
            if reached >= top_p * total {
                break;
            }
            reached += (x - m).exp();
            from = x as f32;
        }
    }
    from
}

#[cfg(test)]
mod tests {
    #[test]
    fn erf_matches_known_values() {
        for (x, want) in [
            (0.0, 0.0),
            (0.5, 0.520_499_877_813_046_5),
            (1.0, 0.842_700_792_949_714_9),
            (2.0, 0.995_322_265_018_952_7),
            (2.5, 0.999_593_047_982_555),
            (3.0, 0.999_977_909_503_001_4),
            (-1.5, -0.966_105_146_475_310_7),
        ] {
            let got = super::erf(x);
            assert!((got - want).abs() < 1e-14, "erf({x}) = {got}, want {want}");
        }
    }
}
