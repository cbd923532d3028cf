//! Bad input from a hostile or careless user (issue 9): every case is a clear error and the
//! context stays usable; contexts made on many threads at once with the validation layer.

mod fixtures;

use fixtures::{oob, scale, tiny};
use vkprism_runtime::__private::VariantInfo;
use vkprism_runtime::command::{CommandError, MAX_TIMED_DISPATCHES};
use vkprism_runtime::DeviceError;
use vkprism_runtime::PipelineError;
use vkprism_runtime::TensorError;
use vkprism_runtime::{
    CommandList, Context, ContextOptions, DeviceSelector, Image, KernelInfo, LoadOptions,
    NoPushConstants, Tensor, TensorFormat,
};
use vkprism_testkit::{assert_clean, ctx, ctx_with};

/// The test that fills the device's heap holds this exclusively; every other test here holds it
/// shared, so none of them meets a full heap (on a GPU the heap is real VRAM, shared by the
/// tests cargo runs in parallel).
static HEAP: std::sync::RwLock<()> = std::sync::RwLock::new(());

fn sharing_the_heap() -> std::sync::RwLockReadGuard<'static, ()> {
    HEAP.read().unwrap_or_else(|e| e.into_inner())
}

/// `tiny` (x += 1 on 64 floats) once on `ctx`.
fn run_tiny(ctx: &Context) {
    let k = ctx.load::<tiny::Kernel>().unwrap();
    let p = k.pipeline(&Default::default(), None).unwrap();
    let x = Tensor::from_f32(ctx, &[64], TensorFormat::F32, &[1.0; 64]).unwrap();
    let mut list = CommandList::new(ctx).unwrap();
    list.dispatch(
        &p,
        &tiny::BufferBindings { x: &x },
        &NoPushConstants::default(),
        [64, 1, 1],
    )
    .unwrap();
    list.submit_and_wait().unwrap();
    assert_eq!(x.download_f32().unwrap(), [2.0; 64]);
}

#[test]
fn dispatch_after_submit_is_refused_and_the_list_still_replays() {
    let _heap = sharing_the_heap();
    let ctx = ctx();
    let k = ctx.load::<tiny::Kernel>().unwrap();
    let p = k.pipeline(&Default::default(), None).unwrap();
    let x = Tensor::from_f32(&ctx, &[64], TensorFormat::F32, &[0.0; 64]).unwrap();
    let mut list = CommandList::new(&ctx).unwrap();
    let b = tiny::BufferBindings { x: &x };
    let none = NoPushConstants::default();
    list.dispatch(&p, &b, &none, [64, 1, 1]).unwrap();
    list.submit_and_wait().unwrap();
    let e = list.dispatch(&p, &b, &none, [64, 1, 1]).unwrap_err();
    assert!(
        matches!(e, CommandError::NotRecording { dispatches: 1 }),
        "{e}"
    );
    assert!(e.to_string().contains("new CommandList"), "{e}");
    assert_eq!(list.len(), 1);
    list.submit_and_wait().unwrap();
    assert_eq!(x.download_f32().unwrap(), [2.0; 64]);
    // The crate-level error sorts it as the caller's to fix.
    assert!(matches!(
        vkprism_runtime::Error::from(e),
        vkprism_runtime::Error::Invalid(_)
    ));
    assert_clean(&ctx);
}

#[test]
fn timestamp_counts_are_capped_not_overflowed() {
    let _heap = sharing_the_heap();
    let ctx = ctx();
    for asked in [u32::MAX, u32::MAX - 1, 1 << 26, MAX_TIMED_DISPATCHES + 1] {
        match CommandList::with_timestamps(&ctx, asked) {
            Err(CommandError::TooManyTimestamps { asked: a, max }) => {
                assert_eq!((a, max), (asked, MAX_TIMED_DISPATCHES))
            }
            Err(e) => panic!("{asked}: {e}"),
            Ok(_) => panic!("{asked}: accepted"),
        }
    }
    // The cap itself is accepted where the queue has timestamps (lavapipe has them), quickly.
    let start = std::time::Instant::now();
    match CommandList::with_timestamps(&ctx, MAX_TIMED_DISPATCHES) {
        Ok(list) => drop(list),
        Err(CommandError::NoTimestamps) => {}
        Err(e) => panic!("{e}"),
    }
    assert!(start.elapsed().as_secs() < 10, "{:?}", start.elapsed());
    run_tiny(&ctx);
    assert_clean(&ctx);
}

