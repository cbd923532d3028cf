//! Reductions along an axis ([`reduce`], [`argmax`], and [`argmax_parts`], the second pass of an
//! argmax of long rows taken in parts) in every variant the device runs, against the f64
//! reference on random non-zero data, outputs poisoned; and [`Ops::reduce`]'s checks.

use vkprism::{Context, LoadOptions, Tensor, TensorFormat};
use vkprism_shaders::{
    argmax, argmax_parts, reduce, reference, ArgmaxParts, OpError, Ops, ReduceOp, ReduceShape,
};
use vkprism_testkit::{
    assert_clean, assert_close_scaled, ctx, quantize, random_in, refused, tolerance,
};

/// Shapes and axes: rows of 1, 3, 257, 1000 and 4099 values (one workgroup per output, inner
/// 1), a strided axis with a small inner (still a workgroup per output), and inners of 32 or
/// more (an invocation per output), many outputs.
const CASES: &[(&[usize], usize)] = &[
    (&[3, 1000], 1),
    (&[2, 4099], 1),
    (&[257], 0),
    (&[1], 0),
    (&[700, 3], 1),
    (&[5, 1], 1),
    (&[1000, 3], 0),
    (&[2, 3, 257, 7], 2),
    (&[6, 257, 40], 1),
    (&[1000, 33], 0),
    (&[3, 5, 4099], 0),
];

fn run_case(
    ctx: &Context,
    name: &str,
    shape: &[usize],
    axis: usize,
    seed: u64,
    local: Option<[u32; 3]>,
) {
    let s = ReduceShape::of(shape, axis);
    let n: usize = shape.iter().product();
    let x = random_in(n, seed, 0.1, 4.0);
    let outs = s.outputs();
    let local = local.unwrap_or(s.local_size());
    let k = ctx
        .load_with::<reduce::Kernel>(&LoadOptions::variant_named(name).unwrap())
        .unwrap();
    let key = k.variant().key;
    let f = k.format_of("x_blob").unwrap();
    let xq = quantize(&x, f);
    let xt = Tensor::from_f32(ctx, shape, f, &x).unwrap();
    for op in 0..4 {
        let ot = Tensor::from_f32(ctx, &[outs], f, &vec![f32::NAN; outs]).unwrap();
        let pipe = k.pipeline(&s.spec(op), Some(local)).unwrap();
        ctx.run(|l| {
            l.dispatch(
                &pipe,
                &reduce::BufferBindings {
                    x_blob: &xt,
                    out_blob: &ot,
                },
                &s.push(),
                s.grid(local),
            )
        })
        .unwrap();
        let (want, scale) = reference::reduce(op, s.outer, s.axis, s.inner, &xq);
        assert_close_scaled(
            &ot.download_f32().unwrap(),
            &quantize(&want, f),
            &scale,
            tolerance(&key),
            &format!("{name} op {op} {shape:?} axis {axis} local {local:?}"),
        );
    }
    let k = ctx
        .load_with::<argmax::Kernel>(&LoadOptions::variant_named(name).unwrap())
        .unwrap();
    let ot = Tensor::from_i32(ctx, &[outs], &vec![-7; outs]).unwrap();
    let spec = argmax::SpecConstants {
        op: 0,
        per_invocation: s.per_invocation() as i32,
    };
    let pipe = k.pipeline(&spec, Some(local)).unwrap();
    ctx.run(|l| {
        l.dispatch(
            &pipe,
            &argmax::BufferBindings {
                x_blob: &xt,
                out_blob: &ot,
            },
            &s.argmax_push(),
            s.grid(local),
        )
    })
    .unwrap();
    let (want, _) = reference::reduce(4, s.outer, s.axis, s.inner, &xq);
    let want: Vec<i32> = want.iter().map(|v| *v as i32).collect();
    assert_eq!(
        ot.download_i32().unwrap(),
        want,
        "{name} argmax {shape:?} axis {axis} local {local:?}"
    );
}

