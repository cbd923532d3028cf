//! [`Llama`]: a Llama-style decoder on the GPU (RMS norm, rotary embedding, grouped-query
//! attention, SiLU-gated MLP) with a KV cache: [`Llama::prefill`] a prompt,
//! [`Llama::decode`] one token at a time, [`Llama::greedy`] generation. Each step is one
//! command list (the ids' upload, every layer, the logits' download) in one submission. A
//! prompt's list is recorded for it; a decode step's list is recorded once per span of cache
//! positions ([`DECODE_SPAN`]) and replayed, the token and its position written into upload
//! slots before each run.

use crate::cache::KvCache;
use crate::device_weights::DeviceWeights;
use crate::forward::{Activations, Forward, LogitRows, StepPosition};
use crate::generation::Generation;
use crate::{
    Checkpoint, LlamaConfig, ModelError, SafetensorsFile, Sampler, WeightSource, WeightStorage,
};
use std::path::Path;
use std::time::Duration;
use vkprism::{CommandList, Context, Readback, Submission, Tensor, TensorFormat, UploadSlot};
use vkprism_shaders::{Draw, Ops};

/// Cache positions one recorded decode list serves: a list attends over the cache rows up to
/// the span's end (the keys past the token's position masked and not read), so a new list is
/// recorded each time decoding crosses into the next span.
pub const DECODE_SPAN: usize = 256;

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
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum Read {
    /// Every row's logits.
    Logits,
    /// The index of the last row's largest logit (chosen on the GPU).
    ArgMax,
    /// The last row's logits.
    LastLogits,
    /// A token drawn on the GPU from the last row's logits as the key says.
    Draw(DrawKey),
}

/// A [`Draw`], its floats as bits (so that lists recorded for it are found by equality).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) struct DrawKey {
    temperature: u32,
    top_k: usize,
    top_p: u32,
}

impl DrawKey {
    fn of(d: Draw) -> DrawKey {
        DrawKey {
            temperature: d.temperature.to_bits(),
            top_k: d.top_k,
            top_p: d.top_p.to_bits(),
        }
    }

    fn draw(self) -> Draw {
        Draw::new(f32::from_bits(self.temperature))
            .with_top_k(self.top_k)
            .with_top_p(f32::from_bits(self.top_p))
    }
}

impl Read {
    /// The rows the output layer runs for: only the last where only its argmax is read.
    fn logit_rows(self) -> LogitRows {
        match self {
            Read::Logits => LogitRows::Every,
            Read::ArgMax | Read::LastLogits | Read::Draw(_) => LogitRows::Last,
        }
    }

    /// What a step that hands the next token over as `how` picks it reads: its argmax, or
    /// its draw on the GPU.
    pub(crate) fn token_of(how: crate::Sampling) -> Read {
        match how.gpu_draw() {
            None => Read::ArgMax,
            Some(d) => Read::Draw(DrawKey::of(d)),
        }
    }

    /// The seed of this read's step: the next of `sampler`'s where it draws, else 0 (unread).
    pub(crate) fn seed(self, sampler: &mut Sampler) -> u64 {
        match self {
            Read::Draw(_) => sampler.next_seed(),
            _ => 0,
        }
    }

    /// How a step that draws draws.
    fn draw(self) -> Option<Draw> {
        match self {
            Read::Draw(key) => Some(key.draw()),
            _ => None,
        }
    }
}

/// A Llama-style decoder on one context: weights in GPU memory in one float format (F32, F16 or
/// Bf16; the projections in int8 where [`WeightStorage::Int8`]), and a KV cache of `max_seq`
/// positions. A refused step (too long, a token past the
/// vocabulary) changes nothing: the model stays usable.
pub struct Llama {
    ops: Ops,
    cfg: LlamaConfig,
    format: TensorFormat,
    storage: WeightStorage,
    weights: DeviceWeights,
    cache: KvCache,
    timing: bool,
    gpu_time: Option<Duration>,
    profile: bool,
    /// The last step's GPU time per kernel, where profiling is on.
    kernel_times: Option<Vec<KernelTime>>,
    /// The last prompt's step as recorded: replayed by the next prompt of as many tokens at
    /// the same position (its tokens written into the list's upload slot), its activations
    /// reused by the next prompt of as many tokens otherwise. Each step waits for its run, so
    /// no two runs share them.
    prompt: Option<PromptList>,
    /// The recorded decode lists, their one token's activations and the position they read.
    decode: Option<DecodeLists>,
}

