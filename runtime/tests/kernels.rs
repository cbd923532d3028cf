//! Kernels on the device: every variant forced and checked against the CPU, the default choice,
//! specialization constants and workgroup sizes, command lists (replay, barriers, timestamps,
//! ownership), the dispatch checks, and the pipeline cache on disk. Validation on throughout.

mod fixtures;

use fixtures::{scale, tiny, widen};
use vkprism_runtime::CommandError;
use vkprism_runtime::PipelineError;
use vkprism_runtime::{
    select_variant, CommandList, Context, DeviceFeatures, Feature, FeatureSet, Image, LoadOptions,
    MemoryKind, NoPushConstants, Options, Tensor, TensorFormat,
};
use vkprism_testkit::{assert_clean, assert_close, ctx, quantize, random, tolerance};

/// Runs `scale` in one variant on `n` random elements and checks it.
fn check_scale_variant(ctx: &Context, name: &str, n: usize, seed: u64) {
    let k = ctx
        .load_with::<scale::Kernel>(&LoadOptions::variant_named(name).unwrap())
        .unwrap_or_else(|e| panic!("{name}: {e}"));
    let key = k.variant().key;
    assert_eq!(key.name(), name);
    let fmt = key.float.storage_format();
    let spec = scale::SpecConstants { c: 0.25 };
    let pipe = k.pipeline(&spec, None).unwrap();
    let push = scale::PushConstants {
        a: 1.5,
        b: -0.5,
        n: n as u32,
    };
    let x = random(n, seed);
    let want: Vec<f32> = quantize(&x, fmt)
        .iter()
        .map(|v| v * 1.5 - 0.5 + 0.25)
        .collect();
    let got = if key.memory == MemoryKind::Image {
        let xi = Image::new(ctx, 1, [n as u32, 1, 1], 1, fmt).unwrap();
        let yi = Image::new(ctx, 1, [n as u32, 1, 1], 1, fmt).unwrap();
        xi.upload_f32(&x).unwrap();
        ctx.run(|l| {
            l.dispatch(
                &pipe,
                &scale::ImageBindings { x: &xi, y: &yi },
                &push,
                [n as u32, 1, 1],
            )
        })
        .unwrap();
        yi.download_f32().unwrap()
    } else {
        let xt = Tensor::from_f32(ctx, &[n], fmt, &x).unwrap();
        let yt = Tensor::new(ctx, &[n], fmt).unwrap();
        ctx.run(|l| {
            l.dispatch(
                &pipe,
                &scale::BufferBindings { x: &xt, y: &yt },
                &push,
                [scale::global(&key, n as u32), 1, 1],
            )
        })
        .unwrap();
        yt.download_f32().unwrap()
    };
    assert_close(&got, &want, tolerance(&key), name);
}

#[test]
fn every_variant_the_device_supports_runs_and_agrees_with_the_cpu() {
    let ctx = ctx();
    let mut ran = Vec::new();
    for v in scale::INFO.variants {
        let name = v.key.name();
        let missing = v.requires().difference(ctx.features().features);
        if missing.is_empty() {
            // An odd number of workgroups and a partial last one.
            check_scale_variant(&ctx, &name, 64 * 5 + 34, ran.len() as u64);
            ran.push(name);
        } else {
            // Forcing a variant the device can't run names what it lacks.
            let e = ctx
                .load_with::<scale::Kernel>(&LoadOptions::default().with_variant(v.key))
                .err()
                .unwrap_or_else(|| panic!("{name} loaded without {missing}"));
            assert!(e.to_string().contains("lacks"), "{e}");
        }
        assert_clean(&ctx);
    }
    if ctx.device_name().contains("llvmpipe") {
        assert_eq!(
            ran.len(),
            scale::INFO.variants.len(),
            "lavapipe runs them all: {ran:?}"
        );
    }

    for v in widen::INFO.variants {
        let name = v.key.name();
        if !v.requires().difference(ctx.features().features).is_empty() {
            continue;
        }
        let k = ctx
            .load_with::<widen::Kernel>(&LoadOptions::default().with_variant(v.key))
            .unwrap();
        let n: usize = 1001;
        let q: Vec<i8> = (0..n).map(|i| (i * 97 % 256) as u8 as i8).collect();
        // int8p reads whole uints: pad the tensor to four elements.
        let x = Tensor::new(&ctx, &[n.div_ceil(4) * 4], TensorFormat::I8).unwrap();
        let mut padded = q.clone();
        padded.resize(n.div_ceil(4) * 4, 0);
        x.upload_i8(&padded).unwrap();
        let y = Tensor::new(&ctx, &[n], TensorFormat::I32).unwrap();
        let pipe = k.pipeline(&Default::default(), None).unwrap();
        ctx.run(|l| {
            l.dispatch(
                &pipe,
                &widen::BufferBindings { x: &x, y: &y },
                &widen::PushConstants { n: n as u32 },
                [n as u32, 1, 1],
            )
        })
        .unwrap();
        let want: Vec<i32> = q.iter().map(|v| *v as i32 * 2).collect();
        assert_eq!(y.download_i32().unwrap(), want, "{name}");
        assert_clean(&ctx);
    }
}

