//! Tile configuration per device: the class table from hand-built device ids, and the tuner on
//! the real driver (lavapipe in CI) with the validation layer on: it times several candidates,
//! its choice computes the right result, a second tuner on the same file times nothing, and
//! damaged, truncated, foreign and other-version files are reported and replaced, never a panic.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use vkprism::{Context, DeviceLimits, DeviceType, LoadOptions, LoadedKernel, Tensor};
use vkprism_shaders::tuning::{
    fits, shared_memory_bytes, CacheDevice, CacheError, CacheStatus, Clock, DeviceClass,
    DeviceInfo, GemmKernel, GemmProblem, GemmTuner, TuneKey, Tuned, TuningCache,
};
use vkprism_shaders::{conv2d_nhwc, gemm, gemm_int8, reference, Conv2dShape, GemmConfig};
use vkprism_testkit::{
    assert_clean, assert_close_scaled as check, ctx, quantize, random_i8, random_in as random,
    tolerance,
};

fn info(vendor_id: u32, device_id: u32, device_type: DeviceType, name: &str) -> DeviceInfo {
    DeviceInfo {
        vendor_id,
        device_id,
        device_type,
        name: name.into(),
        subgroup_size: 32,
    }
}

#[test]
fn device_classes_from_vendor_and_device_ids() {
    use DeviceClass as C;
    use DeviceType::{Cpu, DiscreteGpu as Dgpu, IntegratedGpu as Igpu};
    let cases = [
        (
            info(0x10de, 0x2330, Dgpu, "NVIDIA H100 80GB HBM3"),
            C::NvidiaHopper,
        ),
        (info(0x10de, 0x2335, Dgpu, "NVIDIA H200"), C::NvidiaHopper),
        // A Hopper name with a device id outside 0x23xx (a future board) still counts.
        (
            info(0x10de, 0x2901, Dgpu, "NVIDIA GH200 480GB"),
            C::NvidiaHopper,
        ),
        (
            info(0x10de, 0x2684, Dgpu, "NVIDIA GeForce RTX 4090"),
            C::Nvidia,
        ),
        (info(0x10de, 0x2901, Dgpu, "NVIDIA B200"), C::Nvidia),
        (info(0x1002, 0x744c, Dgpu, "AMD Radeon RX 7900 XTX"), C::Amd),
        (info(0x1002, 0x740f, Dgpu, "AMD Instinct MI210"), C::Amd),
        (
            info(0x8086, 0x56a0, Dgpu, "Intel(R) Arc(tm) A770 Graphics"),
            C::Intel,
        ),
        (
            info(0x8086, 0x9a49, Igpu, "Intel(R) Xe Graphics (TGL GT2)"),
            C::Intel,
        ),
        (info(0x13b5, 0x9200_0010, Igpu, "Mali-G710"), C::Mali),
        (
            info(0x5143, 0x4305_0a01, Igpu, "Adreno (TM) 740"),
            C::Adreno,
        ),
        (info(0x106b, 0x0100_0209, Igpu, "Apple M2 Pro"), C::Apple),
        (
            info(0x10005, 0, Cpu, "llvmpipe (LLVM 15.0.6, 256 bits)"),
            C::Cpu,
        ),
        (
            info(0x1ae0, 0xc0de, Cpu, "SwiftShader Device (Subzero)"),
            C::Cpu,
        ),
        // The device type decides before the vendor: a CPU driver from a GPU vendor is a CPU.
        (info(0x8086, 0, Cpu, "a CPU driver"), C::Cpu),
        (info(0x1234, 0x1111, Dgpu, "some GPU"), C::Other),
        (info(0x1d17, 0x3a04, Igpu, "Zhaoxin"), C::Other),
    ];
    for (device, want) in &cases {
        assert_eq!(DeviceClass::classify(device), *want, "{device:?}");
    }
    // Every class is reached, has a distinct name, and only Hopper's figures are measured.
    for class in DeviceClass::ALL {
        assert!(cases.iter().any(|(_, c)| *c == class), "{class:?}");
    }
    let mut names: Vec<_> = DeviceClass::ALL.iter().map(|c| c.name()).collect();
    names.dedup();
    assert_eq!(names.len(), DeviceClass::ALL.len());
    assert_eq!(
        DeviceClass::ALL
            .iter()
            .filter(|c| c.measured())
            .collect::<Vec<_>>(),
        [&DeviceClass::NvidiaHopper]
    );

    // The context's own device, from what the runtime reports.
    let ctx = ctx();
    let id = ctx.identity();
    let report = ctx.report();
    assert_eq!(
        (id.vendor_id, id.device_id, id.driver_id, &id.name),
        (
            report.vendor_id,
            report.device_id,
            report.driver_id,
            &report.name
        )
    );
    assert_eq!(
        id.device_type == DeviceType::Cpu,
        report.device_type == "CPU"
    );
    let own = DeviceInfo::of(&ctx);
    assert_eq!(own.subgroup_size, ctx.features().limits.subgroup_size);
    if id.device_type == DeviceType::Cpu {
        assert_eq!(DeviceClass::of(&ctx), DeviceClass::Cpu);
    }
    assert_clean(&ctx);
}

