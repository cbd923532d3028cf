//! Timing that measures the kernel, not the clock: warm-up by GPU time right before each series,
//! a median of many GPU-timestamped runs, and the SM clock read while the series runs.

use serde::Serialize;
use std::process::Command;
use std::time::Instant;
use vkprism::CommandList;

/// How long and how often to measure.
#[derive(Copy, Clone, Debug)]
pub struct Config {
    /// GPU time spent running the list right before its timed series (an H100 running only
    /// Vulkan work idles at ~400 MHz and needs ~200 ms of sustained work to reach full clock).
    pub warmup_gpu_s: f64,
    /// Timed runs: at least this many...
    pub min_runs: usize,
    /// ...and at least this much GPU time in all, so the clock reading falls inside the series.
    pub min_series_gpu_s: f64,
    /// Small problems, few runs: the same code path on a CPU driver (lavapipe).
    pub quick: bool,
}

impl Config {
    /// Full measurement on a real GPU.
    pub const FULL: Config = Config {
        warmup_gpu_s: 0.3,
        min_runs: 20,
        min_series_gpu_s: 0.2,
        quick: false,
    };
    /// One warm-up run and three timed runs on small problems.
    pub const QUICK: Config = Config {
        warmup_gpu_s: 0.0,
        min_runs: 3,
        min_series_gpu_s: 0.0,
        quick: true,
    };
}

/// One measured figure, in the layout of `benchmarks/results/<device>.json` (the reference and
/// ratio are filled in by `bench/merge.py`, which reads PyTorch's figures from the same run).
#[derive(Clone, Debug, Serialize)]
pub struct Record {
    /// `gemm`, `conv2d`, `elementwise` or `dispatch`.
    pub case: &'static str,
    /// `MxNxK` for GEMM; the operation and size otherwise.
    pub shape: String,
    /// vkprism's variant name (`-` where no kernel variant is involved).
    pub variant: String,
    /// Whether the variant uses cooperative matrices.
    pub coopmat: bool,
    pub value: f64,
    /// `TFLOP/s`, `TB/s` or `us`.
    pub unit: &'static str,
    /// SM clock read by NVML during the timed series; `None` where there is no NVIDIA GPU.
    pub sm_clock_mhz: Option<u32>,
    /// How the figure was timed ([`CALLS_METHOD`] for kernels).
    pub method: &'static str,
}

/// Back-to-back calls in one timed list; PyTorch's side replays a CUDA graph of as many.
pub const REPS: usize = 20;

/// How [`time_calls`] times: named in every record it makes.
pub const CALLS_METHOD: &str = "timestamps around 20 back-to-back calls in one list";

/// The median GPU time of one series and the SM clock read during it.
#[derive(Copy, Clone, Debug)]
pub struct Timing {
    pub median_s: f64,
    pub sm_clock_mhz: Option<u32>,
}

/// Warms the GPU up on `list` itself, then times it: `list` must have been created with
/// `CommandList::with_total_timing`.
pub fn time_list(list: &mut CommandList, cfg: Config) -> Result<Timing, vkprism::Error> {
    warm_up(list, cfg)?;
    let clock = std::thread::spawn(sm_clock_mhz);
    let mut times = Vec::new();
    let mut total = 0.0;
    // The series lasts until the clock has been read (`nvidia-smi` can take longer to start
    // than the series: a reading taken after it, with the GPU idle, printed 555–690 MHz beside
    // figures measured at 1980).
    while times.len() < cfg.min_runs
        || (times.len() < 10_000 && (total < cfg.min_series_gpu_s || !clock.is_finished()))
    {
        list.submit_and_wait()?;
        let t = list.total_time()?.as_secs_f64();
        total += t;
        times.push(t);
    }
    Ok(Timing {
        median_s: median(times),
        sm_clock_mhz: clock.join().ok().flatten(),
    })
}

/// Records `record` [`REPS`] times into one list, warms the GPU up on it and
/// times it: the median GPU time of one call (the list's over the calls) and the SM clock.
pub fn time_calls(
    ctx: &vkprism::Context,
    cfg: Config,
    record: impl Fn(&mut CommandList) -> Result<(), Box<dyn std::error::Error>>,
) -> Result<Timing, Box<dyn std::error::Error>> {
    let mut list = CommandList::with_total_timing(ctx)?;
    for _ in 0..REPS {
        record(&mut list)?;
    }
    let t = time_list(&mut list, cfg)?;
    Ok(Timing {
        median_s: t.median_s / REPS as f64,
        ..t
    })
}

/// How [`time_steps`] times a network: named in the records it makes.
pub const STEPS_METHOD: &str =
    "GPU time of one step's submission (input in, output out), median of replays";

/// A network step's median GPU time and wall time (host: write the input, submit, wait, read),
/// and the SM clock read during the series.
#[derive(Copy, Clone, Debug)]
pub struct StepTiming {
    pub gpu: Timing,
    pub wall_s: f64,
}

