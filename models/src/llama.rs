//! [`Llama`]: a Llama-style decoder on the GPU (RMS norm, rotary embedding, grouped-query
//! attention, SiLU-gated MLP) with a KV cache: [`Llama::prefill`] a prompt,
//! [`Llama::decode`] one token at a time, [`Llama::greedy`] generation. Each step is one
//! command list (the ids' upload, every layer, the logits' download) in one submission.

use crate::cache::KvCache;
use crate::device_weights::DeviceWeights;
use crate::forward::{Activations, Forward};
use crate::{LlamaConfig, ModelError, SafetensorsFile, WeightSource};
use std::path::Path;
use std::time::Duration;
use vkprism::{CommandList, Context, Readback, TensorFormat};
use vkprism_shaders::Ops;

/// The logits of a step: one row of `vocab` values per token.
#[derive(Clone, Debug, PartialEq)]
pub struct Logits {
    /// Every row, row-major (`rows · vocab` values).
    pub values: Vec<f32>,
    /// Values per row.
    pub vocab: usize,
}

impl Logits {
    /// Rows (tokens of the step).
    pub fn rows(&self) -> usize {
        self.values.len() / self.vocab
    }
    /// Row `i`'s logits.
    pub fn row(&self, i: usize) -> &[f32] {
        &self.values[i * self.vocab..][..self.vocab]
    }
    /// The last row's logits (the next token's).
    pub fn last(&self) -> &[f32] {
        self.row(self.rows() - 1)
    }
}

/// What a step reads back.
enum Read {
    /// Every row's logits.
    Logits,
    /// The index of the last row's largest logit (chosen on the GPU).
    ArgMax,
}

/// A Llama-style decoder on one context: weights in GPU memory in one float format (F32, F16 or
/// Bf16), and a KV cache of `max_seq` positions. A refused step (too long, a token past the
/// vocabulary) changes nothing: the model stays usable.
pub struct Llama {
    ops: Ops,
    cfg: LlamaConfig,
    format: TensorFormat,
    weights: DeviceWeights,
    cache: KvCache,
    timing: bool,
    gpu_time: Option<Duration>,
    profile: bool,
    /// The last step's GPU time per kernel, where profiling is on.
    kernel_times: Option<Vec<KernelTime>>,
    /// The last step's activations, reused by the next step of as many tokens (every decode
    /// step): each step waits for its run, so no two runs share them.
    spare: Option<Activations>,
}

impl Llama {
    /// The decoder of `cfg` with weights from `source`, stored as `format`, its cache empty.
    /// The weights are read and checked one tensor at a time, in the order the model uses them.
    pub fn new(
        ctx: &Context,
        cfg: &LlamaConfig,
        source: &dyn WeightSource,
        format: TensorFormat,
    ) -> Result<Llama, ModelError> {
        if let Some(why) = cfg.problem() {
            return Err(ModelError::Config(why));
        }
        if !matches!(
            format,
            TensorFormat::F32 | TensorFormat::F16 | TensorFormat::Bf16
        ) {
            return Err(ModelError::Format(format));
        }
        Ok(Llama {
            ops: Ops::new(ctx),
            cfg: *cfg,
            format,
            weights: DeviceWeights::upload(ctx, cfg, source, format)?,
            cache: KvCache::new(ctx, cfg, format)?,
            timing: false,
            gpu_time: None,
            profile: false,
            kernel_times: None,
            spare: None,
        })
    }

    /// The decoder of `cfg` with weights from the safetensors file in `bytes`.
    pub fn from_safetensors(
        ctx: &Context,
        cfg: &LlamaConfig,
        bytes: &[u8],
        format: TensorFormat,
    ) -> Result<Llama, ModelError> {
        Llama::new(ctx, cfg, &SafetensorsFile::parse(bytes)?, format)
    }

    /// The decoder of `cfg` with weights from the safetensors file at `path`.
    pub fn from_file(
        ctx: &Context,
        cfg: &LlamaConfig,
        path: &Path,
        format: TensorFormat,
    ) -> Result<Llama, ModelError> {
        Llama::from_safetensors(ctx, cfg, &std::fs::read(path)?, format)
    }

    /// The configuration.
    pub fn config(&self) -> &LlamaConfig {
        &self.cfg
    }

    /// The format the weights, cache and activations are stored in.
    pub fn format(&self) -> TensorFormat {
        self.format
    }

    /// Positions in the KV cache: the tokens of the sequence so far.
    pub fn position(&self) -> usize {
        self.cache.position()
    }

    /// Starts a new sequence (the cache's positions forgotten).
    pub fn reset(&mut self) {
        self.cache.clear();
    }

    /// Times each step on the GPU from now on (`on`), where the device has timestamps.
    pub fn set_timing(&mut self, on: bool) {
        self.timing = on;
    }

    /// The GPU time of the last step, where timing is on and the device has timestamps.
    pub fn last_gpu_time(&self) -> Option<Duration> {
        self.gpu_time
    }

    /// Times every dispatch of each step from now on (`on`), where the device has timestamps:
    /// [`Llama::last_kernel_times`]. Timestamps around every dispatch serialize the GPU, so a
    /// profiled step takes longer than one timed whole ([`Llama::set_timing`]).
    pub fn set_profile(&mut self, on: bool) {
        self.profile = on;
    }

