//! ResNet-50 on the best device: random weights (fixed seed) or torchvision's from a
//! safetensors file, a batch of random images; prints the memory plan, each image's top 5 and
//! the GPU time per run (and per layer with `--layers`).
//!
//!     cargo run --release -p vkprism-models --example resnet50 -- [--weights FILE]
//!         [--save FILE] [--batch N] [--format f32|f16|bf16] [--runs N] [--layers] [--plan]
//!         [--reduced [--check]]
//!
//! `--reduced`: the tests' configuration (ResNet-50's depth, width 8, 32×32 images, 10
//! classes), quick on a CPU device such as lavapipe; `--check` compares its logits with the CPU
//! reference. `--plan`: the memory plan, the buffer of each layer's output. `--save FILE` writes
//! the weights used (F32) as safetensors.

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use safetensors::Dtype;
use std::error::Error;
use std::path::PathBuf;
use std::time::Duration;
use vkprism::{Context, TensorFormat};
use vkprism_models::resnet::{reference, HostWeights, ResNet, ResNetConfig, Timing};

/// The command line.
struct Args {
    weights: Option<PathBuf>,
    save: Option<PathBuf>,
    batch: usize,
    format: TensorFormat,
    runs: usize,
    layers: bool,
    plan: bool,
    reduced: bool,
    check: bool,
}

fn parse_args() -> Result<Args, String> {
    let mut a = Args {
        weights: None,
        save: None,
        batch: 1,
        format: TensorFormat::F16,
        runs: 10,
        layers: false,
        plan: false,
        reduced: false,
        check: false,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut value = || it.next().ok_or(format!("{flag} needs a value"));
        match flag.as_str() {
            "--weights" => a.weights = Some(value()?.into()),
            "--save" => a.save = Some(value()?.into()),
            "--batch" => a.batch = value()?.parse().map_err(|e| format!("--batch: {e}"))?,
            "--runs" => a.runs = value()?.parse().map_err(|e| format!("--runs: {e}"))?,
            "--format" => a.format = parse_format(&value()?)?,
            "--layers" => a.layers = true,
            "--plan" => a.plan = true,
            "--reduced" => a.reduced = true,
            "--check" => a.check = true,
            other => return Err(format!("unknown argument {other}")),
        }
    }
    Ok(a)
}

fn parse_format(s: &str) -> Result<TensorFormat, String> {
    match s {
        "f32" => Ok(TensorFormat::F32),
        "f16" => Ok(TensorFormat::F16),
        "bf16" => Ok(TensorFormat::Bf16),
        _ => Err(format!("--format {s}: f32, f16 or bf16")),
    }
}

/// `batch` random images of `size`×`size`, channels-last, from a fixed seed.
fn images(batch: usize, size: usize) -> (Vec<f32>, [usize; 4]) {
    let shape = [batch, size, size, 3];
    let mut rng = StdRng::seed_from_u64(7);
    let n = shape.iter().product();
    ((0..n).map(|_| rng.gen_range(-2.0..2.0)).collect(), shape)
}

fn main() -> Result<(), Box<dyn Error>> {
    let args = parse_args()?;
    let cfg = if args.reduced {
        ResNetConfig::reduced()
    } else {
        ResNetConfig::resnet50()
    };
    let weights = match &args.weights {
        Some(path) => HostWeights::load(&cfg, path)?,
        None => HostWeights::random(&cfg, 50),
    };
    if let Some(path) = &args.save {
        weights.save(path, Dtype::F32)?;
    }
    let ctx = Context::new()?;
    println!("device: {}", ctx.device_name());
    let timing = if args.layers {
        Timing::PerLayer
    } else {
        Timing::Total
    };
    let mut model = ResNet::new(&ctx, cfg, &weights, args.format)?.with_timing(timing);
    let (x, shape) = images(args.batch, cfg.input);
    let mut times = Vec::new();
    let mut logits = model.forward(&x, shape)?;
    for _ in 0..args.runs {
        logits = model.forward(&x, shape)?;
        times.extend(model.gpu_time());
    }
    if let Some(memory) = model.memory() {
        println!("{memory}");
    }
    if args.plan {
        print!("{}", model.plan_description().unwrap_or_default());
    }
    for n in 0..args.batch.min(4) {
        let top: Vec<String> = logits
            .top_k(n, 5)
            .iter()
            .map(|(class, score)| format!("{class} ({score:.4})"))
            .collect();
        println!("image {n}: top 5 {}", top.join(", "));
    }
    print_times(&args, &times);
    if args.layers {
        print_layers(&model);
    }
    if args.check {
        let want = reference::forward(&cfg, &weights, &x, shape)?;
        let err = logits
            .values
            .iter()
            .zip(&want)
            .fold(0f32, |m, (g, w)| m.max((g - w).abs()));
        println!("largest difference from the CPU reference: {err:e}");
    }
    Ok(())
}

/// The GPU time per run: median and minimum.
fn print_times(args: &Args, times: &[Duration]) {
    let mut ms: Vec<f64> = times.iter().map(|t| t.as_secs_f64() * 1e3).collect();
    ms.sort_by(f64::total_cmp);
    if let (Some(min), Some(median)) = (ms.first(), ms.get(ms.len() / 2)) {
        println!(
            "{:?}, batch {}: GPU time per run {median:.3} ms (median of {}), min {min:.3} ms",
            args.format,
            args.batch,
            ms.len()
        );
    }
}

/// The last run's GPU time per layer.
fn print_layers(model: &ResNet) {
    for (name, t) in model.layer_times().unwrap_or_default() {
        println!("  {name:<24} {:>9.3} ms", t.as_secs_f64() * 1e3);
    }
}
