//! A Llama decoder's weights on the host: their names and shapes ([`weight_shapes`], as Hugging
//! Face's `LlamaForCausalLM` state dict names them, Linear weights `[out, in]`), where they come
//! from ([`WeightSource`]: a safetensors file, [`HostWeights`]), random weights for tests, and
//! safetensors output.

use crate::device_weights::fold_columns;
use crate::int8::rounded_rows;
use crate::safetensors_io::{encode, Dtype};
use crate::{LlamaConfig, ModelError};
use std::collections::BTreeMap;
use vkprism::TensorFormat;

/// The weight tensors of one decoder layer, by their names within `model.layers.{i}.`.
pub const LAYER_PARTS: [&str; 9] = [
    "input_layernorm",
    "self_attn.q_proj",
    "self_attn.k_proj",
    "self_attn.v_proj",
    "self_attn.o_proj",
    "post_attention_layernorm",
    "mlp.gate_proj",
    "mlp.up_proj",
    "mlp.down_proj",
];

/// The state-dict name of part `part` (one of [`LAYER_PARTS`]) of layer `layer`.
pub fn layer_weight(layer: usize, part: &str) -> String {
    format!("model.layers.{layer}.{part}.weight")
}

/// The projections that add a bias where the configuration says so
/// ([`LlamaConfig::qkv_bias`](crate::LlamaConfig::qkv_bias)), within `model.layers.{i}.`.
pub const QKV_BIAS_PARTS: [&str; 3] = ["self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj"];

/// The state-dict name of projection `part`'s bias in layer `layer`.
pub fn layer_bias(layer: usize, part: &str) -> String {
    format!("model.layers.{layer}.{part}.bias")
}

/// The weights of each query and key head's norm where the configuration has them
/// ([`LlamaConfig::qk_norm`](crate::LlamaConfig::qk_norm)), within `model.layers.{i}.`.
pub const QK_NORM_PARTS: [&str; 2] = ["self_attn.q_norm", "self_attn.k_norm"];

/// A layer's projections and the norm each has folded into its columns at load (`None`: none).
const PROJECTION_NORMS: [(&str, Option<&str>); 7] = [
    ("self_attn.q_proj", Some("input_layernorm")),
    ("self_attn.k_proj", Some("input_layernorm")),
    ("self_attn.v_proj", Some("input_layernorm")),
    ("self_attn.o_proj", None),
    ("mlp.gate_proj", Some("post_attention_layernorm")),
    ("mlp.up_proj", Some("post_attention_layernorm")),
    ("mlp.down_proj", None),
];

/// The shape of a layer's part: a norm's `[hidden]`, a projection's `[out, in]`.
fn part_shape(cfg: &LlamaConfig, part: &str) -> Vec<usize> {
    let (h, q, kv, m) = (cfg.hidden, cfg.q_dim(), cfg.kv_dim(), cfg.mlp);
    match part {
        "self_attn.q_proj" => vec![q, h],
        "self_attn.o_proj" => vec![h, q],
        "self_attn.k_proj" | "self_attn.v_proj" => vec![kv, h],
        "mlp.gate_proj" | "mlp.up_proj" => vec![m, h],
        "mlp.down_proj" => vec![h, m],
        "self_attn.q_norm" | "self_attn.k_norm" => vec![cfg.head_dim()],
        _ => vec![h],
    }
}

/// Every weight tensor of a decoder of `cfg`, name and shape, in the order a model uses them
/// (no `lm_head.weight` where the embedding is tied; the projections' biases and the heads'
/// norms after each layer's weights where it has them).
pub fn weight_shapes(cfg: &LlamaConfig) -> Vec<(String, Vec<usize>)> {
    let mut out = vec![(
        "model.embed_tokens.weight".to_string(),
        vec![cfg.vocab, cfg.hidden],
    )];
    for layer in 0..cfg.layers {
        for part in LAYER_PARTS {
            out.push((layer_weight(layer, part), part_shape(cfg, part)));
        }
        if cfg.qkv_bias {
            for part in QKV_BIAS_PARTS {
                out.push((layer_bias(layer, part), vec![part_shape(cfg, part)[0]]));
            }
        }
        if cfg.qk_norm {
            for part in QK_NORM_PARTS {
                out.push((layer_weight(layer, part), part_shape(cfg, part)));
            }
        }
    }
    out.push(("model.norm.weight".into(), vec![cfg.hidden]));
    if !cfg.tie_embeddings {
        out.push(("lm_head.weight".into(), vec![cfg.vocab, cfg.hidden]));
    }
    out
}

