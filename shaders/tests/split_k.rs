//! Split-K: `gemm_split` / `conv2d_nhwc_split` in every variant, then `gemm_split_reduce`,
//! against the CPU reference on random non-zero data, partial sums and outputs poisoned, on the
//! real driver with the validation layer on (lavapipe in CI: the `_cm` variants run on a device
//! with cooperative matrices); and when `GemmConfig::split_for` splits.

use vkprism::{LoadOptions, Tensor, TensorFormat};
use vkprism_shaders::tuning::{shared_memory_bytes, GemmProblem};
use vkprism_shaders::{
    conv2d_nhwc_split, gemm, gemm_int8, gemm_split, gemm_split_reduce, reference, Conv2dShape,
    GemmConfig, MAX_SPLIT, MEASURED_SMS, MIN_WIDE_TILES, PLAIN_MAX_SPLIT, PLAIN_SPLIT_WORKGROUPS,
    SMALL_CM_SPLIT_WORKGROUPS, SPLIT_K_WORKGROUPS,
};
use vkprism_testkit::{
    assert_clean, assert_close_scaled as check, ctx, expected_in,
    load_unless_device_lacks_matrices, quantize, random_in as random, tolerance,
};

/// The split pass's configuration for `key`: the library's own, split `split` ways.
fn split_config(
    ctx: &vkprism::Context,
    key: &vkprism::VariantKey,
    mnk: (usize, usize, usize),
    split: u32,
) -> GemmConfig {
    let (m, n, k) = mnk;
    GemmConfig {
        split_k: split,
        ..GemmConfig::for_gemm(key, ctx.features().limits.subgroup_size, m, n, k)
    }
}

/// Runs the reduce pass of `cfg` over `partial` into `out` (the first pass's float mode).
fn reduce(
    ctx: &vkprism::Context,
    key: &vkprism::VariantKey,
    cfg: &GemmConfig,
    (m, n): (usize, usize),
    (bias, bias_term, activation, alpha, slope): (&Tensor, bool, i32, f32, f32),
    partial: &Tensor,
    out: &Tensor,
) {
    let reduce = ctx
        .load_with::<gemm_split_reduce::Kernel>(
            &LoadOptions::variant_named(key.float.name()).unwrap(),
        )
        .unwrap();
    let pipe = reduce
        .pipeline(&cfg.reduce_spec(bias_term, activation), None)
        .unwrap();
    let bindings = gemm_split_reduce::BufferBindings {
        partial_blob: partial,
        bias_blob: bias,
        c_blob: out,
    };
    let push = gemm_split_reduce::PushConstants {
        M: m as i32,
        N: n as i32,
        alpha,
        slope,
        beta: 0.0,
    };
    ctx.run(|l| l.dispatch(&pipe, &bindings, &push, cfg.reduce_grid(m, n)))
        .unwrap();
}

