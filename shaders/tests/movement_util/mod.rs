//! Helpers of the data-movement and conversion tests (`transpose.rs`, `slice.rs`, ...).
#![allow(dead_code)]

use vkprism::{Context, Tensor, TensorFormat};
use vkprism_testkit::{poisoned, quantize, random_in};

/// The float formats, each stored by one variant of the movement kernels (`fp32`, `fp16s`,
/// `bf16s`).
pub const FORMATS: [TensorFormat; 3] = [TensorFormat::F32, TensorFormat::F16, TensorFormat::Bf16];

/// Random non-zero data of `shape` as `format` stores it, and the tensor holding it.
pub fn input(
    ctx: &Context,
    shape: &[usize],
    format: TensorFormat,
    seed: u64,
) -> (Vec<f32>, Tensor) {
    let n = shape.iter().product();
    let x = quantize(&random_in(n, seed, 0.1, 4.0), format);
    let t = Tensor::from_f32(ctx, shape, format, &x).unwrap();
    (x, t)
}

/// A NaN-filled output.
pub fn output(ctx: &Context, shape: &[usize], format: TensorFormat) -> Tensor {
    poisoned(ctx, shape, format)
}

/// `got` is `want` bit for bit (a copy changes nothing; NaN, the poison, fails).
pub fn assert_bits(got: &[f32], want: &[f32], what: &str) {
    assert_eq!(got.len(), want.len(), "{what}: length");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert!(
            g.to_bits() == w.to_bits(),
            "{what}: element {i}: got {g}, want {w}"
        );
    }
}

/// A tensor of `shape` in `format` filled with ones.
pub fn ones(ctx: &Context, shape: &[usize], format: TensorFormat) -> Tensor {
    let n = shape.iter().product();
    Tensor::from_f32(ctx, shape, format, &vec![1.0; n]).unwrap()
}
