//! `gemm_cm2` (workgroup-scope cooperative matrices, `VK_NV_cooperative_matrix2`) in every
//! variant against the CPU reference, on random non-zero data with C poisoned: edges that are
//! not multiples of a tile, both transposes, bias and every activation, workgroups of 256 and
//! 128 invocations, a K loop with steps left over after its unrolled part, sizes fixed at
//! pipeline creation or pushed, a batch with a shared B. On a device without the extension's
//! features each variant must be refused for them (lavapipe), with the validation layer on
//! either way.

use vkprism::{CommandList, LoadOptions, Tensor, TensorFormat};
use vkprism_shaders::{gemm_cm2, reference, Activation, Cm2Tiles, Gemm, Ops, CM2_MIN_PRODUCT};
use vkprism_testkit::{
    assert_clean, assert_close_scaled as check, ctx, device_lacks_cooperative_matrix2,
    device_lacks_matrices_for, load_unless_device_lacks_matrices, quantize, random_in as random,
    tolerance,
};

/// One problem: sizes, batch, options and tiles.
struct Case {
    m: usize,
    n: usize,
    k: usize,
    batch: usize,
    /// B is one matrix every product shares.
    shared_b: bool,
    o: reference::Gemm,
    bias: bool,
    /// C's value before is added times this (0: C is poisoned and not read).
    beta: f32,
    tiles: Cm2Tiles,
}

fn tiles(bm: u32, bn: u32, bk: u32, unroll: u32, fixed_sizes: bool) -> Cm2Tiles {
    Cm2Tiles {
        bm,
        bn,
        bk,
        unroll,
        fixed_sizes,
        threads: 256,
        split_k: 1,
    }
}

fn run_case(ctx: &vkprism::Context, case: &Case, seed: u64) -> usize {
    let Case { m, n, k, batch, .. } = *case;
    let o = case.o;
    let b_count = if case.shared_b { 1 } else { batch };
    let a = random(batch * m * k, seed, -1.0, 1.0);
    let b = random(b_count * k * n, seed + 1, -1.0, 1.0);
    let bias = random(n, seed + 2, -1.0, 1.0);
    let before = match case.beta {
        0.0 => vec![f32::NAN; batch * m * n],
        _ => random(batch * m * n, seed + 3, -1.0, 1.0),
    };
    let a_shape = if o.transpose_a {
        [batch, k, m]
    } else {
        [batch, m, k]
    };
    let b_shape = if o.transpose_b {
        [b_count, n, k]
    } else {
        [b_count, k, n]
    };
    let mut ran = 0;
    for name in gemm_cm2::VARIANT_NAMES {
        let Some(kernel) = load_unless_device_lacks_matrices::<gemm_cm2::Kernel>(ctx, name) else {
            continue;
        };
        let key = kernel.variant().key;
        let f = kernel.format_of("a_blob").unwrap();
        // Matrices the device does not list give undefined results, not errors.
        let operands = match f {
            TensorFormat::Bf16 => vkprism::ScalarKind::Bf16,
            _ => vkprism::ScalarKind::F16,
        };
        if !case.tiles.offered_by(ctx.features(), operands) {
            eprintln!(
                "{name} {m}x{n}x{k}: {:?} not offered here, skipped",
                case.tiles
            );
            continue;
        }
        let at = Tensor::from_f32(ctx, &a_shape, f, &a).unwrap();
        let bt = Tensor::from_f32(ctx, &b_shape, f, &b).unwrap();
        let biast = Tensor::from_f32(ctx, &[n], f, &bias).unwrap();
        let ct = Tensor::from_f32(ctx, &[batch, m, n], f, &before).unwrap();
        let spec = case.tiles.spec(
            (m, n, k),
            gemm_cm2::SpecConstants {
                transpose_a: o.transpose_a as i32,
                transpose_b: o.transpose_b as i32,
                bias_term: case.bias as i32,
                activation: o.activation,
                batched: (batch > 1) as i32,
                beta_term: (case.beta != 0.0) as i32,
                ..Default::default()
            },
        );
        let pipe = kernel
            .pipeline(&spec, Some(case.tiles.local_size()))
            .unwrap();
        let push = gemm_cm2::PushConstants {
            M: m as i32,
            N: n as i32,
            K: k as i32,
            alpha: o.alpha,
            slope: o.slope,
            batch_a: (m * k) as i32,
            batch_b: if case.shared_b { 0 } else { (k * n) as i32 },
            batch_c: (m * n) as i32,
            beta: case.beta,
        };
        let bindings = gemm_cm2::BufferBindings {
            a_blob: &at,
            b_blob: &bt,
            bias_blob: &biast,
            c_blob: &ct,
        };
        let grid = case.tiles.grid(m, n, batch);
        ctx.run(|l| l.dispatch(&pipe, &bindings, &push, grid))
            .unwrap();
        let got = ct.download_f32().unwrap();
        let q = |x: &[f32]| quantize(x, f);
        let bias_q = q(&bias);
        for z in 0..batch {
            let bz = if case.shared_b { 0 } else { z };
            let (want, scale) = reference::gemm_with(
                o,
                m,
                n,
                k,
                &q(&a[z * m * k..(z + 1) * m * k]),
                &q(&b[bz * k * n..(bz + 1) * k * n]),
                case.bias.then_some(&bias_q[..]),
            );
            // beta · C before (the cases with beta have no activation).
            let before = q(&before[z * m * n..(z + 1) * m * n]);
            let want: Vec<f32> = want
                .iter()
                .zip(&before)
                .map(|(w, c)| match case.beta {
                    0.0 => *w,
                    beta => w + beta * c,
                })
                .collect();
            // C is stored in fp16: its rounding is relative to |C|.
            let scale: Vec<f32> = scale
                .iter()
                .zip(&want)
                .map(|(s, w)| s.max(w.abs()))
                .collect();
            check(
                &got[z * m * n..(z + 1) * m * n],
                &q(&want),
                &scale,
                tolerance(&key),
                &format!("{name} {m}x{n}x{k} product {z} {o:?} bias {}", case.bias),
            );
        }
        ran += 1;
    }
    ran
}

