//! Channels-last pooling ([`pool2d`], [`pool2d4`]: max and average; [`global_avg_pool`],
//! [`global_avg_pool4`]) in every variant, against the f64 reference on random non-zero data,
//! outputs poisoned; odd sizes, strides, paddings, channel counts not multiples of 4, a grid
//! smaller than the outputs; and the operation layer with its checks.

use vkprism::{Context, LoadOptions, Tensor, TensorFormat};
use vkprism_shaders::{
    global_avg_pool, global_avg_pool4, pool2d, pool2d4, reference, GlobalPoolShape, OpError, Ops,
    Pool2d, Pool2dShape,
};
use vkprism_testkit::{
    assert_clean, assert_close_scaled, ctx, expected_in, poisoned, quantize, random_in, refused,
    tolerance,
};

/// One window pool of `s` in kernel module `$m` (`pool2d`, or `pool2d4` with `$quads`), variant
/// `name`, against the reference; `grid` invocations where given, else the shape's.
macro_rules! pool_case {
    ($m:ident, $quads:expr, $ctx:expr, $name:expr, $s:expr, $max:expr, $grid:expr, $seed:expr) => {{
        let (ctx, name, s, max, grid, seed): (&Context, &str, Pool2dShape, bool, Option<u32>, u64) =
            ($ctx, $name, $s, $max, $grid, $seed);
        let k = ctx
            .load_with::<$m::Kernel>(&LoadOptions::variant_named(name).unwrap())
            .unwrap();
        let f = k.format_of("x_blob").unwrap();
        let x = random_in(s.batch * s.h * s.w * s.c, seed, 0.1, 4.0);
        let xt = Tensor::from_f32(ctx, &[s.batch, s.h, s.w, s.c], f, &x).unwrap();
        let yt = poisoned(ctx, &s.out_shape(), f);
        let pipe = k
            .pipeline(
                &pool2d::SpecConstants { op: (!max) as i32 },
                Some(s.local_size()),
            )
            .unwrap();
        let grid = grid.map_or(s.grid_in($quads), |g| [g, 1, 1]);
        ctx.run(|l| {
            l.dispatch(
                &pipe,
                &$m::BufferBindings {
                    x_blob: &xt,
                    y_blob: &yt,
                },
                &s.push_in($quads),
                grid,
            )
        })
        .unwrap();
        let (want, scale) = reference::pool2d(s, max, &quantize(&x, f));
        let (want, scale) = expected_in(&want, &scale, f);
        assert_close_scaled(
            &yt.download_f32().unwrap(),
            &want,
            &scale,
            tolerance(&k.variant().key),
            &format!("{} {name} {s:?} max {max} grid {grid:?}", stringify!($m)),
        );
    }};
}

const fn window(
    batch: usize,
    h: usize,
    w: usize,
    c: usize,
    kernel: (usize, usize),
    stride: (usize, usize),
    padding: (usize, usize),
) -> Pool2dShape {
    Pool2dShape {
        batch,
        h,
        w,
        c,
        kernel,
        stride,
        padding,
    }
}

/// ResNet's stem pool (3×3, stride 2, padding 1), 2×2 stride 2, rectangular windows and
/// strides, padding on one axis, odd sizes and channel counts.
const WINDOWS: &[Pool2dShape] = &[
    window(1, 13, 11, 8, (3, 3), (2, 2), (1, 1)),
    window(2, 8, 8, 3, (2, 2), (2, 2), (0, 0)),
    window(1, 9, 7, 5, (3, 2), (1, 2), (1, 0)),
    window(3, 5, 6, 1, (5, 3), (1, 1), (2, 1)),
    window(1, 1, 1, 7, (1, 1), (1, 1), (0, 0)),
    window(2, 10, 9, 12, (3, 3), (2, 2), (1, 1)),
    window(1, 7, 8, 4, (2, 3), (1, 2), (0, 1)),
];

#[test]
fn pool2d_every_variant() {
    let ctx = ctx();
    assert_eq!(pool2d::VARIANT_NAMES, ["fp32", "fp16s", "fp16sa", "bf16s"]);
    assert_eq!(pool2d4::VARIANT_NAMES, pool2d::VARIANT_NAMES);
    for name in pool2d::VARIANT_NAMES {
        for (i, s) in WINDOWS.iter().enumerate() {
            for max in [true, false] {
                let seed = 2 * i as u64 + max as u64;
                pool_case!(pool2d, false, &ctx, name, *s, max, None, seed);
                if s.vec4() {
                    pool_case!(pool2d4, true, &ctx, name, *s, max, None, seed);
                }
            }
        }
        // Fewer invocations than outputs (quads): each takes several.
        for max in [true, false] {
            let seed = 20 + max as u64;
            pool_case!(pool2d, false, &ctx, name, WINDOWS[0], max, Some(256), seed);
            pool_case!(pool2d4, true, &ctx, name, WINDOWS[5], max, Some(256), seed);
        }
    }
    assert_clean(&ctx);
}