fn run_gemm_split(
    ctx: &vkprism::Context,
    (m, n, kk): (usize, usize, usize),
    o: reference::Gemm,
    split: u32,
    seed: u64,
) {
    let a = random(m * kk, seed, 0.1, 1.0);
    let b = random(kk * n, seed + 1, 0.1, 1.0);
    let bias = random(n, seed + 2, 0.1, 1.0);
    let a_shape = if o.transpose_a { [kk, m] } else { [m, kk] };
    let b_shape = if o.transpose_b { [n, kk] } else { [kk, n] };
    for name in gemm_split::VARIANT_NAMES {
        let Some(k) = load_unless_device_lacks_matrices::<gemm_split::Kernel>(ctx, name) else {
            continue;
        };
        let key = k.variant().key;
        let f = k.format_of("a_blob").unwrap();
        let cfg = split_config(ctx, &key, (m, n, kk), split);
        let at = Tensor::from_f32(ctx, &a_shape, f, &a).unwrap();
        let bt = Tensor::from_f32(ctx, &b_shape, f, &b).unwrap();
        let biast = Tensor::from_f32(ctx, &[n], f, &bias).unwrap();
        let len = split as usize * m * n;
        let partial = Tensor::from_f32(
            ctx,
            &cfg.partial_shape(m, n),
            TensorFormat::F32,
            &vec![f32::NAN; len],
        )
        .unwrap();
        let ct = Tensor::from_f32(ctx, &[m, n], f, &vec![f32::NAN; m * n]).unwrap();
        let spec = cfg.spec(gemm_split::SpecConstants {
            transpose_a: o.transpose_a as i32,
            transpose_b: o.transpose_b as i32,
            ..Default::default()
        });
        let pipe = k.pipeline(&spec, Some(cfg.local_size())).unwrap();
        let bindings = gemm_split::BufferBindings {
            a_blob: &at,
            b_blob: &bt,
            partial_blob: &partial,
        };
        let push = gemm_split::PushConstants {
            M: m as i32,
            N: n as i32,
            K: kk as i32,
            alpha: 0.0,
            slope: 0.0,
            ..Default::default()
        };
        ctx.run(|l| l.dispatch(&pipe, &bindings, &push, cfg.grid(m, n)))
            .unwrap();
        let args = (&biast, true, o.activation, o.alpha, o.slope);
        reduce(ctx, &key, &cfg, (m, n), args, &partial, &ct);
        let q = |x: &[f32]| quantize(x, f);
        let bias_q = q(&bias);
        let (want, scale) = reference::gemm_with(o, m, n, kk, &q(&a), &q(&b), Some(&bias_q));
        let (want, scale) = expected_in(&want, &scale, f);
        let what = format!("{name} split {split} {m}x{n}x{kk} {o:?}");
        check(
            &ct.download_f32().unwrap(),
            &want,
            &scale,
            tolerance(&key),
            &what,
        );
    }
}

#[test]
fn gemm_split_every_variant() {
    let ctx = ctx();
    assert_eq!(gemm_split::VARIANTS.len(), gemm::VARIANTS.len());
    // Three shares of a K that is not a multiple of the step (the last share is short), edges
    // in M and N, bias, leaky relu and alpha; then both operands transposed, more shares than
    // K has steps (empty shares write zeros), relu.
    let leaky = reference::Gemm {
        alpha: 0.5,
        activation: 2,
        slope: 0.1,
        ..Default::default()
    };
    run_gemm_split(&ctx, (70, 72, 104), leaky, 3, 7);
    let transposed = reference::Gemm {
        transpose_a: true,
        transpose_b: true,
        alpha: 1.0,
        activation: 1,
        slope: 0.0,
    };
    run_gemm_split(&ctx, (40, 136, 48), transposed, 8, 17);
    assert_clean(&ctx);
}

