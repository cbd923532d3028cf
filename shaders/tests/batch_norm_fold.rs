//! Batch-norm folding ([`fold_batch_norm`]): a convolution run through [`Ops::conv2d`] with
//! folded weights matches the convolution followed by the f64 batch norm, on random data, with
//! and without the convolution's own bias; PyTorch's weight layout folds to the same weights;
//! mismatched lengths are errors.

use vkprism::{Tensor, TensorFormat};
use vkprism_shaders::{
    fold_batch_norm, reference, BatchNorm, Conv2d, Conv2dShape, ConvWeightLayout, OpError, Ops,
};
use vkprism_testkit::{
    assert_clean, assert_close_scaled, ctx, expected_in, poisoned, quantize, random_in,
};

/// A batch norm's parameters for `outc` channels (variances positive).
struct Params {
    gamma: Vec<f32>,
    beta: Vec<f32>,
    mean: Vec<f32>,
    var: Vec<f32>,
}

impl Params {
    fn random(outc: usize, seed: u64) -> Params {
        Params {
            gamma: random_in(outc, seed, 0.5, 2.0),
            beta: random_in(outc, seed + 1, 0.1, 1.0),
            mean: random_in(outc, seed + 2, 0.1, 1.0),
            var: random_in(outc, seed + 3, 0.2, 2.0)
                .iter()
                .map(|v| v.abs())
                .collect(),
        }
    }
    fn bn(&self) -> BatchNorm<'_> {
        BatchNorm {
            gamma: &self.gamma,
            beta: &self.beta,
            running_mean: &self.mean,
            running_var: &self.var,
            eps: 1e-5,
        }
    }
}

/// `[kh][kw][c][outc]` weights in PyTorch's `[outc][c][kh][kw]` order.
fn to_torch(s: &Conv2dShape, w: &[f32]) -> Vec<f32> {
    let mut out = vec![0f32; w.len()];
    for ky in 0..s.kh {
        for kx in 0..s.kw {
            for c in 0..s.c {
                for o in 0..s.outc {
                    let cl = ((ky * s.kw + kx) * s.c + c) * s.outc + o;
                    out[((o * s.c + c) * s.kh + ky) * s.kw + kx] = w[cl];
                }
            }
        }
    }
    out
}

#[test]
fn folded_convolution_matches_conv_then_batch_norm() {
    let ctx = ctx();
    let ops = Ops::new(&ctx);
    let shapes = [
        Conv2dShape {
            batch: 2,
            h: 7,
            w: 9,
            c: 8,
            outc: 12,
            kh: 3,
            kw: 3,
            stride: 1,
            pad: 1,
        },
        Conv2dShape {
            batch: 1,
            h: 11,
            w: 5,
            c: 4,
            outc: 20,
            kh: 1,
            kw: 1,
            stride: 2,
            pad: 0,
        },
    ];
    for format in [TensorFormat::F32, TensorFormat::F16] {
        let tol = if format == TensorFormat::F32 {
            1e-5
        } else {
            1e-2
        };
        for (i, s) in shapes.iter().enumerate() {
            for with_bias in [true, false] {
                let seed = 10 * i as u64 + with_bias as u64;
                let input = random_in(s.batch * s.h * s.w * s.c, seed, 0.1, 2.0);
                let weight = random_in(s.kh * s.kw * s.c * s.outc, seed + 1, 0.1, 1.0);
                let bias = random_in(s.outc, seed + 2, 0.1, 1.0);
                let p = Params::random(s.outc, seed + 3);
                let conv_bias = with_bias.then_some(&bias[..]);
                let (fw, fb) =
                    fold_batch_norm(&weight, conv_bias, &p.bn(), ConvWeightLayout::ChannelsLast)
                        .unwrap();
                let it = Tensor::from_f32(&ctx, &[s.batch, s.h, s.w, s.c], format, &input).unwrap();
                let wt = Tensor::from_f32(&ctx, &[s.kh, s.kw, s.c, s.outc], format, &fw).unwrap();
                let bt = Tensor::from_f32(&ctx, &[s.outc], format, &fb).unwrap();
                let ot = poisoned(&ctx, &[s.batch, s.outh(), s.outw(), s.outc], format);
                ops.run(|l| ops.conv2d(l, &it, &wt, Some(&bt), &ot, &Conv2d::new(*s)))
                    .unwrap();
                // The reference: conv (the unfolded weights, as the GPU sees the input) then BN.
                let zeros = vec![0f32; s.outc];
                let (conv, conv_scale) = reference::conv2d_nhwc(
                    *s,
                    &quantize(&input, format),
                    &weight,
                    conv_bias.unwrap_or(&zeros),
                );
                let want = reference::batch_norm(s.outc, &p.bn(), &conv);
                let scale: Vec<f32> = conv_scale
                    .iter()
                    .enumerate()
                    .map(|(j, m)| {
                        let o = j % s.outc;
                        let k = p.gamma[o].abs() / (p.var[o] + 1e-5).sqrt();
                        (m + p.mean[o].abs()) * k + p.beta[o].abs()
                    })
                    .collect();
                let (want, scale) = expected_in(&want, &scale, format);
                assert_close_scaled(
                    &ot.download_f32().unwrap(),
                    &want,
                    &scale,
                    tol,
                    &format!("{format:?} {s:?} bias {with_bias}"),
                );
            }
        }
    }
    assert_clean(&ctx);
}