#[test]
fn reduce() {
    let ctx = ctx();
    assert_eq!(
        reduce::VARIANT_NAMES,
        [
            "fp32_sg",
            "fp32_nosg",
            "fp16s_sg",
            "fp16s_nosg",
            "fp16sa_sg",
            "fp16sa_nosg",
            "bf16s_sg",
            "bf16s_nosg"
        ]
    );
    assert_eq!(argmax::VARIANT_NAMES, reduce::VARIANT_NAMES);
    for name in reduce::VARIANT_NAMES {
        for (i, (shape, axis)) in CASES.iter().enumerate() {
            run_case(&ctx, name, shape, *axis, 10 + i as u64, None);
        }
        // Few outputs of a long axis (a vocabulary's argmax): workgroups of 1024.
        let long = ReduceShape::of(&[2, 32000], 1);
        assert_eq!(long.local_size_within(1024), [1024, 1, 1]);
        assert_eq!(long.local_size_within(128), [128, 1, 1]);
        run_case(&ctx, name, &[2, 32000], 1, 5, Some([1024, 1, 1]));
        // A workgroup that is not a power of two: the tree's edges.
        run_case(&ctx, name, &[4, 1000], 1, 3, Some([100, 1, 1]));
        run_case(&ctx, name, &[3, 4099], 1, 4, Some([3, 1, 1]));
    }
    assert_clean(&ctx);
}

/// Rows of `len` values with the largest of `row` at `at[row]`, the value there also at
/// `tie[row]` where given (a later index), random elsewhere below it.
fn rows_with_max(rows: usize, len: usize, at: &[usize], tie: &[Option<usize>]) -> Vec<f32> {
    let mut x = random_in(rows * len, 31, 0.1, 4.0);
    for r in 0..rows {
        x[r * len + at[r]] = 9.0;
        if let Some(t) = tie[r] {
            x[r * len + t] = 9.0;
        }
    }
    x
}

/// [`argmax_parts`] in every variant: x `[rows, parts · len]` and each part's argmax (from the
/// f64 reference) to the row's, the largest value's first index — in the last part's last
/// value, tied between two parts (the earlier part's), and in random rows.
#[test]
fn argmax_parts_every_variant() {
    let ctx = ctx();
    assert_eq!(argmax_parts::VARIANT_NAMES, reduce::VARIANT_NAMES);
    let parts = ArgmaxParts {
        rows: 3,
        parts: 7,
        len: 300,
    };
    let width = parts.parts * parts.len;
    let mut x = rows_with_max(3, width, &[width - 1, 310, 0], &[None, Some(1900), None]);
    // The third row random: its maximum wherever the data puts it.
    x[2 * width] = 0.5;
    for name in argmax_parts::VARIANT_NAMES {
        let load = LoadOptions::variant_named(name).unwrap();
        let k = ctx.load_with::<argmax_parts::Kernel>(&load).unwrap();
        let f = k.format_of("x_blob").unwrap();
        let xq = quantize(&x, f);
        let first = parts.first_pass();
        let (part_want, _) = reference::reduce(4, first.outer, first.axis, 1, &xq);
        let part_index: Vec<i32> = part_want.iter().map(|v| *v as i32).collect();
        let (want, _) = reference::reduce(4, parts.rows, width, 1, &xq);
        let want: Vec<i32> = want.iter().map(|v| *v as i32).collect();
        let xt = Tensor::from_f32(&ctx, &[parts.rows, width], f, &x).unwrap();
        let pt = Tensor::from_i32(&ctx, &[first.outer], &part_index).unwrap();
        let ot = Tensor::from_i32(&ctx, &[parts.rows], &[-7; 3]).unwrap();
        let (grid, local) = parts.grid();
        let pipe = k.pipeline(&Default::default(), Some(local)).unwrap();
        let b = argmax_parts::BufferBindings {
            x_blob: &xt,
            part_blob: &pt,
            out_blob: &ot,
        };
        ctx.run(|l| l.dispatch(&pipe, &b, &parts.push(), grid))
            .unwrap();
        let got = ot.download_i32().unwrap();
        assert_eq!(got, want, "{name}");
        assert_eq!(&got[..2], &[width as i32 - 1, 310], "{name}");
    }
    assert_clean(&ctx);
}