#[test]
fn conv2d_nhwc_split_every_variant() {
    let ctx = ctx();
    // 3×3 same padding over two images, K = 9 × 8 = 72 in three shares.
    let s = Conv2dShape {
        batch: 2,
        h: 7,
        w: 6,
        c: 8,
        outc: 12,
        kh: 3,
        kw: 3,
        stride: 1,
        pad: 1,
    };
    let input = random(s.batch * s.h * s.w * s.c, 31, 0.1, 1.0);
    let weight = random(s.kh * s.kw * s.c * s.outc, 32, 0.1, 1.0);
    let bias = random(s.outc, 33, 0.1, 1.0);
    let (m, n, kk) = s.gemm_mnk();
    for name in conv2d_nhwc_split::VARIANT_NAMES {
        let Some(k) = load_unless_device_lacks_matrices::<conv2d_nhwc_split::Kernel>(&ctx, name)
        else {
            continue;
        };
        let key = k.variant().key;
        let f = k.format_of("in_blob").unwrap();
        let cfg = GemmConfig {
            split_k: 3,
            ..GemmConfig::for_conv(&key, ctx.features().limits.subgroup_size, &s)
        };
        let it = Tensor::from_f32(&ctx, &[s.batch, s.h, s.w, s.c], f, &input).unwrap();
        let wt = Tensor::from_f32(&ctx, &[s.kh, s.kw, s.c, s.outc], f, &weight).unwrap();
        let bt = Tensor::from_f32(&ctx, &[s.outc], f, &bias).unwrap();
        let partial = Tensor::from_f32(
            &ctx,
            &cfg.partial_shape(m, n),
            TensorFormat::F32,
            &vec![f32::NAN; 3 * m * n],
        )
        .unwrap();
        let ot = Tensor::from_f32(&ctx, &[m, n], f, &vec![f32::NAN; m * n]).unwrap();
        let pipe = k
            .pipeline(&cfg.spec(Default::default()), Some(cfg.local_size()))
            .unwrap();
        let bindings = conv2d_nhwc_split::BufferBindings {
            in_blob: &it,
            w_blob: &wt,
            partial_blob: &partial,
        };
        ctx.run(|l| l.dispatch(&pipe, &bindings, &s.push(1.0, 0.0), cfg.grid(m, n)))
            .unwrap();
        reduce(
            &ctx,
            &key,
            &cfg,
            (m, n),
            (&bt, true, 0, 1.0, 0.0),
            &partial,
            &ot,
        );
        let q = |x: &[f32]| quantize(x, f);
        let (want, scale) = reference::conv2d_nhwc(s, &q(&input), &q(&weight), &q(&bias));
        let (want, scale) = expected_in(&want, &scale, f);
        let what = format!("{name} split 3 {s:?} (K {kk})");
        check(
            &ot.download_f32().unwrap(),
            &want,
            &scale,
            tolerance(&key),
            &what,
        );
    }
    assert_clean(&ctx);
}

/// The key of [`gemm`]'s variant `name`.
fn gemm_variant(name: &str) -> vkprism::VariantKey {
    gemm::VARIANTS
        .iter()
        .find(|v| v.key.name() == name)
        .unwrap_or_else(|| panic!("gemm has a variant {name}"))
        .key
}