/// A prompt's recorded step.
struct PromptList {
    /// The cache position of its first token.
    start: usize,
    read: Read,
    act: Activations,
    list: CommandList,
    ids: UploadSlot,
    /// The draw's seed, where the step draws its token.
    seed: Option<UploadSlot>,
    out: Readback,
}

/// Decode steps recorded once and replayed: one list per span of positions and kind of read,
/// over one set of activations and one position tensor.
struct DecodeLists {
    act: Activations,
    position: Tensor,
    lists: Vec<DecodeList>,
}

/// Where a decode list's token comes from.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum TokenFrom {
    /// The host writes it into the list's upload slot before each run.
    Host,
    /// The step before left it in the activations' ids: each such list copies the token it
    /// chose there at its end, so steps queue one after another with no host in between. Two
    /// lists a span and read (by the position's parity), so one runs while the next waits.
    Gpu(u8),
}

/// One recorded decode step.
struct DecodeList {
    /// Cache rows its attention reads: the end of its span of positions.
    capacity: usize,
    read: Read,
    from: TokenFrom,
    list: CommandList,
    /// The token's upload slot ([`TokenFrom::Host`]).
    token: Option<UploadSlot>,
    position: UploadSlot,
    /// The draw's seed, where the step draws its token.
    seed: Option<UploadSlot>,
    out: Readback,
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
        Llama::with_storage(ctx, cfg, source, format, WeightStorage::Float)
    }

    /// [`Llama::new`] with the projections' weights stored as `storage` says (activations and
    /// cache in `format`).
    pub fn with_storage(
        ctx: &Context,
        cfg: &LlamaConfig,
        source: &dyn WeightSource,
        format: TensorFormat,
        storage: WeightStorage,
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
            storage,
            weights: DeviceWeights::upload(ctx, cfg, source, (format, storage))?,
            cache: KvCache::new(ctx, cfg, format)?,
            timing: false,
            gpu_time: None,
            profile: false,
            kernel_times: None,
            prompt: None,
            decode: None,
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

    /// The decoder of `cfg` with weights from the safetensors file at `path`, or from the
    /// model directory there ([`Checkpoint::open`]: one file or its shards), read a tensor at
    /// a time.
    pub fn from_file(
        ctx: &Context,
        cfg: &LlamaConfig,
        path: &Path,
        format: TensorFormat,
    ) -> Result<Llama, ModelError> {
        Llama::new(ctx, cfg, &Checkpoint::open(path)?, format)
    }

    /// The decoder a Hugging Face model directory holds (`config.json`, and `model.safetensors`
    /// or the shards `model.safetensors.index.json` lists), its cache of the configuration's
    /// `max_position_embeddings`. For another cache length or int8 weights, read the
    /// configuration ([`LlamaConfig::from_hf_dir`]) and the weights ([`Checkpoint::open`])
    /// and call [`Llama::with_storage`].
    pub fn from_hf_dir(
        ctx: &Context,
        dir: &Path,
        format: TensorFormat,
    ) -> Result<Llama, ModelError> {
        let cfg = LlamaConfig::from_hf_dir(dir)?;
        Llama::new(ctx, &cfg, &Checkpoint::open(dir)?, format)
    }

    /// The configuration.
    pub fn config(&self) -> &LlamaConfig {
        &self.cfg
    }

    /// The format the weights, cache and activations are stored in (the projections as
    /// [`Llama::storage`] says).
    pub fn format(&self) -> TensorFormat {
        self.format
    }

    /// How the projections' weights are stored.
    pub fn storage(&self) -> WeightStorage {
        self.storage
    }

    /// Positions in the KV cache: the tokens of the sequence so far.
    pub fn position(&self) -> usize {
        self.cache.position()
    }

    /// Starts a new sequence (the cache's positions forgotten).
    pub fn reset(&mut self) {
        self.cache.clear();
    }

    /// Goes back to the first `position` tokens of the sequence (a shared prompt's end, a
    /// rejected draft's start): the positions after it are forgotten. Refused past the
    /// sequence's end.
    pub fn truncate(&mut self, position: usize) -> Result<(), ModelError> {
        self.cache.truncate(position)
    }

    /// Times each step on the GPU from now on (`on`), where the device has timestamps.
    pub fn set_timing(&mut self, on: bool) {
        if on != self.timing {
            self.forget_recorded_lists();
        }
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
        if on != self.profile {
            self.forget_recorded_lists();
        }
        self.profile = on;
    }

    /// The recorded lists dropped (recorded again as needed, with the new timing).
    fn forget_recorded_lists(&mut self) {
        if let Some(d) = &mut self.decode {
            d.lists.clear();
        }
        self.prompt = None;
    }

    /// GPU memory the model holds: weights, KV cache, and the activations and scratch of the
    /// steps recorded so far.
    pub fn memory(&self) -> LlamaMemory {
        let decode = self.decode.as_ref().map_or(0, |d| {
            d.act.bytes() + d.lists.iter().map(|l| l.list.scratch_bytes()).sum::<u64>()
        });
        let prompt = self
            .prompt
            .as_ref()
            .map_or(0, |p| p.act.bytes() + p.list.scratch_bytes());
        LlamaMemory {
            weights: self.weights.bytes(),
            kv_cache: self.cache.bytes(),
            activations: decode + prompt,
            recorded_decode_lists: self.decode.as_ref().map_or(0, |d| d.lists.len()),
        }
    }

    /// The last step's GPU time per kernel, the largest first, where profiling is on.
    pub fn last_kernel_times(&self) -> Option<&[KernelTime]> {
        self.kernel_times.as_deref()
    }

    /// Runs `tokens` at the next positions of the sequence (appended to the cache): their
    /// logits, `[tokens, vocab]`.
    pub fn prefill(&mut self, tokens: &[u32]) -> Result<Logits, ModelError> {
        let values = self.step(tokens, Read::Logits, 0)?.logits();
        Ok(Logits {
            values,
            vocab: self.cfg.vocab,
        })
    }

    /// Runs one token at the next position: its logits, `[vocab]`.
    pub fn decode(&mut self, token: u32) -> Result<Vec<f32>, ModelError> {
        Ok(self.step(&[token], Read::Logits, 0)?.logits())
    }

    /// Starts a new sequence with `prompt` and generates `n` tokens greedily (each the largest
    /// logit's index, chosen on the GPU, the first on ties), each fed back in.
    pub fn greedy(&mut self, prompt: &[u32], n: usize) -> Result<Vec<u32>, ModelError> {
        self.generate(prompt, n, &mut Sampler::greedy())
    }

    /// Starts a new sequence with `prompt` and generates `n` tokens, each drawn by `sampler`
    /// from the last step's logits (the GPU's argmax where it samples greedily) and fed back in.
    pub fn generate(
        &mut self,
        prompt: &[u32],
        n: usize,
        sampler: &mut Sampler,
    ) -> Result<Vec<u32>, ModelError> {
        self.generate_until(prompt, n, sampler, &[])
    }

    /// [`Llama::generate`], ending early after the first token that is one of `stop` (the
    /// model's end-of-sequence tokens: `eos_token_id` in its `config.json`), which is returned
    /// last.
    pub fn generate_until(
        &mut self,
        prompt: &[u32],
        n: usize,
        sampler: &mut Sampler,
        stop: &[u32],
    ) -> Result<Vec<u32>, ModelError> {
        self.generation(prompt, n, sampler, stop)?
            .map(|g| g.map(|g| g.token))
            .collect()
    }

    /// Starts a new sequence with `prompt`: its next `n` tokens (fewer where one of `stop`
    /// comes first, returned last) as an iterator that hands each over as soon as its step has
    /// run, each drawn by `sampler` and fed back in. Where the token is chosen on the GPU
    /// (greedy, or a draw at a temperature alone) the decode steps are queued ahead and run
    /// back to back, each reading the token the one before chose on the GPU
    /// ([`Generation`]). The prompt and the room for `n` tokens are checked first.
    pub fn generation<'a>(
        &'a mut self,
        prompt: &[u32],
        n: usize,
        sampler: &'a mut Sampler,
        stop: &'a [u32],
    ) -> Result<Generation<'a>, ModelError> {
        self.check_tokens(prompt)?;
        self.reset();
        self.cache.check_room(prompt.len() + n.saturating_sub(1))?;
        Ok(Generation::new(self, prompt, n, sampler, stop))
    }

    /// Runs `tokens` at the next positions of the sequence: the next token as `sampler` says
    /// to draw it from the last one's logits ([`Llama::next_token`] where it samples greedily),
    /// drawn on the GPU ([`vkprism_shaders::Ops::sample`], its temperature, top-k and top-p
    /// cuts, seeded from `sampler`'s generator): only the token is read back.
    pub fn sample_next(
        &mut self,
        tokens: &[u32],
        sampler: &mut Sampler,
    ) -> Result<u32, ModelError> {
        let read = Read::token_of(sampler.sampling());
        let seed = read.seed(sampler);
        Ok(self.step(tokens, read, seed)?.token())
    }

    /// Runs `tokens` at the next positions of the sequence: the last one's logits, `[vocab]`
    /// (the output layer runs for the last token only).
    pub fn next_logits(&mut self, tokens: &[u32]) -> Result<Vec<f32>, ModelError> {
        Ok(self.step(tokens, Read::LastLogits, 0)?.logits())
    }

    /// Runs `tokens` at the next positions of the sequence: the index of the last one's
    /// largest logit (chosen on the GPU, the first on ties; only that index is read back, and
    /// the output layer runs for the last token only).
    pub fn next_token(&mut self, tokens: &[u32]) -> Result<u32, ModelError> {
        Ok(self.step(tokens, Read::ArgMax, 0)?.token())
    }

    /// Runs one step (a draw's under `seed`): what it read back. The cache advances only when
    /// it ran.
    fn step(&mut self, tokens: &[u32], read: Read, seed: u64) -> Result<StepOut, ModelError> {
        self.check_tokens(tokens)?;
        self.cache.check_room(tokens.len())?;
        let readback = match tokens {
            [token] => self.decode_step(*token, read, seed)?,
            _ => self.prompt_step(tokens, read, seed)?,
        };
        self.cache.advance(tokens.len());
        Ok(readback)
    }

    /// Runs a prompt's step at the cache's position: the last prompt's list replayed where it
    /// was of as many tokens at the same position, otherwise recorded.
    fn prompt_step(
        &mut self,
        tokens: &[u32],
        read: Read,
        seed: u64,
    ) -> Result<StepOut, ModelError> {
        let start = self.cache.position();
        let ids: Vec<u8> = tokens.iter().flat_map(|t| t.to_le_bytes()).collect();
        let same = |p: &PromptList| p.act.tokens() == tokens.len() && p.start == start;
        match self.prompt.take() {
            Some(p) if same(&p) && p.read == read => self.prompt = Some(p),
            earlier => {
                let rows = read.logit_rows();
                let act = match earlier {
                    Some(p) if p.act.tokens() == tokens.len() && p.act.serves(rows) => p.act,
                    _ => Activations::new(
                        self.ops.context(),
                        &self.cfg,
                        tokens.len(),
                        (self.format, self.storage),
                        rows,
                    )?,
                };
                self.prompt = Some(self.record_prompt(act, start, read)?);
            }
        }
        let p = self.prompt.as_mut().expect("recorded above");
        p.ids.write_bytes(&ids)?;
        write_seed(p.seed.as_ref(), seed)?;
        p.list.submit_and_wait()?;
        (self.gpu_time, self.kernel_times) = step_times(&p.list, self.timing, self.profile);
        values_of(&p.out, read)
    }

    /// Records a prompt's step over `act` at cache position `start`.
    fn record_prompt(
        &self,
        act: Activations,
        start: usize,
        read: Read,
    ) -> Result<PromptList, ModelError> {
        let mut list = self.new_list(self.ops.context())?;
        let ids = list.upload_slot(&act.ids)?;
        let forward = Forward {
            ops: &self.ops,
            cfg: &self.cfg,
            weights: &self.weights,
            cache: &self.cache,
            act: &act,
            at: StepPosition::Known(start),
            rows: read.logit_rows(),
            draw: read.draw(),
        };
        let seed = read
            .draw()
            .map(|_| list.upload_slot(&act.seed))
            .transpose()?;
        let best = forward.record(&mut list)?;
        let out = match read {
            Read::Logits => list.download(&act.logits)?,
            Read::ArgMax | Read::Draw(_) => list.download(&act.best.view(best, &[1])?)?,
            // With `LogitRows::Last` the last token's logits are the first row.
            Read::LastLogits => list.download(&act.logits.view(0, &[self.cfg.vocab])?)?,
        };
        Ok(PromptList {
            start,
            read,
            act,
            list,
            ids,
            seed,
            out,
        })
    }

    /// Runs one token through the decode list of its span (recorded first where there is
    /// none): the token and its position written into the list's upload slots, the list
    /// replayed.
    fn decode_step(&mut self, token: u32, read: Read, seed: u64) -> Result<StepOut, ModelError> {
        self.keep_lists_of(read);
        let position = self.cache.position();
        let at = self.decode_list(self.capacity_at(position), read, TokenFrom::Host)?;
        let decode = self.decode.as_mut().expect("made by decode_list");
        let d = &mut decode.lists[at];
        if let Some(slot) = &d.token {
            slot.write_bytes(&token.to_le_bytes())?;
        }
        d.position.write_bytes(&(position as i32).to_le_bytes())?;
        write_seed(d.seed.as_ref(), seed)?;
        d.list.submit_and_wait()?;
        self.finish_decode(at, read)
    }

    /// The cache rows a decode step at `position` reads: its span's end.
    fn capacity_at(&self, position: usize) -> usize {
        ((position / DECODE_SPAN + 1) * DECODE_SPAN).min(self.cache.max_seq())
    }

    /// What decode list `at` read back in its run, waited for; its times kept.
    fn finish_decode(&mut self, at: usize, read: Read) -> Result<StepOut, ModelError> {
        let d = &self.decode.as_ref().expect("a list ran").lists[at];
        (self.gpu_time, self.kernel_times) = step_times(&d.list, self.timing, self.profile);
        values_of(&d.out, read)
    }

    /// Forgets the decode lists of draws at another temperature than `read`'s (a caller
    /// changing it every token would otherwise keep a list for each). Only while none runs.
    fn keep_lists_of(&mut self, read: Read) {
        if let (Read::Draw(key), Some(decode)) = (read, self.decode.as_mut()) {
            decode
                .lists
                .retain(|d| !matches!(d.read, Read::Draw(k) if k != key));
        }
    }

    /// Queues the decode step at `position` (a draw's under `seed`) whose token the step
    /// before left on the GPU ([`TokenFrom::Gpu`]), without waiting: the run and its list.
    pub(crate) fn queue_decode(
        &mut self,
        position: usize,
        read: Read,
        seed: u64,
    ) -> Result<(Submission, usize), ModelError> {
        let from = TokenFrom::Gpu((position % 2) as u8);
        let at = self.decode_list(self.capacity_at(position), read, from)?;
        let d = &mut self.decode.as_mut().expect("made by decode_list").lists[at];
        d.position.write_bytes(&(position as i32).to_le_bytes())?;
        write_seed(d.seed.as_ref(), seed)?;
        Ok((d.list.submit()?, at))
    }

    /// The token of queued decode list `at`, its run waited for: the cache advanced past it.
    pub(crate) fn finish_queued(&mut self, at: usize, read: Read) -> Result<u32, ModelError> {
        let token = self.finish_decode(at, read)?.token();
        self.cache.advance(1);
        Ok(token)
    }

    /// Writes `token` where the next queued decode step reads it (the decode activations'
    /// ids), and drops the lists of draws at another temperature than `read`'s: before
    /// queueing steps, none running.
    pub(crate) fn place_token(&mut self, token: u32, read: Read) -> Result<(), ModelError> {
        self.keep_lists_of(read);
        self.decode_lists()?
            .act
            .ids
            .write_bytes(&token.to_le_bytes())?;
        Ok(())
    }

    /// The decode lists, their activations made where there are none.
    fn decode_lists(&mut self) -> Result<&mut DecodeLists, ModelError> {
        if self.decode.is_none() {
            let ctx = self.ops.context();
            self.decode = Some(DecodeLists {
                // One token: every row is the last, whatever is read.
                act: Activations::new(
                    ctx,
                    &self.cfg,
                    1,
                    (self.format, self.storage),
                    LogitRows::Every,
                )?,
                position: Tensor::new(ctx, &[1], TensorFormat::I32)?,
                lists: Vec::new(),
            });
        }
        Ok(self.decode.as_mut().expect("made above"))
    }

    /// The index of the decode list for `capacity`, `read` and `from`, recorded where there
    /// is none.
    fn decode_list(
        &mut self,
        capacity: usize,
        read: Read,
        from: TokenFrom,
    ) -> Result<usize, ModelError> {
        let ctx = self.ops.context().clone();
        self.decode_lists()?;
        let decode = self.decode.as_ref().expect("made above");
        let found = decode
            .lists
            .iter()
            .position(|d| d.capacity == capacity && d.read == read && d.from == from);
        if let Some(at) = found {
            return Ok(at);
        }
        let mut list = self.new_list(&ctx)?;
        let token = match from {
            TokenFrom::Host => Some(list.upload_slot(&decode.act.ids)?),
            TokenFrom::Gpu(_) => None,
        };
        let position = list.upload_slot(&decode.position)?;
        let forward = Forward {
            ops: &self.ops,
            cfg: &self.cfg,
            weights: &self.weights,
            cache: &self.cache,
            act: &decode.act,
            at: StepPosition::Buffer {
                position: &decode.position,
                capacity,
            },
            rows: read.logit_rows(),
            draw: read.draw(),
        };
        let seed = read
            .draw()
            .map(|_| list.upload_slot(&decode.act.seed))
            .transpose()?;
        forward.record(&mut list)?;
        if from != TokenFrom::Host {
            // The next queued step's input.
            list.copy(&decode.act.best, &decode.act.ids)?;
        }
        let out = match read {
            Read::Logits | Read::LastLogits => list.download(&decode.act.logits)?,
            Read::ArgMax | Read::Draw(_) => list.download(&decode.act.best)?,
        };
        let decode = self.decode.as_mut().expect("made above");
        decode.lists.push(DecodeList {
            capacity,
            read,
            from,
            list,
            token,
            position,
            seed,
            out,
        });
        Ok(decode.lists.len() - 1)
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

/// The GPU time and per-kernel times of `list`'s last run, where asked for.
fn step_times(
    list: &CommandList,
    timing: bool,
    profile: bool,
) -> (Option<Duration>, Option<Vec<KernelTime>>) {
    let total = if timing { list.total_time().ok() } else { None };
    (total, profile.then(|| kernel_times(list)).flatten())
}

/// What a step read back.
enum StepOut {
    Logits(Vec<f32>),
    Token(u32),
}

impl StepOut {
    fn logits(self) -> Vec<f32> {
        match self {
            StepOut::Logits(v) => v,
            StepOut::Token(_) => unreachable!("a step reads what it was asked for"),
        }
    }
    fn token(self) -> u32 {
        match self {
            StepOut::Token(t) => t,
            StepOut::Logits(_) => unreachable!("a step reads what it was asked for"),
        }
    }
}

/// A step's read-back values, as `read` asked.
fn values_of(readback: &Readback, read: Read) -> Result<StepOut, ModelError> {
    Ok(match read {
        Read::Logits | Read::LastLogits => StepOut::Logits(readback.read_f32()?),
        Read::ArgMax | Read::Draw(_) => StepOut::Token(readback.read_u32()?[0]),
    })
}

/// A draw's seed into its upload slot, where the step draws.
fn write_seed(slot: Option<&UploadSlot>, seed: u64) -> Result<(), ModelError> {
    if let Some(slot) = slot {
        slot.write_bytes(&seed.to_le_bytes())?;
    }
    Ok(())
}

/// GPU memory a [`Llama`] holds, in bytes.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct LlamaMemory {
    /// The weights, in the model's format (norms folded into the projections).
    pub weights: u64,
    /// Keys and values of every layer, `max_seq` positions.
    pub kv_cache: u64,
    /// The activations of the decode step and of the last prompt, with their lists' scratch
    /// (split GEMMs' partial sums, attention's shares).
    pub activations: u64,
    /// Decode lists recorded so far (one per span of positions and kind of read).
    pub recorded_decode_lists: usize,
}

impl LlamaMemory {
    /// Everything the model holds.
    pub fn total(&self) -> u64 {
        self.weights + self.kv_cache + self.activations
    }
}

impl std::fmt::Display for LlamaMemory {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mib = |b: u64| b as f64 / (1024.0 * 1024.0);
        write!(
            f,
            "weights {:.1} MiB, KV cache {:.1} MiB, activations {:.2} MiB: {:.1} MiB ({} decode lists recorded)",
            mib(self.weights),
            mib(self.kv_cache),
            mib(self.activations),
            mib(self.total()),
            self.recorded_decode_lists
        )
    }
}

/// Dispatches a profiled step may time: more than a TinyLlama step's (about 8 a layer).
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