#[test]
fn default_choice_follows_options_and_is_explained() {
    let ctx = ctx();
    let all = ctx.features().features;
    let k = ctx.load::<scale::Kernel>().unwrap();
    let expect = if all.contains_all(FeatureSet::from_slice(&[
        Feature::StorageBuffer16BitAccess,
        Feature::ShaderFloat16,
    ])) {
        "fp16sa"
    } else {
        "fp16p"
    };
    assert_eq!(k.variant().key.name(), expect);
    let why = k.selection().to_string();
    assert!(why.starts_with(expect), "{why}");
    assert!(why.contains("bf16s: options exclude bf16s"), "{why}");
    let sel = k.selection();
    assert_eq!(sel.eligible[0], sel.key);

    let fp32 = ctx
        .load_with::<scale::Kernel>(&LoadOptions::default().with_options(Options::fp32_only()))
        .unwrap();
    assert_eq!(fp32.variant().key.name(), "fp32");
    let img = ctx
        .load_with::<scale::Kernel>(&LoadOptions::options(
            Options::default()
                .with_image_storage(true)
                .with_fp16_storage(false)
                .with_fp16_packed(false),
        ))
        .unwrap();
    assert_eq!(img.variant().key.name(), "fp32_image");
    let bf = ctx
        .load_with::<scale::Kernel>(&LoadOptions::options(
            Options::default().with_bf16_storage(true),
        ))
        .unwrap();
    assert_eq!(bf.variant().key.name(), "bf16s");
    let i8 = ctx.load::<widen::Kernel>().unwrap();
    assert_eq!(i8.variant().key.name(), "fp32_int8a");
    assert_clean(&ctx);
}

#[test]
fn missing_features_and_forbidding_options_are_named() {
    // Hand-built devices: no GPU needed for the policy, but the errors must read well.
    let none = DeviceFeatures::new(FeatureSet::EMPTY);
    let e = select_variant(
        &widen::INFO,
        &Options::default().with_int8_packed(false),
        &none,
    )
    .unwrap_err();
    let text = e.to_string();
    assert!(text.contains("kernel `widen`"), "{text}");
    assert!(text.contains("fp32_int8p: options exclude int8p"), "{text}");
    assert!(
        text.contains("fp32_int8a: needs storageBuffer8BitAccess, shaderInt8; device lacks storageBuffer8BitAccess, shaderInt8"),
        "{text}"
    );
    assert_eq!(e.rejected.len(), 3);

    let ctx = ctx();
    let e = ctx
        .load_with::<scale::Kernel>(&LoadOptions::variant_named("fp32_int8p").unwrap())
        .err()
        .unwrap();
    assert!(
        e.to_string().contains("no variant named `fp32_int8p`") && e.to_string().contains("fp16sa"),
        "{e}"
    );
    // Bindings are found by name: the format to make a tensor in, or an error listing them.
    let fp16s = ctx
        .load_with::<scale::Kernel>(&LoadOptions::variant_named("fp16s").unwrap())
        .unwrap();
    assert_eq!(fp16s.format_of("X").unwrap(), TensorFormat::F16);
    assert_eq!(fp16s.variant().format_of("Y"), Some(TensorFormat::F16));
    let e = fp16s.format_of("Z").unwrap_err();
    assert!(
        matches!(&e, PipelineError::NoSuchBinding { name, .. } if name == "Z")
            && e.to_string().contains("its bindings: X, Y"),
        "{e}"
    );
    // A string that is no variant name at all is refused before anything loads.
    let e = LoadOptions::variant_named("fp64").unwrap_err();
    assert!(
        e.to_string().contains("`fp64` is not a variant name"),
        "{e}"
    );
    assert_clean(&ctx);
}

