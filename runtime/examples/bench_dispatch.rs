//! Dispatch overhead of the runtime alone (no macro, no shader compiler: the SPIR-V is committed
//! in `tests/shaders/tiny.spv`, so the binary runs on machines without glslang).
//!
//! Measures, after a warm-up, and prints as a table:
//! - empty submit + fence wait round trip: median of 1000;
//! - a list of 1000 tiny dispatches replayed, each reading what the previous wrote (a barrier
//!   between each: "dependent") or each on its own buffer (no barrier: "independent"):
//!   - GPU time per dispatch from one timestamp at the list's start and one at its end
//!     (total / 1000, median of 20 replays): the throughput figure;
//!   - GPU time per dispatch from a timestamp after every dispatch (median over dispatches and
//!     replays): per-dispatch timestamps can serialize the GPU, so this is an upper bound;
//!   - wall time of submit + wait / 1000.
//!
//!     cargo run --release -p vkprism-runtime --example bench_dispatch
//!
//! `VKPRISM_DEVICE` picks the device; `BENCH_N` changes the 1000.

#[path = "../tests/fixtures/mod.rs"]
mod fixtures;

use fixtures::tiny;
use std::time::{Duration, Instant};
use vkprism_runtime::{CommandList, Context, NoPushConstants, Tensor, TensorFormat};

fn median(mut v: Vec<f64>) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn us(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let n: usize = std::env::var("BENCH_N")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1000);
    let replays = 20;
    let ctx = Context::new()?;
    let report = ctx.report();
    println!(
        "device: {} ({}, {})",
        report.name, report.driver_name, report.driver_info
    );
    println!(
        "timestamp period: {} ns, validation: {}",
        ctx.features().limits.timestamp_period_ns,
        ctx.validation_enabled()
    );

    let mut empty = CommandList::new(&ctx)?;
    for _ in 0..100 {
        empty.submit_and_wait()?;
    }
    let round_trip = median(
        (0..1000)
            .map(|_| {
                let t = Instant::now();
                empty.submit_and_wait().map(|_| us(t.elapsed()))
            })
            .collect::<Result<_, _>>()?,
    );

    let k = ctx.load::<tiny::Kernel>()?;
    let pipe = k.pipeline(&Default::default(), Some([64, 1, 1]))?;
    let none = NoPushConstants::default();
    let chain = Tensor::from_f32(&ctx, &[64], TensorFormat::F32, &[0.0; 64])?;
    let many: Vec<Tensor> = (0..n)
        .map(|_| Tensor::from_f32(&ctx, &[64], TensorFormat::F32, &[0.0; 64]))
        .collect::<Result<_, _>>()?;

    let mut rows = Vec::new();
    for (name, dependent) in [("dependent", true), ("independent", false)] {
        let record = |list: &mut CommandList| -> Result<(), Box<dyn std::error::Error>> {
            for t in many.iter().take(n) {
                let x = if dependent { &chain } else { t };
                list.dispatch(&pipe, &tiny::BufferBindings { x }, &none, [64, 1, 1])?;
            }
            Ok(())
        };
        let mut total = CommandList::with_total_timing(&ctx)?;
        record(&mut total)?;
        assert_eq!(total.barrier_count(), if dependent { n - 1 } else { 0 });
        let mut each = CommandList::with_timestamps(&ctx, n as u32)?;
        record(&mut each)?;
        total.submit_and_wait()?;
        each.submit_and_wait()?;
        let (mut gpu_total, mut wall, mut gpu_each) = (Vec::new(), Vec::new(), Vec::new());
        for _ in 0..replays {
            let t = Instant::now();
            total.submit_and_wait()?;
            wall.push(us(t.elapsed()) / n as f64);
            gpu_total.push(us(total.total_time()?) / n as f64);
            each.submit_and_wait()?;
            gpu_each.extend(each.timings()?.into_iter().map(us));
        }
        rows.push((name, median(gpu_total), median(gpu_each), median(wall)));
    }
    // The work was real: 1 + replays runs of each of the two dependent lists, n increments each.
    let want = (2 * (1 + replays) * n) as f32;
    let got = chain.download_f32()?;
    if got.iter().any(|v| *v != want) {
        return Err(format!("dependent chain lost updates: {} != {want}", got[0]).into());
    }
    ctx.check_validation()?;

    println!();
    println!("| measure ({n} dispatches, median) | µs |");
    println!("|---|---|");
    println!("| empty submit + fence wait round trip | {round_trip:.2} |");
    for (name, total, each, wall) in rows {
        println!("| {name}: GPU time per dispatch (list start..end / {n}) | {total:.3} |");
        println!("| {name}: GPU time per dispatch (timestamp after each) | {each:.3} |");
        println!("| {name}: wall time per dispatch (submit + wait / {n}) | {wall:.3} |");
    }
    Ok(())
}
