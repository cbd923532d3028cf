//! [`Ops::cast`] between F32, F16 and Bf16 in every pair (each cast kernel's every variant),
//! rounded to nearest even as the `half` crate rounds, outputs poisoned, lengths with every
//! remainder of 4 (the kernels' step), large ones;
//! and the checks.

mod movement_util;

use movement_util::{assert_bits, ones, output, FORMATS};
use vkprism::{Tensor, TensorFormat};
use vkprism_shaders::{cast_from_f16, cast_from_f32, cast_to_f16, cast_to_f32, OpError, Ops};
use vkprism_testkit::{assert_clean, ctx, quantize, random_in, refused};

/// Values of every magnitude fp16 holds as a normal number (no subnormals, whose handling the
/// devices differ on), with ties of each rounding: halfway between two fp16 and two bf16.
fn data(n: usize, seed: u64) -> Vec<f32> {
    let mut v = random_in(n, seed, 1e-3, 6e4);
    let ties = [
        1.0 + 2f32.powi(-11), // halfway between two fp16: to even (1.0)
        1.0 + 3.0 * 2f32.powi(-11),
        1.0 + 2f32.powi(-8), // halfway between two bf16
        -(1.0 + 3.0 * 2f32.powi(-8)),
        65504.0,
        -0.0,
    ];
    for (i, t) in ties.iter().enumerate() {
        if i < n {
            v[i] = *t;
        }
    }
    v
}

#[test]
fn cast_every_pair() {
    let ctx = ctx();
    let ops = Ops::new(&ctx);
    assert_eq!(cast_to_f32::VARIANT_NAMES, ["fp16s", "bf16s"]);
    assert_eq!(cast_from_f32::VARIANT_NAMES, ["fp16s", "bf16s"]);
    assert_eq!(cast_to_f16::VARIANT_NAMES, ["bf16s"]);
    assert_eq!(cast_from_f16::VARIANT_NAMES, ["bf16s"]);
    for from in FORMATS {
        for to in FORMATS {
            // Each kernel takes 4 elements a step, then the last n % 4: lengths of 0 to 3 quads
            // with every tail, and whole quads alone.
            let lengths = [
                (1, vec![1]),
                (2, vec![2]),
                (64, vec![8, 8]),
                (301, vec![7, 43]),
                (100_003, vec![100_003]),
            ];
            for (n, shape) in lengths {
                let x = quantize(&data(n, n as u64), from);
                let xt = Tensor::from_f32(&ctx, &shape, from, &x).unwrap();
                let yt = output(&ctx, &shape, to);
                ops.run(|l| ops.cast(l, &xt, &yt)).unwrap();
                let what = format!("cast {from:?} -> {to:?} {shape:?}");
                assert_bits(&yt.download_f32().unwrap(), &quantize(&x, to), &what);
            }
        }
    }
    assert_clean(&ctx);
}

#[test]
fn cast_errors_record_nothing() {
    let ctx = ctx();
    let ops = Ops::new(&ctx);
    let x = ones(&ctx, &[4, 6], TensorFormat::F32);
    let e = refused(ops.context(), |l| {
        ops.cast(l, &x, &ones(&ctx, &[6, 4], TensorFormat::F16))
    });
    assert!(
        matches!(
            e,
            OpError::Shape {
                op: "cast",
                operand: "y",
                ..
            }
        ),
        "{e}"
    );
    let ints = Tensor::from_i32(&ctx, &[4, 6], &[0; 24]).unwrap();
    let e = refused(ops.context(), |l| ops.cast(l, &x, &ints));
    assert!(matches!(e, OpError::Format { operand: "y", .. }), "{e}");
    let e = refused(ops.context(), |l| ops.cast(l, &ints, &x));
    assert!(matches!(e, OpError::Format { operand: "x", .. }), "{e}");
    let e = refused(ops.context(), |l| ops.cast(l, &x, &x));
    assert!(
        matches!(
            e,
            OpError::Aliased {
                output: "y",
                other: "x",
                ..
            }
        ),
        "{e}"
    );
    assert_clean(&ctx);
}