/// `split_for` splits configurations whose grid is small, over a long K, into at most
/// `MAX_SPLIT` shares of at least two steps, and the grid's z follows; 128×256 tiles only where
/// at least `MIN_WIDE_TILES` of them cover the result.
#[test]
fn split_for_splits_only_small_grids_over_long_k() {
    let (cm, plain) = (gemm_variant("fp16s_lm_cm"), gemm_variant("fp16s_lm_nocm"));
    let config = |k: &vkprism::VariantKey, mnk: (usize, usize, usize)| {
        GemmConfig::for_gemm(k, 32, mnk.0, mnk.1, mnk.2).split_for(mnk)
    };
    // 4096×512 over 14336: 128×256 tiles (64 of them), 2 shares of 7168, 48-deep steps.
    let tall = config(&cm, (4096, 512, 14336));
    assert_eq!(
        (tall.split_k, tall.tile(), tall.bk),
        (2, (128, 256), 48),
        "{tall:?}"
    );
    assert_eq!(tall.grid(4096, 512), [2 * 32, 32 * 8, 2]);
    // 1568×256 over 2304 (a 3×3 convolution, batch 8, 14×14, 256 channels): 13 tiles, 10 shares.
    let conv = config(&cm, (1568, 256, 2304));
    assert_eq!(
        (conv.split_k, conv.tile(), conv.bk),
        (10, (128, 256), 32),
        "{conv:?}"
    );
    assert!(13 * conv.split_k as usize >= SPLIT_K_WORKGROUPS);
    // 49×512 over 4608 (ResNet-50's last 3×3 convolutions at batch 1): 2 wide tiles, under
    // MIN_WIDE_TILES, so the table's 64×64 tiles, 8 of them, in MAX_SPLIT shares.
    const { assert!(2 < MIN_WIDE_TILES) };
    let small = config(&cm, (49, 512, 4608));
    assert_eq!(
        (small.split_k, small.tile(), small.bk),
        (MAX_SPLIT as u32, (64, 64), 32),
        "{small:?}"
    );
    assert_eq!(small.grid(49, 512)[2], MAX_SPLIT as u32);
    // N of 64 keeps the table's tiles: 1568×64 over 576 is 25 tiles of 64×128, 6 shares.
    let narrow = config(&cm, (1568, 64, 576));
    assert_eq!(
        (narrow.split_k, narrow.tile()),
        (6, (64, 128)),
        "{narrow:?}"
    );
    // Workgroups of 4 subgroups aim at SMALL_CM_SPLIT_WORKGROUPS: 1568×64 over 2304 (a 3×3
    // convolution of 256 to 64 channels at batch 8, 14×14) is 25 tiles of 64×64.
    let small_cm = config(&cm, (1568, 64, 2304));
    assert_eq!(
        (
            small_cm.split_k as usize,
            small_cm.tile(),
            small_cm.local[1]
        ),
        (SMALL_CM_SPLIT_WORKGROUPS.div_ceil(25), (64, 64), 4),
        "{small_cm:?}"
    );
    // Grids that fill the GPU and short K: unsplit.
    assert_eq!(config(&cm, (1024, 1024, 1024)).split_k, 1);
    assert_eq!(config(&cm, (4096, 4096, 4096)).split_k, 1);
    assert_eq!(config(&cm, (64, 64, 256)).split_k, 1);
    assert_eq!(config(&plain, (4096, 4096, 4096)).split_k, 1);
    assert_eq!(config(&plain, (64, 64, 256)).split_k, 1);
    // Without matrices too: the table's tiles and step depth, PLAIN_MAX_SPLIT shares of a long
    // K; a small grid (a 3×3 convolution at batch 1, 14×14, 256 channels) split toward
    // PLAIN_SPLIT_WORKGROUPS.
    let plain_long = config(&plain, (64, 64, 8192));
    let table = GemmConfig::for_gemm(&plain, 32, 64, 64, 8192);
    assert_eq!(
        (plain_long.split_k, plain_long.tile(), plain_long.bk),
        (PLAIN_MAX_SPLIT as u32, table.tile(), table.bk)
    );
    assert_eq!(plain_long.grid(64, 64)[2], PLAIN_MAX_SPLIT as u32);
    let plain_tiles = |c: &GemmConfig, m: usize, n: usize| {
        let (bm, bn) = c.tile();
        m.div_ceil(bm) * n.div_ceil(bn)
    };
    let plain_conv = config(&plain, (196, 256, 2304));
    let groups = plain_tiles(&plain_conv, 196, 256);
    assert!(
        groups < SPLIT_K_WORKGROUPS && plain_conv.split_k > 1,
        "{plain_conv:?}"
    );
    assert_eq!(
        plain_conv.split_k as usize,
        PLAIN_SPLIT_WORKGROUPS.div_ceil(groups).min(PLAIN_MAX_SPLIT),
        "{plain_conv:?}"
    );
    // 128 workgroups or more stay whole without matrices too (4096×512 in 128×128 tiles).
    assert_eq!(config(&plain, (4096, 512, 14336)).split_k, 1);
    // One tile over a long K: MAX_SPLIT shares; over a K of 512, 8 (two 32-deep steps each).
    assert_eq!(config(&cm, (64, 64, 8192)).split_k, MAX_SPLIT as u32);
    assert_eq!(config(&cm, (64, 64, 512)).split_k, 8);
}

