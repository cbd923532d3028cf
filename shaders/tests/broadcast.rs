//! The binary operators with numpy broadcasting ([`BinaryOp`]) in every variant of both kernels
//! (`binary_bcast4` over vec4s where the shapes allow, `binary_bcast` over single elements for
//! every pair), through the operation layer's `*_with` entry points, against the f64 CPU
//! reference (plain index arithmetic) on random non-zero data, outputs poisoned (NaN) first;
//! then `Ops::binary` in each tensor format, in place, and its checks.

use vkprism::{CommandList, LoadOptions, Tensor, TensorFormat};
use vkprism_shaders::{
    binary_bcast, binary_bcast4, broadcast_shape, reference, BinaryOp, OpError, Ops,
};
use vkprism_testkit::{assert_clean, ctx, quantize, random_in, tolerance};

const OPS: [BinaryOp; 7] = [
    BinaryOp::Add,
    BinaryOp::Sub,
    BinaryOp::Mul,
    BinaryOp::Div,
    BinaryOp::Max,
    BinaryOp::Min,
    BinaryOp::Pow,
];

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

/// The inputs of `op`: `a` positive for pow (GLSL's pow is undefined below 0), `b` never 0.
fn inputs(op: BinaryOp, la: usize, lb: usize, seed: u64) -> (Vec<f32>, Vec<f32>) {
    let a = random_in(la, seed, 0.1, 4.0);
    let a = if op == BinaryOp::Pow {
        a.iter().map(|v| v.abs().clamp(0.5, 2.0)).collect()
    } else {
        a
    };
    (a, random_in(lb, seed + 1, 0.25, 3.0))
}

/// (a's shape, b's shape, whether the vec4 kernel takes them).
const PAIRS: [(&[usize], &[usize], bool); 13] = [
    (&[3, 5, 8], &[3, 5, 8], true),        // same shape
    (&[3, 7], &[3, 7], false),             // same shape, not a multiple of 4
    (&[2, 3, 5], &[1], false),             // a scalar b
    (&[1], &[6, 4], false),                // a scalar a
    (&[6, 12], &[12], true),               // a row vector
    (&[6, 7], &[7], false),                // a row of 7
    (&[6, 12], &[6, 1], false),            // a column
    (&[2, 3, 4, 5], &[1, 3, 1, 1], false), // NCHW per-channel bias
    (&[2, 4, 5, 8], &[8], true),           // NHWC per-channel bias
    (&[4, 1, 8], &[1, 3, 8], true),        // both broadcast
    (&[5, 1], &[1, 6], false),             // outer product
    (&[2, 3, 4, 8], &[1, 1, 4, 8], true),  // merges to 2 dims
    (&[2, 1, 3, 8], &[1, 5, 3, 8], true),  // 4 dims, both broadcast
];

#[test]
fn broadcast() {
    let ctx = ctx();
    let ops = Ops::new(&ctx);
    let load = |name: &str| LoadOptions::variant_named(name).unwrap();
    let vec4: Vec<_> = binary_bcast4::VARIANT_NAMES
        .iter()
        .map(|n| ctx.load_with::<binary_bcast4::Kernel>(&load(n)).unwrap())
        .collect();
    let scalar: Vec<_> = binary_bcast::VARIANT_NAMES
        .iter()
        .map(|n| ctx.load_with::<binary_bcast::Kernel>(&load(n)).unwrap())
        .collect();
    let mut worst = 0f32;
    for (p, (sa, sb, takes_vec4)) in PAIRS.into_iter().enumerate() {
        let shape = broadcast_shape(sa, sb).unwrap();
        let (la, lb) = (sa.iter().product(), sb.iter().product());
        let lo: usize = shape.iter().product();
        for op in OPS {
            let (a, b) = inputs(op, la, lb, 20 + p as u64);
            // The vec4 kernel where it takes the pair, the scalar one always.
            let mut formats = Vec::new();
            for k in &scalar {
                formats.push((k.format_of("a_blob").unwrap(), k.variant().key, None));
            }
            if takes_vec4 {
                for (i, k) in vec4.iter().enumerate() {
                    formats.push((k.format_of("a_blob").unwrap(), k.variant().key, Some(i)));
                }
            }
            for (s, (f, key, v)) in formats.into_iter().enumerate() {
                let at = Tensor::from_f32(&ctx, sa, f, &a).unwrap();
                let bt = Tensor::from_f32(&ctx, sb, f, &b).unwrap();
                let ot = Tensor::from_f32(&ctx, &shape, f, &vec![f32::NAN; lo]).unwrap();
                let (kernel, r) = match v {
                    Some(i) => (
                        "binary_bcast4",
                        ops.run(|l| ops.binary_with(l, &vec4[i], &at, &bt, &ot, op)),
                    ),
                    None => (
                        "binary_bcast",
                        ops.run(|l| ops.binary_scalar_with(l, &scalar[s], &at, &bt, &ot, op)),
                    ),
                };
                r.unwrap();
                let q = |x: &[f32]| quantize(x, f);
                let want = reference::binary_broadcast(op, &q(&a), sa, &q(&b), sb).unwrap();
                let what = format!("{kernel} {} {sa:?} {op:?} {sb:?}", key.name());
                let got = ot.download_f32().unwrap();
                worst = worst.max(ratio(&got, &q(&want), tolerance(&key), &what));
            }
        }
    }
    println!("broadcast: largest error {worst:.3} of the tolerance");
    assert_clean(&ctx);
}