#[test]
fn gemm_cm2_every_variant() {
    let ctx = ctx();
    assert_eq!(
        gemm_cm2::VARIANT_NAMES,
        ["fp16s_cm", "fp16sa_cm", "bf16s_cm"]
    );
    let plain = reference::Gemm {
        alpha: 1.0,
        ..Default::default()
    };
    let cases = [
        // Whole tiles, the default choice for the shape; C before added times 0.5.
        Case {
            m: 256,
            n: 512,
            k: 320,
            batch: 1,
            shared_b: false,
            o: plain,
            bias: false,
            beta: 0.5,
            tiles: Cm2Tiles::for_problem(256, 512, 320),
        },
        // Edges on every side (the tiles shifted off them, the first step of K short), B
        // stored N×K, bias and relu; K's 4 steps run as one unrolled group of 3 and one left
        // over.
        Case {
            m: 100,
            n: 136,
            k: 200,
            batch: 1,
            shared_b: false,
            o: reference::Gemm {
                transpose_b: true,
                alpha: 0.5,
                activation: 1,
                ..plain
            },
            bias: true,
            beta: 0.0,
            tiles: tiles(64, 128, 64, 3, true),
        },
        // A stored K×M, leaky relu, sizes pushed rather than fixed.
        Case {
            m: 72,
            n: 40,
            k: 96,
            batch: 1,
            shared_b: false,
            o: reference::Gemm {
                transpose_a: true,
                activation: 2,
                slope: 0.1,
                ..plain
            },
            bias: true,
            beta: 0.0,
            tiles: tiles(64, 128, 32, 2, false),
        },
        // A batch of 3 sharing B, sigmoid, both transposes.
        Case {
            m: 48,
            n: 64,
            k: 80,
            batch: 3,
            shared_b: true,
            o: reference::Gemm {
                transpose_a: true,
                transpose_b: true,
                activation: 3,
                ..plain
            },
            bias: false,
            beta: 0.0,
            tiles: tiles(128, 128, 16, 1, true),
        },
        // GELU on a workgroup of 128 invocations.
        Case {
            m: 144,
            n: 160,
            k: 128,
            batch: 1,
            shared_b: false,
            o: reference::Gemm {
                transpose_b: true,
                activation: 4,
                ..plain
            },
            bias: true,
            beta: 0.0,
            tiles: Cm2Tiles {
                threads: 128,
                ..tiles(128, 128, 64, 8, true)
            },
        },
        // A residual added in place (beta 1) with a bias, B stored N×K, sizes pushed.
        Case {
            m: 72,
            n: 48,
            k: 40,
            batch: 1,
            shared_b: false,
            o: reference::Gemm {
                transpose_b: true,
                ..plain
            },
            bias: true,
            beta: 1.0,
            tiles: tiles(64, 128, 32, 2, false),
        },
        // SiLU.
        Case {
            m: 64,
            n: 128,
            k: 64,
            batch: 1,
            shared_b: false,
            o: reference::Gemm {
                activation: 5,
                ..plain
            },
            bias: true,
            beta: 0.0,
            tiles: tiles(64, 128, 32, 4, true),
        },
        // The narrow tiles of a short prompt's projections (`Cm2Tiles::candidates`): 64×80
        // with edges on every side, B stored N×K, the residual added; 128×64 on whole tiles.
        Case {
            m: 200,
            n: 184,
            k: 200,
            batch: 1,
            shared_b: false,
            o: reference::Gemm {
                transpose_b: true,
                ..plain
            },
            bias: false,
            beta: 1.0,
            tiles: Cm2Tiles {
                threads: 128,
                ..tiles(64, 80, 64, 8, true)
            },
        },
        // Tiles shifted off the edges (`Cm2Tiles::shifts_edges`): only M's edge (200 rows of
        // 64-row tiles: the first row of tiles short), B stored N×K, the residual added; then
        // M's and N's (136 rows, 200 columns of 64) with A stored K×M.
        Case {
            m: 200,
            n: 256,
            k: 192,
            batch: 1,
            shared_b: false,
            o: reference::Gemm {
                transpose_b: true,
                ..plain
            },
            bias: true,
            beta: 1.0,
            tiles: tiles(64, 128, 64, 2, true),
        },
        Case {
            m: 136,
            n: 200,
            k: 128,
            batch: 1,
            shared_b: false,
            o: reference::Gemm {
                transpose_a: true,
                activation: 1,
                ..plain
            },
            bias: false,
            beta: 0.0,
            tiles: Cm2Tiles {
                threads: 128,
                ..tiles(128, 64, 64, 8, true)
            },
        },
        Case {
            m: 256,
            n: 192,
            k: 192,
            batch: 1,
            shared_b: false,
            o: plain,
            bias: true,
            beta: 0.0,
            tiles: Cm2Tiles {
                threads: 128,
                ..tiles(128, 64, 64, 8, true)
            },
        },
    ];
    let mut ran = 0;
    for (i, case) in cases.iter().enumerate() {
        ran += run_case(&ctx, case, 40 + 10 * i as u64);
    }
    eprintln!("{ran} variant runs");
    assert_clean(&ctx);
}

