//! Softmax along the last axis ([`softmax`]) in every variant the device runs, plain, scaled
//! and causal with an offset, against the f64 reference on random non-zero data, outputs
//! poisoned; in place; and [`Ops::softmax`]'s checks.

use vkprism::{Context, LoadOptions, Tensor, TensorFormat};
use vkprism_shaders::{reference, softmax, softmax4, OpError, Ops, Softmax, SoftmaxShape};
use vkprism_testkit::{
    assert_clean, assert_close_scaled, ctx, quantize, random_in, refused, tolerance,
};

/// Shapes `[.., rows, cols]`: rows of 1, 3, 257, 1000, 4099, 4096 and 4 values, many rows
/// (the multiples of 4 also as quads).
const SHAPES: &[&[usize]] = &[
    &[5, 1],
    &[2, 7, 3],
    &[9, 257],
    &[4, 1000],
    &[3, 4099],
    &[2000, 5],
    &[700],
    &[3, 4096],
    &[2, 6, 4],
];

/// (scale, causal offset): plain, scaled, causal (square blocks), causal with a positive
/// offset (a prefill block against a longer key range) and a negative one (early rows see
/// nothing).
const OPTIONS: &[(f32, Option<i32>)] = &[
    (1.0, None),
    (0.125, None),
    (-2.0, None),
    (1.0, Some(0)),
    (0.5, Some(3)),
    (1.0, Some(-2)),
];

/// Runs one case in variant `name`: [`softmax`], and [`softmax4`] where the rows are quads
/// (in its own workgroup, one invocation per quad, unless `local` is given).
#[allow(clippy::too_many_arguments)]
fn run_case(
    ctx: &Context,
    name: &str,
    shape: &[usize],
    scale: f32,
    causal: Option<i32>,
    seed: u64,
    local: Option<[u32; 3]>,
    in_place: bool,
) {
    let s = SoftmaxShape::of(shape);
    let n: usize = shape.iter().product();
    let x = random_in(n, seed, 0.1, 4.0);
    let load = LoadOptions::variant_named(name).unwrap();
    let k = ctx.load_with::<softmax::Kernel>(&load).unwrap();
    let k4 = ctx.load_with::<softmax4::Kernel>(&load).unwrap();
    let key = k.variant().key;
    let f = k.format_of("x_blob").unwrap();
    let spec = softmax::SpecConstants {
        causal: causal.is_some() as i32,
    };
    let push = s.push(scale, causal.unwrap_or(0));
    let want = reference::softmax(s.cols, s.block, scale, causal, &quantize(&x, f));
    // Values in [0, 1]: the error is relative to 1 (absolute).
    let ones = vec![1.0; n];
    for four in [false, s.cols.is_multiple_of(4)] {
        let xt = Tensor::from_f32(ctx, shape, f, &x).unwrap();
        let yt = Tensor::from_f32(ctx, shape, f, &vec![f32::NAN; n]).unwrap();
        let out = if in_place { &xt } else { &yt };
        let local = if four {
            local.unwrap_or(s.local_size_quads())
        } else {
            local.unwrap_or(s.local_size())
        };
        if four {
            let pipe = k4.pipeline(&spec, Some(local)).unwrap();
            let b = softmax4::BufferBindings {
                x_blob: &xt,
                y_blob: out,
            };
            ctx.run(|l| l.dispatch(&pipe, &b, &push, s.grid(local)))
                .unwrap();
        } else {
            let pipe = k.pipeline(&spec, Some(local)).unwrap();
            let b = softmax::BufferBindings {
                x_blob: &xt,
                y_blob: out,
            };
            ctx.run(|l| l.dispatch(&pipe, &b, &push, s.grid(local)))
                .unwrap();
        }
        let what = format!(
            "{name} quads {four} {shape:?} scale {scale} causal {causal:?} local {local:?} in place {in_place}"
        );
        let got = out.download_f32().unwrap();
        assert_close_scaled(&got, &quantize(&want, f), &ones, tolerance(&key), &what);
    }
}

#[test]
fn softmax() {
    let ctx = ctx();
    assert_eq!(
        softmax::VARIANT_NAMES,
        [
            "fp32_nosg",
            "fp32_sg",
            "fp16s_nosg",
            "fp16s_sg",
            "fp16sa_nosg",
            "fp16sa_sg",
            "bf16s_nosg",
            "bf16s_sg"
        ]
    );
    for name in softmax::VARIANT_NAMES {
        for (i, shape) in SHAPES.iter().enumerate() {
            for (j, (scale, causal)) in OPTIONS.iter().enumerate() {
                let seed = 100 * i as u64 + j as u64;
                run_case(&ctx, name, shape, *scale, *causal, seed, None, false);
            }
        }
        // Workgroups that are not powers of two, and in place.
        run_case(
            &ctx,
            name,
            &[6, 1000],
            1.0,
            Some(500),
            1,
            Some([100, 1, 1]),
            false,
        );
        run_case(&ctx, name, &[5, 257], 0.5, None, 2, Some([7, 1, 1]), true);
        run_case(&ctx, name, &[3, 4099], 1.0, Some(4096), 3, None, true);
    }
    assert_clean(&ctx);
}