/// `split_for_sms` scales the rule's workgroup counts by the GPU's multiprocessors: on the
/// H100's 132 it is `split_for`; a grid that fills a GPU of half as many stays whole there; a
/// GPU of twice as many splits grids the H100 keeps whole, toward twice the workgroups.
#[test]
fn split_for_sms_scales_the_rule_by_the_multiprocessors() {
    let cm = gemm_variant("fp16s_lm_cm");
    let table = |mnk: (usize, usize, usize)| GemmConfig::for_gemm(&cm, 32, mnk.0, mnk.1, mnk.2);
    let shapes = [
        (4096, 512, 14336),
        (1568, 256, 2304),
        (49, 512, 4608),
        (1568, 64, 576),
        (1568, 64, 2304),
        (1024, 1024, 1024),
        (64, 64, 8192),
        (512, 2048, 5632),
    ];
    for mnk in shapes {
        assert_eq!(
            table(mnk).split_for_sms(mnk, MEASURED_SMS),
            table(mnk).split_for(mnk),
            "{mnk:?}"
        );
    }
    // 4096×512 over 14336: 64 tiles of 128×256, 2 shares on the H100 (128 workgroups).
    let tall = (4096, 512, 14336);
    assert_eq!(table(tall).split_for(tall).split_k, 2);
    // 66 SMs: 64 workgroups fill it (the rule's 128 scaled to 64): whole.
    assert_eq!(table(tall).split_for_sms(tall, 66).split_k, 1);
    // 264 SMs: 4 shares, toward 256 workgroups.
    assert_eq!(table(tall).split_for_sms(tall, 264).split_k, 4);
    // 1568×256 over 2304: 13 wide tiles, 10 shares on the H100, 5 on 66 SMs (65 workgroups
    // toward 64).
    let conv = (1568, 256, 2304);
    assert_eq!(table(conv).split_for(conv).split_k, 10);
    assert_eq!(table(conv).split_for_sms(conv, 66).split_k, 5);
    // Zero multiprocessors (`multiprocessors` answers the H100's count where a device says
    // nothing) count as one: every grid fills it.
    assert_eq!(table(conv).split_for_sms(conv, 0).split_k, 1);
}

/// Every configuration the table and `split_for` choose fits in the 48 KiB of shared memory
/// NVIDIA's GPUs give a workgroup (`maxComputeSharedMemorySize`), for GEMMs (transposed or not),
/// int8 GEMMs and convolutions of many shapes: a choice over it (64-deep steps of 128×256 tiles, 60,416
/// bytes before the store's scratch shared the tiles' memory) ran on the H100's driver, but is
/// outside Vulkan's rules.
#[test]
fn table_and_split_choices_fit_in_48_kib() {
    const LIMIT: u64 = 48 << 10;
    let dims = [8, 64, 100, 256, 512, 1024, 1568, 2048, 4096, 25088];
    let depths = [16, 64, 576, 2304, 4096, 8192, 14336, 65536];
    for v in gemm::VARIANTS {
        let key = v.key;
        for m in dims {
            for n in dims {
                for k in depths {
                    for t in [false, true] {
                        let cfg = GemmConfig::for_gemm(&key, 32, m, n, k).split_for((m, n, k));
                        let bytes =
                            shared_memory_bytes(&cfg, &GemmProblem::gemm(m, n, k, t, t), &key)
                                .expect("evaluated");
                        assert!(
                            bytes <= LIMIT,
                            "{} {m}x{n}x{k}: {bytes} bytes, {cfg:?}",
                            key.name()
                        );
                    }
                }
            }
        }
        for (h, c, outc) in [
            (56, 64, 64),
            (56, 256, 256),
            (14, 256, 256),
            (14, 64, 64),
            (7, 512, 2048),
        ] {
            let s = Conv2dShape {
                batch: 8,
                h,
                w: h,
                c,
                outc,
                kh: 3,
                kw: 3,
                stride: 1,
                pad: 1,
            };
            let cfg = GemmConfig::for_conv(&key, 32, &s).split_for(s.gemm_mnk());
            let bytes =
                shared_memory_bytes(&cfg, &GemmProblem::conv2d_nhwc(&s), &key).expect("evaluated");
            assert!(
                bytes <= LIMIT,
                "{} {s:?}: {bytes} bytes, {cfg:?}",
                key.name()
            );
        }
    }
    // The int8 GEMM (steps twice as deep in elements: 48-deep fp16 steps are 96-deep here).
    for v in gemm_int8::VARIANTS {
        let key = v.key;
        for m in dims {
            for n in dims {
                for k in depths {
                    let cfg = GemmConfig::for_gemm_int8(&key, 32, m, n, k);
                    let bytes = shared_memory_bytes(&cfg, &GemmProblem::gemm_int8(m, n, k), &key)
                        .expect("evaluated");
                    assert!(
                        bytes <= LIMIT,
                        "{} {m}x{n}x{k}: {bytes} bytes, {cfg:?}",
                        key.name()
                    );
                }
            }
        }
    }
}