/// `Ops::gemm` records `gemm_cm2` for F16 and Bf16 operands of `CM2_MIN_PRODUCT` multiply-adds
/// where the device has its features (and `gemm` otherwise: fewer multiply-adds, rows that are
/// not multiples of 8), with the same results; `Ops::gemm_cm2_with` refuses rows it does not
/// read and tiles the device lists no workgroup-scope matrices for.
#[test]
fn ops_gemm_takes_cm2_where_the_device_has_it() {
    let ctx = ctx();
    let ops = Ops::new(&ctx);
    let has = !device_lacks_cooperative_matrix2(&ctx);
    // CM2_MIN_PRODUCT multiply-adds exactly, and one row of them fewer.
    let (m, n, k) = (512, 512, 2048);
    assert_eq!(m * n * k, CM2_MIN_PRODUCT);
    let a = random(m * k, 7, -1.0, 1.0);
    let b = random(n * k, 8, -1.0, 1.0);
    for (f, variant) in [
        (TensorFormat::F16, "fp16s_cm"),
        (TensorFormat::Bf16, "bf16s_cm"),
    ] {
        // bf16 stores C through a use conversion.
        let conversions = ctx
            .features()
            .supports(vkprism::Feature::CooperativeMatrixConversions);
        let stored = f == TensorFormat::F16 || conversions;
        let cm2 = has && stored && !device_lacks_matrices_for(&ctx, variant);
        ops_gemm_case(&ctx, &ops, f, (m, n, k), (&a, &b), cm2);
    }
    let small = (m - 1, n, k);
    ops_gemm_case(&ctx, &ops, TensorFormat::F16, small, (&a, &b), false);
    // Short and wide: one row of 64 tiles of 128×128, which `Cm2Tiles::candidates` narrows to
    // 64×64, shifted off M's edge (96 rows); with 32 rows every load would clamp, so the KHR
    // kernel takes it.
    let b_wide = random(8192 * 2048, 10, -1.0, 1.0);
    let cm2 = has && !device_lacks_matrices_for(&ctx, "fp16s_cm");
    for (rows, on_cm2) in [(96, cm2), (32, false)] {
        let wide = (rows, 8192, 2048);
        let tiles = Cm2Tiles::for_problem(wide.0, wide.1, wide.2);
        assert_eq!((tiles.bm, tiles.bn), (64, 64));
        ops_gemm_case(&ctx, &ops, TensorFormat::F16, wide, (&a, &b_wide), on_cm2);
    }
    let f = TensorFormat::F16;
    // Rows of 4 but not 8 elements: the KHR kernel.
    let a4 = Tensor::from_f32(&ctx, &[m, 12], f, &a[..m * 12]).unwrap();
    let b4 = Tensor::from_f32(&ctx, &[n, 12], f, &b[..n * 12]).unwrap();
    let c4 = Tensor::new(&ctx, &[m, n], f).unwrap();
    let mut list = CommandList::new(&ctx).unwrap();
    ops.gemm(
        &mut list,
        &a4,
        &b4,
        None,
        &c4,
        &Gemm::new().with_transpose_b(true),
    )
    .unwrap();
    assert_eq!(list.dispatch_names(), ["gemm"]);
    if has {
        let kernel = ctx
            .load_with::<gemm_cm2::Kernel>(&LoadOptions::variant_named("fp16s_cm").unwrap())
            .unwrap();
        let tiles = Cm2Tiles::for_problem(m, n, k);
        let mut list = CommandList::new(&ctx).unwrap();
        let rows = ops.gemm_cm2_with(
            &mut list,
            &kernel,
            &tiles,
            &a4,
            &b4,
            None,
            &c4,
            &Gemm::new().with_transpose_b(true),
        );
        assert!(rows.unwrap_err().to_string().contains("multiples of 8"));
        // Tiles in a workgroup size the device lists no workgroup-scope matrices for.
        for s in ctx.features().workgroup_matrices.iter() {
            eprintln!("workgroup-scope family: {s:?}");
        }
        let unoffered = Cm2Tiles {
            threads: 96,
            ..tiles
        };
        assert!(!unoffered.offered_by(ctx.features(), vkprism::ScalarKind::F16));
        let (a8, b8) = (
            Tensor::new(&ctx, &[m, 16], f).unwrap(),
            Tensor::new(&ctx, &[n, 16], f).unwrap(),
        );
        let refused = ops.gemm_cm2_with(
            &mut list,
            &kernel,
            &unoffered,
            &a8,
            &b8,
            None,
            &c4,
            &Gemm::new().with_transpose_b(true),
        );
        let refused = refused.unwrap_err().to_string();
        assert!(refused.contains("offers no workgroup-scope"), "{refused}");
        assert!(list.dispatch_names().is_empty());
    }
    assert_clean(&ctx);
}