/// Times `step`, which runs one step and returns its GPU time: warm-up by GPU time right before
/// the series, then at least `cfg.min_runs` steps lasting `cfg.min_series_gpu_s` of GPU time and
/// until the clock has been read.
pub fn time_steps(
    cfg: Config,
    mut step: impl FnMut() -> Result<std::time::Duration, Box<dyn std::error::Error>>,
) -> Result<StepTiming, Box<dyn std::error::Error>> {
    let start = Instant::now();
    let mut busy = 0.0;
    loop {
        busy += step()?.as_secs_f64();
        if busy >= cfg.warmup_gpu_s || start.elapsed().as_secs() > 20 {
            break;
        }
    }
    let clock = std::thread::spawn(sm_clock_mhz);
    let (mut gpu, mut wall) = (Vec::new(), Vec::new());
    while gpu.len() < cfg.min_runs
        || (gpu.len() < 10_000
            && (gpu.iter().sum::<f64>() < cfg.min_series_gpu_s || !clock.is_finished()))
    {
        let t = Instant::now();
        gpu.push(step()?.as_secs_f64());
        wall.push(t.elapsed().as_secs_f64());
    }
    Ok(StepTiming {
        gpu: Timing {
            median_s: median(gpu),
            sm_clock_mhz: clock.join().ok().flatten(),
        },
        wall_s: median(wall),
    })
}

/// Runs `list` until it has kept the GPU busy for `cfg.warmup_gpu_s` (at least once; at most
/// 20 s of wall time, in case timestamps are broken).
pub fn warm_up(list: &mut CommandList, cfg: Config) -> Result<(), vkprism::Error> {
    let start = Instant::now();
    let mut busy = 0.0;
    loop {
        list.submit_and_wait()?;
        busy += list.total_time()?.as_secs_f64();
        if busy >= cfg.warmup_gpu_s || start.elapsed().as_secs() > 20 {
            return Ok(());
        }
    }
}

/// The median host wall time of submitting `list` and waiting for it, and the SM clock read
/// during the series: at least `min_runs` runs, lasting at least `min_series_s` and until the
/// clock has been read (at most 100,000 runs past `min_runs`). Warm the GPU up first.
pub fn wall_series(
    list: &mut CommandList,
    min_runs: usize,
    min_series_s: f64,
) -> Result<Timing, vkprism::Error> {
    let clock = std::thread::spawn(sm_clock_mhz);
    let mut times = Vec::with_capacity(min_runs);
    let series = Instant::now();
    while times.len() < min_runs
        || (times.len() < 100_000
            && (series.elapsed().as_secs_f64() < min_series_s || !clock.is_finished()))
    {
        let start = Instant::now();
        list.submit_and_wait()?;
        times.push(start.elapsed().as_secs_f64());
    }
    Ok(Timing {
        median_s: median(times),
        sm_clock_mhz: clock.join().ok().flatten(),
    })
}

/// Environment variable `name` as rows of `N` numbers, `a,b,...;...` (a row that is not `N`
/// numbers left out); `None` where it is unset.
pub fn env_rows<T: std::str::FromStr, const N: usize>(name: &str) -> Option<Vec<[T; N]>> {
    let list = std::env::var(name).ok()?;
    let row = |r: &str| -> Option<[T; N]> {
        let v: Vec<T> = r
            .split(',')
            .map(|x| x.trim().parse().ok())
            .collect::<Option<_>>()?;
        v.try_into().ok()
    };
    Some(list.split(';').filter_map(row).collect())
}

/// The median of `v` (upper median for even lengths).
pub fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// The SM clock of GPU 0 from `nvidia-smi` (NVML), or `None` where there is none.
pub fn sm_clock_mhz() -> Option<u32> {
    let out = Command::new("nvidia-smi")
        .args([
            "--query-gpu=clocks.sm",
            "--format=csv,noheader,nounits",
            "-i",
            "0",
        ])
        .output()
        .ok()?;
    String::from_utf8_lossy(&out.stdout).trim().parse().ok()
}

/// A probe's figure for case `case` (µs per call of [`time_calls`]), printed.
pub fn probe_record(case: &'static str, shape: String, variant: String, t: Timing) -> Record {
    let r = Record {
        case,
        shape,
        variant,
        coopmat: false,
        value: t.median_s * 1e6,
        unit: "us",
        sm_clock_mhz: t.sm_clock_mhz,
        method: CALLS_METHOD,
    };
    print(&r);
    r
}

/// Prints a record as one readable line (the JSON goes to the `--json` file).
pub fn print(r: &Record) {
    let clock = r.sm_clock_mhz.map_or("-".into(), |c| format!("{c} MHz"));
    println!(
        "{:<12} {:<20} {:<12} {:>10.3} {:<8} SM clock {clock} ({})",
        r.case, r.shape, r.variant, r.value, r.unit, r.method
    );
}
