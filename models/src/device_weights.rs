//! A decoder's weights in GPU memory, in the model's tensor format, read one tensor at a time
//! from a [`WeightSource`] (so a file's tensors are never all on the host as `f32` at once).

use crate::weights::layer_weight;
use crate::{LlamaConfig, ModelError, WeightSource};
use vkprism::{Context, Tensor, TensorFormat};

/// One decoder layer's weights (norm scales `[hidden]`, projections `[out, in]`).
pub(crate) struct LayerWeights {
    pub input_norm: Tensor,
    pub q: Tensor,
    pub k: Tensor,
    pub v: Tensor,
    pub o: Tensor,
    pub post_norm: Tensor,
    pub gate: Tensor,
    pub up: Tensor,
    pub down: Tensor,
}

/// Every weight of a decoder.
pub(crate) struct DeviceWeights {
    pub embed: Tensor,
    pub layers: Vec<LayerWeights>,
    pub norm: Tensor,
    pub lm_head: Tensor,
}

/// Reads and uploads tensors from one source in one format.
struct Uploader<'a> {
    ctx: &'a Context,
    source: &'a dyn WeightSource,
    format: TensorFormat,
}

impl Uploader<'_> {
    fn tensor(&self, name: &str, shape: &[usize]) -> Result<Tensor, ModelError> {
        let values = self.source.tensor(name, shape)?;
        Ok(Tensor::from_f32(self.ctx, shape, self.format, &values)?)
    }

    fn layer(&self, cfg: &LlamaConfig, i: usize) -> Result<LayerWeights, ModelError> {
        let (h, kv, m) = (cfg.hidden, cfg.kv_dim(), cfg.mlp);
        let t = |part: &str, shape: &[usize]| self.tensor(&layer_weight(i, part), shape);
        Ok(LayerWeights {
            input_norm: t("input_layernorm", &[h])?,
            q: t("self_attn.q_proj", &[h, h])?,
            k: t("self_attn.k_proj", &[kv, h])?,
            v: t("self_attn.v_proj", &[kv, h])?,
            o: t("self_attn.o_proj", &[h, h])?,
            post_norm: t("post_attention_layernorm", &[h])?,
            gate: t("mlp.gate_proj", &[m, h])?,
            up: t("mlp.up_proj", &[m, h])?,
            down: t("mlp.down_proj", &[h, m])?,
        })
    }
}

impl DeviceWeights {
    /// Every tensor of `cfg` from `source`, uploaded as `format`.
    pub fn upload(
        ctx: &Context,
        cfg: &LlamaConfig,
        source: &dyn WeightSource,
        format: TensorFormat,
    ) -> Result<DeviceWeights, ModelError> {
        let up = Uploader {
            ctx,
            source,
            format,
        };
        let (h, vocab) = (cfg.hidden, cfg.vocab);
        Ok(DeviceWeights {
            embed: up.tensor("model.embed_tokens.weight", &[vocab, h])?,
            layers: (0..cfg.layers)
                .map(|i| up.layer(cfg, i))
                .collect::<Result<_, _>>()?,
            norm: up.tensor("model.norm.weight", &[h])?,
            lm_head: up.tensor("lm_head.weight", &[vocab, h])?,
        })
    }
}
