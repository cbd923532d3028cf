//! The unary operators ([`UnaryOp`]) in every variant of both kernels (`unary` over vec4s,
//! `unary_scalar` over single elements, at a length that is not a multiple of 4), through the
//! operation layer's `*_with` entry points, against the f64 CPU reference (an exact erf for
//! GELU) on random non-zero data in each function's domain, outputs poisoned (NaN) first; then
//! `Ops::unary` in each tensor format, in place, and its checks.

use std::sync::Arc;
use vkprism::{CommandList, Kernel, LoadOptions, LoadedKernel, Tensor, TensorFormat};
use vkprism_shaders::{reference, unary, unary_scalar, OpError, Ops, UnaryOp};
use vkprism_testkit::{assert_clean, ctx, quantize, random_in, tolerance};

/// Elements of the vec4 kernel's tensors (a multiple of 4, an odd count of vec4s) and of the
/// scalar kernel's (not a multiple of 4, nor of the workgroup).
const N4: usize = 4 * 1001;
const N1: usize = 1001;

/// The largest error of `got` against `want`, relative to max(|want|, 1), over `tol`; panics
/// naming the element where it is above 1 or `got` is not finite.
fn ratio(got: &[f32], want: &[f32], tol: f32, what: &str) -> f32 {
    assert_eq!(got.len(), want.len(), "{what}: length");
    let mut worst = 0f32;
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        let r = (g - w).abs() / w.abs().max(1.0) / tol;
        assert!(
            g.is_finite() && r <= 1.0,
            "{what}: element {i}: got {g}, want {w} (err {:.2e} > tol {tol:.0e})",
            r * tol
        );
        worst = worst.max(r);
    }
    worst
}

