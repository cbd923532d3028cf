//! The runtime on the real driver with validation on: tensors, error paths, pipeline cache,
//! command-list replay, ownership.

use vkprism::CommandError;
use vkprism::PipelineError;
use vkprism::TensorError;
use vkprism::{
    CommandList, Context, ContextOptions, DeviceSelector, Error, LoadOptions, Options, Tensor,
    TensorFormat,
};
use vkprism_testkit::*;

vkprism::compute_shader! {
    /// y = x + 1 over vec4s (used for error paths and replay).
    pub mod inc,
    src: r#"
#version 450
layout (binding = 0) readonly buffer x_blob { sfpvec4 x_data[]; };
layout (binding = 1) writeonly buffer y_blob { sfpvec4 y_data[]; };
layout (push_constant) uniform parameter { int n; } p;
void main() {
    const int i = int(gl_GlobalInvocationID.x);
    if (i >= p.n) return;
    buffer_st4(y_data, i, buffer_ld4(x_data, i) + afp(1));
}
"#,
}

vkprism::compute_shader! {
    /// In place: x = x * 2 (for dependent chains).
    pub mod twice,
    src: r#"
#version 450
layout (binding = 0) buffer x_blob { float x_data[]; };
layout (push_constant) uniform parameter { int n; } p;
void main() {
    const int i = int(gl_GlobalInvocationID.x);
    if (i >= p.n) return;
    x_data[i] = x_data[i] * 2.0;
}
"#,
}

#[test]
fn report_names_the_device_and_its_features() {
    let ctx = ctx();
    let r = ctx.report().to_string();
    assert!(
        r.contains(&ctx.device_name()) && r.contains("features:") && r.contains("limits:"),
        "{r}"
    );
    assert!(ctx.features().limits.max_compute_work_group_invocations >= 128);
    assert_clean(&ctx);
}

#[test]
fn device_selector_that_matches_nothing_is_an_error() {
    let e = Context::with_options(
        ContextOptions::default()
            .with_device(DeviceSelector::Name("no such gpu 9000".into()))
            .with_validation(false),
    )
    .unwrap_err();
    assert!(e.to_string().contains("matches none of"), "{e}");
    let e = Context::with_options(
        ContextOptions::default()
            .with_device(DeviceSelector::Index(999))
            .with_validation(false),
    )
    .unwrap_err();
    assert!(e.to_string().contains("Index(999)"), "{e}");
}

#[test]
fn tensors_round_trip_every_format() {
    let ctx = ctx();
    let x = random(1001, 7);
    for fmt in [TensorFormat::F32, TensorFormat::F16, TensorFormat::Bf16] {
        let t = Tensor::from_f32(&ctx, &[7, 11, 13], fmt, &x).unwrap();
        assert_eq!(t.size_bytes(), 1001 * fmt.size() as u64);
        assert_eq!(t.download_f32().unwrap(), quantize(&x, fmt), "{fmt:?}");
    }
    // Round to nearest even, as the half crate does: 1 + 2^-11 is a tie between 1 and 1 + 2^-10.
    let t = Tensor::from_f32(
        &ctx,
        &[2],
        TensorFormat::F16,
        &[1.0 + 2f32.powi(-11), 1.0 + 3.0 * 2f32.powi(-11)],
    )
    .unwrap();
    assert_eq!(t.download_f32().unwrap(), [1.0, 1.0 + 2.0 * 2f32.powi(-10)]);
    let q: Vec<i8> = (0..77).map(|i| (i * 37 % 255 - 127) as i8).collect();
    assert_eq!(
        Tensor::from_i8(&ctx, &[77], &q)
            .unwrap()
            .download_i8()
            .unwrap(),
        q
    );
    let u = Tensor::new(&ctx, &[5], TensorFormat::U32).unwrap();
    u.upload_u32(&[1, 2, 3, u32::MAX, 0]).unwrap();
    assert_eq!(u.download_u32().unwrap(), [1, 2, 3, u32::MAX, 0]);
    assert_clean(&ctx);
}

