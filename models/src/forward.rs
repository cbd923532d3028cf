//! One step of the decoder recorded into a command list: the activations of `n` tokens
//! ([`Activations`]) and the operations over them ([`Forward`]). A prompt goes through GEMMs
//! (each norm's weight folded into the projection after it; the stream normalized by the
//! residual GEMM before the norm, [`Ops::gemm_rms_norm`] — in its split's second pass where it
//! splits — or by a dispatch of its own after the embedding; the MLP's gate/up GEMM gating its
//! own products, [`Ops::gemm_glu`]); where only the next token is asked for, the output layer
//! is a GEMV over the prompt's last row ([`LogitRows::Last`]). One token goes
//! through fused GEMVs that normalize their input, rotate queries and keys into place, gate the
//! MLP and add into the residual stream themselves: five dispatches a layer with attention's
//! (six where attention merges its key shares in a pass of its own: the grouped kernel, over
//! caches of grouped-query heads past 64 chunks of keys). A model that normalizes each query
//! and key head before it turns (Qwen3's) projects them first, prompt or token, and places
//! them with a dispatch of their own ([`Ops::rope_qkv_normed`]). Heads keep their rotation
//! pairs side by side ([`crate::device_weights`]). On int8 weights a token's GEMVs read them as
//! they are; a prompt's GEMMs read each weight dequantized into one scratch matrix first (a
//! dispatch before each GEMM).

use crate::cache::KvCache;
use crate::device_weights::{DeviceWeights, LayerWeights, Projection};
use crate::{LlamaConfig, ModelError, WeightStorage};
use vkprism::{CommandList, Context, Tensor, TensorFormat};
use vkprism_shaders::{
    Activation, Attention, Draw, Gemm, Gemv, HeadNorm, Ops, QuantScale, ReduceOp, Rope, RopeStyle,
};

/// The tensors a step of `n` tokens works in, reused by every layer (the list puts a barrier
/// wherever one layer's use of a tensor follows another's).
pub(crate) struct Activations {
    /// The token ids, I32 `[n]`.
    pub ids: Tensor,
    /// The residual stream `[n, hidden]`.
    x: Tensor,
    /// The stream RMS-normalized without a weight (GEMM path) `[n, hidden]`.
    h: Tensor,
    /// The fused projection `[rows, (heads + 2·kv_heads) · head_dim]` where it is placed by a
    /// dispatch of its own: a token's at a known position, and every token's of a model that
    /// normalizes its heads (`rows` the step's tokens there, else 1; a prompt's is otherwise
    /// placed as its GEMM computes it, `Ops::gemm_rope_qkv`).
    qkv: Tensor,
    /// Rotated queries and the attention's output `[n, heads, head_dim]`.
    q: Tensor,
    o: Tensor,
    /// The MLP's gated values `[n, mlp]`.
    mlp: Tensor,
    /// The logits `[n, vocab]`, and the index of each row's largest (or drawn), I32 `[n]`.
    pub logits: Tensor,
    pub best: Tensor,
    /// The seed of a step's draw ([`Forward::draw`]), U32 `[2]`, written before each run.
    pub seed: Tensor,
    /// Whether `dequantized` holds the output layer's weights too (it need not where the
    /// output layer is a GEMV over the last row).
    holds_output: bool,
    /// Where a prompt's GEMM reads an int8 weight dequantized: as many values as the largest
    /// projection a GEMM of the step reads (a prompt on int8 weights only).
    dequantized: Option<Tensor>,
}

