//! One step of the decoder recorded into a command list: the activations of `n` tokens
//! ([`Activations`]) and the operations over them ([`Forward`]), the projections as GEMMs for a
//! prompt and as GEMVs for one token.

use crate::cache::KvCache;
use crate::device_weights::{DeviceWeights, LayerWeights};
use crate::{LlamaConfig, ModelError};
use vkprism::{CommandList, Context, Tensor, TensorFormat};
use vkprism_shaders::{Activation, Attention, BinaryOp, Gemm, Ops, ReduceOp, Rope, UnaryOp};

/// The tensors a step of `n` tokens works in, reused by every layer (the list puts a barrier
/// wherever one layer's use of a tensor follows another's).
pub(crate) struct Activations {
    /// The token ids, I32 `[n]`.
    pub ids: Tensor,
    /// The residual stream `[n, hidden]`.
    x: Tensor,
    /// The normed stream `[n, hidden]`.
    h: Tensor,
    /// Queries and attention output `[n, heads, head_dim]`; new keys and values `[n, kv_heads,
    /// head_dim]`.
    q: Tensor,
    k: Tensor,
    v: Tensor,
    o: Tensor,
    /// The MLP's two branches `[n, mlp]`.
    gate: Tensor,
    up: Tensor,
    /// A projection's output before it is added to the stream (GEMV path) `[n, hidden]`.
    sum: Tensor,
    /// The logits `[n, vocab]`, and the index of each row's largest, I32 `[n]`.
    pub logits: Tensor,
    pub best: Tensor,
}

impl Activations {
    /// The activations of `n` tokens of `cfg` in `format`.
    pub fn new(
        ctx: &Context,
        cfg: &LlamaConfig,
        n: usize,
        format: TensorFormat,
    ) -> Result<Activations, ModelError> {
        let t = |shape: &[usize]| Tensor::new(ctx, shape, format);
        let (heads, kv, d) = (cfg.heads, cfg.kv_heads, cfg.head_dim());
        Ok(Activations {
            ids: Tensor::new(ctx, &[n], TensorFormat::I32)?,
            x: t(&[n, cfg.hidden])?,
            h: t(&[n, cfg.hidden])?,
            q: t(&[n, heads, d])?,
            k: t(&[n, kv, d])?,
            v: t(&[n, kv, d])?,
            o: t(&[n, heads, d])?,
            gate: t(&[n, cfg.mlp])?,
            up: t(&[n, cfg.mlp])?,
            sum: t(&[n, cfg.hidden])?,
            logits: t(&[n, cfg.vocab])?,
            best: Tensor::new(ctx, &[n], TensorFormat::I32)?,
        })
    }

    /// Tokens in the step.
    pub fn tokens(&self) -> usize {
        self.ids.len()
    }
}

/// Records one step: the tokens' embeddings through every layer to their logits and argmax.
pub(crate) struct Forward<'a> {
    pub ops: &'a Ops,
    pub cfg: &'a LlamaConfig,
    pub weights: &'a DeviceWeights,
    pub cache: &'a KvCache,
    pub act: &'a Activations,
}