#[test]
fn staged_transfers_in_chunks_round_trip() {
    let ctx = Context::with_options(
        ContextOptions::default()
            .with_validation(true)
            .with_force_staging(true),
    )
    .unwrap();
    assert!(!ctx.unified_memory());
    // 80 MB: more than one 64 MiB staging chunk each way.
    let n = 20_000_000;
    let x: Vec<f32> = (0..n).map(|i| (i % 9973) as f32 + 0.5).collect();
    let t = Tensor::from_f32(&ctx, &[n], TensorFormat::F32, &x).unwrap();
    assert!(!t.is_mapped());
    assert!(!t.writes_in_place(), "force_staging stages writes too");
    assert!(t.download_f32().unwrap() == x);
    // And a kernel on staged memory.
    let k = ctx.load::<twice::Kernel>().unwrap();
    let pipe = k.pipeline(&Default::default(), None).unwrap();
    let small = Tensor::from_f32(&ctx, &[100], TensorFormat::F32, &x[..100]).unwrap();
    ctx.run(|l| {
        l.dispatch(
            &pipe,
            &twice::BufferBindings { x_blob: &small },
            &twice::PushConstants { n: 100 },
            [100, 1, 1],
        )
    })
    .unwrap();
    assert_close(
        &small.download_f32().unwrap(),
        &x[..100].iter().map(|v| v * 2.0).collect::<Vec<_>>(),
        0.0,
        "staged",
    );
    assert_clean(&ctx);
}

#[test]
fn bad_tensors_are_errors() {
    let ctx = ctx();
    assert!(matches!(
        Tensor::new(&ctx, &[], TensorFormat::F32),
        Err(TensorError::BadShape(_))
    ));
    assert!(matches!(
        Tensor::new(&ctx, &[1, 2, 3, 4, 5], TensorFormat::F32),
        Err(TensorError::BadShape(_))
    ));
    assert!(matches!(
        Tensor::new(&ctx, &[4, 0], TensorFormat::F32),
        Err(TensorError::BadShape(_))
    ));
    let t = Tensor::new(&ctx, &[8], TensorFormat::F32).unwrap();
    assert!(matches!(
        t.upload_f32(&[1.0; 7]),
        Err(TensorError::LengthMismatch { got: 7, want: 8 })
    ));
    assert!(matches!(
        t.upload_i8(&[1; 8]),
        Err(TensorError::WrongFormat { .. })
    ));
    // Over the single-binding limit: refused before the driver sees it, naming the limit.
    let limit = ctx.features().limits.max_storage_buffer_range;
    let e = Tensor::new(&ctx, &[(limit / 4 + 1) as usize], TensorFormat::F32).unwrap_err();
    assert!(e.to_string().contains("maxStorageBufferRange"), "{e}");
    assert_clean(&ctx);
}

fn setup(
    ctx: &Context,
    variant: &str,
    n4: usize,
) -> (
    std::sync::Arc<vkprism::LoadedKernel<inc::Kernel>>,
    Tensor,
    Tensor,
) {
    let k = ctx
        .load_with::<inc::Kernel>(&LoadOptions::variant_named(variant).unwrap())
        .unwrap();
    let f = k.format_of("x_blob").unwrap();
    let x = Tensor::from_f32(ctx, &[n4 * 4], f, &random(n4 * 4, 9)).unwrap();
    let y = Tensor::new(ctx, &[n4 * 4], f).unwrap();
    (k, x, y)
}