#[test]
fn tensors_past_the_heap_are_refused_with_the_figures() {
    let _heap = HEAP.write().unwrap_or_else(|e| e.into_inner());
    let ctx = ctx();
    const MIB128: usize = 128 << 20;
    let mut held = Vec::new();
    let refused = loop {
        // 128 MiB of bytes each (uninitialized: nothing is touched).
        match Tensor::new(&ctx, &[MIB128 / 4], TensorFormat::F32) {
            Ok(t) => held.push(t),
            Err(e) => break e,
        }
        assert!(held.len() <= 1024, "never refused");
    };
    let TensorError::OverBudget {
        requested,
        available,
        budget,
        heap_size,
        ..
    } = refused
    else {
        panic!("{refused}")
    };
    assert!(requested >= MIB128 as u64 && available < requested);
    assert!(budget <= heap_size);
    assert!(
        held.len() as u64 * MIB128 as u64 <= budget,
        "{} held",
        held.len()
    );
    let msg = refused.to_string();
    assert!(
        msg.contains(&requested.to_string()) && msg.contains(&heap_size.to_string()),
        "{msg}"
    );
    // Sorted as out-of-memory for the caller; freeing makes room again.
    assert!(matches!(
        vkprism_runtime::Error::from(refused),
        vkprism_runtime::Error::OutOfMemory(_)
    ));
    held.pop();
    held.push(Tensor::new(&ctx, &[MIB128 / 4], TensorFormat::F32).unwrap());
    drop(held);
    run_tiny(&ctx);
    assert_clean(&ctx);
}

#[test]
fn an_image_over_the_resource_limits_is_refused_before_the_driver_sees_it() {
    let _heap = sharing_the_heap();
    let ctx = ctx();
    if !ctx
        .features()
        .supports(vkprism_runtime::Feature::ImageFormatsFp32)
    {
        return;
    }
    let side = ctx.features().limits.max_image_dimension_2d.min(16384);
    // 16384 x 16384 rgba32f: 4 GiB.
    let e = Image::new(&ctx, 2, [side, side, 1], 4, TensorFormat::F32).unwrap_err();
    assert!(
        matches!(
            e,
            TensorError::TooLarge { .. } | TensorError::OverBudget { .. }
        ),
        "{e}"
    );
    assert_clean(&ctx);
    // Still usable.
    let im = Image::new(&ctx, 1, [8, 1, 1], 1, TensorFormat::F32).unwrap();
    im.upload_f32(&[1.0; 8]).unwrap();
    assert_eq!(im.download_f32().unwrap(), [1.0; 8]);
    assert_clean(&ctx);
}

#[test]
fn robust_buffer_access_keeps_out_of_bounds_writes_inside_their_tensor() {
    let _heap = sharing_the_heap();
    let ctx = ctx_with(ContextOptions::default().with_robust_buffer_access(true));
    assert!(
        ctx.robust_buffer_access(),
        "lavapipe has robustBufferAccess"
    );
    assert!(
        !vkprism_testkit::ctx().robust_buffer_access(),
        "off by default"
    );
    let k = ctx
        .load_with::<oob::Kernel>(&LoadOptions::variant_named("fp32").unwrap())
        .unwrap();
    let p = k.pipeline(&Default::default(), None).unwrap();
    // Small tensors share one allocator block: `short` and `next` are neighbours in memory.
    let short = Tensor::from_f32(&ctx, &[16], TensorFormat::F32, &[0.0; 16]).unwrap();
    let next = Tensor::from_f32(&ctx, &[4096], TensorFormat::F32, &[7.0; 4096]).unwrap();
    let mut list = CommandList::new(&ctx).unwrap();
    // The kernel trusts `n` = 4096 and writes 4096 floats into a 16-float tensor.
    list.dispatch(
        &p,
        &oob::BufferBindings { x: &short },
        &oob::PushConstants {
            n: 4096,
            value: -1.0,
        },
        [4096, 1, 1],
    )
    .unwrap();
    list.submit_and_wait().unwrap();
    assert_eq!(short.download_f32().unwrap(), [-1.0; 16]);
    assert_eq!(next.download_f32().unwrap(), [7.0; 4096]);
    assert_clean(&ctx);
}