#[test]
fn torch_layout_folds_to_the_same_weights() {
    let s = Conv2dShape {
        batch: 1,
        h: 5,
        w: 5,
        c: 3,
        outc: 5,
        kh: 3,
        kw: 2,
        stride: 1,
        pad: 0,
    };
    let weight = random_in(s.kh * s.kw * s.c * s.outc, 20, 0.1, 1.0);
    let bias = random_in(s.outc, 21, 0.1, 1.0);
    let p = Params::random(s.outc, 22);
    let (cl_w, cl_b) = fold_batch_norm(
        &weight,
        Some(&bias),
        &p.bn(),
        ConvWeightLayout::ChannelsLast,
    )
    .unwrap();
    let (t_w, t_b) = fold_batch_norm(
        &to_torch(&s, &weight),
        Some(&bias),
        &p.bn(),
        ConvWeightLayout::Torch,
    )
    .unwrap();
    assert_eq!(t_w, to_torch(&s, &cl_w));
    assert_eq!(t_b, cl_b);
    // Output channel 0's first weight: w · gamma / sqrt(var + eps).
    let want = weight[0] as f64 * p.gamma[0] as f64 / (p.var[0] as f64 + 1e-5f32 as f64).sqrt();
    assert_eq!(cl_w[0], want as f32);
}

#[test]
fn mismatched_lengths_are_errors() {
    let p = Params::random(4, 30);
    let w = vec![1.0; 24];
    let short = vec![1.0; 3];
    let layout = ConvWeightLayout::Torch;
    let e = fold_batch_norm(&w[..22], None, &p.bn(), layout).unwrap_err();
    assert!(
        matches!(
            e,
            OpError::Shape {
                operand: "weight",
                ..
            }
        ),
        "{e}"
    );
    let e = fold_batch_norm(&w, Some(&short), &p.bn(), layout).unwrap_err();
    assert!(
        matches!(
            e,
            OpError::Shape {
                operand: "bias",
                ..
            }
        ),
        "{e}"
    );
    for (operand, bn) in [
        (
            "beta",
            BatchNorm {
                beta: &short,
                ..p.bn()
            },
        ),
        (
            "running_mean",
            BatchNorm {
                running_mean: &short,
                ..p.bn()
            },
        ),
        (
            "running_var",
            BatchNorm {
                running_var: &short,
                ..p.bn()
            },
        ),
    ] {
        let e = fold_batch_norm(&w, None, &bn, layout).unwrap_err();
        assert!(
            matches!(e, OpError::Shape { operand: o, .. } if o == operand),
            "{operand}: {e}"
        );
    }
    let e = fold_batch_norm(
        &w,
        None,
        &BatchNorm {
            gamma: &[],
            ..p.bn()
        },
        layout,
    )
    .unwrap_err();
    assert!(
        matches!(
            e,
            OpError::Shape {
                operand: "gamma",
                ..
            }
        ),
        "{e}"
    );
}