#[test]
fn specialization_constants_and_workgroup_sizes_make_distinct_cached_pipelines() {
    let ctx = ctx();
    let k = ctx
        .load_with::<scale::Kernel>(&LoadOptions::variant_named("fp32").unwrap())
        .unwrap();
    let n = 1000usize;
    let x = Tensor::from_f32(&ctx, &[n], TensorFormat::F32, &random(n, 3)).unwrap();
    let push = scale::PushConstants {
        a: 2.0,
        b: 0.0,
        n: n as u32,
    };
    for (c, local) in [
        (0.0f32, None),
        (1.0, Some([32, 1, 1])),
        (-3.0, Some([256, 1, 1])),
        (0.0, Some([1, 1, 1])),
    ] {
        let p = k.pipeline(&scale::SpecConstants { c }, local).unwrap();
        assert_eq!(p.local_size(), local.unwrap_or([64, 1, 1]));
        let y = Tensor::new(&ctx, &[n], TensorFormat::F32).unwrap();
        ctx.run(|l| {
            l.dispatch(
                &p,
                &scale::BufferBindings { x: &x, y: &y },
                &push,
                [n as u32, 1, 1],
            )
        })
        .unwrap();
        let want: Vec<f32> = x
            .download_f32()
            .unwrap()
            .iter()
            .map(|v| v * 2.0 + c)
            .collect();
        assert_close(
            &y.download_f32().unwrap(),
            &want,
            1e-6,
            &format!("c={c} local={local:?}"),
        );
    }
    let max = ctx.features().limits.max_compute_work_group_size;
    assert!(matches!(
        k.pipeline(&Default::default(), Some([max[0] + 1, 1, 1])),
        Err(PipelineError::WorkgroupTooLarge { .. })
    ));
    assert!(matches!(
        k.pipeline(&Default::default(), Some([0, 1, 1])),
        Err(PipelineError::WorkgroupZero(_))
    ));
    assert_clean(&ctx);
}