macro_rules! global_case {
    ($m:ident, $vec4:expr, $ctx:expr, $name:expr, $s:expr, $seed:expr) => {{
        let (ctx, name, s, seed): (&Context, &str, GlobalPoolShape, u64) = ($ctx, $name, $s, $seed);
        let k = ctx
            .load_with::<$m::Kernel>(&LoadOptions::variant_named(name).unwrap())
            .unwrap();
        let f = k.format_of("x_blob").unwrap();
        let x = random_in(s.batch * s.hw * s.c, seed, 0.1, 4.0);
        let xt = Tensor::from_f32(ctx, &[s.batch, s.hw, s.c], f, &x).unwrap();
        let yt = poisoned(ctx, &[s.batch, s.c], f);
        let local = s.local_size();
        let pipe = k.pipeline(&Default::default(), Some(local)).unwrap();
        ctx.run(|l| {
            l.dispatch(
                &pipe,
                &$m::BufferBindings {
                    x_blob: &xt,
                    y_blob: &yt,
                },
                &s.push($vec4),
                s.grid(local, $vec4),
            )
        })
        .unwrap();
        let (want, scale) = reference::global_avg_pool(s.batch, s.hw, s.c, &quantize(&x, f));
        let (want, scale) = expected_in(&want, &scale, f);
        assert_close_scaled(
            &yt.download_f32().unwrap(),
            &want,
            &scale,
            tolerance(&k.variant().key),
            &format!("{} {name} {s:?}", stringify!($m)),
        );
    }};
}

const fn global(batch: usize, hw: usize, c: usize) -> GlobalPoolShape {
    GlobalPoolShape { batch, hw, c }
}

#[test]
fn global_avg_pool_every_variant() {
    let ctx = ctx();
    assert_eq!(
        global_avg_pool::VARIANT_NAMES,
        ["fp32", "fp16s", "fp16sa", "bf16s"]
    );
    assert_eq!(
        global_avg_pool4::VARIANT_NAMES,
        global_avg_pool::VARIANT_NAMES
    );
    // ResNet's head, one pixel, odd pixel counts, channels past a workgroup.
    let vec4 = [
        global(2, 49, 2048),
        global(1, 1, 4),
        global(3, 3 * 5, 20),
        global(1, 300, 36),
    ];
    let any = [
        global(2, 49, 7),
        global(1, 1, 1),
        global(4, 11 * 13, 300),
        global(1, 17, 3),
    ];
    for name in global_avg_pool::VARIANT_NAMES {
        for (i, s) in vec4.iter().enumerate() {
            global_case!(global_avg_pool4, true, &ctx, name, *s, i as u64);
            global_case!(global_avg_pool, false, &ctx, name, *s, 10 + i as u64);
        }
        for (i, s) in any.iter().enumerate() {
            global_case!(global_avg_pool, false, &ctx, name, *s, 20 + i as u64);
        }
    }
    assert_clean(&ctx);
}

#[test]
fn pool_ops_every_format() {
    let ctx = ctx();
    let ops = Ops::new(&ctx);
    for f in [TensorFormat::F32, TensorFormat::F16, TensorFormat::Bf16] {
        let tol = match f {
            TensorFormat::F32 => 1e-5,
            TensorFormat::F16 => 1e-3,
            _ => 8e-3,
        };
        // c not a multiple of 4 (pool2d) and one (pool2d4).
        for (b, h, w, c, max) in [6, 8]
            .into_iter()
            .flat_map(|c| [(2, 9, 10, c, true), (2, 9, 10, c, false)])
        {
            let x = random_in(b * h * w * c, 30, 0.1, 4.0);
            let xq = quantize(&x, f);
            let xt = Tensor::from_f32(&ctx, &[b, h, w, c], f, &x).unwrap();
            let op = Pool2d::new(3, 3).with_stride(2, 2).with_padding(1, 1);
            let s = window(b, h, w, c, (3, 3), (2, 2), (1, 1));
            let yt = poisoned(&ctx, &s.out_shape(), f);
            let r = ops.run(|l| {
                if max {
                    ops.max_pool2d(l, &xt, &yt, &op)
                } else {
                    ops.avg_pool2d(l, &xt, &yt, &op)
                }
            });
            if let Err(OpError::FormatUnsupported { .. }) = r {
                println!("pool: the device runs no variant on {f:?}");
                return;
            }
            r.unwrap();
            let (want, scale) = reference::pool2d(s, max, &xq);
            let (want, scale) = expected_in(&want, &scale, f);
            let what = format!("pool {f:?} c {c} max {max}");
            assert_close_scaled(&yt.download_f32().unwrap(), &want, &scale, tol, &what);
        }
        // Both output shapes; c a multiple of 4 and not.
        for (c, y_shape) in [(8, vec![2, 8]), (6, vec![2, 1, 1, 6])] {
            let x = random_in(2 * 7 * 7 * c, 31, 0.1, 4.0);
            let xt = Tensor::from_f32(&ctx, &[2, 7, 7, c], f, &x).unwrap();
            let yt = poisoned(&ctx, &y_shape, f);
            ops.run(|l| ops.global_avg_pool(l, &xt, &yt)).unwrap();
            let (want, scale) = reference::global_avg_pool(2, 49, c, &quantize(&x, f));
            let (want, scale) = expected_in(&want, &scale, f);
            let what = format!("global_avg_pool {f:?} c {c}");
            assert_close_scaled(&yt.download_f32().unwrap(), &want, &scale, tol, &what);
        }
    }
    assert_clean(&ctx);
}

