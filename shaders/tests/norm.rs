//! Layer norm, RMS norm and channels-last group norm ([`norm`]) in every variant the device
//! runs, against the f64 reference on random non-zero data, outputs poisoned; data offset by a
//! large mean in fp32; in place; and the operation layer's checks.

use vkprism::{Context, LoadOptions, Tensor, TensorFormat};
use vkprism_shaders::{norm, norm4, reference, NormShape, OpError, Ops};
use vkprism_testkit::{
    assert_clean, assert_close_scaled, ctx, quantize, random_in, refused, tolerance,
};

/// Which affine terms a case applies.
#[derive(Copy, Clone, Debug)]
struct Affine {
    gamma: bool,
    beta: bool,
}

const BOTH: Affine = Affine {
    gamma: true,
    beta: true,
};

/// Runs `s` in variant `name` on random data (`offset` added), gamma and beta as `affine`
/// says, and compares with the reference: [`norm`], and [`norm4`] where the rows are quads
/// (in its own workgroup, one invocation per quad).
#[allow(clippy::too_many_arguments)]
fn run_case(
    ctx: &Context,
    name: &str,
    s: NormShape,
    rms: bool,
    affine: Affine,
    offset: f32,
    seed: u64,
    local: Option<[u32; 3]>,
    in_place: bool,
) {
    let n = s.batch * s.hw * s.c;
    let x: Vec<f32> = random_in(n, seed, 0.1, 4.0)
        .iter()
        .map(|v| v + offset)
        .collect();
    let gamma = random_in(s.c, seed + 1, 0.5, 2.0);
    let beta = random_in(s.c, seed + 2, 0.1, 1.0);
    let load = LoadOptions::variant_named(name).unwrap();
    let k = ctx.load_with::<norm::Kernel>(&load).unwrap();
    let key = k.variant().key;
    let f = k.format_of("x_blob").unwrap();
    let local = local.unwrap_or(s.local_size());
    let shape = [s.batch, s.hw, s.c];
    let gt = Tensor::from_f32(ctx, &[s.c], f, &gamma).unwrap();
    let bt = Tensor::from_f32(ctx, &[s.c], f, &beta).unwrap();
    let spec = norm::SpecConstants {
        rms: rms as i32,
        gamma_term: affine.gamma as i32,
        beta_term: affine.beta as i32,
    };
    let eps = 1e-5;
    let (gq, bq) = (quantize(&gamma, f), quantize(&beta, f));
    let (want, scale) = reference::norm(
        s.batch,
        s.hw,
        s.c,
        s.groups,
        rms,
        affine.gamma.then_some(&gq[..]),
        affine.beta.then_some(&bq[..]),
        eps,
        &quantize(&x, f),
    );
    let quads = s.hw == 1 && s.groups == 1 && s.c.is_multiple_of(4);
    for four in [false, quads] {
        let xt = Tensor::from_f32(ctx, &shape, f, &x).unwrap();
        let yt = Tensor::from_f32(ctx, &shape, f, &vec![f32::NAN; n]).unwrap();
        let out = if in_place { &xt } else { &yt };
        if four {
            let k4 = ctx.load_with::<norm4::Kernel>(&load).unwrap();
            let local = s.local_size_quads();
            let pipe = k4.pipeline(&spec, Some(local)).unwrap();
            let b = norm4::BufferBindings {
                x_blob: &xt,
                gamma_blob: &gt,
                beta_blob: &bt,
                y_blob: out,
            };
            ctx.run(|l| l.dispatch(&pipe, &b, &s.push(eps), s.grid(local)))
                .unwrap();
        } else {
            let pipe = k.pipeline(&spec, Some(local)).unwrap();
            let b = norm::BufferBindings {
                x_blob: &xt,
                gamma_blob: &gt,
                beta_blob: &bt,
                y_blob: out,
            };
            ctx.run(|l| l.dispatch(&pipe, &b, &s.push(eps), s.grid(local)))
                .unwrap();
        }
        let what = format!(
            "{name} quads {four} {s:?} rms {rms} {affine:?} offset {offset} local {local:?} in place {in_place}"
        );
        let got = out.download_f32().unwrap();
        assert_close_scaled(&got, &quantize(&want, f), &scale, tolerance(&key), &what);
    }
}

fn rows(batch: usize, c: usize) -> NormShape {
    NormShape {
        batch,
        hw: 1,
        c,
        groups: 1,
    }
}

/// Rows of 1, 3, 257, 1000, 4099, 4096, 4 values, many rows (1000, 4096 and 4 also as quads).
const ROWS: &[(usize, usize)] = &[
    (5, 1),
    (300, 3),
    (9, 257),
    (4, 1000),
    (3, 4099),
    (2000, 7),
    (3, 4096),
    (70, 4),
];

