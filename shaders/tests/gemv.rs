//! Decode's matrix-vector products ([`gemv`], [`gemv_scalar`], [`gemv_int8`],
//! [`gemv_int8_scalar`]) in every variant, against the f64 reference on random non-zero data,
//! outputs poisoned; odd shapes (N not a multiple of the 4 rows of a workgroup, K not a multiple
//! of the workgroup, batches of 1 to 8), workgroups of other sizes, a grid past 32,768
//! workgroups along y; and [`Ops::gemv`] / [`Ops::gemv_int8`] with their checks.

use vkprism::{Context, LoadOptions, Tensor, TensorFormat};
use vkprism_shaders::{
    gemv, gemv_int8, gemv_int8_scalar, gemv_scalar, reference, GemvShape, OpError, Ops,
    GEMV_MANY_ROWS,
};
use vkprism_testkit::{
    assert_clean, assert_close_scaled, ctx, expected_in, poisoned, quantize, random_i8, random_in,
    refused, tolerance,
};

/// One case of a float kernel: shape, bias or not, workgroup (None: the shape's).
#[derive(Copy, Clone, Debug)]
struct Case {
    batch: usize,
    n: usize,
    k: usize,
    bias: bool,
    local: Option<u32>,
}

const fn case(batch: usize, n: usize, k: usize, bias: bool) -> Case {
    Case {
        batch,
        n,
        k,
        bias,
        local: None,
    }
}

/// Runs one float-weight case of kernel module `$m` in variant `$name` (chunks of `$chunk`
/// elements, 0: the format's 16 bytes) and compares with the reference.
macro_rules! float_case {
    ($m:ident, $ctx:expr, $name:expr, $c:expr, $seed:expr) => {{
        let (ctx, name, c, seed): (&Context, &str, Case, u64) = ($ctx, $name, $c, $seed);
        let k = ctx
            .load_with::<$m::Kernel>(&LoadOptions::variant_named(name).unwrap())
            .unwrap();
        let key = k.variant().key;
        let f = k.format_of("w_blob").unwrap();
        let s = GemvShape {
            batch: c.batch,
            n: c.n,
            k: c.k,
        };
        let w = random_in(c.n * c.k, seed, 0.1, 2.0);
        let x = random_in(c.batch * c.k, seed + 1, 0.1, 2.0);
        let bias = random_in(c.n, seed + 2, 0.1, 2.0);
        let wt = Tensor::from_f32(ctx, &[c.n, c.k], f, &w).unwrap();
        let xt = Tensor::from_f32(ctx, &[c.batch, c.k], f, &x).unwrap();
        let bt = Tensor::from_f32(ctx, &[c.n], f, &bias).unwrap();
        let yt = poisoned(ctx, &[c.batch, c.n], f);
        let chunk = if stringify!($m).ends_with("scalar") {
            1
        } else {
            GemvShape::chunk(f.size())
        };
        let local = c.local.map_or(s.local_size(chunk), |l| [l, 1, 1]);
        let pipe = k.pipeline(&s.spec(c.bias), Some(local)).unwrap();
        // The rotation's position, unread without it.
        let unread = Tensor::from_i32(ctx, &[1], &[0]).unwrap();
        ctx.run(|l| {
            l.dispatch(
                &pipe,
                &$m::BufferBindings {
                    w_blob: &wt,
                    x_blob: &xt,
                    bias_blob: &bt,
                    y_blob: &yt,
                    k_blob: &yt,
                    v_blob: &yt,
                    pos_blob: &unread,
                },
                &s.push(),
                s.grid(local),
            )
        })
        .unwrap();
        let bq = quantize(&bias, f);
        let (want, scale) = reference::gemv(
            c.n,
            c.k,
            &quantize(&w, f),
            &quantize(&x, f),
            c.bias.then_some(&bq[..]),
        );
        let (want, scale) = expected_in(&want, &scale, f);
        assert_close_scaled(
            &yt.download_f32().unwrap(),
            &want,
            &scale,
            tolerance(&key),
            &format!("{} {name} {c:?} local {local:?}", stringify!($m)),
        );
    }};
}