#[test]
fn dispatch_checks_bindings_sizes_and_limits() {
    let ctx = ctx();
    let k = ctx
        .load_with::<scale::Kernel>(&LoadOptions::variant_named("fp16s").unwrap())
        .unwrap();
    let p = k.pipeline(&Default::default(), None).unwrap();
    let push = scale::PushConstants {
        a: 1.0,
        b: 0.0,
        n: 64,
    };
    let h = Tensor::new(&ctx, &[64], TensorFormat::F16).unwrap();
    let f = Tensor::from_f32(&ctx, &[64], TensorFormat::F32, &random(64, 1)).unwrap();
    let mut list = CommandList::new(&ctx).unwrap();

    // Precision mismatch: an fp32 tensor bound to an fp16 variant is an error, not garbage.
    let e = list
        .dispatch(
            &p,
            &scale::BufferBindings { x: &f, y: &h },
            &push,
            [64, 1, 1],
        )
        .unwrap_err();
    assert!(
        matches!(&e, CommandError::FormatMismatch { expected: TensorFormat::F16, got: TensorFormat::F32, name, .. } if *name == "X"),
        "{e}"
    );
    assert!(e.to_string().contains("precision mismatch"), "{e}");
    // Zero global size.
    assert!(matches!(
        list.dispatch(
            &p,
            &scale::BufferBindings { x: &h, y: &h },
            &push,
            [0, 1, 1]
        ),
        Err(CommandError::ZeroSize(_))
    ));
    // More workgroups than the device allows (here in a shader that reads gl_NumWorkGroups):
    // an error naming the limit, never truncation.
    let limit = ctx.features().limits.max_compute_work_group_count;
    let kg = ctx.load::<fixtures::groups::Kernel>().unwrap();
    let pg = kg.pipeline(&Default::default(), Some([1, 1, 1])).unwrap();
    let g = Tensor::new(&ctx, &[4], TensorFormat::F32).unwrap();
    let e = list
        .dispatch(
            &pg,
            &fixtures::groups::BufferBindings { x: &g },
            &NoPushConstants::default(),
            [limit[0].saturating_add(1), 1, 1],
        )
        .unwrap_err();
    assert!(
        matches!(e, CommandError::TooManyGroups { .. })
            && e.to_string().contains("maxComputeWorkGroupCount"),
        "{e} (limit {limit:?})"
    );
    // Image bindings for a buffer variant.
    if ctx.features().supports(Feature::ImageFormatsFp16) {
        let im = Image::new(&ctx, 1, [64, 1, 1], 1, TensorFormat::F16).unwrap();
        assert!(matches!(
            list.dispatch(
                &p,
                &scale::ImageBindings { x: &im, y: &im },
                &push,
                [64, 1, 1]
            ),
            Err(CommandError::MemoryKindMismatch { .. })
        ));
    }
    // A tensor from another context.
    let other = vkprism_testkit::ctx();
    let foreign = Tensor::new(&other, &[64], TensorFormat::F16).unwrap();
    assert!(matches!(
        list.dispatch(
            &p,
            &scale::BufferBindings { x: &foreign, y: &h },
            &push,
            [64, 1, 1]
        ),
        Err(CommandError::ForeignResource)
    ));
    // fp16 packed reads whole uints: an odd fp16 tensor can't be bound there.
    let kp = ctx
        .load_with::<scale::Kernel>(&LoadOptions::variant_named("fp16p").unwrap())
        .unwrap();
    let pp = kp.pipeline(&Default::default(), None).unwrap();
    let odd = Tensor::new(&ctx, &[63], TensorFormat::F16).unwrap();
    assert!(matches!(
        list.dispatch(
            &pp,
            &scale::BufferBindings { x: &odd, y: &odd },
            &push,
            [32, 1, 1]
        ),
        Err(CommandError::PartialElement { .. })
    ));
    // Nothing was recorded by the failed calls; the list still works.
    assert!(list.is_empty());
    let y = Tensor::new(&ctx, &[64], TensorFormat::F16).unwrap();
    list.dispatch(
        &p,
        &scale::BufferBindings { x: &h, y: &y },
        &push,
        [64, 1, 1],
    )
    .unwrap();
    h.upload_f32(&[2.0; 64]).unwrap();
    list.submit_and_wait().unwrap();
    assert_eq!(y.download_f32().unwrap(), vec![2.0; 64]);
    assert_clean(&ctx);
    assert_clean(&other);
}

#[test]
fn lists_replay_with_barriers_only_where_needed_and_time_each_dispatch() {
    let ctx = ctx();
    let k = ctx.load::<tiny::Kernel>().unwrap();
    let p = k.pipeline(&Default::default(), None).unwrap();
    let none = NoPushConstants::default();
    assert_eq!(std::mem::size_of::<NoPushConstants>(), 0);

    // A dependent chain: each dispatch reads what the last wrote.
    let a = Tensor::from_f32(&ctx, &[64], TensorFormat::F32, &[0.0; 64]).unwrap();
    let mut chain = CommandList::with_timestamps(&ctx, 16).unwrap();
    for _ in 0..10 {
        chain
            .dispatch(&p, &tiny::BufferBindings { x: &a }, &none, [64, 1, 1])
            .unwrap();
    }
    assert_eq!(chain.barrier_count(), 9);
    assert!(matches!(chain.timings(), Err(CommandError::NotRun)));
    for run in 1..=5 {
        chain.submit_and_wait().unwrap();
        assert_eq!(
            a.download_f32().unwrap(),
            vec![10.0 * run as f32; 64],
            "run {run}"
        );
    }
    let t = chain.timings().unwrap();
    assert_eq!(t.len(), 10);
    assert!(chain.total_time().unwrap() >= *t.iter().max().unwrap());

    // Independent dispatches: no barrier at all.
    let many: Vec<Tensor> = (0..10)
        .map(|i| Tensor::from_f32(&ctx, &[64], TensorFormat::F32, &[i as f32; 64]).unwrap())
        .collect();
    let mut flat = CommandList::with_total_timing(&ctx).unwrap();
    for t in &many {
        flat.dispatch(&p, &tiny::BufferBindings { x: t }, &none, [64, 1, 1])
            .unwrap();
    }
    assert_eq!(flat.barrier_count(), 0);
    flat.submit_and_wait().unwrap();
    flat.submit_and_wait().unwrap();
    for (i, t) in many.iter().enumerate() {
        assert_eq!(t.download_f32().unwrap(), vec![i as f32 + 2.0; 64]);
    }
    assert!(matches!(flat.timings(), Err(CommandError::NoTimestamps)));
    assert!(flat.total_time().is_ok());

    // Read after write across kernels: scale reads what tiny wrote, then tiny writes what scale
    // read (write after read): two barriers.
    let ks = ctx
        .load_with::<scale::Kernel>(&LoadOptions::variant_named("fp32").unwrap())
        .unwrap();
    let ps = ks.pipeline(&Default::default(), None).unwrap();
    let x = Tensor::from_f32(&ctx, &[64], TensorFormat::F32, &[1.0; 64]).unwrap();
    let y = Tensor::new(&ctx, &[64], TensorFormat::F32).unwrap();
    let push = scale::PushConstants {
        a: 3.0,
        b: 0.0,
        n: 64,
    };
    let mut list = CommandList::new(&ctx).unwrap();
    list.dispatch(&p, &tiny::BufferBindings { x: &x }, &none, [64, 1, 1])
        .unwrap();
    list.dispatch(
        &ps,
        &scale::BufferBindings { x: &x, y: &y },
        &push,
        [64, 1, 1],
    )
    .unwrap();
    list.dispatch(&p, &tiny::BufferBindings { x: &x }, &none, [64, 1, 1])
        .unwrap();
    assert_eq!(list.barrier_count(), 2);
    assert_eq!(list.dispatch_names(), ["tiny", "scale", "tiny"]);
    list.submit_and_wait().unwrap();
    assert_eq!(y.download_f32().unwrap(), vec![6.0; 64]);
    assert_eq!(x.download_f32().unwrap(), vec![3.0; 64]);
    assert_clean(&ctx);
}

