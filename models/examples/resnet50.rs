//! ResNet-50 on the best device: random weights (fixed seed) or torchvision's from a
//! safetensors file, a batch of random images; prints the memory plan, each image's top 5 and
//! the GPU time per run (and per layer with `--layers`), timed after 300 ms of the GPU kept busy
//! (so that a GPU idling at a low clock runs at its boost clock).
//!
//!     cargo run --release -p vkprism-models --example resnet50 -- [--weights FILE]
//!         [--expect FILE] [--save FILE] [--batch N] [--format f32|f16|bf16] [--runs N] [--layers] [--plan]
//!         [--reduced [--check]] [--tune] [--resize-from N]
//!
//! `--reduced`: the tests' configuration (ResNet-50's depth, width 8, 32×32 images, 10
//! classes), quick on a CPU device such as lavapipe; `--check` compares its logits with the CPU
//! reference. `--plan`: the memory plan, the buffer of each layer's output. `--save FILE` writes
//! the weights used (F32) as safetensors. `--expect FILE` (written by `bench/resnet_ref.py`
//! with the weights file): its images instead of random ones, and the logits compared with
//! PyTorch's (cosine similarity and top 5 per image; the exit status says whether they match).
//! `--tune`: every convolution's tiles measured on this device by a `GemmTuner` on first use
//! (`ResNet::with_ops` with `Ops::with_tuner`) instead of the table's. `--resize-from N`: one
//! forward pass of N images first, so the timed batch runs on the model resized from it.

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use safetensors::{Dtype, SafeTensors};
use std::error::Error;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use vkprism::{Context, TensorFormat};
use vkprism_models::resnet::{reference, HostWeights, Logits, ResNet, ResNetConfig, Timing};

/// The command line.
struct Args {
    weights: Option<PathBuf>,
    expect: Option<PathBuf>,
    save: Option<PathBuf>,
    batch: usize,
    format: TensorFormat,
    runs: usize,
    layers: bool,
    plan: bool,
    reduced: bool,
    check: bool,
    tune: bool,
    resize_from: Option<usize>,
}

fn parse_args() -> Result<Args, String> {
    let mut a = Args {
        weights: None,
        expect: None,
        save: None,
        batch: 1,
        format: TensorFormat::F16,
        runs: 10,
        layers: false,
        plan: false,
        reduced: false,
        check: false,
        tune: false,
        resize_from: None,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut value = || it.next().ok_or(format!("{flag} needs a value"));
        match flag.as_str() {
            "--weights" => a.weights = Some(value()?.into()),
            "--expect" => a.expect = Some(value()?.into()),
            "--save" => a.save = Some(value()?.into()),
            "--batch" => a.batch = value()?.parse().map_err(|e| format!("--batch: {e}"))?,
            "--runs" => a.runs = value()?.parse().map_err(|e| format!("--runs: {e}"))?,
            "--format" => a.format = parse_format(&value()?)?,
            "--layers" => a.layers = true,
            "--plan" => a.plan = true,
            "--reduced" => a.reduced = true,
            "--check" => a.check = true,
            "--tune" => a.tune = true,
            "--resize-from" => {
                let n = value()?
                    .parse()
                    .map_err(|e| format!("--resize-from: {e}"))?;
                a.resize_from = Some(n);
            }
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
    let mut model = build(&ctx, &args, cfg, &weights)?;
    let expected = args.expect.as_deref().map(read_expected).transpose()?;
    let (x, shape) = match &expected {
        Some(e) => (e.input.clone(), e.shape),
        None => images(args.batch, cfg.input),
    };
    if let Some(n) = args.resize_from {
        let (first, first_shape) = images(n, shape[1]);
        model.forward(&first, first_shape)?;
    }
    let mut times = Vec::new();
    let mut logits = warm_up(&mut model, &x, shape)?;
    for _ in 0..args.runs {
        logits = model.forward(&x, shape)?;
        times.extend(model.gpu_time());
    }
    report(&model, &args, &logits, shape[0], &times);
    if args.check {
        let want = reference::forward(&cfg, &weights, &x, shape)?;
        let err = logits
            .values
            .iter()
            .zip(&want)
            .fold(0f32, |m, (g, w)| m.max((g - w).abs()));
        println!("largest difference from the CPU reference: {err:e}");
    }
    match expected {
        Some(e) if !compare(&logits, &e) => Err("the logits differ from PyTorch's".into()),
        _ => Ok(()),
    }
}

/// The network on `ctx` as the command line asks: timed per layer with `--layers`, its
/// convolutions' tiles tuned on first use with `--tune`.
fn build(
    ctx: &Context,
    args: &Args,
    cfg: ResNetConfig,
    weights: &HostWeights,
) -> Result<ResNet, Box<dyn Error>> {
    let timing = if args.layers {
        Timing::PerLayer
    } else {
        Timing::Total
    };
    let mut model = ResNet::new(ctx, cfg, weights, args.format)?.with_timing(timing);
    if args.tune {
        let tuner = vkprism_shaders::GemmTuner::new(ctx, None::<&Path>);
        model = model.with_ops(vkprism_shaders::Ops::with_tuner(ctx, tuner));
    }
    Ok(model)
}

/// Prints the memory plan's peak, what was recorded, the plan with `--plan`, the first images'
/// top 5, the GPU times of the `batch` images' runs and each layer's with `--layers`.
fn report(model: &ResNet, args: &Args, logits: &Logits, batch: usize, times: &[Duration]) {
    if let Some(memory) = model.memory() {
        println!("{memory}");
    }
    if let Some(r) = model.recorded() {
        println!(
            "recorded: {} dispatches, {} barriers",
            r.dispatches, r.barriers
        );
    }
    if args.plan {
        print!("{}", model.plan_description().unwrap_or_default());
    }
    for n in 0..batch.min(4) {
        let top: Vec<String> = logits
            .top_k(n, 5)
            .iter()
            .map(|(class, score)| format!("{class} ({score:.4})"))
            .collect();
        println!("image {n}: top 5 {}", top.join(", "));
    }
    print_times(args.format, batch, times);
    if args.layers {
        print_layers(model);
    }
}

/// Images and PyTorch's logits for them (`bench/resnet_ref.py`'s `expect.safetensors`).
struct Expected {
    /// `[batch, h, w, 3]`.
    shape: [usize; 4],
    /// The images, channels-last.
    input: Vec<f32>,
    /// `[batch, classes]`.
    logits: Vec<f32>,
}

fn read_expected(path: &Path) -> Result<Expected, Box<dyn Error>> {
    let bytes = std::fs::read(path)?;
    let file = SafeTensors::deserialize(&bytes)?;
    let f32s = |name: &str| -> Result<(Vec<usize>, Vec<f32>), Box<dyn Error>> {
        let t = file.tensor(name)?;
        if t.dtype() != Dtype::F32 {
            return Err(format!("{name}: {:?}, F32 expected", t.dtype()).into());
        }
        let values = t.data().chunks_exact(4);
        let values = values.map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]));
        Ok((t.shape().to_vec(), values.collect()))
    };
    let (shape, input) = f32s("input")?;
    let shape: [usize; 4] = shape
        .try_into()
        .map_err(|s| format!("input: shape {s:?}, [batch, h, w, 3] expected"))?;
    Ok(Expected {
        shape,
        input,
        logits: f32s("logits")?.1,
    })
}

