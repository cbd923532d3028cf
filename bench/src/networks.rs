//! Whole networks from `vkprism-models`, random weights, each step timed on the GPU
//! ([`time_steps`]) as `bench/networks_ref.py` times PyTorch's on the same configurations:
//! - `decoder`: a Llama-style decoder in TinyLlama-1.1B's configuration, fp16 (weights in fp16,
//!   variant `fp16`, or in int8 with a scale per row, `fp16 int8-weights`): a 512-token
//!   prompt (`VKPRISM_BENCH_PROMPT=N`: N tokens, to measure other lengths), and one greedy
//!   decode step at 512 and 2048 tokens of context (`VKPRISM_BENCH_CONTEXTS=a,b,...`: those;
//!   the step replayed at the same position: the cache cut back after each);
//!   `VKPRISM_BENCH_DECODER=llama3.2-1b`, `qwen2.5-0.5b` or `qwen3-0.6b` times Llama 3.2 1B's,
//!   Qwen2.5 0.5B's or Qwen3 0.6B's configuration instead (case `decoder llama3.2-1b`,
//!   `decoder qwen2.5-0.5b`, `decoder qwen3-0.6b`);
//! - `resnet50`: ResNet-50 at 224×224, batch 1 and 8, fp16 and fp32.
//!
//! Each figure is a step's GPU time in ms; a `wall` record beside it holds what the host
//! waits for the same step (write the input, submit, wait, read the output). The decoder's
//! `generate` record is what a user generating sees: the host's wall time per token of
//! `Llama::generation` (greedy, the decode steps queued two ahead) after the prompt.
//! `--quick` runs the same code on the reduced configurations.

use crate::harness::{print, time_steps, Config, Record, StepTiming, STEPS_METHOD};
use std::error::Error;
use std::time::Duration;
use vkprism::{Context, TensorFormat};
use vkprism_models::resnet::{self, ResNet, ResNetConfig, Timing};
use vkprism_models::{HostWeights, Llama, LlamaConfig, Sampler, WeightStorage};

/// How wall-time records are timed.
const WALL_METHOD: &str =
    "host wall time of one step (input written, submit, wait, output read), median";
/// How the `generate` record is timed.
const GENERATE_METHOD: &str =
    "host wall time per token of Llama::generation after the prompt's token, median of 5";
/// Tokens the `generate` record times after the prompt's (at most).
const GENERATED: usize = 64;

fn records(case: &'static str, shape: String, variant: &str, t: StepTiming, out: &mut Vec<Record>) {
    let gpu = Record {
        case,
        shape: shape.clone(),
        variant: variant.into(),
        coopmat: false,
        value: t.gpu.median_s * 1e3,
        unit: "ms",
        sm_clock_mhz: t.gpu.sm_clock_mhz,
        method: STEPS_METHOD,
    };
    let wall = Record {
        shape: format!("{shape} wall"),
        value: t.wall_s * 1e3,
        method: WALL_METHOD,
        ..gpu.clone()
    };
    print(&gpu);
    print(&wall);
    out.push(gpu);
    out.push(wall);
}

fn gpu_time(t: Option<Duration>) -> Result<Duration, Box<dyn Error>> {
    t.ok_or_else(|| "the device has no timestamps".into())
}

pub fn decoder(ctx: &Context, cfg: Config) -> Result<Vec<Record>, Box<dyn Error>> {
    let model = DecoderModel::from_env()?;
    let mut out = decoder_stored(ctx, cfg, &model, WeightStorage::Float, "fp16")?;
    out.extend(decoder_stored(
        ctx,
        cfg,
        &model,
        WeightStorage::Int8,
        "fp16 int8-weights",
    )?);
    Ok(out)
}

/// The decoder the `decoder` case times: TinyLlama's configuration (case `decoder`), or with
/// `VKPRISM_BENCH_DECODER=llama3.2-1b` / `qwen2.5-0.5b` / `qwen3-0.6b` Llama 3.2 1B's /
/// Qwen2.5 0.5B's / Qwen3 0.6B's (case `decoder llama3.2-1b` / `decoder qwen2.5-0.5b` /
/// `decoder qwen3-0.6b`), as `bench/networks_ref.py` reads the same variable.
struct DecoderModel {
    case: &'static str,
    config: LlamaConfig,
}

