//! A Llama-style decoder on whatever Vulkan device there is: prefill of a prompt, then decoding
//! token by token with the KV cache, printing each token with its GPU and wall time (or the
//! text, with a tokenizer).
//!
//!     cargo run -p vkprism-models --example llama
//!     cargo run -p vkprism-models --example llama -- --format f16 --tokens 16
//!     cargo run --release -p vkprism-models --example llama -- \
//!         --config tinyllama --weights model.safetensors --format f16 --prompt 1,450,4996
//!     cargo run --release -p vkprism-models --example llama -- \
//!         --model TinyLlama-1.1B-Chat-v1.0 --format f16 --text "The capital of France is"
//!
//! Without `--weights`, random weights (a fixed seed) of the configuration (`--save FILE` writes
//! them as safetensors in `--format`); with the small configuration the tokens are checked
//! against the CPU reference (exactly in F32). With `--weights`, a safetensors file of Hugging
//! Face `LlamaForCausalLM`'s state dict (F32, F16 or BF16 tensors, converted to `--format` at
//! load), or a model directory holding one or its shards. With `--model DIR`, a Hugging Face
//! model directory as `save_pretrained` writes it: the configuration from its `config.json`,
//! the weights from its `model.safetensors` or the shards its index lists (`--max-seq N`
//! shortens the cache the configuration asks for).
//!
//! With a tokenizer (`--tokenizer FILE`, a `tokenizer.json`; the model directory's own by
//! default), the prompt may be given as text (`--text`) and the generated text is printed as it
//! comes, up to the first special token (`</s>`); `--prompt` takes token ids. `--chat MESSAGE`
//! (after `--system MESSAGE`, if given) lays the prompt out by the model directory's chat
//! template (`chat_template.jinja`, or `tokenizer_config.json`'s `chat_template`). Tokens are
//! the largest logit's unless `--temperature T` (with `--top-k K`, `--top-p P`, `--seed S`)
//! draws them.
//!
//! With `--expect FILE` (written by `bench/llama_ref.py` with PyTorch from the same weights:
//! `prompt`, `logits` of the prompt, greedy `tokens`), the prompt comes from the file and the
//! logits at every position and the greedy tokens are compared with PyTorch's. With
//! `--profile`, the prompt's step's and the last decode step's GPU time per kernel (every
//! dispatch timed, which serializes the GPU), each after 300 ms of the GPU kept busy (so that a
//! GPU idling at a low clock profiles at its boost clock). With `--int8-weights`, the
//! projections are stored in int8 with a scale per row (activations and cache in `--format`).

mod chat;
mod text;

use std::error::Error;
use std::path::PathBuf;
use std::time::{Duration, Instant};
use vkprism::{Context, TensorFormat};
use vkprism_models::{
    Checkpoint, Generated, HostWeights, Llama, LlamaConfig, ReferenceLlama, Sampler, Sampling,
    WeightStorage,
};

/// What the command line asked for.
pub struct Args {
    config: LlamaConfig,
    small: bool,
    weights: Option<PathBuf>,
    max_seq: Option<usize>,
    tokenizer: Option<PathBuf>,
    text: Option<String>,
    chat: Option<String>,
    system: Option<String>,
    sampling: Sampling,
    save: Option<PathBuf>,
    format: TensorFormat,
    storage: WeightStorage,
    tokens: usize,
    prompt: Vec<u32>,
    expect: Option<PathBuf>,
    profile: bool,
}