/// Garbage after a valid header: the driver would trust it.
static GARBAGE: [u32; 12] = [
    0x0723_0203,
    0x0001_0300,
    0,
    100,
    0,
    0xdead_beef,
    0x0102_0304,
    7,
    7,
    7,
    7,
    7,
];
static GARBAGE_VARIANTS: [VariantInfo; 1] = [fixtures::variant(
    scale::VARIANTS[0].key,
    &GARBAGE,
    scale::VARIANTS[0].bindings,
)];
static GARBAGE_INFO: KernelInfo = KernelInfo {
    variants: &GARBAGE_VARIANTS,
    ..scale::INFO
};
struct Garbage;
// SAFETY: not sound on purpose, in ways the runtime checks: its SPIR-V is garbage after the
// header, which loading refuses before the driver sees it.
unsafe impl vkprism_runtime::Kernel for Garbage {
    const INFO: &'static KernelInfo = &GARBAGE_INFO;
    type PushConstants = scale::PushConstants;
    type SpecConstants = scale::SpecConstants;
}

/// `scale`'s SPIR-V (a 12-byte block: a, b, n) declared with 8 bytes of push constants.
static SHORT_PUSH_INFO: KernelInfo = KernelInfo {
    push_constants: Some(vkprism_runtime::__private::PushConstantInfo { size: 8 }),
    ..scale::INFO
};
struct ShortPush;
// SAFETY: not sound on purpose, in a way the runtime checks (the block's last member starts
// past the declared range).
unsafe impl vkprism_runtime::Kernel for ShortPush {
    const INFO: &'static KernelInfo = &SHORT_PUSH_INFO;
    type PushConstants = scale::PushConstants;
    type SpecConstants = scale::SpecConstants;
}

/// `tiny`'s SPIR-V (no push constants) declared with 16 bytes of them.
static PHANTOM_PUSH_INFO: KernelInfo = KernelInfo {
    push_constants: Some(vkprism_runtime::__private::PushConstantInfo { size: 16 }),
    ..tiny::INFO
};
struct PhantomPush;
// SAFETY: not sound on purpose, in a way the runtime checks (a block declared that the SPIR-V
// does not have).
unsafe impl vkprism_runtime::Kernel for PhantomPush {
    const INFO: &'static KernelInfo = &PHANTOM_PUSH_INFO;
    type PushConstants = [u32; 4];
    type SpecConstants = fixtures::NoSpecConstants;
}

/// Specialization constants naming id 0 twice.
#[derive(Default)]
struct TwiceSpec;
impl vkprism_runtime::SpecConstants for TwiceSpec {
    fn entries(&self) -> Vec<(u32, u32)> {
        vec![(0, 1f32.to_bits()), (0, 2f32.to_bits())]
    }
}
/// Specialization constants naming the workgroup size's id 233.
#[derive(Default)]
struct WorkgroupSpec;
impl vkprism_runtime::SpecConstants for WorkgroupSpec {
    fn entries(&self) -> Vec<(u32, u32)> {
        vec![(0, 1f32.to_bits()), (233, 1)]
    }
}
struct Twice;
// SAFETY: `scale`'s exact metadata and SPIR-V; only its (safe) SpecConstants impl lies.
unsafe impl vkprism_runtime::Kernel for Twice {
    const INFO: &'static KernelInfo = &scale::INFO;
    type PushConstants = scale::PushConstants;
    type SpecConstants = TwiceSpec;
}
struct Workgroup;
// SAFETY: as `Twice`.
unsafe impl vkprism_runtime::Kernel for Workgroup {
    const INFO: &'static KernelInfo = &scale::INFO;
    type PushConstants = scale::PushConstants;
    type SpecConstants = WorkgroupSpec;
}