/// `Ops::binary` chooses the kernel by shapes and the variant by format; `out` may be `a` or
/// `b` (in place: an operand that is `out` has its shape), and `a` may be `b`.
#[test]
fn binary_through_the_layer_every_format_and_in_place() {
    let ctx = ctx();
    let ops = Ops::new(&ctx);
    let mut ran = 0;
    for f in [TensorFormat::F32, TensorFormat::F16, TensorFormat::Bf16] {
        let name = match f {
            TensorFormat::F16 => "fp16s",
            TensorFormat::Bf16 => "bf16s",
            _ => "fp32",
        };
        let tol = tolerance(&vkprism::VariantKey::parse(name).unwrap());
        let q = |x: &[f32]| quantize(x, f);
        for (sa, sb) in [(&[6usize, 12][..], &[12usize][..]), (&[6, 7], &[6, 1])] {
            let (a, b) = inputs(BinaryOp::Mul, sa.iter().product(), sb.iter().product(), 40);
            let at = Tensor::from_f32(&ctx, sa, f, &a).unwrap();
            let bt = Tensor::from_f32(&ctx, sb, f, &b).unwrap();
            let ot = Tensor::from_f32(&ctx, sa, f, &vec![f32::NAN; a.len()]).unwrap();
            match ops.run(|l| ops.binary(l, &at, &bt, &ot, BinaryOp::Sub)) {
                Err(OpError::FormatUnsupported { .. }) => {
                    println!("binary: the device runs no variant on {f:?} ({sa:?})");
                    continue;
                }
                r => r.unwrap(),
            }
            ran += 1;
            let want = reference::binary_broadcast(BinaryOp::Sub, &q(&a), sa, &q(&b), sb);
            let want = q(&want.unwrap());
            let what = format!("Ops::binary {f:?} {sa:?} - {sb:?}");
            ratio(&ot.download_f32().unwrap(), &want, tol, &what);
            // In place: a becomes a - b.
            ops.run(|l| ops.binary(l, &at, &bt, &at, BinaryOp::Sub))
                .unwrap();
            let what = format!("Ops::binary in place {f:?} {sa:?} - {sb:?}");
            ratio(&at.download_f32().unwrap(), &want, tol, &what);
            // a is b, and out is that one tensor: (a - b)².
            ops.run(|l| ops.binary(l, &at, &at, &at, BinaryOp::Mul))
                .unwrap();
            let sq: Vec<f32> = want.iter().map(|v| v * v).collect();
            let what = format!("Ops::binary squared in place {f:?} {sa:?}");
            ratio(&at.download_f32().unwrap(), &q(&sq), tol, &what);
        }
    }
    assert!(ran >= 2, "F32 must run");
    assert_clean(&ctx);
}

#[test]
fn broadcast_shape_mismatch_is_an_error_and_records_nothing() {
    let ctx = ctx();
    let ops = Ops::new(&ctx);
    let f = TensorFormat::F32;
    let t = |shape: &[usize], f: TensorFormat| Tensor::new(&ctx, shape, f).unwrap();
    let mut list = CommandList::new(&ctx).unwrap();
    let (a, b) = (t(&[2, 3], f), t(&[3, 2], f));
    let e = ops
        .binary(&mut list, &a, &b, &t(&[2, 3], f), BinaryOp::Add)
        .unwrap_err();
    assert!(matches!(e, OpError::Shape { operand: "b", .. }), "{e}");
    assert!(e.to_string().contains("broadcasts with a's [2, 3]"), "{e}");
    // out not the broadcast shape ([2, 3]): [3, 2], and [1, 2, 3].
    for out in [t(&[3, 2], f), t(&[1, 2, 3], f)] {
        let e = ops
            .binary(&mut list, &a, &t(&[3], f), &out, BinaryOp::Add)
            .unwrap_err();
        assert!(matches!(e, OpError::Shape { operand: "out", .. }), "{e}");
    }
    let e = ops
        .binary(
            &mut list,
            &a,
            &t(&[3], TensorFormat::F16),
            &a,
            BinaryOp::Add,
        )
        .unwrap_err();
    assert!(matches!(e, OpError::Format { operand: "b", .. }), "{e}");
    let i = t(&[2, 3], TensorFormat::I32);
    let e = ops
        .binary(&mut list, &i, &i, &i, BinaryOp::Add)
        .unwrap_err();
    assert!(matches!(e, OpError::Format { operand: "a", .. }), "{e}");
    // The vec4 kernel refuses a column (b broadcast along the innermost dim).
    let k = ctx
        .load_with::<binary_bcast4::Kernel>(&LoadOptions::variant_named("fp32").unwrap())
        .unwrap();
    let c = t(&[4, 8], f);
    let e = ops
        .binary_with(&mut list, &k, &c, &t(&[4, 1], f), &c, BinaryOp::Add)
        .unwrap_err();
    assert!(matches!(e, OpError::Unsupported { .. }), "{e}");
    assert_eq!(list.len(), 0, "nothing recorded");
    ops.binary(&mut list, &c, &t(&[4, 1], f), &c, BinaryOp::Add)
        .unwrap();
    list.submit_and_wait().unwrap();
    assert_clean(&ctx);
}