/// The command line's flags and values (`words`, the program's name left out).
pub fn parse_args(words: impl IntoIterator<Item = String>) -> Result<Args, String> {
    let mut args = Args {
        config: LlamaConfig::small(),
        small: true,
        weights: None,
        max_seq: None,
        tokenizer: None,
        text: None,
        chat: None,
        system: None,
        sampling: Sampling::greedy(),
        save: None,
        format: TensorFormat::F32,
        storage: WeightStorage::Float,
        tokens: 8,
        prompt: vec![1, 17, 300, 42, 511, 5, 99],
        expect: None,
        profile: false,
    };
    let mut it = words.into_iter();
    while let Some(flag) = it.next() {
        if flag == "--profile" {
            args.profile = true;
            continue;
        }
        if flag == "--int8-weights" {
            args.storage = WeightStorage::Int8;
            continue;
        }
        let value = it.next().ok_or(format!("{flag} needs a value"))?;
        match flag.as_str() {
            "--config" => {
                args.small = value == "small";
                args.config = match value.as_str() {
                    "small" => LlamaConfig::small(),
                    "tinyllama" => LlamaConfig::tinyllama(),
                    "llama3.2-1b" => LlamaConfig::llama32_1b(),
                    "qwen2.5-0.5b" => LlamaConfig::qwen25_05b(),
                    "qwen3-0.6b" => LlamaConfig::qwen3_06b(),
                    _ => {
                        return Err(format!(
                            "unknown config {value} (small, tinyllama, llama3.2-1b, \
                             qwen2.5-0.5b, qwen3-0.6b)"
                        ))
                    }
                }
            }
            "--weights" => args.weights = Some(value.into()),
            "--model" => {
                let dir = PathBuf::from(value);
                args.config = LlamaConfig::from_hf_dir(&dir).map_err(|e| e.to_string())?;
                args.small = false;
                let tokenizer = dir.join("tokenizer.json");
                if args.tokenizer.is_none() && tokenizer.exists() {
                    args.tokenizer = Some(tokenizer);
                }
                args.weights = Some(dir);
            }
            "--tokenizer" => args.tokenizer = Some(value.into()),
            "--temperature" => args.sampling.temperature = number(&flag, &value)?,
            "--top-k" => args.sampling.top_k = number(&flag, &value)?,
            "--top-p" => args.sampling.top_p = number(&flag, &value)?,
            "--seed" => args.sampling.seed = number(&flag, &value)?,
            "--text" => args.text = Some(value),
            "--chat" => args.chat = Some(value),
            "--system" => args.system = Some(value),
            "--max-seq" => args.max_seq = Some(number(&flag, &value)?),
            "--save" => args.save = Some(value.into()),
            "--expect" => args.expect = Some(value.into()),
            "--format" => args.format = parse_format(&value)?,
            "--tokens" => args.tokens = number(&flag, &value)?,
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

/// The prompt's tokens: `--chat`'s message laid out by the model's chat template, `--text`
/// encoded, or `--prompt`'s ids.
fn prompt_of(args: &Args, text: Option<&text::Text>) -> Result<Vec<u32>, Box<dyn Error>> {
    let tokenizer = || text.ok_or("--text and --chat need a tokenizer (--tokenizer FILE)");
    if let Some(message) = &args.chat {
        let Some(dir) = args.weights.as_ref().filter(|d| d.is_dir()) else {
            return Err("--chat needs --model DIR (its chat template)".into());
        };
        let template = chat::ChatTemplate::open(dir)?;
        let rendered = template.render(args.system.as_deref(), message)?;
        return tokenizer()?.encode(&rendered, false);
    }
    match &args.text {
        Some(t) => tokenizer()?.encode(t, true),
        None => Ok(args.prompt.clone()),
    }
}

/// `value` of `flag` as a number.
fn number<T: std::str::FromStr>(flag: &str, value: &str) -> Result<T, String>
where
    T::Err: std::fmt::Display,
{
    value.parse().map_err(|e| format!("{flag} {value}: {e}"))
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
    let done = parse_args(std::env::args().skip(1))
        .map_err(Box::from)
        .and_then(run);
    if let Err(e) = done {
        eprintln!("error: {e}");
        std::process::exit(1);
    }
}

/// What `args` ask for, on a device of its own.
pub fn run(args: Args) -> Result<(), Box<dyn Error>> {
    // What the command line names besides the weights, checked before the weights load.
    let mut sampler = Sampler::new(args.sampling)?;
    let text = args
        .tokenizer
        .as_deref()
        .map(text::Text::open)
        .transpose()?;
    let prompt = prompt_of(&args, text.as_ref())?;
    let ctx = Context::new()?;
    let cfg = match args.max_seq {
        Some(n) => args.config.with_max_seq(n),
        None => args.config,
    };
    println!(
        "{}: {} layers, hidden {}, {} heads ({} KV), MLP {}, vocabulary {}, {:?}, weights {:?}",
        ctx.device_name(),
        cfg.layers,
        cfg.hidden,
        cfg.heads,
        cfg.kv_heads,
        cfg.mlp,
        cfg.vocab,
        args.format,
        args.storage
    );
    let start = Instant::now();
    let random = args
        .weights
        .is_none()
        .then(|| HostWeights::random(&cfg, 21));
    let (format, storage) = (args.format, args.storage);
    let mut model = match (&args.weights, &random) {
        (Some(path), _) => {
            Llama::with_storage(&ctx, &cfg, &Checkpoint::open(path)?, format, storage)?
        }
        (None, Some(w)) => Llama::with_storage(&ctx, &cfg, w, format, storage)?,
        (None, None) => unreachable!("random weights are made without a file"),
    };
    println!("loaded in {}", ms(start.elapsed()));
    if let (Some(path), Some(w)) = (&args.save, &random) {
        std::fs::write(path, w.to_safetensors(args.format)?)?;
        println!("random weights written to {}", path.display());
    }
    if let Some(path) = &args.expect {
        return compare(&mut model, path);
    }
    if args.profile {
        return profile(&mut model, &prompt, args.tokens);
    }
    if let Some(text) = &text {
        return generate_text(&mut model, text, &prompt, args.tokens, &mut sampler);
    }
    let tokens = generate(&mut model, &prompt, args.tokens, &mut sampler)?;
    let greedy = args.sampling.is_greedy();
    if let (true, true, Some(w)) = (args.small, greedy, &random) {
        let held = match storage {
            WeightStorage::Float => w.rounded(format),
            WeightStorage::Int8 => w.int8_rounded(&cfg, format)?,
        };
        let want = ReferenceLlama::new(&cfg, &held).greedy(&prompt, args.tokens);
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

/// Generation step by step, each step's token and times printed.
fn generate(
    model: &mut Llama,
    prompt: &[u32],
    n: usize,
    sampler: &mut Sampler,
) -> Result<Vec<u32>, Box<dyn Error>> {
    model.set_timing(true);
    let mut out = Vec::with_capacity(n);
    let mut wall = Instant::now();
    for (step, generated) in model.generation(prompt, n, sampler, &[])?.enumerate() {
        let Generated {
            token, gpu_time, ..
        } = generated?;
        let what = if step == 0 {
            format!("prefill of {} tokens", prompt.len())
        } else {
            format!("decode at position {}", prompt.len() + step - 1)
        };
        println!(
            "{what:>28}: token {token:>6}  GPU {}  wall {}",
            gpu_time.map_or("n/a".into(), ms),
            ms(wall.elapsed())
        );
        wall = Instant::now();
        out.push(token);
    }
    println!("generated: {out:?}");
    Ok(out)
}

/// Generation with the text printed as it comes, then the times.
fn generate_text(
    model: &mut Llama,
    text: &text::Text,
    prompt: &[u32],
    n: usize,
    sampler: &mut Sampler,
) -> Result<(), Box<dyn Error>> {
    println!("prompt: {} tokens", prompt.len());
    let start = Instant::now();
    let tokens = text.generate(model, prompt, n, sampler, &mut std::io::stdout())?;
    let wall = start.elapsed();
    println!();
    println!("generated: {tokens:?}");
    println!(
        "{} tokens in {} ({} a token, the prompt's step included)",
        tokens.len(),
        ms(wall),
        ms(wall / tokens.len().max(1) as u32)
    );
    Ok(())
}

/// PyTorch's outputs from the same weights: the prompt, its logits, the greedy tokens.
struct Expected {
    prompt: Vec<u32>,
    logits: Vec<f32>,
    tokens: Vec<u32>,
}

fn read_expected(path: &std::path::Path) -> Result<Expected, Box<dyn Error>> {
    let bytes = std::fs::read(path)?;
    let file = safetensors::SafeTensors::deserialize(&bytes)?;
    let ints = |name: &str| -> Result<Vec<u32>, Box<dyn Error>> {
        let t = file.tensor(name)?;
        Ok(t.data()
            .chunks_exact(8)
            .map(|b| i64::from_le_bytes(b.try_into().expect("8 bytes")) as u32)
            .collect())
    };
    let t = file.tensor("logits")?;
    let logits = t
        .data()
        .chunks_exact(4)
        .map(|b| f32::from_le_bytes(b.try_into().expect("4 bytes")))
        .collect();
    Ok(Expected {
        prompt: ints("prompt")?,
        logits,
        tokens: ints("tokens")?,
    })
}

/// The prompt's logits at every position and the greedy tokens beside PyTorch's.
fn compare(model: &mut Llama, path: &std::path::Path) -> Result<(), Box<dyn Error>> {
    let want = read_expected(path)?;
    model.set_timing(true);
    let got = model.prefill(&want.prompt)?;
    println!(
        "prefill of {} tokens: GPU {}",
        want.prompt.len(),
        gpu(model)
    );
    let vocab = got.vocab;
    let (mut worst_cos, mut worst_err, mut same_top) = (1f64, 0f64, 0);
    for i in 0..got.rows() {
        let (g, w) = (got.row(i), &want.logits[i * vocab..][..vocab]);
        let dot: f64 = g.iter().zip(w).map(|(a, b)| *a as f64 * *b as f64).sum();
        let norm = |v: &[f32]| v.iter().map(|a| (*a as f64).powi(2)).sum::<f64>().sqrt();
        worst_cos = worst_cos.min(dot / (norm(g) * norm(w)));
        let big = w.iter().fold(0f64, |m, v| m.max(v.abs() as f64));
        let err = g
            .iter()
            .zip(w)
            .fold(0f64, |m, (a, b)| m.max((a - b).abs() as f64));
        worst_err = worst_err.max(err / big);
        same_top +=
            (vkprism_models::reference::argmax(g) == vkprism_models::reference::argmax(w)) as usize;
    }
    println!(
        "logits vs PyTorch at {} positions: worst cosine {worst_cos:.6}, worst max error {:.2e} of the largest logit, same top-1 at {same_top}",
        got.rows(),
        worst_err
    );
    model.reset();
    let mut greedy = Sampler::greedy();
    let tokens = generate(model, &want.prompt, want.tokens.len(), &mut greedy)?;
    let agree = tokens
        .iter()
        .zip(&want.tokens)
        .take_while(|(a, b)| a == b)
        .count();
    println!("PyTorch's greedy tokens: {:?}", want.tokens);
    println!("{agree} of {} greedy tokens agree", want.tokens.len());
    Ok(())
}

/// The prompt's step, then greedy generation: the GPU time per kernel of the prompt's step and
/// of the last decode step.
fn profile(model: &mut Llama, prompt: &[u32], n: usize) -> Result<(), Box<dyn Error>> {
    warm_up(model, prompt)?;
    model.set_profile(true);
    model.reset();
    model.prefill(prompt)?;
    print_kernel_times(model, &format!("prompt of {} tokens", prompt.len()))?;
    warm_up(model, prompt)?;
    model.set_profile(true);
    let tokens = model.greedy(prompt, n.max(2))?;
    println!("generated: {tokens:?}");
    print_kernel_times(model, "last decode step")
}

/// GPU time a profile follows: a GPU that idles at a low clock between short bursts of work
/// (NVIDIA's under Vulkan) reaches its boost clock only after some 300 ms of it.
const WARM_UP: Duration = Duration::from_millis(300);

/// The prompt's step run until the GPU has been busy [`WARM_UP`] (wall time where the device
/// has no timestamps), at most 20 times that long; profiling off after it.
fn warm_up(model: &mut Llama, prompt: &[u32]) -> Result<(), Box<dyn Error>> {
    model.set_profile(false);
    model.set_timing(true);
    let (mut busy, start) = (Duration::ZERO, Instant::now());
    while busy < WARM_UP && start.elapsed() < 20 * WARM_UP {
        let step = Instant::now();
        model.reset();
        model.next_token(prompt)?;
        busy += model.last_gpu_time().unwrap_or_else(|| step.elapsed());
    }
    model.set_timing(false);
    Ok(())
}

/// The last step's GPU time per kernel, under `step`.
fn print_kernel_times(model: &Llama, step: &str) -> Result<(), Box<dyn Error>> {
    let Some(times) = model.last_kernel_times() else {
        return Err("the device has no timestamps".into());
    };
    let total: Duration = times.iter().map(|k| k.time).sum();
    println!("{step}, every dispatch timed: {} in all", ms(total));
    for k in times {
        println!(
            "{:>24}: {:>4} dispatches, {}",
            k.kernel,
            k.dispatches,
            ms(k.time)
        );
    }
    Ok(())
}