/// Where a model's weights come from: each tensor by name, as `f32`, checked to have `shape`.
/// Shared between threads: a model reads several tensors at once while it loads.
pub trait WeightSource: Sync {
    /// Tensor `name` as `f32` values (row-major), or the located reason it can't be had
    /// ([`ModelError::MissingTensor`], [`ModelError::WrongShape`], ...).
    fn tensor(&self, name: &str, shape: &[usize]) -> Result<Vec<f32>, ModelError>;
}

/// `Ok` where tensor `name`'s stored shape `got` is the `want`ed one, the located
/// [`ModelError::WrongShape`] otherwise: every [`WeightSource`]'s check.
pub(crate) fn check_shape(name: &str, got: &[usize], want: &[usize]) -> Result<(), ModelError> {
    if got == want {
        return Ok(());
    }
    Err(ModelError::WrongShape {
        name: name.into(),
        got: got.to_vec(),
        want: want.to_vec(),
    })
}

/// A decoder's weights as `f32` values on the host: random ones for tests, or read from a
/// file; the CPU reference's weights, and a [`WeightSource`] for the GPU model.
#[derive(Clone, Debug, PartialEq)]
pub struct HostWeights {
    tensors: BTreeMap<String, (Vec<usize>, Vec<f32>)>,
}

impl HostWeights {
    /// Random weights for `cfg`, the same for the same `seed`: embeddings in ±1, norm scales in
    /// [0.8, 1.2], biases in ±0.5, each projection uniform with variance 1/in (activations keep
    /// their scale through the layers, so every precision is tested on values of a real
    /// network's size).
    pub fn random(cfg: &LlamaConfig, seed: u64) -> HostWeights {
        let mut rng = SplitMix(seed);
        let tensors = weight_shapes(cfg)
            .into_iter()
            .map(|(name, shape)| {
                let n = shape.iter().product();
                let values = match shape.as_slice() {
                    [_] if name.ends_with(".bias") => (0..n).map(|_| 0.5 * rng.signed()).collect(),
                    [_] => (0..n).map(|_| 1.0 + 0.2 * rng.signed()).collect(),
                    [_, _] if name.contains("embed") => (0..n).map(|_| rng.signed()).collect(),
                    [_, inputs] => {
                        let bound = (3.0 / *inputs as f32).sqrt();
                        (0..n).map(|_| bound * rng.signed()).collect()
                    }
                    _ => unreachable!("weights are vectors or matrices"),
                };
                (name, (shape, values))
            })
            .collect();
        HostWeights { tensors }
    }

    /// Every tensor of `cfg` read from `source`.
    pub fn load(cfg: &LlamaConfig, source: &dyn WeightSource) -> Result<HostWeights, ModelError> {
        let tensors = weight_shapes(cfg)
            .into_iter()
            .map(|(name, shape)| {
                let values = source.tensor(&name, &shape)?;
                Ok((name, (shape, values)))
            })
            .collect::<Result<_, ModelError>>()?;
        Ok(HostWeights { tensors })
    }

    /// Tensor `name`'s values, if there is one.
    pub fn get(&self, name: &str) -> Option<&[f32]> {
        self.tensors.get(name).map(|(_, v)| v.as_slice())
    }

    /// These weights as tensors of `format` hold them (fp16 and bf16 rounded to nearest): what
    /// a model of that format computes with.
    pub fn rounded(&self, format: TensorFormat) -> HostWeights {
        let tensors = self
            .tensors
            .iter()
            .map(|(n, (s, v))| (n.clone(), (s.clone(), rounded_to(format, v))))
            .collect();
        HostWeights { tensors }
    }

