//! [`Ops::concat`] in every format, along every axis, bit-exact against the reference on odd
//! shapes with outputs poisoned, and its checks.

mod movement_util;

use movement_util::{assert_bits, input, ones, output, FORMATS};
use vkprism::{Tensor, TensorFormat};
use vkprism_shaders::{reference, OpError, Ops};
use vkprism_testkit::{assert_clean, ctx, refused};

#[test]
fn concat_every_format_and_axis() {
    let ctx = ctx();
    let ops = Ops::new(&ctx);
    let cases: &[(&[&[usize]], usize)] = &[
        (&[&[2, 3, 5], &[2, 4, 5], &[2, 1, 5]], 1),
        (&[&[3, 7], &[5, 7]], 0),
        (&[&[3, 5, 7, 3], &[3, 5, 7, 1], &[3, 5, 7, 9]], 3),
        (&[&[301], &[13], &[1]], 0),
        (&[&[1, 9, 2], &[2, 9, 2]], 0),
    ];
    for format in FORMATS {
        for (i, (shapes, axis)) in cases.iter().enumerate() {
            let inputs: Vec<(Vec<f32>, Tensor)> = shapes
                .iter()
                .enumerate()
                .map(|(j, s)| input(&ctx, s, format, 10 * i as u64 + j as u64))
                .collect();
            let parts: Vec<(&[f32], &[usize])> = inputs
                .iter()
                .zip(*shapes)
                .map(|((x, _), s)| (&x[..], *s))
                .collect();
            let want = reference::concat(&parts, *axis);
            let mut out = shapes[0].to_vec();
            out[*axis] = shapes.iter().map(|s| s[*axis]).sum();
            let yt = output(&ctx, &out, format);
            let ts: Vec<&Tensor> = inputs.iter().map(|(_, t)| t).collect();
            ops.run(|l| ops.concat(l, &ts, *axis, &yt)).unwrap();
            let what = format!("concat {format:?} {shapes:?} axis {axis}");
            assert_bits(&yt.download_f32().unwrap(), &want, &what);
        }
    }
    assert_clean(&ctx);
}

#[test]
fn concat_errors_record_nothing() {
    let ctx = ctx();
    let ops = Ops::new(&ctx);
    let f32t = |shape: &[usize]| ones(&ctx, shape, TensorFormat::F32);
    let (a, b) = (f32t(&[2, 3]), f32t(&[2, 4]));
    let y = f32t(&[2, 7]);
    let e = refused(ops.context(), |l| ops.concat(l, &[], 0, &y));
    assert!(
        matches!(e, OpError::Unsupported { op: "concat", .. }),
        "{e}"
    );
    let e = refused(ops.context(), |l| ops.concat(l, &[&a, &b], 2, &y));
    assert!(matches!(e, OpError::Unsupported { .. }), "{e}");
    // The other dimension differs; the rank differs.
    let e = refused(ops.context(), |l| {
        ops.concat(l, &[&a, &f32t(&[3, 4])], 1, &y)
    });
    assert!(
        matches!(
            e,
            OpError::Shape {
                operand: "inputs",
                ..
            }
        ),
        "{e}"
    );
    let e = refused(ops.context(), |l| {
        ops.concat(l, &[&a, &f32t(&[2, 4, 1])], 1, &y)
    });
    assert!(
        matches!(
            e,
            OpError::Shape {
                operand: "inputs",
                ..
            }
        ),
        "{e}"
    );
    let e = refused(ops.context(), |l| {
        ops.concat(l, &[&a, &b], 1, &f32t(&[2, 8]))
    });
    assert!(matches!(e, OpError::Shape { operand: "y", .. }), "{e}");
    let e = refused(ops.context(), |l| {
        ops.concat(l, &[&a, &ones(&ctx, &[2, 4], TensorFormat::F16)], 1, &y)
    });
    assert!(
        matches!(
            e,
            OpError::Format {
                operand: "inputs",
                ..
            }
        ),
        "{e}"
    );
    let e = refused(ops.context(), |l| {
        ops.concat(l, &[&a, &b], 1, &ones(&ctx, &[2, 7], TensorFormat::Bf16))
    });
    assert!(matches!(e, OpError::Format { operand: "y", .. }), "{e}");
    let big = f32t(&[2, 7]);
    let e = refused(ops.context(), |l| ops.concat(l, &[&a, &big], 1, &big));
    assert!(
        matches!(
            e,
            OpError::Aliased {
                output: "y",
                other: "inputs",
                ..
            }
        ),
        "{e}"
    );
    assert_clean(&ctx);
}