/// Problems of every kind: the benchmark's shapes, convolutions with 64 and 256 channels, and
/// small ones with edges.
fn problems() -> Vec<GemmProblem> {
    let conv = |h, c, outc| Conv2dShape {
        batch: 1,
        h,
        w: h,
        c,
        outc,
        kh: 3,
        kw: 3,
        stride: 1,
        pad: 1,
    };
    let mut p = Vec::new();
    for (m, n, k) in [
        (1024, 1024, 1024),
        (2048, 2048, 2048),
        (4096, 4096, 4096),
        (4096, 512, 14336),
        (96, 80, 64),
        (66, 36, 44),
        (40, 136, 48),
    ] {
        p.push(GemmProblem::gemm(m, n, k, false, false));
        p.push(GemmProblem::gemm(m, n, k, true, true));
        p.push(GemmProblem::gemm_int8(m, n, k));
    }
    for s in [conv(56, 64, 64), conv(14, 256, 256), conv(7, 12, 20)] {
        p.push(GemmProblem::conv2d_nhwc(&s));
    }
    p
}

fn variants(kernel: GemmKernel) -> Vec<vkprism::VariantKey> {
    let keys = match kernel {
        GemmKernel::Gemm => gemm::VARIANTS,
        GemmKernel::GemmInt8 => gemm_int8::VARIANTS,
        GemmKernel::Conv2dNhwc => conv2d_nhwc::VARIANTS,
    };
    keys.iter().map(|v| v.key).collect()
}

/// 16-byte loads need every stored row a multiple of 8 halves, not every side: a prompt of 500
/// tokens (A 500×2048, B stored 2560×2048) takes them; A stored K×M with M = 500 does not; and
/// `GemmConfig::for_gemm`, blind to the transposes, asks for all three sides.
#[test]
fn gemm_loads_are_wide_where_the_stored_rows_are_multiples_of_8() {
    assert!(GemmProblem::gemm(500, 2560, 2048, false, true).aligned);
    assert!(GemmProblem::gemm(500, 2560, 2048, false, false).aligned);
    assert!(!GemmProblem::gemm(500, 2560, 2048, true, false).aligned);
    assert!(!GemmProblem::gemm(512, 2560, 2044, false, false).aligned);
    assert!(GemmProblem::gemm(512, 2560, 2044, true, false).aligned);
    assert!(!GemmProblem::gemm(512, 2556, 2048, false, true).aligned);
    let cm = gemm::VARIANTS
        .iter()
        .map(|v| v.key)
        .find(|k| k.coopmat == Some(true))
        .unwrap();
    assert!(!GemmConfig::for_gemm(&cm, 32, 500, 2560, 2048).wide_loads);
    assert!(GemmConfig::for_gemm(&cm, 32, 512, 2560, 2048).wide_loads);
    let ops_choice =
        DeviceClass::NvidiaHopper.config(&GemmProblem::gemm(500, 2560, 2048, false, true), &cm, 32);
    assert!(ops_choice.wide_loads);
}