impl Forward<'_> {
    /// Records the whole step (after the ids' upload, before the downloads).
    pub fn record(&self, list: &mut CommandList) -> Result<(), ModelError> {
        let (a, w) = (self.act, self.weights);
        self.ops.embedding(list, &w.embed, &a.ids, &a.x)?;
        for (i, layer) in w.layers.iter().enumerate() {
            self.attention_block(list, i, layer)?;
            self.mlp_block(list, layer)?;
        }
        self.ops
            .rms_norm(list, &a.x, Some(&w.norm), &a.h, self.cfg.rms_eps)?;
        self.linear(list, &w.lm_head, &a.h, &a.logits, Activation::None)?;
        self.ops
            .reduce(list, &a.logits, &a.best, 1, ReduceOp::ArgMax)?;
        Ok(())
    }

    /// `x += o_proj(attention(rope(q), rope(k), v))` of the normed stream; the new keys and
    /// values written into the cache first.
    fn attention_block(
        &self,
        list: &mut CommandList,
        i: usize,
        l: &LayerWeights,
    ) -> Result<(), ModelError> {
        let (a, ops, n) = (self.act, self.ops, self.act.tokens());
        ops.rms_norm(list, &a.x, Some(&l.input_norm), &a.h, self.cfg.rms_eps)?;
        // K and V straight into the cache's next rows where those can be bound; otherwise
        // into the step's own tensors, copied there after the rotation.
        let direct = self.cache.next_rows(i, n)?;
        let (k, v) = match &direct {
            Some((k, v)) => (k.clone(), v.clone()),
            None => (a.k.clone(), a.v.clone()),
        };
        self.linear(list, &l.q, &a.h, &flat(&a.q)?, Activation::None)?;
        self.linear(list, &l.k, &a.h, &flat(&k)?, Activation::None)?;
        self.linear(list, &l.v, &a.h, &flat(&v)?, Activation::None)?;
        let start = self.cache.position();
        let rope = Rope::new()
            .with_theta_base(self.cfg.rope_theta)
            .with_position_offset(start);
        ops.rope(list, &a.q, &a.q, &rope)?;
        ops.rope(list, &k, &k, &rope)?;
        if direct.is_none() {
            self.cache.record_write(list, i, &a.k, &a.v)?;
        }
        let (keys, values) = self.cache.rows(i, start + n)?;
        let causal = Attention::new().with_causal(true);
        ops.attention(list, &a.q, &keys, &values, &a.o, &causal)?;
        self.residual(list, &l.o, &flat(&a.o)?)
    }

    /// `x += down(silu(gate(h)) · up(h))` of the normed stream.
    fn mlp_block(&self, list: &mut CommandList, l: &LayerWeights) -> Result<(), ModelError> {
        let a = self.act;
        let ops = self.ops;
        ops.rms_norm(list, &a.x, Some(&l.post_norm), &a.h, self.cfg.rms_eps)?;
        self.linear(list, &l.gate, &a.h, &a.gate, Activation::Silu)?;
        self.linear(list, &l.up, &a.h, &a.up, Activation::None)?;
        ops.binary(list, &a.gate, &a.up, &a.gate, BinaryOp::Mul)?;
        self.residual(list, &l.down, &a.gate)
    }

    /// `y = act(x · wᵀ)` for `w` `[out, in]`: a GEMM over the step's rows, or for one token a
    /// GEMV (then the activation on its own).
    fn linear(
        &self,
        list: &mut CommandList,
        w: &Tensor,
        x: &Tensor,
        y: &Tensor,
        act: Activation,
    ) -> Result<(), ModelError> {
        if self.act.tokens() > 1 {
            let op = Gemm::new().with_transpose_b(true).with_activation(act);
            return Ok(self.ops.gemm(list, x, w, None, y, &op)?);
        }
        self.ops.gemv(list, w, x, None, y)?;
        match act {
            Activation::None => Ok(()),
            Activation::Silu => Ok(self.ops.unary(list, y, y, UnaryOp::Silu)?),
            other => unreachable!("the decoder uses no {other:?}"),
        }
    }

    /// `x += input · wᵀ`: the GEMM adds into the stream itself (`beta` 1); the GEMV writes a
    /// sum that is then added.
    fn residual(
        &self,
        list: &mut CommandList,
        w: &Tensor,
        input: &Tensor,
    ) -> Result<(), ModelError> {
        let a = self.act;
        if a.tokens() > 1 {
            let op = Gemm::new().with_transpose_b(true).with_beta(1.0);
            return Ok(self.ops.gemm(list, input, w, None, &a.x, &op)?);
        }
        self.ops.gemv(list, w, input, None, &a.sum)?;
        Ok(self.ops.binary(list, &a.x, &a.sum, &a.x, BinaryOp::Add)?)
    }
}

/// `t` `[n, heads, head_dim]` seen as the matrix `[n, heads · head_dim]` a projection writes.
fn flat(t: &Tensor) -> Result<Tensor, ModelError> {
    let n = t.shape()[0];
    Ok(t.view(0, &[n, t.len() / n])?)
}