#[test]
fn dispatch_errors_are_reported_not_executed() {
    let ctx = ctx();
    let (k, x, y) = setup(&ctx, "fp16s", 16);
    let pipe = k.pipeline(&Default::default(), None).unwrap();
    let push = inc::PushConstants { n: 16 };
    let mut list = CommandList::new(&ctx).unwrap();
    // Precision mismatch: an fp32 tensor bound to the fp16s variant.
    let x32 = Tensor::from_f32(&ctx, &[64], TensorFormat::F32, &random(64, 1)).unwrap();
    let e = list
        .dispatch(
            &pipe,
            &inc::BufferBindings {
                x_blob: &x32,
                y_blob: &y,
            },
            &push,
            [16, 1, 1],
        )
        .unwrap_err();
    assert!(
        matches!(
            e,
            CommandError::FormatMismatch {
                expected: TensorFormat::F16,
                got: TensorFormat::F32,
                ..
            }
        ),
        "{e}"
    );
    // A tensor that is not a whole number of vec4 elements.
    let odd = Tensor::new(&ctx, &[6], TensorFormat::F16).unwrap();
    let e = list
        .dispatch(
            &pipe,
            &inc::BufferBindings {
                x_blob: &odd,
                y_blob: &y,
            },
            &push,
            [16, 1, 1],
        )
        .unwrap_err();
    assert!(
        matches!(
            e,
            CommandError::PartialElement {
                elem: 8,
                size: 12,
                ..
            }
        ),
        "{e}"
    );
    // Zero-size dispatch.
    let e = list
        .dispatch(
            &pipe,
            &inc::BufferBindings {
                x_blob: &x,
                y_blob: &y,
            },
            &push,
            [0, 1, 1],
        )
        .unwrap_err();
    assert!(matches!(e, CommandError::ZeroSize(_)), "{e}");
    // More workgroups than maxComputeWorkGroupCount: an error, never a silent truncation.
    let e = list
        .dispatch(
            &pipe,
            &inc::BufferBindings {
                x_blob: &x,
                y_blob: &y,
            },
            &push,
            [16, u32::MAX, 1],
        )
        .unwrap_err();
    assert!(e.to_string().contains("maxComputeWorkGroupCount"), "{e}");
    // Workgroup larger than the device allows.
    let e = k
        .pipeline(&Default::default(), Some([4096, 1, 1]))
        .err()
        .unwrap();
    assert!(matches!(e, PipelineError::WorkgroupTooLarge { .. }), "{e}");
    assert!(list.is_empty(), "nothing was recorded");
    // The list still works after the errors.
    list.dispatch(
        &pipe,
        &inc::BufferBindings {
            x_blob: &x,
            y_blob: &y,
        },
        &push,
        [16, 1, 1],
    )
    .unwrap();
    list.submit_and_wait().unwrap();
    assert_clean(&ctx);
}

vkprism::compute_shader! {
    /// Only the fp16 variants that need device features.
    pub mod fp16_only,
    src: r#"
#version 450
layout (binding = 0) buffer x_blob { sfpvec4 x_data[]; };
void main() { buffer_st4(x_data, 0, buffer_ld4(x_data, 1)); }
"#,
    variants: [fp16s, fp16sa],
}

vkprism::compute_shader! {
    /// y[i] = x[i] staged through shared memory whose size is a specialization constant
    /// (`rows` × (the workgroup's x + 1) vec4s), for the shared-memory limit.
    pub mod staged,
    src: r#"
#version 450
layout (constant_id = 0) const int rows = 1;
layout (local_size_x = 64) in;
layout (binding = 0) readonly buffer x_blob { vec4 x_data[]; };
layout (binding = 1) writeonly buffer y_blob { vec4 y_data[]; };
shared vec4 tile[rows][gl_WorkGroupSize.x + 1];
void main() {
    const uint l = gl_LocalInvocationID.x, i = gl_GlobalInvocationID.x;
    tile[rows - 1][l] = x_data[i];
    barrier();
    y_data[i] = tile[rows - 1][l];
}
"#,
}

/// Shared memory over `maxComputeSharedMemorySize`, which the sizes of spec-constant arrays
/// only say once specialized, is refused when the pipeline is made (a driver may take it and
/// fail when it runs), with the bytes counted; within the limit the kernel runs.
#[test]
fn shared_memory_over_the_limit_is_refused_at_pipeline_creation() {
    let ctx = ctx();
    let limit = ctx.features().limits.max_compute_shared_memory_size;
    let k = ctx.load::<staged::Kernel>().unwrap();
    let x = Tensor::from_f32(&ctx, &[256], TensorFormat::F32, &random(256, 5)).unwrap();
    let y = Tensor::from_f32(&ctx, &[256], TensorFormat::F32, &[f32::NAN; 256]).unwrap();
    // 2 rows of 65 vec4s: 2,080 bytes.
    let pipe = k
        .pipeline(&staged::SpecConstants { rows: 2 }, None)
        .unwrap();
    ctx.run(|l| {
        l.dispatch(
            &pipe,
            &staged::BufferBindings {
                x_blob: &x,
                y_blob: &y,
            },
            &vkprism::NoPushConstants::default(),
            [64, 1, 1],
        )
    })
    .unwrap();
    assert_eq!(
        y.download_f32().unwrap()[..64],
        x.download_f32().unwrap()[..64]
    );
    // One row more than fits (with a workgroup of 128: rows of 129 vec4s).
    let rows = limit / (129 * 16) + 1;
    let e = k
        .pipeline(
            &staged::SpecConstants { rows: rows as i32 },
            Some([128, 1, 1]),
        )
        .err()
        .unwrap();
    match &e {
        PipelineError::SharedMemoryTooLarge {
            kernel,
            variant,
            bytes,
            limit: l,
        } => {
            assert_eq!((*kernel, variant.as_str()), ("staged", "fp32"));
            assert_eq!(*bytes, u64::from(rows) * 129 * 16);
            assert_eq!(*l, limit);
        }
        other => panic!("{other}"),
    }
    assert!(e.to_string().contains("maxComputeSharedMemorySize"), "{e}");
    assert_clean(&ctx);
}

