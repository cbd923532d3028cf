//! `--cases gemm_wall`: what a user calling `Ops::gemm` from the host waits for, end to end: one
//! call recorded into a list, then the list submitted and waited for (host wall time, median
//! after warm-up by GPU time), fp32 / fp16 / bf16 on the GEMM case's shapes. Recorded as case
//! `gemm`, shape `MxNxK wall`, in µs, beside PyTorch eager from `bench/torch_ref.py --cases
//! gemm_wall` (one `torch.matmul` and `torch.cuda.synchronize()`, host wall time): the labelled
//! end-to-end figures beside the kernel-only ones (20 calls back to back, GPU time).

use crate::gemm::{given_shapes, shape_selected, SHAPES};
use crate::harness::{median, print, sm_clock_mhz, warm_up, Config, Record};
use crate::random;
use std::time::Instant;
use vkprism::{CommandList, Context, Tensor, TensorFormat};
use vkprism_shaders::{Gemm, Ops};

/// How the records are timed.
const METHOD: &str = "host wall time of one call (Ops::gemm recorded once; submit, wait), median";

const FORMATS: [(TensorFormat, &str); 3] = [
    (TensorFormat::F32, "fp32"),
    (TensorFormat::F16, "fp16"),
    (TensorFormat::Bf16, "bf16"),
];

pub fn run(ctx: &Context, cfg: Config) -> Result<Vec<Record>, Box<dyn std::error::Error>> {
    let given = given_shapes();
    let shapes: &[_] = match (&given, cfg.quick) {
        (Some(given), _) => given,
        (None, true) => &[(256, 128, 192)],
        (None, false) => &SHAPES,
    };
    let ops = Ops::new(ctx);
    let mut out = Vec::new();
    for &(m, n, k) in shapes {
        if !shape_selected(&format!("{m}x{n}x{k}")) {
            continue;
        }
        for (format, name) in FORMATS {
            let a = Tensor::from_f32(ctx, &[m, k], format, &random(m * k, 1))?;
            let b = Tensor::from_f32(ctx, &[k, n], format, &random(k * n, 2))?;
            let c = Tensor::new(ctx, &[m, n], format)?;
            let mut list = CommandList::with_total_timing(ctx)?;
            ops.gemm(&mut list, &a, &b, None, &c, &Gemm::new())?;
            let (wall_s, sm_clock_mhz) = wall_time(&mut list, cfg)?;
            let r = Record {
                case: "gemm",
                shape: format!("{m}x{n}x{k} wall"),
                variant: name.into(),
                coopmat: false,
                value: wall_s * 1e6,
                unit: "us",
                sm_clock_mhz,
                method: METHOD,
            };
            print(&r);
            out.push(r);
        }
    }
    Ok(out)
}

/// The median host wall time of submitting `list` and waiting for it, after warm-up by GPU
/// time, and the SM clock read during the series. The series lasts at least
/// `cfg.min_series_gpu_s` of wall time and until the clock has been read, as PyTorch's does
/// (`torch_ref.py`'s `wall_timed`): the same rule on both sides.
fn wall_time(
    list: &mut CommandList,
    cfg: Config,
) -> Result<(f64, Option<u32>), Box<dyn std::error::Error>> {
    warm_up(list, cfg)?;
    let clock = std::thread::spawn(sm_clock_mhz);
    let mut times = Vec::new();
    let series = Instant::now();
    while times.len() < cfg.min_runs
        || (times.len() < 100_000
            && (series.elapsed().as_secs_f64() < cfg.min_series_gpu_s || !clock.is_finished()))
    {
        let start = Instant::now();
        list.submit_and_wait()?;
        times.push(start.elapsed().as_secs_f64());
    }
    Ok((median(times), clock.join().ok().flatten()))
}