impl DecoderModel {
    fn from_env() -> Result<DecoderModel, Box<dyn Error>> {
        match std::env::var("VKPRISM_BENCH_DECODER").as_deref() {
            Err(_) | Ok("tinyllama") => Ok(DecoderModel {
                case: "decoder",
                config: LlamaConfig::tinyllama(),
            }),
            Ok("llama3.2-1b") => Ok(DecoderModel {
                case: "decoder llama3.2-1b",
                config: LlamaConfig::llama32_1b(),
            }),
            Ok("qwen2.5-0.5b") => Ok(DecoderModel {
                case: "decoder qwen2.5-0.5b",
                config: LlamaConfig::qwen25_05b(),
            }),
            Ok("qwen3-0.6b") => Ok(DecoderModel {
                case: "decoder qwen3-0.6b",
                config: LlamaConfig::qwen3_06b(),
            }),
            Ok(other) => Err(format!(
                "VKPRISM_BENCH_DECODER={other}: tinyllama, llama3.2-1b, qwen2.5-0.5b or qwen3-0.6b"
            )
            .into()),
        }
    }
}

/// The prompt's tokens in the decoder's records: 512, or `VKPRISM_BENCH_PROMPT` (1 to 2048).
fn prompt_tokens() -> usize {
    std::env::var("VKPRISM_BENCH_PROMPT")
        .ok()
        .and_then(|v| v.parse().ok())
        .filter(|n| (1..=2048).contains(n))
        .unwrap_or(512)
}

/// The contexts of the decoder's decode records: 512 and 2048, or `VKPRISM_BENCH_CONTEXTS`
/// (comma-separated, each 1 to 2048).
fn decode_contexts() -> Vec<usize> {
    let given: Option<Vec<usize>> = std::env::var("VKPRISM_BENCH_CONTEXTS").ok().and_then(|v| {
        v.split(',')
            .map(|c| c.trim().parse().ok().filter(|n| (1..=2048).contains(n)))
            .collect()
    });
    given.unwrap_or_else(|| vec![512, 2048])
}

/// The decoder's records with its projections stored as `storage` says, as `variant`.
fn decoder_stored(
    ctx: &Context,
    cfg: Config,
    model: &DecoderModel,
    storage: WeightStorage,
    variant: &str,
) -> Result<Vec<Record>, Box<dyn Error>> {
    let case = model.case;
    let (model_cfg, prompt_len, contexts) = if cfg.quick {
        (LlamaConfig::small(), 16, vec![16, 40])
    } else {
        (
            model.config.with_max_seq(2048 + 64),
            prompt_tokens(),
            decode_contexts(),
        )
    };
    let weights = HostWeights::random(&model_cfg, 1);
    ctx.reset_peak_allocated_bytes();
    let before = ctx.allocated_bytes();
    let mut m = Llama::with_storage(ctx, &model_cfg, &weights, TensorFormat::F16, storage)?;
    drop(weights);
    m.set_timing(true);
    let vocab = model_cfg.vocab as u32;
    let tokens = |n: usize| -> Vec<u32> { (0..n as u32).map(|i| (i * 7919 + 1) % vocab).collect() };
    let mut out = Vec::new();
    let prompt = tokens(prompt_len);
    let t = time_steps(cfg, || {
        m.reset();
        m.next_token(&prompt)?;
        gpu_time(m.last_gpu_time())
    })?;
    let prefill = format!("prefill {prompt_len}");
    records(case, prefill.clone(), variant, t, &mut out);
    print_profile(&mut m, &format!("{variant} {prefill}"), |m| {
        m.reset();
        m.next_token(&prompt).map(|_| ())
    })?;
    // As many as the cache holds after the prompt (the reduced configuration's is short).
    let generated = GENERATED.min(model_cfg.max_seq - prompt_len - 1);
    let per_token = generation_wall(&mut m, &prompt, generated)?;
    let generate = Record {
        case,
        shape: format!("generate {prompt_len}+{generated} wall"),
        variant: variant.into(),
        coopmat: false,
        value: per_token * 1e3,
        unit: "ms",
        sm_clock_mhz: crate::harness::sm_clock_mhz(),
        method: GENERATE_METHOD,
    };
    print(&generate);
    out.push(generate);
    let mut memory = m.memory();
    for context in contexts {
        m.reset();
        // The context in prompts of at most 512 tokens (the activations of one).
        for chunk in tokens(context).chunks(512) {
            m.next_token(chunk)?;
        }
        let t = time_steps(cfg, || {
            m.next_token(&[5])?;
            m.truncate(context)?;
            gpu_time(m.last_gpu_time())
        })?;
        records(case, format!("decode {context}"), variant, t, &mut out);
        memory = m.memory();
        print_profile(&mut m, &format!("{variant} decode {context}"), |m| {
            m.next_token(&[5])?;
            m.truncate(context)
        })?;
    }
    let mib = |b: u64| b as f64 / (1024.0 * 1024.0);
    println!(
        "# decoder {variant} memory: {memory}; peak GPU memory of the model {:.1} MiB",
        mib(ctx.peak_allocated_bytes() - before)
    );
    Ok(out)
}

