//! [`Ops::slice`] in every format (each one variant of the strided copy), bit-exact against
//! the reference on odd shapes with outputs poisoned, and its checks.

mod movement_util;

use movement_util::{assert_bits, input, ones, output, FORMATS};
use vkprism::TensorFormat;
use vkprism_shaders::{reference, OpError, Ops};
use vkprism_testkit::{assert_clean, ctx, refused};

#[test]
fn slice_every_format() {
    let ctx = ctx();
    let ops = Ops::new(&ctx);
    let cases: &[(&[usize], &[usize], &[usize])] = &[
        (&[7, 9, 11], &[1, 2, 3], &[6, 9, 4]),
        (&[301], &[17], &[300]),
        (&[3, 5, 7, 13], &[0, 1, 0, 5], &[3, 4, 7, 12]),
        (&[5, 1, 9], &[4, 0, 0], &[5, 1, 9]),
        (&[2, 300, 301], &[1, 0, 1], &[2, 300, 300]),
    ];
    for format in FORMATS {
        for (i, (shape, starts, ends)) in cases.iter().enumerate() {
            let (x, xt) = input(&ctx, shape, format, 10 + i as u64);
            let want = reference::slice(&x, shape, starts, ends);
            let out: Vec<usize> = starts.iter().zip(*ends).map(|(s, e)| e - s).collect();
            let yt = output(&ctx, &out, format);
            ops.run(|l| ops.slice(l, &xt, starts, ends, &yt)).unwrap();
            let what = format!("slice {format:?} {shape:?} {starts:?}..{ends:?}");
            assert_bits(&yt.download_f32().unwrap(), &want, &what);
        }
    }
    assert_clean(&ctx);
}

#[test]
fn slice_errors_record_nothing() {
    let ctx = ctx();
    let ops = Ops::new(&ctx);
    let f32t = |shape: &[usize]| ones(&ctx, shape, TensorFormat::F32);
    let x = f32t(&[4, 6]);
    let y = f32t(&[2, 3]);
    for (starts, ends) in [
        (&[0, 0][..], &[2, 7][..]),
        (&[2, 3], &[2, 6]),
        (&[3, 3], &[2, 6]),
        (&[0], &[2]),
        (&[0, 0, 0], &[2, 3, 1]),
    ] {
        let e = refused(ops.context(), |l| ops.slice(l, &x, starts, ends, &y));
        assert!(
            matches!(e, OpError::Unsupported { op: "slice", .. }),
            "{starts:?}..{ends:?}: {e}"
        );
    }
    let e = refused(ops.context(), |l| ops.slice(l, &x, &[0, 0], &[2, 4], &y));
    assert!(matches!(e, OpError::Shape { operand: "y", .. }), "{e}");
    let half = ones(&ctx, &[2, 3], TensorFormat::F16);
    let e = refused(ops.context(), |l| ops.slice(l, &x, &[0, 0], &[2, 3], &half));
    assert!(matches!(e, OpError::Format { operand: "y", .. }), "{e}");
    let e = refused(ops.context(), |l| ops.slice(l, &x, &[0, 0], &[4, 6], &x));
    assert!(matches!(e, OpError::Aliased { output: "y", .. }), "{e}");
    assert_clean(&ctx);
}