#[test]
fn nvidia_rows_are_the_measured_h100_choices_and_other_classes_differ() {
    let conv = Conv2dShape {
        batch: 1,
        h: 56,
        w: 56,
        c: 64,
        outc: 64,
        kh: 3,
        kw: 3,
        stride: 1,
        pad: 1,
    };
    for class in [DeviceClass::NvidiaHopper, DeviceClass::Nvidia] {
        for subgroup in [32, 64] {
            for p in problems() {
                for key in variants(p.kernel) {
                    let (m, n, k) = (p.m, p.n, p.k);
                    let want = match p.kernel {
                        GemmKernel::Gemm => GemmConfig::for_gemm(&key, subgroup, m, n, k),
                        GemmKernel::GemmInt8 => GemmConfig::for_gemm_int8(&key, subgroup, m, n, k),
                        GemmKernel::Conv2dNhwc => continue,
                    };
                    assert_eq!(
                        class.config(&p, &key, subgroup),
                        want,
                        "{class:?} {p:?} {key:?}"
                    );
                }
            }
            for key in variants(GemmKernel::Conv2dNhwc) {
                assert_eq!(
                    class.config(&GemmProblem::conv2d_nhwc(&conv), &key, subgroup),
                    GemmConfig::for_conv(&key, subgroup, &conv)
                );
            }
        }
    }
    // The other rows are not NVIDIA's: mobile and CPU classes keep 64×64 tiles on a large
    // problem, where NVIDIA's table takes 128×128; AMD and Intel follow the grid.
    let big = GemmProblem::gemm(4096, 4096, 4096, false, false);
    let fp32 = gemm::VARIANTS
        .iter()
        .map(|v| v.key)
        .find(|k| k.name() == "fp32_lm_nocm")
        .unwrap();
    assert_eq!(
        GemmConfig::for_gemm(&fp32, 32, 4096, 4096, 4096).tile(),
        (128, 128)
    );
    for (class, tile, bk) in [
        (DeviceClass::Mali, (64, 64), 8),
        (DeviceClass::Adreno, (64, 64), 16),
        (DeviceClass::Cpu, (64, 64), 16),
        (DeviceClass::Other, (64, 64), 16),
        (DeviceClass::Amd, (128, 128), 16),
        (DeviceClass::Intel, (128, 128), 16),
        (DeviceClass::Apple, (128, 128), 16),
    ] {
        let cfg = class.config(&big, &fp32, 32);
        assert_eq!((cfg.tile(), cfg.bk), (tile, bk), "{class:?}");
    }
    let small = GemmProblem::gemm(256, 256, 256, false, false);
    assert_eq!(DeviceClass::Amd.config(&small, &fp32, 64).tile(), (64, 64));
    // Cooperative matrices: AMD's workgroup x is its subgroup, 4 subgroups of 128×128 tiles.
    let cm = gemm::VARIANTS
        .iter()
        .map(|v| v.key)
        .find(|k| k.coopmat == Some(true))
        .unwrap();
    let cfg = DeviceClass::Amd.config(&big, &cm, 64);
    assert_eq!(
        (cfg.local, cfg.tile(), cfg.wide_loads),
        ([64, 4], (128, 128), true)
    );
}

