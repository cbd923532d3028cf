//! A fence wait that times out poisons the context: its own test binary, because the GPU work
//! it abandons keeps running (on lavapipe, CPU threads) for a second or so after the test.

mod fixtures;

use fixtures::spin;
use std::time::{Duration, Instant};
use vkprism_runtime::CommandError;
use vkprism_runtime::DeviceError;
use vkprism_runtime::PipelineError;
use vkprism_runtime::TensorError;
use vkprism_runtime::{CommandList, ContextOptions, LoadOptions, Tensor, TensorFormat};
use vkprism_testkit::{assert_clean, ctx_with};

/// Steps per invocation (llvmpipe ends a loop after 65535 iterations).
const ITERATIONS: u32 = 60_000;
/// Workgroups of 64: about 1.5 ms each on lavapipe, so the dispatch runs for a second or more,
/// far past the timeout.
const GROUPS: usize = 1000;
const TIMEOUT: Duration = Duration::from_millis(20);

fn is_poisoned(e: &TensorError) -> bool {
    matches!(e, TensorError::Device(DeviceError::Poisoned(t)) if *t == TIMEOUT)
}

#[test]
fn a_timed_out_wait_poisons_the_context_and_drops_do_not_hang() {
    let ctx = ctx_with(ContextOptions::default().with_fence_timeout(TIMEOUT));
    assert_eq!(ctx.fence_timeout(), TIMEOUT);
    let k = ctx
        .load_with::<spin::Kernel>(&LoadOptions::variant_named("fp32").unwrap())
        .unwrap();
    let p = k.pipeline(&Default::default(), None).unwrap();
    let n = 64 * GROUPS;
    let x = Tensor::new(&ctx, &[n], TensorFormat::U32).unwrap();
    let y = Tensor::from_f32(&ctx, &[4], TensorFormat::F32, &[1.0, 2.0, 3.0, 4.0]).unwrap();
    let mut list = CommandList::new(&ctx).unwrap();
    let push = spin::PushConstants {
        iterations: ITERATIONS,
    };
    list.dispatch(&p, &spin::BufferBindings { x: &x }, &push, [n as u32, 1, 1])
        .unwrap();
    let e = list.submit_and_wait().unwrap_err();
    assert!(
        matches!(e, CommandError::Device(DeviceError::Timeout(t)) if t == TIMEOUT),
        "{e}"
    );
    assert!(e.to_string().contains("fence_timeout"), "{e}");
    assert!(ctx.is_poisoned());

    // The GPU may still be writing `x`: no mapped read or write of any tensor, no new work.
    let e = x.download_u32().unwrap_err();
    assert!(is_poisoned(&e), "{e}");
    let msg = e.to_string();
    assert!(
        msg.contains("create a new context") && msg.contains("fence_timeout"),
        "{msg}"
    );
    assert!(is_poisoned(&x.upload_u32(&vec![0; n]).unwrap_err()));
    assert!(is_poisoned(&y.download_f32().unwrap_err()));
    assert!(is_poisoned(&y.upload_f32(&[0.0; 4]).unwrap_err()));
    assert!(is_poisoned(
        &Tensor::new(&ctx, &[4], TensorFormat::F32).unwrap_err()
    ));
    assert!(matches!(
        list.submit_and_wait().unwrap_err(),
        CommandError::Device(DeviceError::Poisoned(_))
    ));
    assert!(matches!(
        CommandList::new(&ctx).map(|_| ()).unwrap_err(),
        CommandError::Device(DeviceError::Poisoned(_))
    ));
    assert!(matches!(
        ctx.load::<spin::Kernel>().map(|_| ()).unwrap_err(),
        PipelineError::Device(DeviceError::Poisoned(_))
    ));
    assert!(matches!(
        ctx.wait_idle().unwrap_err(),
        DeviceError::Poisoned(_)
    ));
    // The crate-level error says the context is the problem.
    let top: vkprism_runtime::Error = x.download_u32().unwrap_err().into();
    assert!(top.to_string().contains("refuses mapped reads"), "{top}");

    // Dropping everything returns at once (the list's work is leaked, not waited for).
    let start = Instant::now();
    drop(list);
    drop((x, y, p, k));
    drop(ctx);
    assert!(
        start.elapsed() < Duration::from_millis(500),
        "drops took {:?}",
        start.elapsed()
    );

    // Other contexts are unaffected.
    let fresh = vkprism_testkit::ctx();
    let t = Tensor::from_f32(&fresh, &[3], TensorFormat::F32, &[1.0, 2.0, 3.0]).unwrap();
    assert_eq!(t.download_f32().unwrap(), [1.0, 2.0, 3.0]);
    assert!(!fresh.is_poisoned());
    assert_clean(&fresh);
}