/// Prints each image's cosine similarity with PyTorch's logits and whether the top 5 agree;
/// whether every image's cosine is at least 0.999 and its top 5 the same set.
fn compare(got: &Logits, want: &Expected) -> bool {
    let torch = Logits {
        classes: got.classes,
        values: want.logits.clone(),
    };
    let mut ok = torch.values.len() == got.values.len();
    for n in 0..want.shape[0].min(got.values.len() / got.classes) {
        let (g, w) = (got.row(n), torch.row(n));
        let dot: f64 = g.iter().zip(w).map(|(&a, &b)| a as f64 * b as f64).sum();
        let norm = |v: &[f32]| v.iter().map(|&a| (a as f64).powi(2)).sum::<f64>().sqrt();
        let cosine = dot / (norm(g) * norm(w));
        let classes = |l: &Logits| l.top_k(n, 5).iter().map(|t| t.0).collect::<Vec<_>>();
        let (gt, wt) = (classes(got), classes(&torch));
        let same_set = gt.iter().all(|c| wt.contains(c));
        println!(
            "image {n} against PyTorch: cosine {cosine:.6}, top 5 {gt:?} vs {wt:?} ({})",
            if gt == wt {
                "same order"
            } else if same_set {
                "same set"
            } else {
                "differ"
            }
        );
        ok &= cosine >= 0.999 && same_set;
    }
    ok
}

/// GPU time the timed runs follow: a GPU that idles at a low clock between short bursts of
/// work (NVIDIA's under Vulkan) reaches its boost clock only after some 300 ms of it.
const WARM_UP: Duration = Duration::from_millis(300);

/// Forward passes until the GPU has been busy [`WARM_UP`] (wall time where the device has no
/// timestamps), at most 20 times that long; the last pass's logits.
fn warm_up(model: &mut ResNet, x: &[f32], shape: [usize; 4]) -> Result<Logits, Box<dyn Error>> {
    let (mut busy, start) = (Duration::ZERO, Instant::now());
    loop {
        let pass = Instant::now();
        let logits = model.forward(x, shape)?;
        busy += model.gpu_time().unwrap_or_else(|| pass.elapsed());
        if busy >= WARM_UP || start.elapsed() >= 20 * WARM_UP {
            return Ok(logits);
        }
    }
}

/// The GPU time per run: median and minimum.
fn print_times(format: TensorFormat, batch: usize, times: &[Duration]) {
    let mut ms: Vec<f64> = times.iter().map(|t| t.as_secs_f64() * 1e3).collect();
    ms.sort_by(f64::total_cmp);
    if let (Some(min), Some(median)) = (ms.first(), ms.get(ms.len() / 2)) {
        println!(
            "{format:?}, batch {batch}: GPU time per run {median:.3} ms (median of {}), min {min:.3} ms",
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