/// Which argmaxes go in parts: a few long contiguous rows, in the most parts up to 256 that
/// divide them (Qwen's 151936 logits in 128 of 1187, Llama 3's 128256 in 256 of 501), and
/// through [`Ops::reduce`] the same indices as the reference in each format, ties to the
/// first (across parts), the maximum in the last value.
#[test]
fn argmax_of_long_rows_goes_in_parts() {
    let parts = |shape: &[usize]| ArgmaxParts::of(&ReduceShape::of(shape, shape.len() - 1));
    let part = |rows, parts, len| Some(ArgmaxParts { rows, parts, len });
    assert_eq!(parts(&[1, 151936]), part(1, 128, 1187));
    assert_eq!(parts(&[2, 128256]), part(2, 256, 501));
    assert_eq!(parts(&[1, 65536]), part(1, 256, 256));
    // Shorter rows (TinyLlama's 32000), many rows, a strided axis, a prime length: one
    // workgroup a row.
    assert_eq!(parts(&[1, 65535]), None);
    assert_eq!(parts(&[2, 32000]), None);
    assert_eq!(parts(&[33, 151936]), None);
    assert_eq!(ArgmaxParts::of(&ReduceShape::of(&[151936, 2], 0)), None);
    assert_eq!(parts(&[1, 65537]), None);

    let ctx = ctx();
    let ops = Ops::new(&ctx);
    let len = 151936;
    let x = rows_with_max(3, len, &[len - 1, 2000, 0], &[None, Some(140_000), None]);
    for format in [TensorFormat::F32, TensorFormat::F16, TensorFormat::Bf16] {
        let xt = Tensor::from_f32(&ctx, &[3, len], format, &x).unwrap();
        let ot = Tensor::from_i32(&ctx, &[3], &[-7; 3]).unwrap();
        ops.run(|l| ops.reduce(l, &xt, &ot, 1, ReduceOp::ArgMax))
            .unwrap();
        let (want, _) = reference::reduce(4, 3, len, 1, &quantize(&x, format));
        let want: Vec<i32> = want.iter().map(|v| *v as i32).collect();
        assert_eq!(ot.download_i32().unwrap(), want, "{format:?}");
        assert_eq!(want[..2], [len as i32 - 1, 2000]);
    }
    assert_clean(&ctx);
}

/// Ties: the first index of the largest value, whichever invocation found it (values equal in/// Ties: the first index of the largest value, whichever invocation found it (values equal in
/// positions 5 and 300 of a row, and all of one row equal).
#[test]
fn reduce_argmax_ties_take_the_first_index() {
    let ctx = ctx();
    let ops = Ops::new(&ctx);
    let cols = 1000;
    let mut x = random_in(3 * cols, 7, 0.1, 4.0);
    x[5] = 9.0;
    x[300] = 9.0;
    x[cols + 999] = 9.0;
    x[cols + 256] = 9.0;
    for v in &mut x[2 * cols..] {
        *v = 1.5;
    }
    let xt = Tensor::from_f32(&ctx, &[3, cols], TensorFormat::F32, &x).unwrap();
    let ot = Tensor::from_i32(&ctx, &[3], &[-7; 3]).unwrap();
    ops.run(|l| ops.reduce(l, &xt, &ot, 1, ReduceOp::ArgMax))
        .unwrap();
    assert_eq!(ot.download_i32().unwrap(), [5, 256, 0]);
    // Along axis 0 (an invocation per output): column j of a [4, 40] of equal rows.
    let x = vec![2.0; 160];
    let xt = Tensor::from_f32(&ctx, &[4, 40], TensorFormat::F32, &x).unwrap();
    let ot = Tensor::from_i32(&ctx, &[40], &[-7; 40]).unwrap();
    ops.run(|l| ops.reduce(l, &xt, &ot, 0, ReduceOp::ArgMax))
        .unwrap();
    assert_eq!(ot.download_i32().unwrap(), vec![0; 40]);
    assert_clean(&ctx);
}

