//! A short soak on the test device (lavapipe in CI) with the validation layer on: 10,000
//! dispatches and 10,000 tensor create / free cycles must leave vkprism's allocations and
//! gpu-allocator's own statistics where they started and the process's resident memory within a
//! stated bound.

use vkprism::{CommandList, Tensor, TensorFormat};
use vkprism_testkit::*;

vkprism::compute_shader! {
    /// x = x + 1 on 64 floats: a dispatch that costs almost nothing itself.
    pub mod tick,
    path: "../bench/kernels/tick.comp",
}

/// Resident set size in bytes, from /proc (Linux, where CI runs).
fn rss_bytes() -> u64 {
    let statm = std::fs::read_to_string("/proc/self/statm").expect("/proc/self/statm");
    let pages: u64 = statm.split_whitespace().nth(1).unwrap().parse().unwrap();
    pages * 4096
}

#[test]
fn ten_thousand_dispatches_and_tensors_leak_nothing() {
    let ctx = ctx();
    let k = ctx.load::<tick::Kernel>().unwrap();
    let pipe = k.pipeline(&Default::default(), Some([64, 1, 1])).unwrap();
    // Warm up every cache (pipelines, descriptor pools, allocator blocks) before the baseline.
    let warm = Tensor::from_f32(&ctx, &[64], TensorFormat::F32, &[0.0; 64]).unwrap();
    ctx.run(|l| {
        l.dispatch(
            &pipe,
            &tick::BufferBindings { x_blob: &warm },
            &Default::default(),
            [64, 1, 1],
        )
    })
    .unwrap();
    drop(warm);
    let (bytes0, stats0, rss0) = (ctx.allocated_bytes(), ctx.allocator_stats(), rss_bytes());

    // 100 replays of a list of 100 dependent dispatches.
    let x = Tensor::from_f32(&ctx, &[64], TensorFormat::F32, &[0.0; 64]).unwrap();
    assert_eq!(
        ctx.allocator_stats().allocations,
        stats0.allocations + 1,
        "the statistics count a tensor"
    );
    let mut list = CommandList::new(&ctx).unwrap();
    for _ in 0..100 {
        list.dispatch(
            &pipe,
            &tick::BufferBindings { x_blob: &x },
            &Default::default(),
            [64, 1, 1],
        )
        .unwrap();
    }
    for _ in 0..100 {
        list.submit_and_wait().unwrap();
    }
    assert!(
        x.download_f32().unwrap().iter().all(|v| *v == 10_000.0),
        "every dispatch ran"
    );
    drop(list);
    drop(x);

    // 10,000 tensors made, written and dropped, of varying sizes.
    for i in 0..10_000usize {
        let n = 64 + (i % 97) * 16;
        let t = Tensor::new(&ctx, &[n], TensorFormat::F32).unwrap();
        if i % 1000 == 0 {
            t.upload_f32(&vec![i as f32; n]).unwrap();
        }
    }

    assert_eq!(
        ctx.allocated_bytes(),
        bytes0,
        "device memory held after everything was dropped"
    );
    let stats = ctx.allocator_stats();
    assert_eq!(
        (stats.allocations, stats.allocated_bytes),
        (stats0.allocations, stats0.allocated_bytes),
        "gpu-allocator holds allocations after everything was dropped: {stats:?}, at the start {stats0:?}"
    );
    // Blocks may be kept for reuse, but 10,000 cycles must not pile them up.
    assert!(
        stats.capacity_bytes <= stats0.capacity_bytes + (256 << 20),
        "gpu-allocator's blocks grew from {stats0:?} to {stats:?}"
    );
    let grown = rss_bytes().saturating_sub(rss0);
    eprintln!(
        "soak: allocated {bytes0} -> {} bytes; gpu-allocator {stats0:?} -> {stats:?}; RSS grew {} KiB",
        ctx.allocated_bytes(),
        grown >> 10
    );
    assert!(
        grown < 64 << 20,
        "resident memory grew by {} MiB",
        grown >> 20
    );
    assert_clean(&ctx);
}