/// Runs one int8-weight case of kernel module `$m` in variant `$name` (a bias in x's format
/// added after the scale where the case has one).
macro_rules! int8_case {
    ($m:ident, $ctx:expr, $name:expr, $c:expr, $seed:expr) => {{
        let (ctx, name, c, seed): (&Context, &str, Case, u64) = ($ctx, $name, $c, $seed);
        let k = ctx
            .load_with::<$m::Kernel>(&LoadOptions::variant_named(name).unwrap())
            .unwrap();
        let key = k.variant().key;
        let f = k.format_of("x_blob").unwrap();
        let s = GemvShape {
            batch: c.batch,
            n: c.n,
            k: c.k,
        };
        let w = random_i8(c.n * c.k, seed);
        let scales = random_in(c.n, seed + 1, 1e-3, 2e-2);
        let x = random_in(c.batch * c.k, seed + 2, 0.1, 2.0);
        let wt = Tensor::from_i8(ctx, &[c.n, c.k], &w).unwrap();
        let st = Tensor::from_f32(ctx, &[c.n], TensorFormat::F32, &scales).unwrap();
        let xt = Tensor::from_f32(ctx, &[c.batch, c.k], f, &x).unwrap();
        let yt = poisoned(ctx, &[c.batch, c.n], f);
        let bias = quantize(&random_in(c.n, seed + 3, -1.0, 1.0), f);
        let bt = Tensor::from_f32(ctx, &[c.n], f, &bias).unwrap();
        let chunk = if stringify!($m).ends_with("scalar") {
            1
        } else {
            16
        };
        let local = c.local.map_or(s.local_size(chunk), |l| [l, 1, 1]);
        let pipe = k.pipeline(&s.spec(c.bias), Some(local)).unwrap();
        let unread = Tensor::from_i32(ctx, &[1], &[0]).unwrap();
        ctx.run(|l| {
            l.dispatch(
                &pipe,
                &$m::BufferBindings {
                    w_blob: &wt,
                    x_blob: &xt,
                    scale_blob: &st,
                    y_blob: &yt,
                    k_blob: &yt,
                    v_blob: &yt,
                    pos_blob: &unread,
                    bias_blob: &bt,
                },
                &s.push(),
                s.grid(local),
            )
        })
        .unwrap();
        let (mut want, mut scale) = reference::gemv_int8(c.n, c.k, &w, &scales, &quantize(&x, f));
        if c.bias {
            for (i, (y, e)) in want.iter_mut().zip(&mut scale).enumerate() {
                *y += bias[i % c.n];
                *e += bias[i % c.n].abs();
            }
        }
        let (want, scale) = expected_in(&want, &scale, f);
        assert_close_scaled(
            &yt.download_f32().unwrap(),
            &want,
            &scale,
            tolerance(&key),
            &format!("{} {name} {c:?} local {local:?}", stringify!($m)),
        );
    }};
}

/// Shapes whose K is a multiple of 8 (every wide float variant's chunk): N not a multiple of 4,
/// K below, at and past the workgroup's chunks, batches 1 to 8.
const WIDE: &[Case] = &[
    case(1, 1, 8, true),
    case(1, 5, 24, false),
    case(3, 37, 264, true),
    case(8, 130, 1032, true),
    case(2, 7, 4096, false),
    case(5, 3, 2056, true),
];

/// Any K.
const SCALAR: &[Case] = &[
    case(1, 3, 1, true),
    case(2, 9, 13, false),
    case(5, 33, 301, true),
    case(8, 6, 1003, true),
    case(1, 4, 257, false),
];