#[test]
fn candidates_start_with_the_default_are_distinct_and_fit_the_limits() {
    let generous = DeviceLimits {
        max_compute_work_group_size: [1024, 1024, 64],
        max_compute_work_group_invocations: 1024,
        max_compute_shared_memory_size: 48 << 10,
        subgroup_size: 32,
        ..Default::default()
    };
    let wave64 = DeviceLimits {
        subgroup_size: 64,
        max_compute_shared_memory_size: 64 << 10,
        ..generous
    };
    // Vulkan's minimums: 128 invocations, 16 KiB of shared memory.
    let minimum = DeviceLimits {
        subgroup_size: 32,
        ..Default::default()
    };
    let mut filtered = 0;
    for limits in [generous, wave64, minimum] {
        for class in DeviceClass::ALL {
            for p in problems() {
                for key in variants(p.kernel) {
                    let what = format!("{class:?} {p:?} {} {limits:?}", key.name());
                    let c = class.candidates(&p, &key, &limits, 6);
                    assert!(!c.is_empty() && c.len() <= 6, "{what}: {c:?}");
                    let default = class.config(&p, &key, limits.subgroup_size);
                    if fits(&default, &p, &key, &limits).is_ok() {
                        assert_eq!(c[0], default, "{what}");
                    } else {
                        // Only shared memory or the workgroup rule a default out.
                        filtered += 1;
                        assert!(
                            shared_memory_bytes(&default, &p, &key)
                                .is_some_and(|b| b > limits.max_compute_shared_memory_size as u64)
                                || default.local[0] * default.local[1]
                                    > limits.max_compute_work_group_invocations,
                            "{what}: {default:?}"
                        );
                    }
                    for (i, a) in c.iter().enumerate() {
                        fits(a, &p, &key, &limits).unwrap_or_else(|e| panic!("{what}: {e}"));
                        assert_eq!(a.coopmat, key.coopmat == Some(true));
                        assert_eq!(a.wide_loads, a.coopmat && p.aligned, "{what}");
                        for b in &c[i + 1..] {
                            assert_ne!(a, b, "{what}");
                            // Without shared memory the step is unused: workgroups must differ.
                            let plain_path = !a.coopmat
                                && (p.kernel == GemmKernel::GemmInt8
                                    || key.local_memory == Some(false));
                            if plain_path {
                                assert_ne!(a.local, b.local, "{what}");
                            }
                        }
                    }
                    if limits != minimum {
                        assert!(c.len() >= 2, "{what}: nothing to compare");
                    }
                }
            }
        }
    }
    assert!(
        filtered > 0,
        "16 KiB of shared memory rules out the 128×256 tiles"
    );
    // The shared memory of NVIDIA's large cooperative-matrix tile at 4096³, as gemm_tiles.glsl
    // declares it: a 48-deep step, A 128 × 7 and B 48 × 33 octets (rows padded by one); the
    // store's scratch (8 × 64 octets) reuses them.
    let cm = gemm::VARIANTS
        .iter()
        .map(|v| v.key)
        .find(|k| k.coopmat == Some(true))
        .unwrap();
    let big = GemmProblem::gemm(4096, 4096, 4096, false, false);
    let cfg = DeviceClass::NvidiaHopper.config(&big, &cm, 32);
    assert_eq!(
        shared_memory_bytes(&cfg, &big, &cm).expect("evaluated"),
        (128 * 7 + 48 * 33) * 16
    );
    assert!(shared_memory_bytes(&cfg, &big, &cm).expect("evaluated") <= 48 << 10);
}

