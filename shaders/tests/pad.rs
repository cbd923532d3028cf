//! [`Ops::pad`] (constant mode) in every format, bit-exact against the reference on odd
//! shapes with outputs poisoned and the fill value rounded to the format, the padding kernel
//! past 65,535 workgroups, and the checks.

mod movement_util;

use movement_util::{assert_bits, input, ones, output, FORMATS};
use vkprism::{LoadOptions, TensorFormat};
use vkprism_shaders::{pad_copy, reference, OpError, Ops, PadShape};
use vkprism_testkit::{assert_clean, ctx, quantize_one, refused};

#[test]
fn pad_every_format() {
    let ctx = ctx();
    let ops = Ops::new(&ctx);
    assert_eq!(pad_copy::VARIANT_NAMES, ["fp32", "fp16s", "bf16s"]);
    let cases: &[(&[usize], &[usize], &[usize])] = &[
        (&[3, 5, 7], &[1, 0, 2], &[0, 3, 1]),
        (&[301], &[5], &[2]),
        (&[2, 3, 5, 7], &[1, 1, 1, 1], &[2, 0, 3, 0]),
        (&[9, 13], &[0, 0], &[0, 0]),
        (&[1, 1], &[3, 2], &[1, 4]),
    ];
    for format in FORMATS {
        // 2.7 is not a float of any format: the kernel stores it rounded.
        let value = 2.7;
        for (i, (shape, before, after)) in cases.iter().enumerate() {
            let (x, xt) = input(&ctx, shape, format, 30 + i as u64);
            let want = reference::pad(&x, shape, before, after, quantize_one(value, format));
            let out: Vec<usize> = (0..shape.len())
                .map(|d| before[d] + shape[d] + after[d])
                .collect();
            let yt = output(&ctx, &out, format);
            ops.run(|l| ops.pad(l, &xt, before, after, value, &yt))
                .unwrap();
            let what = format!("pad {format:?} {shape:?} {before:?} {after:?}");
            assert_bits(&yt.download_f32().unwrap(), &want, &what);
        }
    }
    assert_clean(&ctx);
}

/// Padding of 6 dimensions (the kernel's most; tensors hold 4, so flat tensors) and 1,105,920
/// outputs with 16 invocations per workgroup: the grid capped at 65,535 workgroups.
#[test]
fn pad_kernel_six_dimensions_past_the_workgroup_limit() {
    let ctx = ctx();
    let cases: &[(&[usize], &[usize], &[usize])] = &[
        (
            &[2, 3, 1, 5, 2, 3],
            &[1, 0, 2, 0, 1, 1],
            &[0, 1, 1, 2, 0, 1],
        ),
        (&[30, 40, 900], &[1, 2, 3], &[1, 2, 3]),
    ];
    for name in ["fp32", "bf16s"] {
        let k = ctx
            .load_with::<pad_copy::Kernel>(&LoadOptions::variant_named(name).unwrap())
            .unwrap();
        let f = k.format_of("x_blob").unwrap();
        let local = [16, 1, 1];
        let pipe = k
            .pipeline(&pad_copy::SpecConstants {}, Some(local))
            .unwrap();
        for (shape, before, after) in cases {
            let n: usize = shape.iter().product();
            let (x, xt) = input(&ctx, &[n], f, 40);
            let want = reference::pad(&x, shape, before, after, -1.5);
            let s = PadShape {
                dims: (0..shape.len())
                    .map(|d| before[d] + shape[d] + after[d])
                    .collect(),
                src_dims: shape.to_vec(),
                before: before.to_vec(),
            };
            let yt = output(&ctx, &[s.elements()], f);
            let bindings = pad_copy::BufferBindings {
                x_blob: &xt,
                y_blob: &yt,
            };
            ctx.run(|l| l.dispatch(&pipe, &bindings, &s.push(-1.5), s.grid(local)))
                .unwrap();
            let what = format!("pad_copy {name} {shape:?}");
            assert_bits(&yt.download_f32().unwrap(), &want, &what);
        }
        assert_eq!(
            PadShape {
                dims: vec![32, 44, 906],
                src_dims: vec![30, 40, 900],
                before: vec![1, 2, 3],
            }
            .grid(local),
            [65535 * 16, 1, 1]
        );
    }
    assert_clean(&ctx);
}

#[test]
fn pad_errors_record_nothing() {
    let ctx = ctx();
    let ops = Ops::new(&ctx);
    let f32t = |shape: &[usize]| ones(&ctx, shape, TensorFormat::F32);
    let x = f32t(&[4, 6]);
    let e = refused(ops.context(), |l| {
        ops.pad(l, &x, &[1], &[1, 1], 0.0, &f32t(&[6, 8]))
    });
    assert!(matches!(e, OpError::Unsupported { op: "pad", .. }), "{e}");
    let e = refused(ops.context(), |l| {
        ops.pad(l, &x, &[1, 1], &[1, 1], 0.0, &f32t(&[6, 7]))
    });
    assert!(matches!(e, OpError::Shape { operand: "y", .. }), "{e}");
    let e = refused(ops.context(), |l| {
        ops.pad(
            l,
            &x,
            &[1, 1],
            &[1, 1],
            0.0,
            &ones(&ctx, &[6, 8], TensorFormat::F16),
        )
    });
    assert!(matches!(e, OpError::Format { operand: "y", .. }), "{e}");
    let e = refused(ops.context(), |l| ops.pad(l, &x, &[0, 0], &[0, 0], 0.0, &x));
    assert!(matches!(e, OpError::Aliased { output: "y", .. }), "{e}");
    let ints = vkprism::Tensor::from_i32(&ctx, &[2], &[1, 2]).unwrap();
    let e = refused(ops.context(), |l| {
        ops.pad(l, &ints, &[1], &[1], 0.0, &f32t(&[4]))
    });
    assert!(matches!(e, OpError::Format { operand: "x", .. }), "{e}");
    assert_clean(&ctx);
}