#[test]
fn gemv_every_variant() {
    let ctx = ctx();
    assert_eq!(
        gemv::VARIANT_NAMES,
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
    for name in gemv::VARIANT_NAMES {
        for (i, c) in WIDE.iter().enumerate() {
            float_case!(gemv, &ctx, name, *c, i as u64);
        }
        // Workgroups that are not powers of two, or smaller than a row's chunks.
        for local in [100, 33, 64] {
            let c = Case {
                local: Some(local),
                ..case(3, 37, 2048, true)
            };
            float_case!(gemv, &ctx, name, c, 20);
        }
    }
    assert_clean(&ctx);
}

#[test]
fn gemv_scalar_every_variant() {
    let ctx = ctx();
    assert_eq!(gemv_scalar::VARIANT_NAMES, gemv::VARIANT_NAMES);
    for name in gemv_scalar::VARIANT_NAMES {
        for (i, c) in SCALAR.iter().chain(WIDE).enumerate() {
            float_case!(gemv_scalar, &ctx, name, *c, 30 + i as u64);
        }
        let c = Case {
            local: Some(100),
            ..case(2, 11, 999, true)
        };
        float_case!(gemv_scalar, &ctx, name, c, 40);
    }
    assert_clean(&ctx);
}

/// More blocks of 4 rows than one z slice of the grid holds (32,768): the rest in z.
#[test]
fn gemv_spreads_many_rows_over_the_grid() {
    let ctx = ctx();
    let c = case(1, 4 * 32768 + 5, 8, true);
    float_case!(gemv, &ctx, "fp32_sg", c, 50);
    assert_clean(&ctx);
}

#[test]
fn gemv_int8_every_variant() {
    let ctx = ctx();
    assert_eq!(
        gemv_int8::VARIANT_NAMES,
        [
            "fp32_int8p_nosg",
            "fp32_int8p_sg",
            "fp16s_int8p_nosg",
            "fp16s_int8p_sg",
            "bf16s_int8p_nosg",
            "bf16s_int8p_sg"
        ]
    );
    let cases = [
        case(1, 5, 16, false),
        case(3, 37, 272, false),
        case(8, 67, 1024, false),
        case(2, 3, 4112, false),
    ];
    for name in gemv_int8::VARIANT_NAMES {
        for (i, c) in cases.iter().enumerate() {
            int8_case!(gemv_int8, &ctx, name, *c, 60 + i as u64);
        }
        let c = Case {
            local: Some(100),
            ..case(2, 9, 4096, false)
        };
        int8_case!(gemv_int8, &ctx, name, c, 70);
    }
    assert_clean(&ctx);
}

#[test]
fn gemv_int8_scalar_every_variant() {
    let ctx = ctx();
    // N · K a multiple of 4 (packed variants bind W as words), K any.
    let packed = [
        case(2, 4, 13, false),
        case(3, 12, 301, false),
        case(1, 1, 4, false),
        case(8, 20, 1001, false),
    ];
    // Any N · K, for 8-bit storage.
    let any = [case(1, 3, 5, false), case(4, 7, 259, false)];
    for name in gemv_int8_scalar::VARIANT_NAMES {
        let storage = name.contains("int8s");
        let extra: &[Case] = if storage { &any } else { &[] };
        for (i, c) in packed.iter().chain(extra).enumerate() {
            int8_case!(gemv_int8_scalar, &ctx, name, *c, 80 + i as u64);
        }
    }
    assert_clean(&ctx);
}

/// The operation layer, each format, wide and scalar kernels, a vector and a batch, with and
/// without a bias.
#[test]
fn gemv_ops_every_format() {
    let ctx = ctx();
    let ops = Ops::new(&ctx);
    for f in [TensorFormat::F32, TensorFormat::F16, TensorFormat::Bf16] {
        let tol = match f {
            TensorFormat::F32 => 1e-5,
            TensorFormat::F16 => 1e-2,
            _ => 8e-3,
        };
        for (x_shape, n, k, with_bias) in [
            (vec![512], 19, 512, true),
            (vec![3, 512], 6, 512, false),
            (vec![77], 10, 77, true),
            (vec![8, 77], 5, 77, true),
            // Many rows: workgroups of 128 reading two chunks of a row each.
            (vec![2048], GEMV_MANY_ROWS + 3, 2048, true),
        ] {
            let rows = if x_shape.len() == 2 { x_shape[0] } else { 1 };
            let w = random_in(n * k, 90, 0.1, 2.0);
            let x = random_in(rows * k, 91, 0.1, 2.0);
            let bias = random_in(n, 92, 0.1, 2.0);
            let wt = Tensor::from_f32(&ctx, &[n, k], f, &w).unwrap();
            let xt = Tensor::from_f32(&ctx, &x_shape, f, &x).unwrap();
            let bt = Tensor::from_f32(&ctx, &[n], f, &bias).unwrap();
            let y_shape = if rows > 1 { vec![rows, n] } else { vec![n] };
            let yt = poisoned(&ctx, &y_shape, f);
            let b = with_bias.then_some(&bt);
            match ops.run(|l| ops.gemv(l, &wt, &xt, b, &yt)) {
                Err(OpError::FormatUnsupported { .. }) => {
                    println!("gemv: the device runs no variant on {f:?}");
                    continue;
                }
                r => r.unwrap(),
            }
            let bq = quantize(&bias, f);
            let (want, scale) = reference::gemv(
                n,
                k,
                &quantize(&w, f),
                &quantize(&x, f),
                with_bias.then_some(&bq[..]),
            );
            let (want, scale) = expected_in(&want, &scale, f);
            assert_close_scaled(
                &yt.download_f32().unwrap(),
                &want,
                &scale,
                tol,
                &format!("gemv {f:?} x {x_shape:?} n {n} bias {with_bias}"),
            );
        }
    }
    assert_clean(&ctx);
}

#[test]
fn gemv_int8_ops_every_format() {
    let ctx = ctx();
    let ops = Ops::new(&ctx);
    for f in [TensorFormat::F32, TensorFormat::F16, TensorFormat::Bf16] {
        let tol = match f {
            TensorFormat::F32 => 1e-5,
            TensorFormat::F16 => 1e-2,
            _ => 8e-3,
        };
        for (x_shape, n, k) in [
            (vec![1024], 19, 1024),
            (vec![2, 1024], 6, 1024),
            (vec![3, 77], 4, 77),
            (vec![75], 5, 75),
        ] {
            let rows = if x_shape.len() == 2 { x_shape[0] } else { 1 };
            let w = random_i8(n * k, 93);
            let scales = random_in(n, 94, 1e-3, 2e-2);
            let x = random_in(rows * k, 95, 0.1, 2.0);
            let wt = Tensor::from_i8(&ctx, &[n, k], &w).unwrap();
            let st = Tensor::from_f32(&ctx, &[n], TensorFormat::F32, &scales).unwrap();
            let xt = Tensor::from_f32(&ctx, &x_shape, f, &x).unwrap();
            let y_shape = if rows > 1 { vec![rows, n] } else { vec![n] };
            let yt = poisoned(&ctx, &y_shape, f);
            match ops.run(|l| ops.gemv_int8(l, &wt, &st, &xt, &yt)) {
                Err(OpError::FormatUnsupported { .. }) => {
                    println!("gemv_int8: the device runs no variant on {f:?}");
                    continue;
                }
                r => r.unwrap(),
            }
            let (want, scale) = reference::gemv_int8(n, k, &w, &scales, &quantize(&x, f));
            let (want, scale) = expected_in(&want, &scale, f);
            assert_close_scaled(
                &yt.download_f32().unwrap(),
                &want,
                &scale,
                tol,
                &format!("gemv_int8 {f:?} x {x_shape:?} n {n}"),
            );
        }
    }
    assert_clean(&ctx);
}

fn shape_err(e: &OpError, op_want: &str, operand_want: &str) {
    assert!(
        matches!(e, OpError::Shape { op, operand, .. } if *op == op_want && *operand == operand_want),
        "{e}"
    );
}

#[test]
fn gemv_bad_operands_are_errors_and_record_nothing() {
    let ctx = ctx();
    let ops = Ops::new(&ctx);
    let t = |shape: &[usize], f: TensorFormat| {
        let n = shape.iter().product();
        Tensor::from_f32(&ctx, shape, f, &vec![1.0; n]).unwrap()
    };
    let f32t = |shape: &[usize]| t(shape, TensorFormat::F32);
    let (w, x, y) = (f32t(&[6, 8]), f32t(&[8]), f32t(&[6]));
    // W's rank, x's length, x's batch past 8, y's shape, the bias's length.
    let e = refused(ops.context(), |l| ops.gemv(l, &f32t(&[48]), &x, None, &y));
    shape_err(&e, "gemv", "w");
    let e = refused(ops.context(), |l| ops.gemv(l, &w, &f32t(&[7]), None, &y));
    shape_err(&e, "gemv", "x");
    let e = refused(ops.context(), |l| {
        ops.gemv(l, &w, &f32t(&[9, 8]), None, &f32t(&[9, 6]))
    });
    shape_err(&e, "gemv", "x");
    let e = refused(ops.context(), |l| ops.gemv(l, &w, &x, None, &f32t(&[1, 6])));
    shape_err(&e, "gemv", "y");
    let e = refused(ops.context(), |l| {
        ops.gemv(l, &w, &x, Some(&f32t(&[5])), &y)
    });
    shape_err(&e, "gemv", "bias");
    // Formats: x differs from W; W not a float.
    let e = refused(ops.context(), |l| {
        ops.gemv(l, &w, &t(&[8], TensorFormat::F16), None, &y)
    });
    assert!(
        matches!(
            e,
            OpError::Format {
                op: "gemv",
                operand: "x",
                ..
            }
        ),
        "{e}"
    );
    let wi = Tensor::from_i8(&ctx, &[6, 8], &[1; 48]).unwrap();
    let e = refused(ops.context(), |l| ops.gemv(l, &wi, &x, None, &y));
    assert!(
        matches!(
            e,
            OpError::Format {
                op: "gemv",
                operand: "w",
                ..
            }
        ),
        "{e}"
    );
    // y is x (a square W) or the bias.
    let sq = f32t(&[8, 8]);
    let e = refused(ops.context(), |l| ops.gemv(l, &sq, &x, None, &x));
    assert!(
        matches!(
            e,
            OpError::Aliased {
                op: "gemv",
                output: "y",
                other: "x"
            }
        ),
        "{e}"
    );
    let e = refused(ops.context(), |l| ops.gemv(l, &w, &x, Some(&y), &y));
    assert!(matches!(e, OpError::Aliased { other: "bias", .. }), "{e}");

    // int8: W not I8, the scales' format and length, x's format against y's, aliasing.
    let scales = f32t(&[6]);
    let e = refused(ops.context(), |l| ops.gemv_int8(l, &w, &scales, &x, &y));
    assert!(
        matches!(
            e,
            OpError::Format {
                op: "gemv_int8",
                operand: "w",
                ..
            }
        ),
        "{e}"
    );
    let e = refused(ops.context(), |l| {
        ops.gemv_int8(l, &wi, &t(&[6], TensorFormat::F16), &x, &y)
    });
    assert!(
        matches!(
            e,
            OpError::Format {
                operand: "scales",
                ..
            }
        ),
        "{e}"
    );
    let e = refused(ops.context(), |l| {
        ops.gemv_int8(l, &wi, &f32t(&[5]), &x, &y)
    });
    shape_err(&e, "gemv_int8", "scales");
    let e = refused(ops.context(), |l| {
        ops.gemv_int8(l, &wi, &scales, &x, &t(&[6], TensorFormat::Bf16))
    });
    assert!(matches!(e, OpError::Format { operand: "y", .. }), "{e}");
    let e = refused(ops.context(), |l| {
        ops.gemv_int8(l, &wi, &scales, &x, &scales)
    });
    assert!(
        matches!(
            e,
            OpError::Aliased {
                other: "scales",
                ..
            }
        ),
        "{e}"
    );
    let e = refused(ops.context(), |l| {
        ops.gemv_int8(l, &wi, &scales, &f32t(&[2, 7]), &y)
    });
    shape_err(&e, "gemv_int8", "x");
    assert_clean(&ctx);
}