#[test]
fn lists_keep_what_they_use_alive() {
    let ctx = ctx();
    let mut list = CommandList::new(&ctx).unwrap();
    let x = {
        // The kernel, pipeline and input go out of scope; the list holds them.
        let k = ctx
            .load_with::<scale::Kernel>(&LoadOptions::variant_named("fp32").unwrap())
            .unwrap();
        let p = k.pipeline(&Default::default(), None).unwrap();
        let x = Tensor::from_f32(&ctx, &[64], TensorFormat::F32, &[1.0; 64]).unwrap();
        let y = Tensor::new(&ctx, &[64], TensorFormat::F32).unwrap();
        let push = scale::PushConstants {
            a: 2.0,
            b: 1.0,
            n: 64,
        };
        list.dispatch(
            &p,
            &scale::BufferBindings { x: &x, y: &y },
            &push,
            [64, 1, 1],
        )
        .unwrap();
        y
    };
    drop(ctx.clone());
    for _ in 0..3 {
        list.submit_and_wait().unwrap();
    }
    assert_eq!(x.download_f32().unwrap(), vec![3.0; 64]);
    // The list outlives the context handle too.
    let c2 = ctx.clone();
    drop(ctx);
    list.submit_and_wait().unwrap();
    drop(list);
    assert_clean(&c2);
}

#[test]
fn many_dispatches_span_several_descriptor_pools() {
    let ctx = ctx();
    let k = ctx.load::<tiny::Kernel>().unwrap();
    let p = k.pipeline(&Default::default(), None).unwrap();
    let a = Tensor::from_f32(&ctx, &[64], TensorFormat::F32, &[0.0; 64]).unwrap();
    let mut list = CommandList::new(&ctx).unwrap();
    for _ in 0..1000 {
        list.dispatch(
            &p,
            &tiny::BufferBindings { x: &a },
            &NoPushConstants::default(),
            [64, 1, 1],
        )
        .unwrap();
    }
    list.submit_and_wait().unwrap();
    assert_eq!(a.download_f32().unwrap(), vec![1000.0; 64]);
    assert_clean(&ctx);
}