fn rows_every_variant(rms: bool) {
    let ctx = ctx();
    assert_eq!(
        norm::VARIANT_NAMES,
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
    let affines = [
        BOTH,
        Affine {
            gamma: true,
            beta: false,
        },
        Affine {
            gamma: false,
            beta: rms,
        },
    ];
    for name in norm::VARIANT_NAMES {
        for (i, (batch, c)) in ROWS.iter().enumerate() {
            for (j, affine) in affines.iter().enumerate() {
                // A row of one value has no variance: layer norm gives beta alone.
                let seed = 10 * i as u64 + j as u64;
                run_case(
                    &ctx,
                    name,
                    rows(*batch, *c),
                    rms,
                    *affine,
                    0.0,
                    seed,
                    None,
                    false,
                );
            }
        }
        run_case(
            &ctx,
            name,
            rows(6, 1000),
            rms,
            BOTH,
            0.0,
            1,
            Some([100, 1, 1]),
            false,
        );
        run_case(
            &ctx,
            name,
            rows(5, 4099),
            rms,
            BOTH,
            0.0,
            2,
            Some([7, 1, 1]),
            true,
        );
    }
    assert_clean(&ctx);
}

#[test]
fn layer_norm() {
    rows_every_variant(false);
}

#[test]
fn rms_norm() {
    rows_every_variant(true);
}

#[test]
fn group_norm() {
    let ctx = ctx();
    // NHWC: [batch, h·w, c] with groups dividing c (cpg 1, 3, 4, c).
    let shapes = [
        NormShape {
            batch: 2,
            hw: 5 * 7,
            c: 12,
            groups: 4,
        },
        NormShape {
            batch: 3,
            hw: 9 * 9,
            c: 6,
            groups: 6,
        },
        NormShape {
            batch: 1,
            hw: 33 * 31,
            c: 8,
            groups: 2,
        },
        NormShape {
            batch: 4,
            hw: 4,
            c: 5,
            groups: 1,
        },
    ];
    for name in norm::VARIANT_NAMES {
        for (i, s) in shapes.iter().enumerate() {
            run_case(&ctx, name, *s, false, BOTH, 0.0, 50 + i as u64, None, false);
        }
        run_case(
            &ctx,
            name,
            shapes[0],
            false,
            BOTH,
            0.0,
            60,
            Some([100, 1, 1]),
            true,
        );
    }
    assert_clean(&ctx);
}

/// Data offset by a large mean (1000 + noise in ±[0.1, 4]) in fp32: one pass of Σx² - (Σx)²/n
/// would lose most of the variance to cancellation; the centred two passes keep fp32's
/// tolerance.
#[test]
fn norms_of_data_with_a_large_mean_are_accurate() {
    let ctx = ctx();
    // Both reduction paths: subgroups and shared memory alone.
    for name in ["fp32_sg", "fp32_nosg"] {
        for s in [
            rows(4, 4099),
            rows(200, 3),
            NormShape {
                batch: 2,
                hw: 100,
                c: 12,
                groups: 3,
            },
        ] {
            run_case(&ctx, name, s, false, BOTH, 1000.0, 70, None, false);
            run_case(&ctx, name, s, false, BOTH, -3000.0, 71, None, true);
        }
        run_case(
            &ctx,
            name,
            rows(4, 4099),
            true,
            BOTH,
            1000.0,
            72,
            None,
            false,
        );
    }
    assert_clean(&ctx);
}

/// Through the operation layer, each format, in place and not: layer norm of `[2, 3, 1000]`,
/// RMS norm of `[7, 257]`, group norm of `[2, 5, 6, 12]` in 4 groups.
#[test]
fn norm_ops_every_format_in_place() {
    let ctx = ctx();
    let ops = Ops::new(&ctx);
    let eps = 1e-5;
    for format in [TensorFormat::F32, TensorFormat::F16, TensorFormat::Bf16] {
        let tol = match format {
            TensorFormat::F32 => 1e-5,
            TensorFormat::F16 => 1e-2,
            _ => 8e-3,
        };
        for (what, shape, s, rms) in [
            ("layer_norm", vec![2, 3, 1000], rows(6, 1000), false),
            ("rms_norm", vec![7, 257], rows(7, 257), true),
            (
                "group_norm",
                vec![2, 5, 6, 12],
                NormShape {
                    batch: 2,
                    hw: 30,
                    c: 12,
                    groups: 4,
                },
                false,
            ),
        ] {
            let n: usize = shape.iter().product();
            let x = random_in(n, 80, 0.1, 4.0);
            let gamma = random_in(s.c, 81, 0.5, 2.0);
            let beta = random_in(s.c, 82, 0.1, 1.0);
            let xt = Tensor::from_f32(&ctx, &shape, format, &x).unwrap();
            let gt = Tensor::from_f32(&ctx, &[s.c], format, &gamma).unwrap();
            let bt = Tensor::from_f32(&ctx, &[s.c], format, &beta).unwrap();
            let yt = Tensor::from_f32(&ctx, &shape, format, &vec![f32::NAN; n]).unwrap();
            let (gq, bq) = (quantize(&gamma, format), quantize(&beta, format));
            let beta_used = (!rms).then_some(&bq[..]);
            let (want, scale) = reference::norm(
                s.batch,
                s.hw,
                s.c,
                s.groups,
                rms,
                Some(&gq),
                beta_used,
                eps,
                &quantize(&x, format),
            );
            let want = quantize(&want, format);
            for out in [&yt, &xt] {
                ops.run(|l| match what {
                    "layer_norm" => ops.layer_norm(l, &xt, Some(&gt), Some(&bt), out, eps),
                    "rms_norm" => ops.rms_norm(l, &xt, Some(&gt), out, eps),
                    _ => ops.group_norm(l, &xt, 4, Some(&gt), Some(&bt), out, eps),
                })
                .unwrap();
                let place = if std::ptr::eq(out, &xt) {
                    "in place"
                } else {
                    "out of place"
                };
                assert_close_scaled(
                    &out.download_f32().unwrap(),
                    &want,
                    &scale,
                    tol,
                    &format!("{what} {format:?} {place}"),
                );
            }
        }
    }
    assert_clean(&ctx);
}

#[test]
fn norm_shape_format_and_alias_mismatches_are_errors_and_record_nothing() {
    let ctx = ctx();
    let ops = Ops::new(&ctx);
    let t = |shape: &[usize], f: TensorFormat| {
        let n = shape.iter().product();
        Tensor::from_f32(&ctx, shape, f, &vec![1.0; n]).unwrap()
    };
    let f32t = |shape: &[usize]| t(shape, TensorFormat::F32);
    let x = f32t(&[4, 6]);
    let (g, b) = (f32t(&[6]), f32t(&[6]));
    // y's shape, gamma's and beta's length.
    let e = refused(ops.context(), |l| {
        ops.layer_norm(l, &x, Some(&g), Some(&b), &f32t(&[6, 4]), 1e-5)
    });
    assert!(
        matches!(
            e,
            OpError::Shape {
                op: "layer_norm",
                operand: "y",
                ..
            }
        ),
        "{e}"
    );
    let e = refused(ops.context(), |l| {
        ops.layer_norm(l, &x, Some(&f32t(&[4])), None, &f32t(&[4, 6]), 1e-5)
    });
    assert!(
        matches!(
            e,
            OpError::Shape {
                operand: "gamma",
                ..
            }
        ),
        "{e}"
    );
    let e = refused(ops.context(), |l| {
        ops.layer_norm(l, &x, None, Some(&f32t(&[7])), &x, 1e-5)
    });
    assert!(
        matches!(
            e,
            OpError::Shape {
                operand: "beta",
                ..
            }
        ),
        "{e}"
    );
    let e = refused(ops.context(), |l| {
        ops.rms_norm(l, &x, Some(&f32t(&[1, 6])), &x, 1e-5)
    });
    assert!(
        matches!(
            e,
            OpError::Shape {
                op: "rms_norm",
                operand: "gamma",
                ..
            }
        ),
        "{e}"
    );
    // Formats.
    let e = refused(ops.context(), |l| {
        ops.rms_norm(l, &x, Some(&t(&[6], TensorFormat::F16)), &x, 1e-5)
    });
    assert!(
        matches!(
            e,
            OpError::Format {
                operand: "gamma",
                ..
            }
        ),
        "{e}"
    );
    let e = refused(ops.context(), |l| {
        ops.layer_norm(l, &x, None, None, &t(&[4, 6], TensorFormat::Bf16), 1e-5)
    });
    assert!(matches!(e, OpError::Format { operand: "y", .. }), "{e}");
    // The output over gamma (in place over x is allowed, over a parameter not).
    let e = refused(ops.context(), |l| ops.rms_norm(l, &g, Some(&g), &g, 1e-5));
    assert!(
        matches!(
            e,
            OpError::Aliased {
                output: "y",
                other: "gamma",
                ..
            }
        ),
        "{e}"
    );
    // Group norm: not NHWC, groups not dividing c, no groups.
    let e = refused(ops.context(), |l| {
        ops.group_norm(l, &x, 2, None, None, &x, 1e-5)
    });
    assert!(
        matches!(
            e,
            OpError::Shape {
                op: "group_norm",
                operand: "x",
                ..
            }
        ),
        "{e}"
    );
    let x4 = f32t(&[1, 2, 2, 6]);
    let e = refused(ops.context(), |l| {
        ops.group_norm(l, &x4, 4, None, None, &x4, 1e-5)
    });
    assert!(
        matches!(
            e,
            OpError::Unsupported {
                op: "group_norm",
                ..
            }
        ),
        "{e}"
    );
    assert!(
        e.to_string().contains("4 groups don't divide 6 channels"),
        "{e}"
    );
    let e = refused(ops.context(), |l| {
        ops.group_norm(l, &x4, 0, None, None, &x4, 1e-5)
    });
    assert!(matches!(e, OpError::Unsupported { .. }), "{e}");
    let e = refused(ops.context(), |l| {
        ops.group_norm(l, &x4, 3, Some(&f32t(&[3])), None, &x4, 1e-5)
    });
    assert!(
        matches!(
            e,
            OpError::Shape {
                operand: "gamma",
                ..
            }
        ),
        "{e}"
    );
    assert_clean(&ctx);
}