#[test]
fn missing_feature_or_option_is_an_error_naming_what_lacks() {
    use vkprism::{select_variant, DeviceFeatures, Feature, FeatureSet, SelectFailure};
    let info = &fp16_only::INFO;
    // A device without 16-bit storage: no variant fits, and the error says why for each.
    let dev = DeviceFeatures::new(FeatureSet::from_slice(&[Feature::ShaderFloat16]));
    let e = select_variant(info, &Options::default(), &dev).unwrap_err();
    let msg = e.to_string();
    assert!(
        msg.contains(
            "fp16s: needs storageBuffer16BitAccess; device lacks storageBuffer16BitAccess"
        ),
        "{msg}"
    );
    assert!(msg.contains("fp16sa: needs storageBuffer16BitAccess, shaderFloat16; device lacks storageBuffer16BitAccess"), "{msg}");
    // The device has it, the options forbid it.
    let dev = DeviceFeatures::new(FeatureSet::all());
    let e = select_variant(info, &Options::default().with_fp16_storage(false), &dev).unwrap_err();
    assert!(e.to_string().contains("options exclude fp16s"), "{e}");
    // On the real device, through the context, per-kernel options.
    let ctx = ctx();
    let e = ctx
        .load_with::<fp16_only::Kernel>(&LoadOptions::options(Options::fp32_only()))
        .err()
        .unwrap();
    assert!(matches!(e, PipelineError::Select(_)), "{e}");
    // A string that names no variant is refused as it is parsed; a variant the kernel lacks
    // when it loads.
    let e = LoadOptions::variant_named("no_such_variant").unwrap_err();
    assert!(e.to_string().contains("not a variant name"), "{e}");
    let e = ctx
        .load_with::<inc::Kernel>(&LoadOptions::variant_named("fp32_int8p").unwrap())
        .err()
        .unwrap();
    assert!(
        e.to_string().contains("no variant named `fp32_int8p`"),
        "{e}"
    );
    assert!(
        matches!(&e, PipelineError::Select(s) if s.kind == SelectFailure::NoSuchVariant),
        "{e}"
    );
    let e = select_variant(
        info,
        &Options::default(),
        &DeviceFeatures::new(FeatureSet::EMPTY),
    )
    .unwrap_err();
    assert_eq!(e.kind, SelectFailure::NoneFits);
    // A variant the device can't run, forced: told apart from an unknown name.
    let lacking = DeviceFeatures::new(FeatureSet::from_slice(&[Feature::ShaderFloat16]));
    let e = vkprism::force_variant(info, &"fp16s".parse().unwrap(), &lacking).unwrap_err();
    assert_eq!(e.kind, SelectFailure::DeviceLacks);
    // What the device can run, for tests of every variant.
    let runnable: Vec<String> = ctx
        .runnable_variants::<fp16_only::Kernel>()
        .iter()
        .map(|v| v.key.name())
        .collect();
    let want: Vec<String> = fp16_only::INFO
        .variants
        .iter()
        .filter(|v| ctx.features().features.contains_all(v.requires()))
        .map(|v| v.key.name())
        .collect();
    assert_eq!(runnable, want);
    let k = ctx
        .load_with::<inc::Kernel>(&LoadOptions::options(
            Options::default().with_fp16_arithmetic(false),
        ))
        .unwrap();
    assert_eq!(k.variant().key.name(), "fp16s", "{}", k.selection());
    assert_clean(&ctx);
}

