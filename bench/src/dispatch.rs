//! Runtime overhead: the round trip of an empty submit + fence wait (wall time, median of 1000),
//! and the GPU time per dispatch in a replayed list of 1000 tiny dispatches, dependent (each
//! reads what the previous wrote: a barrier between each) or independent (1000 buffers).

use crate::harness::{median, print, sm_clock_mhz, time_list, Config, Record};
use std::time::{Duration, Instant};
use vkprism::{CommandList, Context, Tensor, TensorFormat};

vkprism::compute_shader! {
    /// x = x + 1 on 64 floats: a dispatch that costs almost nothing itself.
    pub mod tiny,
    path: "../kernels/tick.comp",
}

const LIST_LEN: usize = 1000;

pub fn run(ctx: &Context, cfg: Config) -> Result<Vec<Record>, Box<dyn std::error::Error>> {
    let mut records = vec![round_trip(ctx, cfg)?];
    let k = ctx.load::<tiny::Kernel>()?;
    let pipe = k.pipeline(&Default::default(), Some([64, 1, 1]))?;
    let one = Tensor::from_f32(ctx, &[64], TensorFormat::F32, &[0.0; 64])?;
    let many: Vec<Tensor> = (0..LIST_LEN)
        .map(|_| Tensor::from_f32(ctx, &[64], TensorFormat::F32, &[0.0; 64]))
        .collect::<Result<_, _>>()?;
    for dependent in [true, false] {
        let mut list = CommandList::with_total_timing(ctx)?;
        for t in &many {
            let t = if dependent { &one } else { t };
            list.dispatch(
                &pipe,
                &tiny::BufferBindings { x_blob: t },
                &Default::default(),
                [64, 1, 1],
            )?;
        }
        assert_eq!(
            list.barrier_count(),
            if dependent { LIST_LEN - 1 } else { 0 }
        );
        let runs_before = count_runs(&one)?;
        let t = time_list(&mut list, cfg)?;
        if dependent {
            // Every replay really ran every dispatch: the chain lost no update.
            let runs = (count_runs(&one)? - runs_before) / LIST_LEN as f32;
            if runs.fract() != 0.0 || runs < cfg.min_runs as f32 {
                return Err(format!("dependent chain lost updates ({runs} runs)").into());
            }
        }
        let name = if dependent {
            "dependent"
        } else {
            "independent"
        };
        let r = Record {
            case: "dispatch",
            shape: format!("replay_{name}_per_dispatch"),
            variant: k.variant().key.to_string(),
            coopmat: false,
            value: t.median_s * 1e6 / LIST_LEN as f64,
            unit: "us",
            sm_clock_mhz: t.sm_clock_mhz,
            method: "timestamps around one list replay, per dispatch",
        };
        print(&r);
        records.push(r);
    }
    Ok(records)
}

/// The value every element of the dependent chain's buffer holds: increments so far.
fn count_runs(t: &Tensor) -> Result<f32, vkprism::Error> {
    Ok(t.download_f32()?[0])
}

fn round_trip(ctx: &Context, cfg: Config) -> Result<Record, vkprism::Error> {
    let mut empty = CommandList::new(ctx)?;
    // Warm up for 300 ms (the rule of every series), then time at least 1000 round trips over at
    // least 200 ms: a series of 1000 alone lasts ~13 ms, shorter than one clock read, and one
    // such series right after a long test run measured 44 µs instead of 13.
    let (warm, series, min_runs) = if cfg.quick {
        (Duration::ZERO, Duration::ZERO, 100)
    } else {
        (Duration::from_millis(300), Duration::from_millis(200), 1000)
    };
    let start = Instant::now();
    loop {
        empty.submit_and_wait()?;
        if start.elapsed() >= warm {
            break;
        }
    }
    let clock = std::thread::spawn(sm_clock_mhz);
    let mut rt = Vec::with_capacity(min_runs);
    let start = Instant::now();
    while rt.len() < min_runs || start.elapsed() < series {
        let t = Instant::now();
        empty.submit_and_wait()?;
        rt.push(t.elapsed().as_secs_f64() * 1e6);
    }
    let r = Record {
        case: "dispatch",
        shape: "round_trip".into(),
        variant: "-".into(),
        coopmat: false,
        value: median(rt),
        unit: "us",
        sm_clock_mhz: clock.join().ok().flatten(),
        method: "wall time of submit and wait, end to end",
    };
    print(&r);
    Ok(r)
}