#[test]
fn pipeline_cache_round_trips_and_rejects_bad_files() {
    let ctx = ctx();
    let k = ctx
        .load_with::<scale::Kernel>(&LoadOptions::variant_named("fp32").unwrap())
        .unwrap();
    k.pipeline(&Default::default(), None).unwrap();
    let dir = std::env::temp_dir().join(format!("vkprism-rt-cache-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let good = dir.join("good.bin");
    ctx.save_pipeline_cache(&good).unwrap();
    let data = std::fs::read(&good).unwrap();
    ctx.load_pipeline_cache(&good).unwrap();
    // A second context (same device and driver) takes it too.
    let other = vkprism_testkit::ctx();
    other.load_pipeline_cache(&good).unwrap();

    let bad = dir.join("bad.bin");
    let rejects = |bytes: &[u8], why: &str| {
        std::fs::write(&bad, bytes).unwrap();
        match ctx.load_pipeline_cache(&bad) {
            Err(PipelineError::CacheRejected(m)) => assert!(m.contains(why), "`{m}` lacks `{why}`"),
            other => panic!("expected a rejection for `{why}`, got {other:?}"),
        }
    };
    rejects(&data[..10], "shorter");
    rejects(&[], "shorter");
    let flip = |i: usize| {
        let mut d = data.clone();
        d[i] ^= 0x5a;
        d
    };
    rejects(&flip(4), "version");
    rejects(&flip(8), "vendor");
    rejects(&flip(12), "device");
    rejects(&flip(20), "pipelineCacheUUID");
    // Damage past the header is caught by the checksum, before the driver sees it.
    // (lavapipe's cache is the bare 32-byte header; a real driver's has a body to damage.)
    if data.len() > 32 + 32 {
        rejects(&flip(32), "checksum");
    }
    rejects(&flip(data.len() - 8), "checksum");
    rejects(&flip(data.len() - 16), "corrupted");
    rejects(&flip(data.len() - 32), "trailer");
    rejects(&data[..data.len() - 1], "trailer");
    rejects(&data[..data.len() - 20], "trailer");
    let mut longer = data.clone();
    longer.insert(40.min(data.len() - 32), 0);
    rejects(&longer, "corrupted");
    let mut wrong_driver = data.clone();
    let at = data.len() - 32 + 12;
    wrong_driver[at] ^= 1;
    rejects(&wrong_driver, "driver version");
    let mut garbage = data[..32].to_vec();
    garbage.extend((0..4000u32).map(|i| (i * 7919 % 251) as u8));
    rejects(&garbage, "trailer");
    assert!(matches!(
        ctx.load_pipeline_cache(&dir.join("missing.bin")),
        Err(PipelineError::CacheIo(_))
    ));
    // Still usable after every rejection.
    check_scale_variant(&ctx, "fp32", 100, 9);
    let _ = std::fs::remove_dir_all(&dir);
    assert_clean(&ctx);
    assert_clean(&other);
}

/// A kernel type that lies about its push constants (none, where the block has 12 bytes): the
/// dispatch refuses rather than letting the shader read bytes nobody pushed.
struct Liar;
// SAFETY: not sound, on purpose, in one checked way only: it under-declares `PushConstants`
// (0 bytes where the block has 12), which the runtime refuses before anything reaches the
// driver; everything else is `scale`'s, which is exact.
unsafe impl vkprism_runtime::Kernel for Liar {
    const INFO: &'static vkprism_runtime::KernelInfo = &scale::INFO;
    type PushConstants = NoPushConstants;
    type SpecConstants = scale::SpecConstants;
}
struct LiarBindings<'a>(&'a Tensor);
impl<'a> vkprism_runtime::Bindings<'a> for LiarBindings<'a> {
    type Kernel = Liar;
    const MEMORY: MemoryKind = MemoryKind::Buffer;
    fn resources(&self) -> impl IntoIterator<Item = (u32, vkprism_runtime::Resource<'a>)> {
        [
            (0, vkprism_runtime::Resource::Buffer(self.0)),
            (1, vkprism_runtime::Resource::Buffer(self.0)),
        ]
    }
}

