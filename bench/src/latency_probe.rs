//! `--cases latency_probe`: where a host's submit-and-wait of one small list goes on this
//! device. Round trips (host wall time, median after 300 ms of warm-up) of an empty list, of
//! one dispatch of nearly no work, of two dependent ones, and of a 1024³ fp16 `Ops::gemm`, each
//! with and without the list's total timing (its timestamp queries). Printed, not compared with
//! PyTorch: the `gemm_wall` case does that.

use crate::harness::{wall_series, Config, Record, Timing};
use crate::random;
use std::time::{Duration, Instant};
use vkprism::{CommandList, Context, Tensor, TensorFormat};
use vkprism_shaders::{Gemm, Ops, Rope};

const CASE: &str = "latency_probe";

/// What a probed list holds, recorded into it.
type Recorder<'a> = dyn Fn(&mut CommandList) -> Result<(), vkprism_shaders::OpError> + 'a;

/// How the records are timed.
const METHOD: &str = "host wall time of submit and wait, median";

pub fn run(ctx: &Context, cfg: Config) -> Result<Vec<Record>, Box<dyn std::error::Error>> {
    let ops = Ops::new(ctx);
    let f = TensorFormat::F16;
    let x = Tensor::from_f32(ctx, &[1, 1, 64], f, &random(64, 23))?;
    let n = if cfg.quick { 64 } else { 1024 };
    let a = Tensor::from_f32(ctx, &[n, n], f, &random(n * n, 1))?;
    let b = Tensor::from_f32(ctx, &[n, n], f, &random(n * n, 2))?;
    let c = Tensor::new(ctx, &[n, n], f)?;
    let rope = |l: &mut CommandList| ops.rope(l, &x, &x, &Rope::new());
    let mut out = Vec::new();
    for timed in [false, true] {
        let lists: [(&str, &Recorder); 4] = [
            ("empty list", &|_| Ok(())),
            ("one dispatch (rope of 64 values)", &|l| rope(l)),
            ("two dependent dispatches", &|l| {
                rope(l)?;
                rope(l)
            }),
            ("Ops::gemm fp16 1024³", &|l| {
                ops.gemm(l, &a, &b, None, &c, &Gemm::new())
            }),
        ];
        for (what, record) in lists {
            let mut list = match timed {
                true => CommandList::with_total_timing(ctx)?,
                false => CommandList::new(ctx)?,
            };
            record(&mut list)?;
            let t = round_trip(&mut list, cfg)?;
            let r = Record {
                case: CASE,
                shape: what.into(),
                variant: if timed { "total timing" } else { "untimed" }.into(),
                coopmat: false,
                value: t.median_s * 1e6,
                unit: "us",
                sm_clock_mhz: t.sm_clock_mhz,
                method: METHOD,
            };
            crate::harness::print(&r);
            out.push(r);
        }
    }
    Ok(out)
}

/// The median wall time of submitting `list` and waiting for it, after 300 ms of it.
fn round_trip(list: &mut CommandList, cfg: Config) -> Result<Timing, vkprism::Error> {
    let (warm, runs) = match cfg.quick {
        true => (Duration::ZERO, 10),
        false => (Duration::from_millis(300), 1000),
    };
    let start = Instant::now();
    while start.elapsed() < warm {
        list.submit_and_wait()?;
    }
    wall_series(list, runs, 0.0)
}