impl Activations {
    /// The activations of `n` tokens of `cfg` in `format` over weights stored as `storage`,
    /// for steps whose output layer runs for `rows` ([`Activations::serves`]).
    pub fn new(
        ctx: &Context,
        cfg: &LlamaConfig,
        n: usize,
        (format, storage): (TensorFormat, WeightStorage),
        rows: LogitRows,
    ) -> Result<Activations, ModelError> {
        let t = |shape: &[usize]| Tensor::new(ctx, shape, format);
        let (heads, d) = (cfg.heads, cfg.head_dim());
        let h = t(&[n, cfg.hidden])?;
        let holds_output = output_takes_gemm(rows, &h);
        let dequantized = (n > 1 && storage == WeightStorage::Int8)
            .then(|| t(&[largest_projection(cfg, holds_output)]))
            .transpose()?;
        Ok(Activations {
            ids: Tensor::new(ctx, &[n], TensorFormat::I32)?,
            x: t(&[n, cfg.hidden])?,
            h,
            qkv: t(&[
                if cfg.qk_norm { n } else { 1 },
                cfg.q_dim() + 2 * cfg.kv_dim(),
            ])?,
            q: t(&[n, heads, d])?,
            o: t(&[n, heads, d])?,
            mlp: t(&[n, cfg.mlp])?,
            logits: t(&[n, cfg.vocab])?,
            best: Tensor::new(ctx, &[n], TensorFormat::I32)?,
            seed: Tensor::new(ctx, &[2], TensorFormat::U32)?,
            holds_output,
            dequantized,
        })
    }

    /// Whether a step whose output layer runs for `rows` can run in these activations: all
    /// but an int8 prompt's output-layer GEMM where they were made for the last row only.
    pub fn serves(&self, rows: LogitRows) -> bool {
        self.dequantized.is_none() || self.holds_output || !output_takes_gemm(rows, &self.h)
    }

    /// Tokens in the step.
    pub fn tokens(&self) -> usize {
        self.ids.len()
    }

    /// Bytes of GPU memory they take.
    pub fn bytes(&self) -> u64 {
        [
            &self.ids,
            &self.x,
            &self.h,
            &self.qkv,
            &self.q,
            &self.o,
            &self.mlp,
            &self.logits,
            &self.best,
            &self.seed,
        ]
        .iter()
        .map(|t| t.size_bytes())
        .sum::<u64>()
            + self.dequantized.as_ref().map_or(0, |t| t.size_bytes())
    }
}

/// Values in the largest projection of `cfg` a prompt's GEMMs read: a layer's, or the output
/// layer's where `output` (the output layer a GEMM).
fn largest_projection(cfg: &LlamaConfig, output: bool) -> usize {
    let (h, q, kv, m) = (cfg.hidden, cfg.q_dim(), cfg.kv_dim(), cfg.mlp);
    let layers = [(q + 2 * kv) * h, h * q, 2 * m * h, h * m]
        .into_iter()
        .max();
    let output = if output { cfg.vocab * h } else { 0 };
    layers.unwrap_or(0).max(output)
}

/// Whether a step's output layer, run for `rows` over the normed stream `h` `[n, hidden]`, is
/// the GEMM over every row (or a GEMV for a step of one token), not a GEMV over the last row
/// alone: where every row is asked for, or where the device can't bind `h`'s last row where it
/// starts.
fn output_takes_gemm(rows: LogitRows, h: &Tensor) -> bool {
    let (n, hidden) = (h.shape()[0], h.shape()[1]);
    let last_row = ((n - 1) * hidden * h.format().size()) as u64;
    let bindable = last_row.is_multiple_of(h.binding_alignment().max(1));
    rows == LogitRows::Every || n == 1 || !bindable
}

/// Where a step's first token sits in its sequence.
#[derive(Copy, Clone)]
pub(crate) enum StepPosition<'a> {
    /// Known when recording: the list serves this step only.
    Known(usize),
    /// Read on the GPU from an I32 `[1]` tensor written before each run: the list replays at
    /// every position below `capacity` (the cache rows attention may read).
    Buffer {
        position: &'a Tensor,
        capacity: usize,
    },
}

/// Which tokens of a step the output layer runs for.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum LogitRows {
    /// Every token's logits into `logits` and each row's argmax into `best`.
    Every,
    /// Only the last token's (the next token's, all that greedy decoding reads): its logits
    /// into `logits`' first row and their argmax into `best[0]` — a GEMV over the output
    /// layer's weights instead of a GEMM over every token.
    Last,
}