#[test]
fn a_wait_within_the_timeout_is_not_poisoned() {
    let ctx = ctx_with(ContextOptions::default().with_fence_timeout(Duration::from_secs(60)));
    let k = ctx
        .load_with::<spin::Kernel>(&LoadOptions::variant_named("fp32").unwrap())
        .unwrap();
    let p = k.pipeline(&Default::default(), None).unwrap();
    let x = Tensor::new(&ctx, &[64], TensorFormat::U32).unwrap();
    let mut list = CommandList::new(&ctx).unwrap();
    let push = spin::PushConstants { iterations: 3 };
    list.dispatch(&p, &spin::BufferBindings { x: &x }, &push, [64, 1, 1])
        .unwrap();
    list.submit_and_wait().unwrap();
    let mut acc = 5u32;
    for k in 0..3u32 {
        acc ^= acc << 13;
        acc ^= acc >> 17;
        acc ^= acc << 5;
        acc = acc.wrapping_add(k);
    }
    assert_eq!(x.download_u32().unwrap()[5], acc);
    assert!(!ctx.is_poisoned());
    ctx.wait_idle().unwrap();
    assert_clean(&ctx);
}

/// A staged transfer (a one-shot submission) that times out poisons the context too: its
/// command buffer, fence and staging buffer are leaked, not freed under the GPU.
#[test]
fn a_timed_out_transfer_poisons_a_staged_context() {
    let ctx = ctx_with(
        ContextOptions::default()
            .with_force_staging(true)
            // Far shorter than a copy of a chunk: the first status check finds it unfinished.
            .with_fence_timeout(Duration::from_nanos(1)),
    );
    assert!(!ctx.unified_memory());
    let n = 16 << 20; // 64 MiB of f32: one full staging chunk
    let t = Tensor::new(&ctx, &[n], TensorFormat::F32).unwrap();
    let e = t.upload_f32(&vec![1.0; n]).unwrap_err();
    assert!(
        matches!(e, TensorError::Device(DeviceError::Timeout(_))),
        "{e}"
    );
    assert!(ctx.is_poisoned());
    let e = t.download_f32().unwrap_err();
    assert!(
        matches!(e, TensorError::Device(DeviceError::Poisoned(_))),
        "{e}"
    );
    let start = Instant::now();
    drop(t);
    drop(ctx);
    assert!(start.elapsed() < Duration::from_millis(500));
}

/// A staged download that times out poisons the context too: the copy waited for times out
/// while the next chunk's copy is already submitted into the other readback buffer; both are
/// abandoned (leaked with their buffers, not freed under the GPU) and drops return at once.
#[test]
fn a_timed_out_download_poisons_a_staged_context() {
    let ctx = ctx_with(
        ContextOptions::default()
            .with_force_staging(true)
            .with_staging_chunk(std::num::NonZeroU64::new(32 << 20).unwrap())
            // Far shorter than a copy of a chunk: the first status check finds it unfinished.
            .with_fence_timeout(Duration::from_nanos(1)),
    );
    // Three 32 MiB chunks and a bit: a copy in flight in each readback buffer.
    let n = 3 * (8 << 20) + 7;
    let t = Tensor::new(&ctx, &[n], TensorFormat::F32).unwrap();
    let e = t.download_f32().unwrap_err();
    assert!(
        matches!(e, TensorError::Device(DeviceError::Timeout(_))),
        "{e}"
    );
    assert!(ctx.is_poisoned());
    let mut into = vec![0u8; 4 * n];
    let e = t.read_bytes_into(&mut into).unwrap_err();
    assert!(
        matches!(e, TensorError::Device(DeviceError::Poisoned(_))),
        "{e}"
    );
    let start = Instant::now();
    drop(t);
    drop(ctx);
    assert!(start.elapsed() < Duration::from_millis(500));
}