/// `shared_memory_bytes` of cooperative-matrix configurations, against what the H100's driver
/// reported for the same pipelines (`VK_KHR_pipeline_executable_properties`' "Shared Memory
/// Size", `VKPRISM_BENCH_STATS=1`, 2026-11-23): the formula is the kernels' declarations. 64-deep
/// steps of 128×256 tiles (52,224 bytes) are over the 48 KiB limit: no table choice uses them.
#[test]
fn shared_memory_bytes_match_the_drivers_statistics() {
    let key = gemm_variant("fp16p_lm_cm");
    let problem = GemmProblem::gemm(4096, 4096, 4096, false, false);
    // (subgroups, cm_tiles, BK, bytes the driver reported)
    let measured = [
        (8, [4, 4, 4], 32, 27136),
        (8, [4, 4, 4], 48, 39680),
        (8, [4, 4, 4], 64, 52224),
        (8, [4, 2, 4], 64, 35840),
        (8, [4, 2, 4], 48, 27392),
        (8, [4, 4, 2], 48, 41728),
        (8, [2, 4, 4], 64, 43008),
        (8, [2, 4, 4], 32, 22016),
        (12, [2, 4, 4], 48, 36096),
        (4, [4, 4, 2], 32, 18944),
    ];
    for (subgroups, cm_tiles, bk, bytes) in measured {
        let cfg = GemmConfig {
            local: [32, subgroups],
            bk,
            cm_tiles,
            ..GemmConfig::for_gemm(&key, 32, 4096, 4096, 4096)
        };
        assert_eq!(
            shared_memory_bytes(&cfg, &problem, &key),
            Some(bytes),
            "{cfg:?}"
        );
    }
}

/// The runtime counts a configuration's shared memory as `shared_memory_bytes` does, and
/// refuses one over the device's limit when the pipeline is made (here 256-deep steps of the
/// shared-memory path: 270,336 bytes, over every device's limit).
#[test]
fn the_runtime_refuses_what_shared_memory_bytes_says_does_not_fit() {
    let ctx = ctx();
    let k = load_unless_device_lacks_matrices::<gemm::Kernel>(&ctx, "fp32_lm_nocm").unwrap();
    let key = k.variant().key;
    let problem = GemmProblem::gemm(2048, 2048, 1024, false, false);
    let cfg = GemmConfig {
        bk: 256,
        ..GemmConfig::for_gemm(&key, 32, 2048, 2048, 1024)
    };
    let want = shared_memory_bytes(&cfg, &problem, &key).expect("evaluated");
    assert_eq!(want, 2 * 256 * (128 / 4 + 1) * 16);
    match k.pipeline(&cfg.spec(Default::default()), Some(cfg.local_size())) {
        Err(vkprism::PipelineError::SharedMemoryTooLarge { bytes, limit, .. }) => {
            assert_eq!(bytes, want);
            assert_eq!(limit, ctx.features().limits.max_compute_shared_memory_size);
        }
        Err(e) => panic!("{e}"),
        Ok(_) => panic!("a pipeline with {want} bytes of shared memory was made"),
    }
    // The table's own choice fits and is made.
    let table = GemmConfig::for_gemm(&key, 32, 2048, 2048, 1024);
    k.pipeline(&table.spec(Default::default()), Some(table.local_size()))
        .unwrap();
    assert_clean(&ctx);
}