    /// The last step's GPU time per kernel, the largest first, where profiling is on.
    pub fn last_kernel_times(&self) -> Option<&[KernelTime]> {
        self.kernel_times.as_deref()
    }

    /// Runs `tokens` at the next positions of the sequence (appended to the cache): their
    /// logits, `[tokens, vocab]`.
    pub fn prefill(&mut self, tokens: &[u32]) -> Result<Logits, ModelError> {
        let values = self.step(tokens, Read::Logits)?.read_f32()?;
        Ok(Logits {
            values,
            vocab: self.cfg.vocab,
        })
    }

    /// Runs one token at the next position: its logits, `[vocab]`.
    pub fn decode(&mut self, token: u32) -> Result<Vec<f32>, ModelError> {
        Ok(self.step(&[token], Read::Logits)?.read_f32()?)
    }

    /// Starts a new sequence with `prompt` and generates `n` tokens greedily (each the largest
    /// logit's index, chosen on the GPU, the first on ties), each fed back in.
    pub fn greedy(&mut self, prompt: &[u32], n: usize) -> Result<Vec<u32>, ModelError> {
        self.check_tokens(prompt)?;
        self.reset();
        self.cache.check_room(prompt.len() + n.saturating_sub(1))?;
        let mut out = Vec::with_capacity(n);
        let mut next = prompt.to_vec();
        for _ in 0..n {
            let token = self.next_token(&next)?;
            out.push(token);
            next = vec![token];
        }
        Ok(out)
    }

    /// Runs `tokens` at the next positions of the sequence: the index of the last one's
    /// largest logit (chosen on the GPU, the first on ties; only that index is read back).
    pub fn next_token(&mut self, tokens: &[u32]) -> Result<u32, ModelError> {
        Ok(self.step(tokens, Read::ArgMax)?.read_u32()?[0])
    }

    /// Records and runs one step: what it read back. The cache advances only when it ran.
    fn step(&mut self, tokens: &[u32], read: Read) -> Result<Readback, ModelError> {
        self.check_tokens(tokens)?;
        self.cache.check_room(tokens.len())?;
        let ctx = self.ops.context().clone();
        let act = match self.spare.take() {
            Some(a) if a.tokens() == tokens.len() => a,
            _ => Activations::new(&ctx, &self.cfg, tokens.len(), self.format)?,
        };
        let mut list = self.new_list(&ctx)?;
        let ids: Vec<u8> = tokens.iter().flat_map(|t| t.to_le_bytes()).collect();
        list.upload_bytes(&act.ids, &ids)?;
        let forward = Forward {
            ops: &self.ops,
            cfg: &self.cfg,
            weights: &self.weights,
            cache: &self.cache,
            act: &act,
        };
        forward.record(&mut list)?;
        let readback = match read {
            Read::Logits => list.download(&act.logits)?,
            Read::ArgMax => list.download(&act.best.view(tokens.len() - 1, &[1])?)?,
        };
        list.submit_and_wait()?;
        self.cache.advance(tokens.len());
        self.gpu_time = if self.timing {
            list.total_time().ok()
        } else {
            None
        };
        self.kernel_times = self.profile.then(|| kernel_times(&list)).flatten();
        self.spare = Some(act);
        Ok(readback)
    }

    fn new_list(&self, ctx: &Context) -> Result<CommandList, ModelError> {
        if self.profile {
            if let Ok(list) = CommandList::with_timestamps(ctx, MAX_PROFILED_DISPATCHES) {
                return Ok(list);
            }
        }
        if self.timing {
            if let Ok(list) = CommandList::with_total_timing(ctx) {
                return Ok(list);
            }
        }
        Ok(CommandList::new(ctx)?)
    }

    fn check_tokens(&self, tokens: &[u32]) -> Result<(), ModelError> {
        if tokens.is_empty() {
            return Err(ModelError::NoTokens);
        }
        let vocab = self.cfg.vocab;
        match tokens.iter().find(|t| **t as usize >= vocab) {
            Some(&token) => Err(ModelError::TokenOutOfRange { token, vocab }),
            None => Ok(()),
        }
    }
}

/// Dispatches a profiled step may time: more than a TinyLlama step's (about 18 a layer).
const MAX_PROFILED_DISPATCHES: u32 = 4096;

/// One kernel's share of a step: its name, its dispatches' GPU time in all, how many.
#[derive(Clone, Debug, PartialEq)]
pub struct KernelTime {
    /// The kernel (its `compute_shader!` module's name).
    pub kernel: &'static str,
    /// GPU time of its dispatches, each with the barrier before it.
    pub time: Duration,
    /// Dispatches of it in the step.
    pub dispatches: usize,
}

/// The last run of `list` per kernel, the largest first (`None` without timestamps).
fn kernel_times(list: &CommandList) -> Option<Vec<KernelTime>> {
    let times = list.timings().ok()?;
    let mut out: Vec<KernelTime> = Vec::new();
    for (name, t) in list.dispatch_names().iter().zip(times) {
        match out.iter_mut().find(|k| k.kernel == *name) {
            Some(k) => {
                k.time += t;
                k.dispatches += 1;
            }
            None => out.push(KernelTime {
                kernel: name,
                time: t,
                dispatches: 1,
            }),
        }
    }
    out.sort_by_key(|k| std::cmp::Reverse(k.time));
    Some(out)
}
