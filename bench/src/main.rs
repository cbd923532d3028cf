//! vkprism's benchmark harness. Runs the chosen cases on the default Vulkan device (lavapipe when
//! there is no GPU), prints one line per figure with the SM clock beside it, and writes the
//! records as JSON for `bench/merge.py`, which puts PyTorch's figures from the same run beside
//! them (`bench/device.sh` runs both on the NVIDIA machine).
//!
//!     cargo run --release -p vkprism-bench -- [--quick] [--cases dispatch,elementwise,gemm,gemm_wall,conv2d,conv2d_dw,transfer,bound,ops,decoder,resnet50,gemv_probe,glu_probe,gemm_probe,attention_probe,slab_probe,latency_probe,barrier_probe] [--json FILE]

mod attention_probe;
mod barrier_probe;
mod bound;
mod conv;
mod conv_dw;
mod dispatch;
mod elementwise;
mod gemm;
mod gemm_cm2;
mod gemm_image;
mod gemm_int8;
mod gemm_probe;
mod gemm_wall;
mod gemv_probe;
mod glu_probe;
mod harness;
mod latency_probe;
mod networks;
mod ops;
mod slab_probe;
mod transfer;

use harness::{Config, Record};
use vkprism::Context;

const USAGE: &str =
    "usage: vkprism-bench [--quick] [--cases dispatch,elementwise,gemm,gemm_wall,conv2d,conv2d_dw,transfer,bound,ops,decoder,resnet50,gemv_probe,glu_probe,gemm_probe,attention_probe,slab_probe,latency_probe,barrier_probe] [--json FILE]";

/// What the command line asked for.
struct Args {
    cfg: Config,
    cases: Vec<String>,
    json: Option<String>,
}

fn parse_args() -> Result<Args, String> {
    let mut args = Args {
        cfg: Config::FULL,
        cases: vec![
            "dispatch".into(),
            "elementwise".into(),
            "gemm".into(),
            "conv2d".into(),
            "transfer".into(),
            "decoder".into(),
            "resnet50".into(),
        ],
        json: None,
    };
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        match a.as_str() {
            "--quick" => args.cfg = Config::QUICK,
            "--cases" => {
                let v = it.next().ok_or(USAGE)?;
                args.cases = v.split(',').map(str::to_owned).collect();
            }
            "--json" => args.json = Some(it.next().ok_or(USAGE)?),
            _ => return Err(format!("unknown argument `{a}`\n{USAGE}")),
        }
    }
    Ok(args)
}

fn main() {
    if let Err(e) = run() {
        eprintln!("vkprism-bench: {e}");
        std::process::exit(1);
    }
}

fn run() -> Result<(), Box<dyn std::error::Error>> {
    let args = parse_args()?;
    // VKPRISM_BENCH_STATS=1: print the driver's statistics of each GEMM pipeline (registers,
    // shared memory, spills) beside its figure.
    let ctx = Context::with_options(
        vkprism::ContextOptions::default()
            .with_pipeline_statistics(std::env::var_os("VKPRISM_BENCH_STATS").is_some()),
    )?;
    println!("# device: {}", ctx.device_name());
    let mut records: Vec<Record> = Vec::new();
    for case in &args.cases {
        records.extend(match case.as_str() {
            "gemm" => gemm::run(&ctx, args.cfg)?,
            "gemm_wall" => gemm_wall::run(&ctx, args.cfg)?,
            "conv2d" => conv::run(&ctx, args.cfg)?,
            "conv2d_dw" => conv_dw::run(&ctx, args.cfg)?,
            "transfer" => transfer::run(&ctx, args.cfg)?,
            "elementwise" => elementwise::run(&ctx, args.cfg)?,
            "dispatch" => dispatch::run(&ctx, args.cfg)?,
            "bound" => bound::run(&ctx, args.cfg)?,
            "ops" => ops::run(&ctx, args.cfg)?,
            "gemv_probe" => gemv_probe::run(&ctx, args.cfg)?,
            "glu_probe" => glu_probe::run(&ctx, args.cfg)?,
            "attention_probe" => attention_probe::run(&ctx, args.cfg)?,
            "slab_probe" => slab_probe::run(&ctx, args.cfg)?,
            "gemm_probe" => gemm_probe::run(&ctx, args.cfg)?,
            "latency_probe" => latency_probe::run(&ctx, args.cfg)?,
            "barrier_probe" => barrier_probe::run(&ctx, args.cfg)?,
            "decoder" => networks::decoder(&ctx, args.cfg)?,
            "resnet50" => networks::resnet50(&ctx, args.cfg)?,
            other => return Err(format!("unknown case `{other}`\n{USAGE}").into()),
        });
    }
    if let Some(path) = &args.json {
        std::fs::write(path, serde_json::to_string_pretty(&records)?)?;
    }
    let m = ctx.take_validation_messages();
    if !m.is_empty() {
        return Err(format!("validation layer messages:\n{}", m.join("\n")).into());
    }
    Ok(())
}

/// Prints the driver's statistics of a pipeline on one line (nothing where none were captured).
pub fn print_statistics<K: vkprism::Kernel>(label: &str, pipe: &vkprism::Pipeline<K>) {
    if let Ok(stats) = pipe.statistics() {
        if !stats.is_empty() {
            let list: Vec<String> = stats
                .iter()
                .map(|s| format!("{}={}", s.name, s.value))
                .collect();
            println!("# statistics {label}: {}", list.join(", "));
        }
    }
}

/// `n` random values with magnitude in [0.1, 1) and random sign: never zero.
pub fn random(n: usize, seed: u64) -> Vec<f32> {
    vkprism_testkit::random_in(n, seed, 0.1, 1.0)
}

pub use vkprism_testkit::quantize;