#[test]
fn replayed_list_keeps_its_resources_and_orders_dependent_dispatches() {
    let ctx = ctx();
    let k = ctx.load::<twice::Kernel>().unwrap();
    let pipe = k.pipeline(&Default::default(), None).unwrap();
    let n = 1000;
    let x = random(n, 11);
    let mut list = CommandList::with_timestamps(&ctx, 16).unwrap();
    {
        // The tensor and the kernel are dropped here; the list keeps them alive.
        let t = Tensor::from_f32(&ctx, &[n], TensorFormat::F32, &x).unwrap();
        for _ in 0..3 {
            list.dispatch(
                &pipe,
                &twice::BufferBindings { x_blob: &t },
                &twice::PushConstants { n: n as i32 },
                [n as u32, 1, 1],
            )
            .unwrap();
        }
        assert_eq!(
            list.barrier_count(),
            2,
            "each dispatch depends on the previous one"
        );
        list.submit_and_wait().unwrap();
        assert_close(
            &t.download_f32().unwrap(),
            &x.iter().map(|v| v * 8.0).collect::<Vec<_>>(),
            0.0,
            "one run",
        );
        list.submit_and_wait().unwrap();
        assert_close(
            &t.download_f32().unwrap(),
            &x.iter().map(|v| v * 64.0).collect::<Vec<_>>(),
            0.0,
            "two runs",
        );
    }
    drop(pipe);
    drop(k);
    list.submit_and_wait().unwrap();
    let times = list.timings().unwrap();
    assert_eq!(times.len(), 3);
    assert!(times.iter().all(|t| t.as_nanos() > 0), "{times:?}");
    assert_clean(&ctx);
}

#[test]
fn independent_dispatches_get_no_barrier() {
    let ctx = ctx();
    let k = ctx.load::<twice::Kernel>().unwrap();
    let pipe = k.pipeline(&Default::default(), None).unwrap();
    let ts: Vec<Tensor> = (0..4)
        .map(|i| Tensor::from_f32(&ctx, &[64], TensorFormat::F32, &random(64, i)).unwrap())
        .collect();
    let mut list = CommandList::new(&ctx).unwrap();
    for t in &ts {
        list.dispatch(
            &pipe,
            &twice::BufferBindings { x_blob: t },
            &twice::PushConstants { n: 64 },
            [64, 1, 1],
        )
        .unwrap();
    }
    assert_eq!(list.barrier_count(), 0);
    list.submit_and_wait().unwrap();
    for (i, t) in ts.iter().enumerate() {
        assert_close(
            &t.download_f32().unwrap(),
            &random(64, i as u64)
                .iter()
                .map(|v| v * 2.0)
                .collect::<Vec<_>>(),
            0.0,
            "independent",
        );
    }
    assert_clean(&ctx);
}