#[test]
fn push_constants_smaller_than_the_block_are_refused() {
    let ctx = ctx();
    let k = ctx
        .load_with::<Liar>(&LoadOptions::variant_named("fp32").unwrap())
        .unwrap();
    let p = k.pipeline(&Default::default(), None).unwrap();
    let t = Tensor::new(&ctx, &[64], TensorFormat::F32).unwrap();
    let mut list = CommandList::new(&ctx).unwrap();
    let e = list
        .dispatch(
            &p,
            &LiarBindings(&t),
            &NoPushConstants::default(),
            [64, 1, 1],
        )
        .unwrap_err();
    assert!(
        matches!(
            e,
            CommandError::PushConstantsSize {
                given: 0,
                range: 12,
                ..
            }
        ),
        "{e}"
    );
    // A binding left out is named.
    struct Half<'a>(&'a Tensor);
    impl<'a> vkprism_runtime::Bindings<'a> for Half<'a> {
        type Kernel = scale::Kernel;
        const MEMORY: MemoryKind = MemoryKind::Buffer;
        fn resources(&self) -> impl IntoIterator<Item = (u32, vkprism_runtime::Resource<'a>)> {
            [(0, vkprism_runtime::Resource::Buffer(self.0))]
        }
    }
    let ks = ctx
        .load_with::<scale::Kernel>(&LoadOptions::variant_named("fp32").unwrap())
        .unwrap();
    let ps = ks.pipeline(&Default::default(), None).unwrap();
    let e = list
        .dispatch(&ps, &Half(&t), &scale::PushConstants::default(), [64, 1, 1])
        .unwrap_err();
    assert!(
        matches!(e, CommandError::MissingBinding { binding: 1, .. }),
        "{e}"
    );
    assert_clean(&ctx);
}

/// `scale` with its fp16sa variant keyed as a cooperative-matrix one (`fp16sa_cm`: it needs
/// `cooperativeMatrix`, which lavapipe lacks; its SPIR-V never loads here):
/// the choice falls back, and forcing it names the missing feature.
struct NeedsCoop;
static COOP_VARIANTS: [vkprism_runtime::VariantInfo; 2] = [
    fixtures::variant(
        vkprism_runtime::VariantKey {
            coopmat: Some(true),
            ..scale::VARIANTS[4].key
        },
        scale::VARIANTS[4].spirv,
        scale::VARIANTS[4].bindings,
    ),
    fixtures::variant(
        scale::VARIANTS[0].key,
        scale::VARIANTS[0].spirv,
        scale::VARIANTS[0].bindings,
    ),
];
static COOP_INFO: vkprism_runtime::KernelInfo = vkprism_runtime::KernelInfo {
    name: "needs_coop",
    variants: &COOP_VARIANTS,
    push_constants: scale::INFO.push_constants,
    spec_constants: scale::INFO.spec_constants,
    local_size: scale::INFO.local_size,
};
// SAFETY: `scale`'s exact metadata and SPIR-V, one variant keyed as needing cooperative
// matrices (it never loads where they are missing).
unsafe impl vkprism_runtime::Kernel for NeedsCoop {
    const INFO: &'static vkprism_runtime::KernelInfo = &COOP_INFO;
    type PushConstants = scale::PushConstants;
    type SpecConstants = scale::SpecConstants;
}

#[test]
fn a_variant_needing_a_missing_feature_is_skipped_and_named() {
    let ctx = ctx();
    if ctx.features().supports(Feature::CooperativeMatrix) {
        return; // a GPU that has them runs fp16sa_cm: nothing to check here
    }
    let k = ctx.load::<NeedsCoop>().unwrap();
    assert_eq!(k.variant().key.name(), "fp32");
    let why = k.selection().to_string();
    assert!(
        why.contains("fp16sa_cm: needs") && why.contains("device lacks cooperativeMatrix"),
        "{why}"
    );
    let e = ctx
        .load_with::<NeedsCoop>(&LoadOptions::variant_named("fp16sa_cm").unwrap())
        .err()
        .unwrap();
    assert!(
        e.to_string().contains("device lacks cooperativeMatrix"),
        "{e}"
    );
    // Without the fp32 fallback nothing fits: the error lists the variant and what it lacks.
    static ONLY: vkprism_runtime::KernelInfo = vkprism_runtime::KernelInfo {
        name: "coop_only",
        variants: std::slice::from_ref(&COOP_VARIANTS[0]),
        ..COOP_INFO
    };
    let e = select_variant(&ONLY, ctx.options(), ctx.features()).unwrap_err();
    let text = e.to_string();
    assert!(
        text.contains("kernel `coop_only` has no variant")
            && text.contains("fp16sa_cm: needs storageBuffer16BitAccess, shaderFloat16, cooperativeMatrix; device lacks cooperativeMatrix"),
        "{text}"
    );
    assert_clean(&ctx);
}

