//! Dispatch overhead of the runtime (issue: runtime measurements). Prints one line per figure,
//! `vkprism <name> <value>`, so a script can put them beside PyTorch's (bench/torch_dispatch.py):
//!
//! - `round_trip_us`: an empty command list submitted and waited on with a fence (median of 1000);
//! - `replay_dependent_per_dispatch_us`: GPU time per dispatch inside a replayed list of 1000 tiny
//!   dispatches, each reading what the previous wrote (a barrier between each), median of 20 runs;
//! - `replay_independent_per_dispatch_us`: the same with 1000 dispatches on 1000 buffers (no
//!   barriers);
//! - `replay_dependent_wall_per_dispatch_us`: wall time of submit + wait of that list / 1000.
//!
//! GPU time is the list's first-to-last timestamp / 1000: timestamps between dispatches would
//! serialize them and measure themselves.
//!
//!     cargo run --release --example bench_dispatch

use std::time::{Duration, Instant};
use vkprism::{CommandList, Context, Tensor, TensorFormat};

vkprism::compute_shader! {
    /// x = x + 1 on 64 floats: a dispatch that costs almost nothing itself.
    pub mod tiny,
    src: r#"
#version 450
layout (binding = 0) buffer x_blob { float x[]; };
void main() {
    uint i = gl_GlobalInvocationID.x;
    if (i < 64u) x[i] = x[i] + 1.0;
}
"#,
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let ctx = Context::new()?;
    println!("# device: {}", ctx.device_name());
    let n = 1000;

    let mut empty = CommandList::new(&ctx)?;
    for _ in 0..100 {
        empty.submit_and_wait()?;
    }
    let rt: Vec<f64> = (0..1000)
        .map(|_| {
            let t = Instant::now();
            empty
                .submit_and_wait()
                .map(|_| t.elapsed().as_secs_f64() * 1e6)
        })
        .collect::<Result<_, _>>()?;
    println!("vkprism round_trip_us {:.2}", median(rt));

    let k = ctx.load::<tiny::Kernel>()?;
    let pipe = k.pipeline(&Default::default(), Some([64, 1, 1]))?;
    let push = tiny::PushConstants::default();
    let one = Tensor::from_f32(&ctx, &[64], TensorFormat::F32, &[0.0; 64])?;
    let many: Vec<Tensor> = (0..n)
        .map(|_| Tensor::from_f32(&ctx, &[64], TensorFormat::F32, &[0.0; 64]))
        .collect::<Result<_, _>>()?;
    for (name, dependent) in [("dependent", true), ("independent", false)] {
        let mut list = CommandList::with_total_timing(&ctx)?;
        for t in &many {
            let t = if dependent { &one } else { t };
            list.dispatch(
                &pipe,
                &tiny::BufferBindings { x_blob: t },
                &push,
                [64, 1, 1],
            )?;
        }
        assert_eq!(list.barrier_count(), if dependent { n - 1 } else { 0 });
        list.submit_and_wait()?;
        let mut gpu = Vec::new();
        let mut wall = Vec::new();
        for _ in 0..20 {
            let t = Instant::now();
            list.submit_and_wait()?;
            wall.push(t.elapsed().as_secs_f64() * 1e6 / n as f64);
            let total: Duration = list.total_time()?;
            gpu.push(total.as_secs_f64() * 1e6 / n as f64);
        }
        println!("vkprism replay_{name}_per_dispatch_us {:.3}", median(gpu));
        println!(
            "vkprism replay_{name}_wall_per_dispatch_us {:.3}",
            median(wall)
        );
    }
    // The result is checked, so the timing is of real work: 1 + 20 runs of 1000 increments.
    let got = one.download_f32()?;
    assert!(
        got.iter().all(|v| *v == 21.0 * n as f32),
        "dependent chain lost updates: {}",
        got[0]
    );
    let m = ctx.take_validation_messages();
    assert!(m.is_empty(), "{m:?}");
    Ok(())
}