/// Large logits: without the maximum subtracted, e^(x) overflows fp32 (x up to 200).
#[test]
fn softmax_of_large_logits_is_stable() {
    let ctx = ctx();
    let ops = Ops::new(&ctx);
    let x: Vec<f32> = random_in(3 * 1000, 5, 50.0, 200.0);
    let xt = Tensor::from_f32(&ctx, &[3, 1000], TensorFormat::F32, &x).unwrap();
    let yt = Tensor::from_f32(&ctx, &[3, 1000], TensorFormat::F32, &[f32::NAN; 3000]).unwrap();
    ops.run(|l| ops.softmax(l, &xt, &yt, &Softmax::new()))
        .unwrap();
    let want = reference::softmax(1000, 3, 1.0, None, &x);
    assert_close_scaled(
        &yt.download_f32().unwrap(),
        &want,
        &[1.0; 3000],
        1e-5,
        "large",
    );
    assert_clean(&ctx);
}

/// Through the operation layer: attention-shaped scores `[heads, queries, keys]`, scaled by
/// 1/√d, causal for a prefill block of 5 queries at the end of 37 keys, each format, in place
/// and not.
#[test]
fn softmax_ops_causal_prefill_every_format_in_place() {
    let ctx = ctx();
    let ops = Ops::new(&ctx);
    let shape = [3, 5, 37];
    let n = 3 * 5 * 37;
    let x = random_in(n, 8, 0.1, 4.0);
    let op = Softmax::new().with_scale(0.125).with_causal(Some(37 - 5));
    for format in [TensorFormat::F32, TensorFormat::F16, TensorFormat::Bf16] {
        let want = quantize(
            &reference::softmax(37, 5, 0.125, Some(32), &quantize(&x, format)),
            format,
        );
        let tol = match format {
            TensorFormat::F32 => 1e-5,
            TensorFormat::F16 => 1e-2,
            _ => 8e-3,
        };
        let xt = Tensor::from_f32(&ctx, &shape, format, &x).unwrap();
        let yt = Tensor::from_f32(&ctx, &shape, format, &vec![f32::NAN; n]).unwrap();
        ops.run(|l| ops.softmax(l, &xt, &yt, &op)).unwrap();
        let ones = vec![1.0; n];
        assert_close_scaled(
            &yt.download_f32().unwrap(),
            &want,
            &ones,
            tol,
            "out of place",
        );
        ops.run(|l| ops.softmax(l, &xt, &xt, &op)).unwrap();
        assert_close_scaled(&xt.download_f32().unwrap(), &want, &ones, tol, "in place");
    }
    // Row r of the last block sees 32 + r + 1 keys: the first row's last 4 are masked.
    let xt = Tensor::from_f32(&ctx, &shape, TensorFormat::F32, &x).unwrap();
    ops.run(|l| ops.softmax(l, &xt, &xt, &op)).unwrap();
    let y = xt.download_f32().unwrap();
    assert!(y[33..37].iter().all(|v| *v == 0.0) && y[32] > 0.0);
    assert_clean(&ctx);
}

#[test]
fn softmax_shape_mismatch_is_an_error_and_records_nothing() {
    let ctx = ctx();
    let ops = Ops::new(&ctx);
    let t = |shape: &[usize], f: TensorFormat| {
        let n = shape.iter().product();
        Tensor::from_f32(&ctx, shape, f, &vec![1.0; n]).unwrap()
    };
    let x = t(&[4, 6], TensorFormat::F32);
    let e = refused(ops.context(), |l| {
        ops.softmax(l, &x, &t(&[4, 5], TensorFormat::F32), &Softmax::new())
    });
    assert!(
        matches!(e, OpError::Shape { op: "softmax", operand: "y", ref got, .. } if got == &[4, 5]),
        "{e}"
    );
    let e = refused(ops.context(), |l| {
        ops.softmax(l, &x, &t(&[24], TensorFormat::F32), &Softmax::new())
    });
    assert!(matches!(e, OpError::Shape { operand: "y", .. }), "{e}");
    let e = refused(ops.context(), |l| {
        ops.softmax(l, &x, &t(&[4, 6], TensorFormat::F16), &Softmax::new())
    });
    assert!(matches!(e, OpError::Format { operand: "y", .. }), "{e}");
    let xi = Tensor::from_i32(&ctx, &[4, 6], &[0; 24]).unwrap();
    let e = refused(ops.context(), |l| ops.softmax(l, &xi, &xi, &Softmax::new()));
    assert!(matches!(e, OpError::Format { operand: "x", .. }), "{e}");
    assert_clean(&ctx);
}

/// More rows than one dispatch's workgroups along y (65535 on many devices): the grid spreads
/// the rows over y and z, every row is done once.
#[test]
fn softmax_of_more_rows_than_one_dispatch_holds() {
    let ctx = ctx();
    let ops = Ops::new(&ctx);
    let (rows, cols) = (70_001, 3);
    let x = random_in(rows * cols, 9, 0.1, 4.0);
    let xt = Tensor::from_f32(&ctx, &[rows, cols], TensorFormat::F32, &x).unwrap();
    ops.run(|l| ops.softmax(l, &xt, &xt, &Softmax::new().with_causal(Some(1))))
        .unwrap();
    let want = reference::softmax(cols, rows, 1.0, Some(1), &x);
    let ones = vec![1.0; rows * cols];
    assert_close_scaled(&xt.download_f32().unwrap(), &want, &ones, 1e-5, "rows");
    assert_clean(&ctx);
}