/// A grid over `maxComputeWorkGroupCount` in any dimension is refused, naming the kernel, the
/// dimension, the count and the limit; nothing is recorded, and the list goes on recording: a
/// valid dispatch after it runs exactly.
#[test]
fn dispatches_over_the_group_count_limit_are_refused() {
    let ctx = ctx();
    let limit = ctx.features().limits.max_compute_work_group_count;
    let k = ctx
        .load_with::<scale::Kernel>(&LoadOptions::variant_named("fp32").unwrap())
        .unwrap();
    // One invocation per workgroup: the global size is the group count.
    let p = k.pipeline(&Default::default(), Some([1, 1, 1])).unwrap();
    // Exactly the limit along x where a tensor of that many values is small.
    let n = limit[0].min(1 << 22) as usize;
    let x = Tensor::from_f32(&ctx, &[n], TensorFormat::F32, &random(n, 5)).unwrap();
    let y = Tensor::from_f32(&ctx, &[n], TensorFormat::F32, &vec![f32::NAN; n]).unwrap();
    let bindings = scale::BufferBindings { x: &x, y: &y };
    let push = scale::PushConstants {
        a: -2.0,
        b: 1.0,
        n: n as u32,
    };
    let mut list = CommandList::new(&ctx).unwrap();
    // A limit of u32::MAX can't be passed with a u32 global size.
    for dim in (0..3).filter(|&d| limit[d] < u32::MAX) {
        let mut global = [1; 3];
        global[dim] = limit[dim] + 1;
        let e = list.dispatch(&p, &bindings, &push, global).unwrap_err();
        let want_dim = dim;
        assert!(
            matches!(e, CommandError::TooManyGroups { kernel: "scale", dim, groups, limit: l, .. }
                if dim == want_dim && groups == limit[want_dim] + 1 && l == limit[want_dim]),
            "{e}"
        );
        let text = e.to_string();
        let axis = ["x", "y", "z"][dim];
        assert!(
            text.contains("kernel `scale`")
                && text.contains(&format!("{} workgroups along {axis}", limit[dim] + 1))
                && text.contains(&format!(
                    "at most {} (maxComputeWorkGroupCount[{dim}])",
                    limit[dim]
                )),
            "{text}"
        );
        assert!(list.is_empty(), "a refused dispatch records nothing");
    }
    list.dispatch(&p, &bindings, &push, [n as u32, 1, 1])
        .unwrap();
    assert_eq!(list.len(), 1);
    list.submit_and_wait().unwrap();
    let want: Vec<f32> = x
        .download_f32()
        .unwrap()
        .iter()
        .map(|v| v * -2.0 + 1.0)
        .collect();
    assert_close(
        &y.download_f32().unwrap(),
        &want,
        0.0,
        "dispatch after a refused one",
    );
    assert_clean(&ctx);
}

#[test]
fn contexts_tensors_and_lists_work_from_several_threads() {
    let ctx = ctx();
    let k = ctx
        .load_with::<scale::Kernel>(&LoadOptions::variant_named("fp32").unwrap())
        .unwrap();
    let p = k.pipeline(&Default::default(), None).unwrap();
    std::thread::scope(|s| {
        for t in 0..4u64 {
            let (ctx, p) = (&ctx, &p);
            s.spawn(move || {
                let n = 500 + t as usize * 37;
                let x = Tensor::from_f32(ctx, &[n], TensorFormat::F32, &random(n, t)).unwrap();
                let y = Tensor::new(ctx, &[n], TensorFormat::F32).unwrap();
                let push = scale::PushConstants {
                    a: t as f32,
                    b: 1.0,
                    n: n as u32,
                };
                let mut list = CommandList::new(ctx).unwrap();
                list.dispatch(
                    p,
                    &scale::BufferBindings { x: &x, y: &y },
                    &push,
                    [n as u32, 1, 1],
                )
                .unwrap();
                for round in 0..20 {
                    let v = random(n, t * 100 + round);
                    x.upload_f32(&v).unwrap();
                    list.submit_and_wait().unwrap();
                    let want: Vec<f32> = v.iter().map(|v| v * t as f32 + 1.0).collect();
                    assert_close(&y.download_f32().unwrap(), &want, 1e-6, "threaded");
                }
            });
        }
    });
    assert_clean(&ctx);
}