/// A fresh directory for one test's files.
fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("vkprism-tuning-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Runs `cfg` on an M×N×K GEMM (with the transposes) and checks it against the CPU reference.
#[allow(clippy::too_many_arguments)]
fn check_gemm(
    ctx: &Context,
    kernel: &Arc<LoadedKernel<gemm::Kernel>>,
    cfg: GemmConfig,
    (m, n, k): (usize, usize, usize),
    transpose_a: bool,
    transpose_b: bool,
    seed: u64,
) {
    let o = reference::Gemm {
        transpose_a,
        transpose_b,
        alpha: 1.0,
        ..Default::default()
    };
    let f = kernel.format_of("a_blob").unwrap();
    let a = random(m * k, seed, 0.1, 1.0);
    let b = random(k * n, seed + 1, 0.1, 1.0);
    let a_shape = if transpose_a { [k, m] } else { [m, k] };
    let b_shape = if transpose_b { [n, k] } else { [k, n] };
    let at = Tensor::from_f32(ctx, &a_shape, f, &a).unwrap();
    let bt = Tensor::from_f32(ctx, &b_shape, f, &b).unwrap();
    let bias = Tensor::new(ctx, &[n], f).unwrap();
    let ct = Tensor::from_f32(ctx, &[m, n], f, &vec![f32::NAN; m * n]).unwrap();
    let spec = cfg.spec(gemm::SpecConstants {
        transpose_a: transpose_a as i32,
        transpose_b: transpose_b as i32,
        ..Default::default()
    });
    let pipe = kernel.pipeline(&spec, Some(cfg.local_size())).unwrap();
    ctx.run(|l| {
        l.dispatch(
            &pipe,
            &gemm::BufferBindings {
                a_blob: &at,
                b_blob: &bt,
                bias_blob: &bias,
                c_blob: &ct,
            },
            &gemm::PushConstants {
                M: m as i32,
                N: n as i32,
                K: k as i32,
                alpha: 1.0,
                slope: 0.0,
                ..Default::default()
            },
            cfg.grid(m, n),
        )
    })
    .unwrap();
    let q = |x: &[f32]| quantize(x, f);
    let (want, scale) = reference::gemm_with(o, m, n, k, &q(&a), &q(&b), None);
    let scale: Vec<f32> = scale
        .iter()
        .zip(&want)
        .map(|(s, w)| s.max(w.abs()))
        .collect();
    check(
        &ct.download_f32().unwrap(),
        &q(&want),
        &scale,
        tolerance(&kernel.variant().key),
        &format!("{m}x{n}x{k} {cfg:?}"),
    );
}

#[test]
fn autotune_times_candidates_once_then_answers_from_the_cache() {
    let ctx = ctx();
    let dir = temp_dir("gemm");
    let pipelines = dir.join("pipelines.bin");
    let path = GemmTuner::cache_path_for(&pipelines);
    assert_eq!(path, dir.join("pipelines.bin.tuning"));
    let kernel = ctx
        .load_with::<gemm::Kernel>(&LoadOptions::variant_named("fp32_lm_nocm").unwrap())
        .unwrap();
    let key = kernel.variant().key;
    let (m, n, k) = (96, 80, 64);

    let mut tuner = GemmTuner::new(&ctx, Some(&path));
    assert!(
        matches!(tuner.cache_status(), CacheStatus::New),
        "{tuner:?}"
    );
    assert_eq!(tuner.class(), DeviceClass::of(&ctx));
    let candidates = tuner.candidates(&GemmProblem::gemm(m, n, k, false, false), &key);
    let cfg = tuner.gemm(&kernel, m, n, k, false, false).unwrap();
    let report = tuner.last_report().unwrap();
    assert!(tuner.last_timed() > 1, "{report:?}");
    assert!(
        report.rejected.is_empty(),
        "every candidate computes right: {report:?}"
    );
    assert_eq!(tuner.last_timed(), candidates.len());
    assert!(candidates.contains(&cfg), "{cfg:?} not in {candidates:?}");
    assert_eq!(report.chosen, cfg);
    assert!(!report.from_cache);
    assert_eq!(report.clock, Some(Clock::Gpu));
    assert!(report.timed.iter().all(|(_, t)| !t.is_zero()), "{report:?}");
    assert!(report.save_error.is_none(), "{report:?}");
    let line = report.to_string();
    assert!(line.starts_with("tuned "), "{line}");
    assert_eq!(line.matches(" ms").count(), candidates.len(), "{line}");
    check_gemm(&ctx, &kernel, cfg, (m, n, k), false, false, 7);
    // Saved beside the pipeline cache, as soon as it was chosen.
    let device = CacheDevice::of(&ctx);
    let saved = TuningCache::load(&path, device).unwrap().unwrap();
    let entry = TuneKey::new(
        &GemmProblem::gemm(m, n, k, false, false),
        "fp32_lm_nocm",
        false,
    );
    assert_eq!(entry.m, 128);
    assert_eq!(saved.get(&entry), Some(Tuned::of(&cfg)));
    ctx.save_pipeline_cache(&pipelines).unwrap();

    // A second tuner on the same file: the same answer, nothing timed; in the same bucket too.
    let mut again = GemmTuner::new(&ctx, Some(&path));
    assert!(
        matches!(again.cache_status(), CacheStatus::Loaded(1)),
        "{again:?}"
    );
    assert_eq!(again.gemm(&kernel, m, n, k, false, false).unwrap(), cfg);
    assert_eq!(again.last_timed(), 0);
    assert!(again.last_report().unwrap().from_cache);
    assert_eq!(again.gemm(&kernel, 100, 72, 60, false, false).unwrap(), cfg);
    assert_eq!(again.last_timed(), 0);
    check_gemm(&ctx, &kernel, cfg, (100, 72, 60), false, false, 8);

    // Another bucket (transposed A): timed, and recorded beside the first.
    let t = again.gemm(&kernel, m, n, k, true, false).unwrap();
    assert!(again.last_timed() > 1);
    check_gemm(&ctx, &kernel, t, (m, n, k), true, false, 9);
    let third = GemmTuner::new(&ctx, Some(&path));
    assert!(
        matches!(third.cache_status(), CacheStatus::Loaded(2)),
        "{third:?}"
    );

    // The best variant this device loads, through the in-memory cache.
    let best = ctx.load::<gemm::Kernel>().unwrap();
    let mut memory = GemmTuner::new(&ctx, None);
    assert!(matches!(memory.cache_status(), CacheStatus::InMemory));
    let cfg = memory.gemm(&best, 72, 136, 56, false, true).unwrap();
    assert!(memory.last_timed() >= 1);
    check_gemm(&ctx, &best, cfg, (72, 136, 56), false, true, 10);
    assert_eq!(memory.gemm(&best, 72, 136, 56, false, true).unwrap(), cfg);
    assert_eq!(memory.last_timed(), 0);
    assert!(memory.save().is_ok());

    let _ = std::fs::remove_dir_all(&dir);
    assert_clean(&ctx);
}

#[test]
fn autotune_int8_gemm_and_convolution() {
    let ctx = ctx();
    let mut tuner = GemmTuner::new(&ctx, None);

    let kernel = ctx.load::<gemm_int8::Kernel>().unwrap();
    let (m, n, k) = (40, 144, 96);
    let cfg = tuner.gemm_int8(&kernel, m, n, k).unwrap();
    let report = tuner.last_report().unwrap();
    assert!(
        tuner.last_timed() > 1 && report.rejected.is_empty(),
        "{report:?}"
    );
    let a = random_i8(m * k, 1);
    let b = random_i8(k * n, 2);
    let at = Tensor::from_i8(&ctx, &[m, k], &a).unwrap();
    let bt = Tensor::from_i8(&ctx, &[k, n], &b).unwrap();
    let ct = Tensor::new(&ctx, &[m, n], vkprism::TensorFormat::I32).unwrap();
    ct.upload_i32(&vec![i32::MIN; m * n]).unwrap();
    let pipe = kernel
        .pipeline(&cfg.spec(Default::default()), Some(cfg.local_size()))
        .unwrap();
    ctx.run(|l| {
        l.dispatch(
            &pipe,
            &gemm_int8::BufferBindings {
                a_blob: &at,
                b_blob: &bt,
                c_blob: &ct,
            },
            &gemm_int8::PushConstants {
                M: m as i32,
                N: n as i32,
                K: k as i32,
            },
            cfg.grid(m, n),
        )
    })
    .unwrap();
    let mut want = vec![0i32; m * n];
    for (r, row) in want.chunks_mut(n).enumerate() {
        for (l, &x) in a[r * k..(r + 1) * k].iter().enumerate() {
            for (c, out) in row.iter_mut().enumerate() {
                *out += x as i32 * b[l * n + c] as i32;
            }
        }
    }
    assert_eq!(ct.download_i32().unwrap(), want, "{cfg:?}");
    assert_eq!(tuner.gemm_int8(&kernel, m, n, k).unwrap(), cfg);
    assert_eq!(tuner.last_timed(), 0);

    let s = Conv2dShape {
        batch: 1,
        h: 9,
        w: 10,
        c: 8,
        outc: 12,
        kh: 3,
        kw: 3,
        stride: 1,
        pad: 1,
    };
    let kernel = ctx.load::<conv2d_nhwc::Kernel>().unwrap();
    let cfg = tuner.conv2d_nhwc(&kernel, &s).unwrap();
    let report = tuner.last_report().unwrap();
    assert!(
        tuner.last_timed() > 1 && report.rejected.is_empty(),
        "{report:?}"
    );
    let f = kernel.format_of("in_blob").unwrap();
    let (oh, ow) = (s.outh(), s.outw());
    let input = random(s.batch * s.h * s.w * s.c, 3, 0.1, 1.0);
    let weight = random(s.kh * s.kw * s.c * s.outc, 4, 0.1, 1.0);
    let bias = random(s.outc, 5, 0.1, 1.0);
    let it = Tensor::from_f32(&ctx, &[s.batch, s.h, s.w, s.c], f, &input).unwrap();
    let wt = Tensor::from_f32(&ctx, &[s.kh, s.kw, s.c, s.outc], f, &weight).unwrap();
    let bt = Tensor::from_f32(&ctx, &[s.outc], f, &bias).unwrap();
    let len = s.batch * oh * ow * s.outc;
    let ot = Tensor::from_f32(&ctx, &[s.batch, oh, ow, s.outc], f, &vec![f32::NAN; len]).unwrap();
    let spec = cfg.spec(conv2d_nhwc::SpecConstants {
        bias_term: 1,
        ..Default::default()
    });
    let pipe = kernel.pipeline(&spec, Some(cfg.local_size())).unwrap();
    let (gm, gn, _) = s.gemm_mnk();
    ctx.run(|l| {
        l.dispatch(
            &pipe,
            &conv2d_nhwc::BufferBindings {
                in_blob: &it,
                w_blob: &wt,
                bias_blob: &bt,
                out_blob: &ot,
            },
            &s.push(1.0, 0.0),
            cfg.grid(gm, gn),
        )
    })
    .unwrap();
    let q = |x: &[f32]| quantize(x, f);
    let (want, scale) = reference::conv2d_nhwc(s, &q(&input), &q(&weight), &q(&bias));
    let scale: Vec<f32> = scale
        .iter()
        .zip(&want)
        .map(|(s, w)| s.max(w.abs()))
        .collect();
    check(
        &ot.download_f32().unwrap(),
        &q(&want),
        &scale,
        tolerance(&kernel.variant().key),
        &format!("{s:?} {cfg:?}"),
    );
    assert_eq!(tuner.conv2d_nhwc(&kernel, &s).unwrap(), cfg);
    assert_eq!(tuner.last_timed(), 0);
    assert_eq!(tuner.cache().len(), 2);
    assert_clean(&ctx);
}

/// Writes `bytes` at `path`, then checks what loading says (`want`), that a tuner reports the
/// same as discarded, tunes the problem again, and replaces the file with a good one.
fn refused(
    ctx: &Context,
    kernel: &Arc<LoadedKernel<gemm::Kernel>>,
    path: &Path,
    bytes: &[u8],
    what: &str,
    want: fn(&CacheError) -> bool,
) {
    std::fs::write(path, bytes).unwrap();
    let device = CacheDevice::of(ctx);
    match TuningCache::load(path, device) {
        Err(e) => {
            assert!(want(&e), "{what}: {e:?}");
            assert!(
                e.to_string().starts_with("tuning cache file: "),
                "{what}: {e}"
            );
        }
        Ok(c) => panic!("{what}: loaded {c:?}"),
    }
    let mut tuner = GemmTuner::new(ctx, Some(path));
    match tuner.cache_status() {
        CacheStatus::Discarded(e) => assert!(want(e), "{what}: {e:?}"),
        other => panic!("{what}: {other:?}"),
    }
    tuner.gemm(kernel, 64, 64, 32, false, false).unwrap();
    assert!(tuner.last_timed() > 0, "{what}: tuned again");
    let replaced = TuningCache::load(path, device).unwrap().unwrap();
    assert_eq!(replaced.len(), 1, "{what}");
}

#[test]
fn damaged_truncated_foreign_and_other_version_files_are_reported_and_replaced() {
    let ctx = ctx();
    let dir = temp_dir("files");
    let path = dir.join("pipelines.bin.tuning");
    let kernel = ctx
        .load_with::<gemm::Kernel>(&LoadOptions::variant_named("fp32_lm_nocm").unwrap())
        .unwrap();
    let device = CacheDevice::of(&ctx);
    assert!(
        TuningCache::load(&path, device).unwrap().is_none(),
        "no file: no cache, no error"
    );
    let mut tuner = GemmTuner::new(&ctx, Some(&path));
    tuner.gemm(&kernel, 64, 64, 32, false, false).unwrap();
    let good = std::fs::read(&path).unwrap();
    let text = String::from_utf8(good.clone()).unwrap();
    assert!(text.starts_with("vkprism-tuning 1\ndevice "), "{text}");
    assert!(text.ends_with('\n'));

    use CacheError as E;
    // Damaged: one changed character in the entry, bytes that aren't text, a stranger's file.
    let mut changed = good.clone();
    let entry = text.find("\ngemm ").unwrap() + 1;
    changed[entry + text[entry..].find(' ').unwrap() - 1] = b'n';
    let corrupt: fn(&E) -> bool = |e| matches!(e, E::Corrupt { .. });
    refused(&ctx, &kernel, &path, &changed, "a changed byte", corrupt);
    refused(
        &ctx,
        &kernel,
        &path,
        &[0xff, 0xfe, 0, 1, 2, 0x80],
        "binary",
        corrupt,
    );
    refused(
        &ctx,
        &kernel,
        &path,
        b"[tuning]\nkey = 1\n",
        "another format",
        corrupt,
    );
    // Truncated: half, all but the last byte, nothing.
    let truncated: fn(&E) -> bool = |e| matches!(e, E::Truncated);
    refused(
        &ctx,
        &kernel,
        &path,
        &good[..good.len() / 2],
        "half",
        truncated,
    );
    refused(
        &ctx,
        &kernel,
        &path,
        &good[..good.len() - 1],
        "last byte",
        truncated,
    );
    refused(&ctx, &kernel, &path, b"", "empty", truncated);
    // Another device, and this device with another driver: well-formed files, not used here.
    for other in [
        CacheDevice {
            vendor_id: 0x10de,
            device_id: 0x2330,
            driver_version: 0x8c2a_8000,
        },
        CacheDevice {
            driver_version: device.driver_version.wrapping_add(1),
            ..device
        },
    ] {
        let mut foreign = TuningCache::new(other);
        let tuned = Tuned {
            local: [16, 16],
            bk: 16,
            cm_tiles: [4, 4, 2],
        };
        let p = GemmProblem::gemm(64, 64, 32, false, false);
        foreign.insert(TuneKey::new(&p, "fp32_lm_nocm", false), tuned);
        let text = foreign.to_text("another machine");
        assert_eq!(
            TuningCache::parse(text.as_bytes(), other).unwrap(),
            foreign,
            "well-formed for its own device"
        );
        let want: fn(&E) -> bool = |e| matches!(e, E::ForeignDevice { .. });
        refused(&ctx, &kernel, &path, text.as_bytes(), "foreign", want);
        match TuningCache::parse(text.as_bytes(), device) {
            Err(E::ForeignDevice { file, this }) => assert_eq!((file, this), (other, device)),
            other => panic!("{other:?}"),
        }
    }
    // Another format version (a later vkprism's file).
    let v2 = text.replacen("vkprism-tuning 1", "vkprism-tuning 2", 1);
    let version: fn(&E) -> bool = |e| matches!(e, E::Version { found } if found == "2");
    refused(&ctx, &kernel, &path, v2.as_bytes(), "version 2", version);

    // A well-formed entry the device can't run (a 64×64 workgroup: 4096 invocations) is not
    // used: the problem is tuned again.
    let mut stale = TuningCache::new(device);
    let p = GemmProblem::gemm(64, 64, 32, false, false);
    stale.insert(
        TuneKey::new(&p, "fp32_lm_nocm", false),
        Tuned {
            local: [64, 64],
            bk: 16,
            cm_tiles: [4, 4, 2],
        },
    );
    stale.save(&path, "hand-made").unwrap();
    let mut tuner = GemmTuner::new(&ctx, Some(&path));
    assert!(matches!(tuner.cache_status(), CacheStatus::Loaded(1)));
    let cfg = tuner.gemm(&kernel, 64, 64, 32, false, false).unwrap();
    assert!(tuner.last_timed() > 0);
    assert_ne!(cfg.local, [64, 64]);
    check_gemm(&ctx, &kernel, cfg, (64, 64, 32), false, false, 11);

    // No temporary file is left beside the cache.
    let names: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names, ["pipelines.bin.tuning"]);
    let _ = std::fs::remove_dir_all(&dir);
    assert_clean(&ctx);
}