/// Records one step: the tokens' embeddings through every layer to their logits and argmax.
pub(crate) struct Forward<'a> {
    pub ops: &'a Ops,
    pub cfg: &'a LlamaConfig,
    pub weights: &'a DeviceWeights,
    pub cache: &'a KvCache,
    pub act: &'a Activations,
    pub at: StepPosition<'a>,
    /// The rows the output layer runs for (activations that [serve](Activations::serves) them).
    pub rows: LogitRows,
    /// Where given, `best` holds each row's token drawn so ([`Ops::sample`], seeded by the
    /// activations' `seed`) instead of its argmax.
    pub draw: Option<Draw>,
}

impl Forward<'_> {
    /// Records the whole step (after the ids' upload, before the downloads): the element of
    /// `best` that holds the last token's argmax.
    pub fn record(&self, list: &mut CommandList) -> Result<usize, ModelError> {
        let (a, w) = (self.act, self.weights);
        self.ops.embedding(list, &w.embed, &a.ids, &a.x)?;
        if a.tokens() > 1 {
            // The first norm's input; every later one is written by the residual GEMM before it.
            self.ops
                .rms_norm(list, &a.x, None, &a.h, self.cfg.rms_eps)?;
        }
        for (i, layer) in w.layers.iter().enumerate() {
            self.attention_block(list, i, layer)?;
            self.mlp_block(list, layer)?;
        }
        self.output_layer(list)
    }

    /// The logits and their argmax of the tokens [`Forward::rows`] names: the element of
    /// `best` that holds the last token's.
    fn output_layer(&self, list: &mut CommandList) -> Result<usize, ModelError> {
        let (a, w) = (self.act, self.weights);
        let last = a.tokens() - 1;
        let hidden = self.cfg.hidden;
        if output_takes_gemm(self.rows, &a.h) {
            self.normed_linear(list, &w.lm_head, &a.logits, Gemv::new())?;
            self.pick(list, &a.logits, &a.best)?;
            return Ok(last);
        }
        let h = a.h.view(last * hidden, &[1, hidden])?;
        let logits = a.logits.view(0, &[1, self.cfg.vocab])?;
        self.gemv(list, (&w.lm_head, None), &h, &logits, &Gemv::new())?;
        self.pick(list, &logits, &a.best.view(0, &[1])?)?;
        Ok(0)
    }

    /// Each row of `logits`' token into `best`: its argmax, or its draw ([`Forward::draw`]).
    fn pick(
        &self,
        list: &mut CommandList,
        logits: &Tensor,
        best: &Tensor,
    ) -> Result<(), ModelError> {
        match self.draw {
            None => self.ops.reduce(list, logits, best, 1, ReduceOp::ArgMax)?,
            Some(d) => self.ops.sample(list, logits, best, &d, &self.act.seed)?,
        }
        Ok(())
    }

    /// `x += o_proj(attention(rope(q), rope(k), v))` of the normed stream; the new keys and
    /// values written into the cache by the rotation.
    fn attention_block(
        &self,
        list: &mut CommandList,
        i: usize,
        l: &LayerWeights,
    ) -> Result<(), ModelError> {
        let (a, ops) = (self.act, self.ops);
        let rope = Rope::new()
            .with_theta_base(self.cfg.rope_theta)
            .with_scaling(self.cfg.rope_scaling)
            .with_style(RopeStyle::Interleaved);
        let causal = Attention::new().with_causal(true);
        match self.at {
            StepPosition::Known(start) => {
                let rope = rope.with_position_offset(start);
                self.place_qkv(list, i, l, &rope, None)?;
                let (k, v) = self.cache.rows(i, start + a.tokens())?;
                ops.attention(list, &a.q, &k, &v, &a.o, &causal)?;
            }
            StepPosition::Buffer { position, capacity } => {
                self.place_qkv(list, i, l, &rope, Some(position))?;
                let (k, v) = self.cache.rows(i, capacity)?;
                ops.attention_at(list, &a.q, &k, &v, &a.o, &causal, position)?;
            }
        }
        self.residual(list, &l.o, &flat(&a.o)?)
    }

    /// The step's queries, keys and values projected from the normed stream, turned by `rope`
    /// (at the position in `position` past its offset, where given) and placed: the queries in
    /// `q`, the keys and values in layer `i`'s cache. The rotation fused into the projection
    /// where it can be: not where the model normalizes its heads first (a projection, then
    /// [`Ops::rope_qkv_normed`]), nor for a token at a known position.
    fn place_qkv(
        &self,
        list: &mut CommandList,
        i: usize,
        l: &LayerWeights,
        rope: &Rope,
        position: Option<&Tensor>,
    ) -> Result<(), ModelError> {
        let (a, ops) = (self.act, self.ops);
        let (keys, values) = self.cache.layer(i);
        // A token's projection normalizes the stream itself.
        let normed = Gemv::new().with_rms_input(self.cfg.rms_eps);
        let bias = l.qkv_bias.as_ref();
        if let Some([q_weight, k_weight]) = &l.qk_norm {
            let qkv = self.projected_qkv(list, l)?;
            let eps = self.cfg.rms_eps;
            let norm = HeadNorm {
                q_weight,
                k_weight,
                eps,
            };
            ops.rope_qkv_normed(list, &qkv, norm, &a.q, keys, values, rope, position)?;
            return Ok(());
        }
        match (position, &l.qkv) {
            (None, _) if a.tokens() == 1 => {
                let qkv = self.projected_qkv(list, l)?;
                ops.rope_qkv(list, &qkv, &a.q, keys, values, rope, None)?;
            }
            (None, _) => {
                let w = self.float_weights(list, &l.qkv)?;
                ops.gemm_rope_qkv(list, &a.h, (&w, bias), &a.q, keys, values, rope)?;
            }
            (Some(_), Projection::Float(w)) => {
                let cache = [keys, values];
                ops.gemv_rope_qkv(list, w, bias, &a.x, &a.q, cache, &normed, rope, position)?
            }
            (Some(_), Projection::Int8 { w, scales }) => ops.gemv_int8_rope_qkv(
                list,
                (w, scales),
                bias,
                &a.x,
                &a.q,
                [keys, values],
                &normed,
                rope,
                position,
            )?,
        }
        Ok(())
    }

    /// The step's fused projection of the normed stream (and its bias) into `qkv`'s rows for
    /// its tokens: the view it is in.
    fn projected_qkv(
        &self,
        list: &mut CommandList,
        l: &LayerWeights,
    ) -> Result<Tensor, ModelError> {
        let a = self.act;
        let n = a.tokens();
        let qkv = a.qkv.view(0, &[n, a.qkv.shape()[1]])?;
        let bias = l.qkv_bias.as_ref();
        if n == 1 {
            let normed = Gemv::new().with_rms_input(self.cfg.rms_eps);
            self.gemv(list, (&l.qkv, bias), &a.x, &qkv, &normed)?;
        } else {
            let w = self.float_weights(list, &l.qkv)?;
            let op = Gemm::new().with_transpose_b(true);
            self.ops.gemm(list, &a.h, &w, bias, &qkv, &op)?;
        }
        Ok(qkv)
    }

    /// `x += down(silu(gate(h)) · up(h))` of the normed stream: for one token the gated GEMV,
    /// for a prompt the gate/up GEMM gating its own products ([`Ops::gemm_glu`]) over `h`.
    fn mlp_block(&self, list: &mut CommandList, l: &LayerWeights) -> Result<(), ModelError> {
        let a = self.act;
        if a.tokens() == 1 {
            let gated = Gemv::new()
                .with_gated(true)
                .with_activation(Activation::Silu);
            self.normed_linear(list, &l.gate_up, &a.mlp, gated)?;
        } else {
            let w = self.float_weights(list, &l.gate_up)?;
            self.ops
                .gemm_glu(list, &a.h, &w, &a.mlp, Activation::Silu)?;
        }
        self.residual(list, &l.down, &a.mlp)
    }

    /// `y = rms_norm(x) · wᵀ` for `w` `[out, in]` (the norm's weight folded into w): for one
    /// token a GEMV that normalizes x itself, with `fused` (gated or not) in its epilogue;
    /// otherwise a GEMM over `h`, the stream as normalized after the embedding or by the
    /// residual GEMM before (`fused` must be plain there).
    fn normed_linear(
        &self,
        list: &mut CommandList,
        w: &Projection,
        y: &Tensor,
        fused: Gemv,
    ) -> Result<(), ModelError> {
        let (a, eps) = (self.act, self.cfg.rms_eps);
        if a.tokens() == 1 {
            return self.gemv(list, (w, None), &a.x, y, &fused.with_rms_input(eps));
        }
        self.gemm(list, &a.h, w, y, &Gemm::new().with_transpose_b(true))
    }

    /// `x += input · wᵀ`: the GEMM (`beta` 1) or the GEMV (accumulating) adds into the stream
    /// itself; the GEMM also writes the stream normalized into `h`, the input of the norm's
    /// projection after it.
    fn residual(
        &self,
        list: &mut CommandList,
        w: &Projection,
        input: &Tensor,
    ) -> Result<(), ModelError> {
        let a = self.act;
        if a.tokens() == 1 {
            let accumulate = Gemv::new().with_accumulate(true);
            return self.gemv(list, (w, None), input, &a.x, &accumulate);
        }
        let op = Gemm::new().with_transpose_b(true).with_beta(1.0);
        let w = self.float_weights(list, w)?;
        let eps = self.cfg.rms_eps;
        self.ops
            .gemm_rms_norm(list, input, &w, None, &a.x, &op, &a.h, eps)?;
        Ok(())
    }

    /// `y = W · x (+ bias)` with `op` fused, on `w` as stored.
    fn gemv(
        &self,
        list: &mut CommandList,
        (w, bias): (&Projection, Option<&Tensor>),
        x: &Tensor,
        y: &Tensor,
        op: &Gemv,
    ) -> Result<(), ModelError> {
        match w {
            Projection::Float(w) => self.ops.gemv_with(list, w, x, bias, y, op)?,
            Projection::Int8 { w, scales } => {
                self.ops.gemv_int8_with(list, (w, scales), x, bias, y, op)?
            }
        }
        Ok(())
    }

    /// The GEMM `op` of `x` and `w` into `y` ([`Forward::float_weights`]' matrix).
    fn gemm(
        &self,
        list: &mut CommandList,
        x: &Tensor,
        w: &Projection,
        y: &Tensor,
        op: &Gemm,
    ) -> Result<(), ModelError> {
        let w = self.float_weights(list, w)?;
        Ok(self.ops.gemm(list, x, &w, None, y, op)?)
    }

    /// `w` as a float matrix a prompt's GEMM reads: itself, or an int8 `w` dequantized into
    /// the step's scratch matrix (a dispatch).
    fn float_weights(&self, list: &mut CommandList, w: &Projection) -> Result<Tensor, ModelError> {
        let Projection::Int8 { w, scales } = w else {
            return Ok(w.matrix().clone());
        };
        let scratch = self
            .act
            .dequantized
            .as_ref()
            .expect("a prompt on int8 weights has a scratch matrix");
        let wf = scratch.view(0, w.shape())?;
        let per_row = QuantScale::PerChannel { scales, axis: 0 };
        self.ops.dequantize(list, w, per_row, &wf)?;
        Ok(wf)
    }
}

/// `t` `[n, heads, head_dim]` seen as the matrix `[n, heads · head_dim]` a projection reads.
fn flat(t: &Tensor) -> Result<Tensor, ModelError> {
    let n = t.shape()[0];
    Ok(t.view(0, &[n, t.len() / n])?)
}