/// Through the operation layer, each op along each axis of a 3-D tensor, in each format the
/// device stores, output kept or removed.
#[test]
fn reduce_ops_every_axis_and_format() {
    let ctx = ctx();
    let ops = Ops::new(&ctx);
    let shape = [5, 257, 33];
    let n: usize = shape.iter().product();
    let x = random_in(n, 21, 0.1, 4.0);
    for format in [TensorFormat::F32, TensorFormat::F16, TensorFormat::Bf16] {
        let xt = Tensor::from_f32(&ctx, &shape, format, &x).unwrap();
        let xq = quantize(&x, format);
        for axis in 0..3 {
            let s = ReduceShape::of(&shape, axis);
            let mut out_shape = shape.to_vec();
            if axis == 1 {
                out_shape.remove(axis);
            } else {
                out_shape[axis] = 1;
            }
            for (code, op) in [
                ReduceOp::Sum,
                ReduceOp::Mean,
                ReduceOp::Max,
                ReduceOp::Min,
                ReduceOp::ArgMax,
            ]
            .into_iter()
            .enumerate()
            {
                let (want, scale) = reference::reduce(code as i32, s.outer, s.axis, s.inner, &xq);
                let what = format!("{format:?} {op:?} axis {axis}");
                if op == ReduceOp::ArgMax {
                    let ot = Tensor::from_i32(&ctx, &out_shape, &vec![-7; s.outputs()]).unwrap();
                    ops.run(|l| ops.reduce(l, &xt, &ot, axis, op)).unwrap();
                    let want: Vec<i32> = want.iter().map(|v| *v as i32).collect();
                    assert_eq!(ot.download_i32().unwrap(), want, "{what}");
                    continue;
                }
                let ot = Tensor::from_f32(&ctx, &out_shape, format, &vec![f32::NAN; s.outputs()])
                    .unwrap();
                ops.run(|l| ops.reduce(l, &xt, &ot, axis, op)).unwrap();
                let tol = match format {
                    TensorFormat::F32 => 1e-5,
                    TensorFormat::F16 => 1e-2,
                    _ => 8e-3,
                };
                assert_close_scaled(
                    &ot.download_f32().unwrap(),
                    &quantize(&want, format),
                    &scale,
                    tol,
                    &what,
                );
            }
        }
    }
    assert_clean(&ctx);
}

/// A sum whose terms cancel and whose magnitude is large: 4099 values of 1000 + noise, then the
/// same minus 1000, in fp32; the tree keeps the error within fp32's tolerance of Σ|x|.
#[test]
fn reduce_sum_of_offset_data_is_accurate() {
    let ctx = ctx();
    let ops = Ops::new(&ctx);
    let cols = 4099;
    let x: Vec<f32> = random_in(4 * cols, 30, 0.001, 1.0)
        .iter()
        .enumerate()
        .map(|(i, v)| if i < 2 * cols { 1000.0 + v } else { *v })
        .collect();
    let xt = Tensor::from_f32(&ctx, &[4, cols], TensorFormat::F32, &x).unwrap();
    let ot = Tensor::from_f32(&ctx, &[4], TensorFormat::F32, &[f32::NAN; 4]).unwrap();
    ops.run(|l| ops.reduce(l, &xt, &ot, 1, ReduceOp::Mean))
        .unwrap();
    let (want, scale) = reference::reduce(1, 4, cols, 1, &x);
    assert_close_scaled(&ot.download_f32().unwrap(), &want, &scale, 1e-6, "mean");
    assert_clean(&ctx);
}