#[test]
fn pool_bad_operands_are_errors_and_record_nothing() {
    let ctx = ctx();
    let ops = Ops::new(&ctx);
    let t = |shape: &[usize], f: TensorFormat| {
        let n = shape.iter().product();
        Tensor::from_f32(&ctx, shape, f, &vec![1.0; n]).unwrap()
    };
    let f32t = |shape: &[usize]| t(shape, TensorFormat::F32);
    let x = f32t(&[1, 6, 6, 4]);
    let op = Pool2d::new(2, 2);
    let y = f32t(&[1, 3, 3, 4]);
    let e = refused(ops.context(), |l| {
        ops.max_pool2d(l, &f32t(&[6, 6, 4]), &y, &op)
    });
    assert!(
        matches!(
            e,
            OpError::Shape {
                op: "max_pool2d",
                operand: "x",
                ..
            }
        ),
        "{e}"
    );
    let e = refused(ops.context(), |l| {
        ops.avg_pool2d(l, &x, &f32t(&[1, 3, 2, 4]), &op)
    });
    assert!(
        matches!(
            e,
            OpError::Shape {
                op: "avg_pool2d",
                operand: "y",
                ..
            }
        ),
        "{e}"
    );
    let e = refused(ops.context(), |l| {
        ops.max_pool2d(l, &x, &t(&[1, 3, 3, 4], TensorFormat::F16), &op)
    });
    assert!(matches!(e, OpError::Format { operand: "y", .. }), "{e}");
    let xi = Tensor::from_i32(&ctx, &[1, 6, 6, 4], &[1; 144]).unwrap();
    let e = refused(ops.context(), |l| ops.max_pool2d(l, &xi, &y, &op));
    assert!(matches!(e, OpError::Format { operand: "x", .. }), "{e}");
    // Padding past half the window, a zero stride, a window larger than the input.
    for bad in [
        Pool2d::new(2, 2).with_padding(2, 0),
        Pool2d::new(2, 2).with_stride(0, 1),
        Pool2d::new(7, 7),
    ] {
        let e = refused(ops.context(), |l| ops.avg_pool2d(l, &x, &y, &bad));
        assert!(
            matches!(
                e,
                OpError::Unsupported {
                    op: "avg_pool2d",
                    ..
                }
            ),
            "{bad:?}: {e}"
        );
    }
    // y is x (a 1×1 window of stride 1 keeps the shape).
    let e = refused(ops.context(), |l| {
        ops.max_pool2d(l, &x, &x, &Pool2d::new(1, 1))
    });
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
    // Global: x's rank, y's shape, y's format, y is x.
    let e = refused(ops.context(), |l| {
        ops.global_avg_pool(l, &f32t(&[36, 4]), &f32t(&[1, 4]))
    });
    assert!(
        matches!(
            e,
            OpError::Shape {
                op: "global_avg_pool",
                operand: "x",
                ..
            }
        ),
        "{e}"
    );
    let e = refused(ops.context(), |l| ops.global_avg_pool(l, &x, &f32t(&[4])));
    assert!(matches!(e, OpError::Shape { operand: "y", .. }), "{e}");
    let e = refused(ops.context(), |l| {
        ops.global_avg_pool(l, &x, &t(&[1, 4], TensorFormat::Bf16))
    });
    assert!(matches!(e, OpError::Format { operand: "y", .. }), "{e}");
    let one = f32t(&[1, 1, 1, 4]);
    let e = refused(ops.context(), |l| ops.global_avg_pool(l, &one, &one));
    assert!(matches!(e, OpError::Aliased { .. }), "{e}");
    assert_clean(&ctx);
}