#[test]
fn hand_written_kernels_that_lie_are_refused_where_the_lie_is_checkable() {
    let _heap = sharing_the_heap();
    assert_eq!(scale::INFO.spec_constants[0].id, 0);
    let ctx = ctx();
    let fp32 = LoadOptions::variant_named("fp32").unwrap();
    let e = ctx.load_with::<Garbage>(&fp32).map(|_| ()).unwrap_err();
    assert!(matches!(e, PipelineError::BadSpirv { .. }), "{e}");
    let e = ctx.load_with::<ShortPush>(&fp32).map(|_| ()).unwrap_err();
    assert!(
        matches!(e, PipelineError::PushConstantsMismatch { .. })
            && e.to_string().contains("member at byte 8"),
        "{e}"
    );
    let e = ctx.load::<PhantomPush>().map(|_| ()).unwrap_err();
    assert!(
        matches!(e, PipelineError::PushConstantsMismatch { .. })
            && e.to_string().contains("no push-constant block"),
        "{e}"
    );
    let k = ctx.load_with::<Twice>(&fp32).unwrap();
    let e = k.pipeline(&TwiceSpec, None).map(|_| ()).unwrap_err();
    assert!(
        matches!(e, PipelineError::DuplicateSpecId { id: 0, .. }),
        "{e}"
    );
    let k = ctx.load_with::<Workgroup>(&fp32).unwrap();
    let e = k.pipeline(&WorkgroupSpec, None).map(|_| ()).unwrap_err();
    assert!(
        matches!(e, PipelineError::DuplicateSpecId { id: 233, .. }),
        "{e}"
    );
    // (Header-only modules, wrong versions and overrunning instructions: the unit test
    // `spirv_checks_refuse_what_is_not_a_compute_module`.)
    assert_clean(&ctx);
    run_tiny(&ctx);
    assert_clean(&ctx);
}

/// Contexts made, used and dropped on many threads at once, with and without the validation
/// layer (it crashed inside the layer under `vkGetFenceStatus` 2 runs in 10 when instance and
/// device creation ran concurrently with other threads' calls).
#[test]
fn contexts_made_used_and_dropped_on_many_threads_at_once() {
    let _heap = sharing_the_heap();
    const THREADS: usize = 8;
    const ROUNDS: usize = 12;
    let start = std::time::Instant::now();
    for round in 0..ROUNDS {
        std::thread::scope(|s| {
            for t in 0..THREADS {
                s.spawn(move || {
                    let validation = (t + round) % 2 == 0;
                    let ctx = Context::with_options(
                        ContextOptions::default().with_validation(validation),
                    )
                    .unwrap();
                    assert_eq!(ctx.validation_enabled(), validation);
                    // Several waits per context, so calls overlap other threads' creation.
                    for _ in 0..3 {
                        run_tiny(&ctx);
                    }
                    assert_clean(&ctx);
                });
            }
        });
    }
    eprintln!(
        "{} contexts on {THREADS} threads in {:?}",
        THREADS * ROUNDS,
        start.elapsed()
    );
}

#[test]
fn main_returning_an_error_prints_its_message_not_its_structure() {
    let _heap = sharing_the_heap();
    // `fn main() -> Result<(), Box<dyn Error>>` prints `Error: {err:?}` (std's Termination).
    let e = Context::with_options(
        ContextOptions::default()
            .with_device(DeviceSelector::Name("no-such-device-anywhere".into()))
            .with_validation(true),
    )
    .unwrap_err();
    let display = e.to_string();
    let boxed: Box<dyn std::error::Error> = Box::new(e);
    let shown = format!("Error: {boxed:?}");
    assert_eq!(shown, format!("Error: {display}"));
    assert!(shown.contains("matches none of"), "{shown}");
    assert!(!shown.contains("DeviceNotFound"), "{shown}");
    // The same through the crate-level error, and for a module error that has a source.
    let ctx = ctx();
    let t = Tensor::new(&ctx, &[4], TensorFormat::F32).unwrap();
    let e: vkprism_runtime::Error = t.upload_f32(&[1.0]).unwrap_err().into();
    let shown = format!("{e:?}");
    assert!(
        shown.contains("data has 1 elements, the tensor holds 4") && !shown.contains("Invalid("),
        "{shown}"
    );
    let missing = std::env::temp_dir().join("vkprism-no-such-cache-file.bin");
    let e = ctx.load_pipeline_cache(&missing).unwrap_err();
    let shown = format!("{e:?}");
    assert!(
        shown.starts_with("pipeline cache file:") && shown.contains("Caused by:"),
        "{shown}"
    );
    assert!(matches!(
        Context::with_options(
            ContextOptions::default()
                .with_device(DeviceSelector::Name("no-such-device-anywhere".into()))
        ),
        Err(DeviceError::DeviceNotFound { .. })
    ));
    assert_clean(&ctx);
}