#[test]
fn pipeline_cache_round_trips_and_rejects_bad_files() {
    let ctx = ctx();
    let k = ctx.load::<inc::Kernel>().unwrap();
    k.pipeline(&Default::default(), None).unwrap();
    let dir = std::env::temp_dir().join(format!("vkprism-cache-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let good = dir.join("good.bin");
    ctx.save_pipeline_cache(&good).unwrap();
    let data = std::fs::read(&good).unwrap();
    assert!(data.len() >= 32);
    ctx.load_pipeline_cache(&good).unwrap();
    // Truncated.
    let bad = dir.join("bad.bin");
    std::fs::write(&bad, &data[..10]).unwrap();
    assert!(
        matches!(ctx.load_pipeline_cache(&bad), Err(PipelineError::CacheRejected(m)) if m.contains("shorter"))
    );
    // Another device.
    let mut other = data.clone();
    other[12] ^= 0xff;
    std::fs::write(&bad, &other).unwrap();
    assert!(
        matches!(ctx.load_pipeline_cache(&bad), Err(PipelineError::CacheRejected(m)) if m.contains("device"))
    );
    // Another driver build.
    let mut other = data.clone();
    other[20] ^= 0xff;
    std::fs::write(&bad, &other).unwrap();
    assert!(
        matches!(ctx.load_pipeline_cache(&bad), Err(PipelineError::CacheRejected(m)) if m.contains("pipelineCacheUUID"))
    );
    // Missing file.
    assert!(matches!(
        ctx.load_pipeline_cache(&dir.join("none.bin")),
        Err(PipelineError::CacheIo(_))
    ));
    // Still usable after every rejection.
    k.pipeline(&Default::default(), Some([32, 1, 1])).unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    assert_clean(&ctx);
}

#[test]
fn errors_convert_to_the_crate_error() {
    let ctx = ctx();
    let e: Error = Tensor::new(&ctx, &[0], TensorFormat::F32)
        .unwrap_err()
        .into();
    assert!(e.to_string().contains("dimensions"));
}

#[test]
fn validation_messages_are_caught() {
    // The suite's "no validation message" checks are only worth something if a message is seen.
    let ctx = ctx();
    assert_clean(&ctx);
    // SAFETY: the device outlives the call; a buffer it makes is destroyed at once, on this
    // thread, and no other thread of this test makes a context meanwhile.
    unsafe {
        let (_, device) = ctx.raw();
        // size 0 is invalid (VUID-VkBufferCreateInfo-size-00912).
        let info = ash::vk::BufferCreateInfo::default()
            .size(0)
            .usage(ash::vk::BufferUsageFlags::STORAGE_BUFFER);
        if let Ok(b) = device.create_buffer(&info, None) {
            device.destroy_buffer(b, None);
        }
    }
    let m = ctx.take_validation_messages();
    assert!(
        m.iter().any(|m| m.contains("00912") || m.contains("size")),
        "expected a validation error, got {m:?}"
    );
}

#[test]
fn no_vulkan_device_is_an_error_not_a_crash() {
    // The loader with no driver to load: run this test again in a child process that points
    // the loader at a driver manifest that does not exist.
    if std::env::var_os("VKPRISM_TEST_NO_DEVICE").is_some() {
        let e =
            Context::with_options(ContextOptions::default().with_validation(false)).unwrap_err();
        assert!(
            e.to_string().contains("no Vulkan device")
                || e.to_string().contains("vkCreateInstance"),
            "{e}"
        );
        return;
    }
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "no_vulkan_device_is_an_error_not_a_crash",
            "--nocapture",
        ])
        .env("VKPRISM_TEST_NO_DEVICE", "1")
        .env("VK_DRIVER_FILES", "/nonexistent/vkprism_icd.json")
        .env("VK_ICD_FILENAMES", "/nonexistent/vkprism_icd.json")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && text.contains("1 passed"),
        "child: {text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn subgroup_size_is_chosen_at_pipeline_creation_or_refused() {
    use vkprism::{Feature, PipelineDesc};
    let ctx = ctx();
    let k = ctx.load::<twice::Kernel>().unwrap();
    let l = ctx.features().limits;
    if ctx.features().supports(Feature::SubgroupSizeControl) {
        let size = l.max_subgroup_size;
        let pipe = k
            .pipeline_with(
                &Default::default(),
                &PipelineDesc::default()
                    .with_local_size([size * 2, 1, 1])
                    .with_subgroup_size(size),
            )
            .unwrap();
        let t = Tensor::from_f32(&ctx, &[100], TensorFormat::F32, &random(100, 3)).unwrap();
        ctx.run(|list| {
            list.dispatch(
                &pipe,
                &twice::BufferBindings { x_blob: &t },
                &twice::PushConstants { n: 100 },
                [100, 1, 1],
            )
        })
        .unwrap();
        assert_close(
            &t.download_f32().unwrap(),
            &random(100, 3).iter().map(|v| v * 2.0).collect::<Vec<_>>(),
            0.0,
            "subgroup",
        );
    }
    let e = k
        .pipeline_with(
            &Default::default(),
            &PipelineDesc::default().with_subgroup_size(3),
        )
        .err()
        .unwrap();
    assert!(
        matches!(e, PipelineError::SubgroupSize { size: 3, .. }),
        "{e}"
    );
    assert_clean(&ctx);
}

#[test]
fn pipeline_statistics_come_from_the_driver_when_asked_for() {
    let ctx = ctx_with(ContextOptions::default().with_pipeline_statistics(true));
    let kernel = ctx.load::<inc::Kernel>().unwrap();
    let pipe = kernel.pipeline(&Default::default(), None).unwrap();
    let stats = pipe.statistics().unwrap();
    // Where the device has the extension, the driver reports at least one named statistic of
    // the one compute executable; elsewhere the list is empty and the context says why.
    assert_eq!(ctx.pipeline_statistics(), !stats.is_empty(), "{stats:?}");
    assert!(stats.iter().all(|s| !s.name.is_empty()), "{stats:?}");
    for s in &stats {
        println!(
            "{}: {} = {} ({})",
            s.executable, s.name, s.value, s.description
        );
    }
    // Without the option nothing is captured.
    let plain = vkprism_testkit::ctx();
    let kernel = plain.load::<inc::Kernel>().unwrap();
    let pipe = kernel.pipeline(&Default::default(), None).unwrap();
    assert!(!plain.pipeline_statistics());
    assert!(pipe.statistics().unwrap().is_empty());
    assert_clean(&ctx);
    assert_clean(&plain);
}