fn load<K: Kernel>(ctx: &vkprism::Context, name: &str) -> Arc<LoadedKernel<K>> {
    ctx.load_with::<K>(&LoadOptions::variant_named(name).unwrap())
        .unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// `op` on `x` (vec4 kernel) and on its first `N1` elements (scalar kernel) in every variant
/// of each; returns the largest error over tolerance seen.
fn every_variant(ops: &Ops, op: UnaryOp, x: &[f32]) -> f32 {
    let ctx = ops.context();
    let mut worst = 0f32;
    for name in unary::VARIANT_NAMES {
        let k = load::<unary::Kernel>(ctx, name);
        let f = k.format_of("x_blob").unwrap();
        let xt = Tensor::from_f32(ctx, &[N4], f, x).unwrap();
        let yt = Tensor::from_f32(ctx, &[N4], f, &[f32::NAN; N4]).unwrap();
        ops.run(|l| ops.unary_with(l, &k, &xt, &yt, op)).unwrap();
        let want = quantize(&reference::unary(op, &quantize(x, f)), f);
        let got = yt.download_f32().unwrap();
        let tol = tolerance(&k.variant().key);
        worst = worst.max(ratio(&got, &want, tol, &format!("unary {name} {op:?}")));
    }
    let x = &x[..N1];
    for name in unary_scalar::VARIANT_NAMES {
        let k = load::<unary_scalar::Kernel>(ctx, name);
        let f = k.format_of("x_blob").unwrap();
        let xt = Tensor::from_f32(ctx, &[N1], f, x).unwrap();
        let yt = Tensor::from_f32(ctx, &[N1], f, &[f32::NAN; N1]).unwrap();
        ops.run(|l| ops.unary_scalar_with(l, &k, &xt, &yt, op))
            .unwrap();
        let want = quantize(&reference::unary(op, &quantize(x, f)), f);
        let got = yt.download_f32().unwrap();
        let tol = tolerance(&k.variant().key);
        let what = format!("unary_scalar {name} {op:?}");
        worst = worst.max(ratio(&got, &want, tol, &what));
    }
    println!("{op:?}: largest error {worst:.3} of the tolerance");
    worst
}

/// Random non-zero values with magnitude in [lo, hi), both signs.
fn signed(seed: u64, lo: f32, hi: f32) -> Vec<f32> {
    random_in(N4, seed, lo, hi)
}

/// Random positive values in [lo, hi).
fn positive(seed: u64, lo: f32, hi: f32) -> Vec<f32> {
    random_in(N4, seed, lo, hi)
        .iter()
        .map(|v| v.abs())
        .collect()
}

#[test]
fn gelu() {
    let ctx = ctx();
    let ops = Ops::new(&ctx);
    // Both tails (erfc's side below 0 cancels nothing) and values near 0.
    for (seed, lo, hi) in [(1, 0.001, 1.0), (2, 0.5, 10.0)] {
        every_variant(&ops, UnaryOp::Gelu, &signed(seed, lo, hi));
        every_variant(&ops, UnaryOp::GeluTanh, &signed(seed, lo, hi));
    }
    assert_clean(&ctx);
}

#[test]
fn silu() {
    let ctx = ctx();
    let ops = Ops::new(&ctx);
    for (seed, lo, hi) in [(3, 0.001, 1.0), (4, 0.5, 30.0)] {
        every_variant(&ops, UnaryOp::Silu, &signed(seed, lo, hi));
    }
    assert_clean(&ctx);
}

#[test]
fn mish() {
    let ctx = ctx();
    let ops = Ops::new(&ctx);
    // Past 20 (where the kernel returns x) and far below 0.
    for (seed, lo, hi) in [(5, 0.001, 1.0), (6, 0.5, 30.0)] {
        every_variant(&ops, UnaryOp::Mish, &signed(seed, lo, hi));
    }
    assert_clean(&ctx);
}

#[test]
fn unary_ops() {
    let ctx = ctx();
    let ops = Ops::new(&ctx);
    let x = signed(7, 0.05, 5.0);
    for op in [
        UnaryOp::Relu,
        UnaryOp::LeakyRelu(0.1),
        UnaryOp::Clip {
            min: -1.5,
            max: 2.5,
        },
        UnaryOp::Sigmoid,
        UnaryOp::Tanh,
        UnaryOp::HardSwish,
        UnaryOp::Exp,
        UnaryOp::Abs,
        UnaryOp::Neg,
    ] {
        every_variant(&ops, op, &x);
    }
    // tanh and sigmoid far out, where exp overflows: ±1 and 0 / 1, not NaN.
    let far = signed(8, 10.0, 100.0);
    every_variant(&ops, UnaryOp::Tanh, &far);
    every_variant(&ops, UnaryOp::Sigmoid, &far);
    // The functions of positive numbers.
    let x = positive(9, 0.05, 20.0);
    for op in [UnaryOp::Log, UnaryOp::Sqrt, UnaryOp::Rsqrt] {
        every_variant(&ops, op, &x);
    }
    assert_clean(&ctx);
}

/// `Ops::unary` chooses the kernel by length and the variant by format; `y` may be `x`.
#[test]
fn unary_through_the_layer_every_format_and_in_place() {
    let ctx = ctx();
    let ops = Ops::new(&ctx);
    let x = random_in(4 * 37, 10, 0.05, 5.0);
    let mut ran = 0;
    for f in [TensorFormat::F32, TensorFormat::F16, TensorFormat::Bf16] {
        let name = match f {
            TensorFormat::F16 => "fp16s",
            TensorFormat::Bf16 => "bf16s",
            _ => "fp32",
        };
        let tol = tolerance(&vkprism::VariantKey::parse(name).unwrap());
        for n in [4 * 37, 37, 1] {
            let x = &x[..n];
            let want = quantize(&reference::unary(UnaryOp::Gelu, &quantize(x, f)), f);
            let xt = Tensor::from_f32(&ctx, &[n], f, x).unwrap();
            let yt = Tensor::from_f32(&ctx, &[n], f, &vec![f32::NAN; n]).unwrap();
            match ops.run(|l| ops.unary(l, &xt, &yt, UnaryOp::Gelu)) {
                Err(OpError::FormatUnsupported { .. }) => {
                    println!("unary: the device runs no variant on {f:?} ({n} elements)");
                    continue;
                }
                r => r.unwrap(),
            }
            ran += 1;
            let what = format!("Ops::unary {f:?} {n}");
            ratio(&yt.download_f32().unwrap(), &want, tol, &what);
            // In place: x becomes gelu(x).
            ops.run(|l| ops.unary(l, &xt, &xt, UnaryOp::Gelu)).unwrap();
            let what = format!("Ops::unary in place {f:?} {n}");
            ratio(&xt.download_f32().unwrap(), &want, tol, &what);
        }
    }
    assert!(ran >= 3, "F32 must run");
    assert_clean(&ctx);
}

#[test]
fn unary_mistakes_are_errors_and_record_nothing() {
    let ctx = ctx();
    let ops = Ops::new(&ctx);
    let f = TensorFormat::F32;
    let t = |shape: &[usize], f: TensorFormat| Tensor::new(&ctx, shape, f).unwrap();
    let x = t(&[4, 8], f);
    let mut list = CommandList::new(&ctx).unwrap();
    let e = ops
        .unary(&mut list, &x, &t(&[8, 4], f), UnaryOp::Relu)
        .unwrap_err();
    assert!(matches!(e, OpError::Shape { operand: "y", .. }), "{e}");
    let e = ops
        .unary(&mut list, &x, &t(&[4, 8], TensorFormat::F16), UnaryOp::Relu)
        .unwrap_err();
    assert!(matches!(e, OpError::Format { operand: "y", .. }), "{e}");
    let i = t(&[4, 8], TensorFormat::I32);
    let e = ops.unary(&mut list, &i, &i, UnaryOp::Abs).unwrap_err();
    assert!(matches!(e, OpError::Format { operand: "x", .. }), "{e}");
    // The vec4 kernel refuses a length that is not a multiple of 4.
    let k = ctx
        .load_with::<unary::Kernel>(&LoadOptions::variant_named("fp32").unwrap())
        .unwrap();
    let odd = t(&[7], f);
    let e = ops
        .unary_with(&mut list, &k, &odd, &odd, UnaryOp::Relu)
        .unwrap_err();
    assert!(matches!(e, OpError::Unsupported { .. }), "{e}");
    assert_eq!(list.len(), 0, "nothing recorded");
    ops.unary(&mut list, &x, &x, UnaryOp::Relu).unwrap();
    list.submit_and_wait().unwrap();
    assert_clean(&ctx);
}