#[test]
fn reduce_shape_format_and_alias_mismatches_are_errors_and_record_nothing() {
    let ctx = ctx();
    let ops = Ops::new(&ctx);
    let f32t = |shape: &[usize]| {
        let n = shape.iter().product();
        Tensor::from_f32(&ctx, shape, TensorFormat::F32, &vec![1.0; n]).unwrap()
    };
    let x = f32t(&[4, 6]);
    // An axis past the rank.
    let e = refused(ops.context(), |l| {
        ops.reduce(l, &x, &f32t(&[4]), 2, ReduceOp::Sum)
    });
    assert!(
        matches!(e, OpError::Unsupported { op: "reduce", .. }),
        "{e}"
    );
    // Wrong output shape.
    let e = refused(ops.context(), |l| {
        ops.reduce(l, &x, &f32t(&[6]), 1, ReduceOp::Sum)
    });
    assert!(
        matches!(e, OpError::Shape { operand: "out", ref got, .. } if got == &[6]),
        "{e}"
    );
    assert!(e.to_string().contains("[4] or [4, 1]"), "{e}");
    // A float output for argmax, an I32 output for a sum, a format differing from x's.
    let e = refused(ops.context(), |l| {
        ops.reduce(l, &x, &f32t(&[4]), 1, ReduceOp::ArgMax)
    });
    assert!(matches!(e, OpError::Format { operand: "out", .. }), "{e}");
    let i = Tensor::from_i32(&ctx, &[4], &[0; 4]).unwrap();
    let e = refused(ops.context(), |l| ops.reduce(l, &x, &i, 1, ReduceOp::Max));
    assert!(matches!(e, OpError::Format { operand: "out", .. }), "{e}");
    let h = Tensor::from_f32(&ctx, &[4, 1], TensorFormat::F16, &[0.0; 4]).unwrap();
    let e = refused(ops.context(), |l| ops.reduce(l, &x, &h, 1, ReduceOp::Min));
    assert!(matches!(e, OpError::Format { operand: "out", .. }), "{e}");
    // An integer input.
    let xi = Tensor::from_i32(&ctx, &[4, 6], &[0; 24]).unwrap();
    let e = refused(ops.context(), |l| {
        ops.reduce(l, &xi, &i, 1, ReduceOp::ArgMax)
    });
    assert!(matches!(e, OpError::Format { operand: "x", .. }), "{e}");
    // The output is the input (a 1-element axis keeps the shape).
    let x1 = f32t(&[4, 1]);
    let e = refused(ops.context(), |l| ops.reduce(l, &x1, &x1, 1, ReduceOp::Sum));
    assert!(
        matches!(
            e,
            OpError::Aliased {
                output: "out",
                other: "x",
                ..
            }
        ),
        "{e}"
    );
    assert_clean(&ctx);
}

/// More outputs than one dispatch's workgroups along y (65535 on many devices), a workgroup
/// per output and an invocation per output: the runtime splits the grid.
#[test]
fn reduce_of_more_outputs_than_one_dispatch_holds() {
    let ctx = ctx();
    let ops = Ops::new(&ctx);
    let cases: [(&[usize], usize); 2] = [(&[70_001, 3], 1), (&[70_001, 2, 32], 1)];
    for (shape, axis) in cases {
        let s = ReduceShape::of(shape, axis);
        let x = random_in(shape.iter().product(), 11, 0.1, 4.0);
        let xt = Tensor::from_f32(&ctx, shape, TensorFormat::F32, &x).unwrap();
        let mut out_shape = shape.to_vec();
        out_shape.remove(axis);
        let ot = Tensor::from_f32(
            &ctx,
            &out_shape,
            TensorFormat::F32,
            &vec![f32::NAN; s.outputs()],
        )
        .unwrap();
        ops.run(|l| ops.reduce(l, &xt, &ot, axis, ReduceOp::Sum))
            .unwrap();
        let (want, scale) = reference::reduce(0, s.outer, s.axis, s.inner, &x);
        let what = format!("{shape:?} axis {axis}");
        assert_close_scaled(&ot.download_f32().unwrap(), &want, &scale, 1e-5, &what);
    }
    assert_clean(&ctx);
}