/// `Ops::gemm_cm2_with` split along K: shares of whole steps (some empty) summed by
/// `gemm_split_reduce` with alpha, beta, the bias and the activation, against the CPU reference.
#[test]
fn gemm_cm2_split_k_every_variant() {
    let ctx = ctx();
    let ops = Ops::new(&ctx);
    let (m, n) = (80, 136);
    let bias = random(n, 13, -1.0, 1.0);
    let before = random(m * n, 14, -1.0, 1.0);
    let mut ran = 0;
    // 13 steps of 16 in 3 shares (5, 5, 3); 4 steps of 64 in 8 shares (4 of them empty); 3
    // whole steps of 64 in 2 shares, where only the tiles crossing M's or N's edge clamp.
    for (k, bk, split, beta, activation) in [
        (200, 16, 3, 0.5, Activation::None),
        (200, 64, 8, 0.0, Activation::Gelu),
        (192, 64, 2, 1.0, Activation::None),
    ] {
        let a = random(m * k, 11, -1.0, 1.0);
        let b = random(n * k, 12, -1.0, 1.0);
        for name in gemm_cm2::VARIANT_NAMES {
            let Some(kernel) = load_unless_device_lacks_matrices::<gemm_cm2::Kernel>(&ctx, name)
            else {
                continue;
            };
            let f = kernel.format_of("a_blob").unwrap();
            let q = |x: &[f32]| quantize(x, f);
            let at = Tensor::from_f32(&ctx, &[m, k], f, &a).unwrap();
            let bt = Tensor::from_f32(&ctx, &[n, k], f, &b).unwrap();
            let biast = Tensor::from_f32(&ctx, &[n], f, &bias).unwrap();
            let ct = Tensor::from_f32(&ctx, &[m, n], f, &before).unwrap();
            let tiles = Cm2Tiles {
                split_k: split,
                ..tiles(64, 128, bk, 2, true)
            };
            let op = Gemm::new()
                .with_transpose_b(true)
                .with_alpha(0.75)
                .with_beta(beta)
                .with_activation(activation);
            let mut list = CommandList::new(&ctx).unwrap();
            ops.gemm_cm2_with(&mut list, &kernel, &tiles, &at, &bt, Some(&biast), &ct, &op)
                .unwrap();
            assert_eq!(
                list.dispatch_names(),
                ["gemm_cm2_split", "gemm_split_reduce"]
            );
            list.submit_and_wait().unwrap();
            let o = reference::Gemm {
                transpose_b: true,
                alpha: 0.75,
                ..Default::default()
            };
            let (pre, scale) = reference::gemm_with(o, m, n, k, &q(&a), &q(&b), Some(&q(&bias)));
            let want: Vec<f32> = pre
                .iter()
                .zip(q(&before))
                .map(|(p, c)| {
                    let x = p + beta * c;
                    match activation {
                        Activation::Gelu => reference::gelu(x as f64) as f32,
                        _ => x,
                    }
                })
                .collect();
            let scale: Vec<f32> = scale
                .iter()
                .zip(&want)
                .map(|(s, w)| s.max(w.abs()))
                .collect();
            let key = kernel.variant().key;
            check(
                &ct.download_f32().unwrap(),
                &q(&want),
                &scale,
                tolerance(&key),
                &format!("{name} split {split}"),
            );
            ran += 1;
        }
    }
    eprintln!("{ran} split runs");
    assert_clean(&ctx);
}