    /// The weights a decoder of `cfg` with int8 projections ([`WeightStorage::Int8`]) and
    /// activations in `format` computes with: each projection rounded per row as the model
    /// quantizes it at load (the norm before it folded into its columns first, and taken out
    /// again here: the reference applies the norm itself), the output projection a tensor of
    /// its own even where the embedding is tied, the embedding, the biases and the heads' norms
    /// rounded to `format` (the tensors that stay in the activations' format).
    ///
    /// [`WeightStorage::Int8`]: crate::WeightStorage::Int8
    pub fn int8_rounded(
        &self,
        cfg: &LlamaConfig,
        format: TensorFormat,
    ) -> Result<HostWeights, ModelError> {
        // The norms as they are: the model folds them into int8 projections in f32.
        let mut out = self.clone();
        let (embed, shape) = ("model.embed_tokens.weight", vec![cfg.vocab, cfg.hidden]);
        let values = rounded_to(format, &self.tensor(embed, &shape)?);
        out.tensors.insert(embed.into(), (shape, values));
        // Projection `from` rounded, as tensor `to`, its columns scaled by norm `g` meanwhile.
        let mut put = |from: &str, to: String, shape: Vec<usize>, g: Option<String>| {
            let values = self.tensor(from, &shape)?;
            let g = g.map(|n| self.tensor(&n, &[cfg.hidden])).transpose()?;
            let rounded = int8_rows(&values, shape[1], g);
            out.tensors.insert(to, (shape, rounded));
            Ok::<_, ModelError>(())
        };
        for layer in 0..cfg.layers {
            for (part, norm) in PROJECTION_NORMS {
                let name = layer_weight(layer, part);
                let g = norm.map(|n| layer_weight(layer, n));
                put(&name, name.clone(), part_shape(cfg, part), g)?;
            }
        }
        let head = if cfg.tie_embeddings {
            "model.embed_tokens.weight"
        } else {
            "lm_head.weight"
        };
        let g = Some("model.norm.weight".to_string());
        put(
            head,
            "lm_head.weight".into(),
            vec![cfg.vocab, cfg.hidden],
            g,
        )?;
        // Biases and the heads' norms as the activations hold them.
        for (name, (shape, values)) in &self.tensors {
            let heads_norm = QK_NORM_PARTS
                .iter()
                .any(|p| name.ends_with(&format!("{p}.weight")));
            if name.ends_with(".bias") || heads_norm {
                let rounded = rounded_to(format, values);
                out.tensors.insert(name.clone(), (shape.clone(), rounded));
            }
        }
        Ok(out)
    }

    /// A copy without tensor `name` (for tests of a file that lacks one).
    pub fn without(&self, name: &str) -> HostWeights {
        let mut out = self.clone();
        out.tensors.remove(name);
        out
    }

    /// A copy with tensor `name` replaced by `values` of `shape` (for tests of a mis-shaped
    /// tensor).
    pub fn with_tensor(&self, name: &str, shape: &[usize], values: Vec<f32>) -> HostWeights {
        let mut out = self.clone();
        out.tensors.insert(name.into(), (shape.to_vec(), values));
        out
    }

    /// These weights as a safetensors file, each tensor stored as `format` (F32, F16 or Bf16).
    pub fn to_safetensors(&self, format: TensorFormat) -> Result<Vec<u8>, ModelError> {
        let dtype = Dtype::of(format).ok_or(ModelError::Format(format))?;
        encode(
            self.tensors
                .iter()
                .map(|(n, (s, v))| (n.as_str(), s.as_slice(), v.as_slice())),
            dtype,
        )
    }
}

impl WeightSource for HostWeights {
    fn tensor(&self, name: &str, shape: &[usize]) -> Result<Vec<f32>, ModelError> {
        let (have, values) = self
            .tensors
            .get(name)
            .ok_or_else(|| ModelError::MissingTensor { name: name.into() })?;
        check_shape(name, have, shape)?;
        Ok(values.clone())
    }
}

/// `values` as a tensor of `format` holds them (fp16 and bf16 rounded to nearest).
fn rounded_to(format: TensorFormat, values: &[f32]) -> Vec<f32> {
    let round = |x: f32| match format {
        TensorFormat::F16 => half::f16::from_f32(x).to_f32(),
        TensorFormat::Bf16 => half::bf16::from_f32(x).to_f32(),
        _ => x,
    };
    values.iter().map(|x| round(*x)).collect()
}

/// Row-major `w` (rows of `width`) as its per-row int8 quantization holds it, the columns
/// scaled by `g` before and divided by it after, where given.
fn int8_rows(w: &[f32], width: usize, g: Option<Vec<f32>>) -> Vec<f32> {
    let Some(g) = g else {
        return rounded_rows(w, width);
    };
    let mut folded = w.to_vec();
    fold_columns(&mut folded, &g);
    let mut rounded = rounded_rows(&folded, width);
    for row in rounded.chunks_mut(width) {
        for (v, s) in row.iter_mut().zip(&g) {
            *v /= s;
        }
    }
    rounded
}

/// SplitMix64: a small generator whose stream is fixed by its seed for good (random weights
/// stay the same across versions of any dependency).
pub(crate) struct SplitMix(u64);

impl SplitMix {
    pub(crate) fn new(seed: u64) -> SplitMix {
        SplitMix(seed)
    }

    /// Uniform in [0, 1), 53 bits.
    pub(crate) fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }

    pub(crate) fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in [-1, 1).
    fn signed(&mut self) -> f32 {
        // The top 24 bits: every value exact in f32.
        let unit = (self.next() >> 40) as f32 / (1u64 << 24) as f32;
        2.0 * unit - 1.0
    }
}