/// The host's wall time per token of a greedy [`Llama::generation`] of `n` tokens after
/// `prompt` (the prompt's token not counted), the median of 5 runs.
fn generation_wall(m: &mut Llama, prompt: &[u32], n: usize) -> Result<f64, Box<dyn Error>> {
    let mut runs = Vec::new();
    for _ in 0..5 {
        let mut greedy = Sampler::greedy();
        let mut generation = m.generation(prompt, n + 1, &mut greedy, &[])?;
        generation.next().transpose()?;
        let start = std::time::Instant::now();
        let mut n = 0;
        for token in generation {
            token?;
            n += 1;
        }
        runs.push(start.elapsed().as_secs_f64() / n.max(1) as f64);
    }
    Ok(crate::harness::median(runs))
}

/// One more `step` with every dispatch timed (the GPU still warm from the series): where the
/// step's time goes, per kernel.
fn print_profile(
    m: &mut Llama,
    what: &str,
    step: impl FnOnce(&mut Llama) -> Result<(), vkprism_models::ModelError>,
) -> Result<(), Box<dyn Error>> {
    m.set_profile(true);
    step(m)?;
    for k in m.last_kernel_times().unwrap_or_default() {
        println!(
            "# {what} profile: {:>18} {:>4} dispatches {:>9.1} us",
            k.kernel,
            k.dispatches,
            k.time.as_secs_f64() * 1e6
        );
    }
    m.set_profile(false);
    Ok(())
}

pub fn resnet50(ctx: &Context, cfg: Config) -> Result<Vec<Record>, Box<dyn Error>> {
    let (net_cfg, batches) = if cfg.quick {
        (ResNetConfig::reduced(), [1, 2])
    } else {
        (ResNetConfig::resnet50(), [1, 8])
    };
    let weights = resnet::HostWeights::random(&net_cfg, 1);
    let size = net_cfg.input;
    let mut out = Vec::new();
    for (format, variant) in [(TensorFormat::F16, "fp16"), (TensorFormat::F32, "fp32")] {
        ctx.reset_peak_allocated_bytes();
        let before = ctx.allocated_bytes();
        let mut m = ResNet::new(ctx, net_cfg, &weights, format)?.with_timing(Timing::Total);
        for batch in batches {
            let shape = [batch, size, size, 3];
            let input: Vec<f32> = (0..batch * size * size * 3)
                .map(|i| ((i * 37 % 101) as f32 / 50.0) - 1.0)
                .collect();
            let t = time_steps(cfg, || {
                m.forward(&input, shape)?;
                gpu_time(m.gpu_time())
            })?;
            let name = format!("b{batch} {size}x{size}");
            records("resnet50", name, variant, t, &mut out);
        }
        if let Some(mem) = m.memory() {
            let peak = (ctx.peak_allocated_bytes() - before) as f64 / (1024.0 * 1024.0);
            println!(
                "# resnet50 {variant} memory: {mem}; peak GPU memory of the model {peak:.1} MiB"
            );
        }
    }
    Ok(out)
}