/// One `Ops::gemm` in format `f` with a bias and SiLU, C zero before, with `beta` 0 and 0.5:
/// recorded on `gemm_cm2` (or its split) where `cm2`, else on `gemm` (or its split), and each
/// against the CPU reference.
fn ops_gemm_case(
    ctx: &vkprism::Context,
    ops: &Ops,
    f: TensorFormat,
    (m, n, k): (usize, usize, usize),
    (a, b): (&[f32], &[f32]),
    cm2: bool,
) {
    let bias = random(n, 9, -1.0, 1.0);
    let (a, b) = (&a[..m * k], &b[..n * k]);
    let at = Tensor::from_f32(ctx, &[m, k], f, a).unwrap();
    let bt = Tensor::from_f32(ctx, &[n, k], f, b).unwrap();
    let biast = Tensor::from_f32(ctx, &[n], f, &bias).unwrap();
    let op = Gemm::new()
        .with_transpose_b(true)
        .with_activation(Activation::Silu);
    let o = reference::Gemm {
        transpose_b: true,
        alpha: 1.0,
        activation: 5,
        ..Default::default()
    };
    let q = |x: &[f32]| quantize(x, f);
    // The reference on every 37th row (the product is 2^29 multiply-adds), the last one too.
    let rows: Vec<usize> = (0..m).step_by(37).chain([m - 1]).collect();
    let (qb, qbias) = (q(b), q(&bias));
    let (mut want, mut scale) = (Vec::new(), Vec::new());
    for &i in &rows {
        let row = q(&a[i * k..(i + 1) * k]);
        let (w, s) = reference::gemm_with(o, 1, n, k, &row, &qb, Some(&qbias));
        scale.extend(s.iter().zip(&w).map(|(s, w)| s.max(w.abs())));
        want.extend(q(&w));
    }
    // The first pass: one dispatch or a split pair.
    let kernel = if cm2 { "gemm_cm2" } else { "gemm" };
    // One rounding of the stored result: 10- and 7-bit mantissas.
    let tol = if f == TensorFormat::F16 { 2e-3 } else { 1.6e-2 };
    for beta in [0.0, 0.5] {
        let ct = Tensor::from_f32(ctx, &[m, n], f, &vec![0.0; m * n]).unwrap();
        let mut list = CommandList::new(ctx).unwrap();
        ops.gemm(&mut list, &at, &bt, Some(&biast), &ct, &op.with_beta(beta))
            .unwrap();
        let names = list.dispatch_names().to_vec();
        let on_cm2 = names[0].starts_with("gemm_cm2");
        assert!(
            names[0].starts_with(kernel) && on_cm2 == cm2,
            "{f:?} beta {beta}: {names:?}"
        );
        list.submit_and_wait().unwrap();
        // C was 0, so beta adds nothing.
        let c = ct.download_f32().unwrap();
        let got: Vec<f32> = rows
            .iter()
            .flat_map(|i| &c[i * n..(i + 1) * n])
            .copied()
            .collect();
        let what = format!("{kernel} {f:?} beta {beta}");
        check(&got, &want, &scale, tol, &what);
    }
}
