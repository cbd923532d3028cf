//! A Llama-style decoder on whatever Vulkan device there is: prefill of a prompt, then greedy
//! decoding token by token with the KV cache, printing each token with its GPU and wall time.
//!
//!     cargo run -p vkprism-models --example llama
//!     cargo run -p vkprism-models --example llama -- --format f16 --tokens 16
//!     cargo run --release -p vkprism-models --example llama -- \
//!         --config tinyllama --weights model.safetensors --format f16 --prompt 1,450,4996
//!
//! Without `--weights`, random weights (a fixed seed) of the configuration (`--save FILE` writes
//! them as safetensors in `--format`); with the small configuration the tokens are checked
//! against the CPU reference (exactly in F32). With
//! `--weights`, a safetensors file of Hugging Face `LlamaForCausalLM`'s state dict (F32, F16
//! or BF16 tensors, converted to `--format` at load).

use std::error::Error;
use std::path::PathBuf;
use std::time::{Duration, Instant};
use vkprism::{Context, TensorFormat};
use vkprism_models::{HostWeights, Llama, LlamaConfig, ReferenceLlama};

/// What the command line asked for.
struct Args {
    config: LlamaConfig,
    small: bool,
    weights: Option<PathBuf>,
    save: Option<PathBuf>,
    format: TensorFormat,
    tokens: usize,
    prompt: Vec<u32>,
}

fn parse_args() -> Result<Args, String> {
    let mut args = Args {
        config: LlamaConfig::small(),
        small: true,
        weights: None,
        save: None,
        format: TensorFormat::F32,
        tokens: 8,
        prompt: vec![1, 17, 300, 42, 511, 5, 99],
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let value = it.next().ok_or(format!("{flag} needs a value"))?;
        match flag.as_str() {
            "--config" => {
                args.small = value == "small";
                args.config = match value.as_str() {
                    "small" => LlamaConfig::small(),
                    "tinyllama" => LlamaConfig::tinyllama(),
                    _ => return Err(format!("unknown config {value} (small, tinyllama)")),
                }
            }
            "--weights" => args.weights = Some(value.into()),
            "--save" => args.save = Some(value.into()),
            "--format" => args.format = parse_format(&value)?,
            "--tokens" => args.tokens = value.parse().map_err(|e| format!("--tokens: {e}"))?,
            "--prompt" => {
                args.prompt = value
                    .split(',')
                    .map(|t| t.trim().parse().map_err(|e| format!("--prompt: {e}")))
                    .collect::<Result<_, _>>()?
            }
            _ => return Err(format!("unknown flag {flag}")),
        }
    }
    Ok(args)
}

fn parse_format(s: &str) -> Result<TensorFormat, String> {
    match s {
        "f32" => Ok(TensorFormat::F32),
        "f16" => Ok(TensorFormat::F16),
        "bf16" => Ok(TensorFormat::Bf16),
        _ => Err(format!("unknown format {s} (f32, f16, bf16)")),
    }
}

fn ms(d: Duration) -> String {
    format!("{:.3} ms", d.as_secs_f64() * 1e3)
}

fn gpu(model: &Llama) -> String {
    model.last_gpu_time().map_or("n/a".into(), ms)
}

fn main() {
    if let Err(e) = run() {
        eprintln!("error: {e}");
        std::process::exit(1);
    }
}

fn run() -> Result<(), Box<dyn Error>> {
    let args = parse_args()?;
    let ctx = Context::new()?;
    let cfg = args.config;
    println!(
        "{}: {} layers, hidden {}, {} heads ({} KV), MLP {}, vocabulary {}, {:?}",
        ctx.device_name(),
        cfg.layers,
        cfg.hidden,
        cfg.heads,
        cfg.kv_heads,
        cfg.mlp,
        cfg.vocab,
        args.format
    );
    let start = Instant::now();
    let random = args
        .weights
        .is_none()
        .then(|| HostWeights::random(&cfg, 21));
    let mut model = match (&args.weights, &random) {
        (Some(path), _) => Llama::from_file(&ctx, &cfg, path, args.format)?,
        (None, Some(w)) => Llama::new(&ctx, &cfg, w, args.format)?,
        (None, None) => unreachable!("random weights are made without a file"),
    };
    println!("loaded in {}", ms(start.elapsed()));
    if let (Some(path), Some(w)) = (&args.save, &random) {
        std::fs::write(path, w.to_safetensors(args.format)?)?;
        println!("random weights written to {}", path.display());
    }
    let tokens = generate(&mut model, &args.prompt, args.tokens)?;
    if let (true, Some(w)) = (args.small, &random) {
        let want =
            ReferenceLlama::new(&cfg, &w.rounded(args.format)).greedy(&args.prompt, args.tokens);
        let agree = tokens.iter().zip(&want).take_while(|(a, b)| a == b).count();
        println!(
            "CPU reference: {want:?} ({agree} of {} tokens agree)",
            tokens.len()
        );
        if args.format == TensorFormat::F32 && agree != tokens.len() {
            return Err("F32 tokens differ from the CPU reference's".into());
        }
    }
    Ok(())
}

/// Greedy generation step by step, each step's token and times printed.
fn generate(model: &mut Llama, prompt: &[u32], n: usize) -> Result<Vec<u32>, Box<dyn Error>> {
    model.set_timing(true);
    let mut out = Vec::with_capacity(n);
    let mut next = prompt.to_vec();
    for step in 0..n {
        let wall = Instant::now();
        let token = model.next_token(&next)?;
        let what = if step == 0 {
            format!("prefill of {} tokens", prompt.len())
        } else {
            format!("decode at position {}", model.position() - 1)
        };
        println!(
            "{what:>28}: token {token:>6}  GPU {}  wall {}",
            gpu(model),
            ms(wall.elapsed())
        );
        out.push(token);
        next = vec![token];
    }
    println!("generated: {out:?}");
    Ok(out)
}