/// The convolution's cooperative-matrix tiles on NVIDIA: 96×256 where N > 128 and K > 64 (a
/// 3×3 convolution of 256 channels), 64×128 where either is small (a 1×1 convolution of 64 input
/// channels, or one of 128 output channels), as `coopmat_tiles` documents.
#[test]
fn convolutions_of_few_channels_get_narrower_tiles() {
    let cm = variants(GemmKernel::Conv2dNhwc)
        .into_iter()
        .find(|k| k.name() == "fp16s_lm_cm")
        .unwrap();
    let conv = |c, outc, kernel| Conv2dShape {
        batch: 8,
        h: 56,
        w: 56,
        c,
        outc,
        kh: kernel,
        kw: kernel,
        stride: 1,
        pad: kernel / 2,
    };
    for (shape, tile, subgroups) in [
        (conv(256, 256, 3), (96, 256), 12),
        (conv(64, 256, 1), (64, 128), 8),
        (conv(256, 128, 1), (64, 128), 8),
        (conv(256, 512, 1), (96, 256), 12),
    ] {
        let cfg = GemmConfig::for_conv(&cm, 32, &shape);
        assert_eq!(
            (cfg.tile(), cfg.local),
            (tile, [32, subgroups]),
            "{shape:?}"
        );
    }
}
