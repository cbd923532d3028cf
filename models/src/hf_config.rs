//! [`LlamaConfig::from_hf_json`]: a Hugging Face `config.json` (what `save_pretrained` writes
//! for `LlamaForCausalLM`, `MistralForCausalLM`, `Qwen2ForCausalLM` or `Qwen3ForCausalLM` without
//! a sliding window)
//! read into a [`LlamaConfig`], and every option this decoder does not compute refused by name
//! rather than ignored; [`hf_end_tokens`], the tokens that end a generation.

use crate::{LlamaConfig, ModelError, RopeScaling};
use serde::Deserialize;
use std::path::Path;

/// The fields of Hugging Face's `LlamaConfig` this decoder reads or checks. The sizes have no
/// default (a file without them describes no model); the rest default as `transformers` does.
#[derive(Deserialize)]
struct HfLlama {
    model_type: Option<String>,
    num_hidden_layers: usize,
    hidden_size: usize,
    num_attention_heads: usize,
    num_key_value_heads: Option<usize>,
    intermediate_size: usize,
    vocab_size: usize,
    head_dim: Option<usize>,
    #[serde(default = "default_act")]
    hidden_act: String,
    #[serde(default = "default_max_positions")]
    max_position_embeddings: usize,
    #[serde(default = "default_eps")]
    rms_norm_eps: f32,
    rope_theta: Option<f32>,
    /// `transformers` 5's form: `rope_theta` and `rope_type` together.
    rope_parameters: Option<RopeParameters>,
    /// `transformers` 4's form of the same: `null` where the rotation is the plain one.
    rope_scaling: Option<RopeParameters>,
    #[serde(default)]
    tie_word_embeddings: bool,
    #[serde(default)]
    attention_bias: bool,
    #[serde(default)]
    mlp_bias: bool,
    /// Mistral's and Qwen's: attention over the last this many tokens only (`null`: over all
    /// of them); Qwen's only where `use_sliding_window`.
    sliding_window: Option<usize>,
    use_sliding_window: Option<bool>,
}

/// A rotary embedding's parameters: its kind (`rope_type`, `type` in older files), base and
/// scaling.
#[derive(Deserialize)]
struct RopeParameters {
    #[serde(alias = "type")]
    rope_type: Option<String>,
    rope_theta: Option<f32>,
    factor: Option<f32>,
    low_freq_factor: Option<f32>,
    high_freq_factor: Option<f32>,
    original_max_position_embeddings: Option<usize>,
}

impl HfLlama {
    /// A Qwen2 model: biases on its query, key and value projections.
    fn is_qwen2(&self) -> bool {
        self.model_type.as_deref() == Some("qwen2")
    }

    /// A Qwen3 model: each query and key head normalized before it turns.
    fn is_qwen3(&self) -> bool {
        self.model_type.as_deref() == Some("qwen3")
    }
}

fn default_act() -> String {
    "silu".into()
}

fn default_max_positions() -> usize {
    2048
}

fn default_eps() -> f32 {
    1e-6
}

/// The rotary frequencies' base and scaling, from either form: `rope_parameters` where it names
/// a kind, `rope_scaling` otherwise.
fn rope(hf: &HfLlama) -> Result<(f32, RopeScaling), String> {
    let named = |r: &&RopeParameters| r.rope_type.is_some();
    let scaling = match (hf.rope_parameters.as_ref().filter(named), &hf.rope_scaling) {
        (Some(r), _) => scaling("rope_parameters", r)?,
        (None, Some(r)) => scaling("rope_scaling", r)?,
        (None, None) => RopeScaling::None,
    };
    let nested = hf.rope_parameters.as_ref().and_then(|r| r.rope_theta);
    Ok((hf.rope_theta.or(nested).unwrap_or(10_000.0), scaling))
}

/// The scaling `field`'s parameters `r` ask for, or why this decoder does not compute it.
fn scaling(field: &str, r: &RopeParameters) -> Result<RopeScaling, String> {
    let kind = r.rope_type.as_deref().unwrap_or("default");
    let need = |name: &str, v: Option<f32>| {
        v.ok_or_else(|| format!("`{field}` of type `{kind}` has no `{name}`"))
    };
    let scaling = match kind {
        "default" => RopeScaling::None,
        "linear" => RopeScaling::Linear {
            factor: need("factor", r.factor)?,
        },
        "llama3" => RopeScaling::Llama3 {
            factor: need("factor", r.factor)?,
            low_freq_factor: need("low_freq_factor", r.low_freq_factor)?,
            high_freq_factor: need("high_freq_factor", r.high_freq_factor)?,
            original_max_positions: r.original_max_position_embeddings.ok_or_else(|| {
                format!("`{field}` of type `{kind}` has no `original_max_position_embeddings`")
            })?,
        },
        other => {
            return Err(format!(
                "`{field}` asks for the `{other}` rotary embedding; this decoder computes \
                 `default`, `linear` and `llama3`"
            ))
        }
    };
    match scaling.problem() {
        Some(why) => Err(format!("`{field}`: {why}")),
        None => Ok(scaling),
    }
}

/// Why `hf` describes a model this decoder does not compute, naming the field, or `None`.
fn unsupported(hf: &HfLlama) -> Option<String> {
    // Mistral, Qwen2 and Qwen3 are Llama's architecture but for their window (Qwen's used only
    // where `use_sliding_window`), which one at least as long as the model's positions never
    // narrows, Qwen2's biases and Qwen3's heads' norms.
    let window = match hf.model_type.as_deref() {
        None | Some("llama") => None,
        Some("mistral") => hf.sliding_window,
        Some("qwen2" | "qwen3") => hf
            .sliding_window
            .filter(|_| hf.use_sliding_window == Some(true)),
        Some(kind) => {
            return Some(format!(
                "`model_type` is `{kind}`, not `llama`, `mistral`, `qwen2` or `qwen3`"
            ))
        }
    };
    if let Some(w) = window.filter(|w| *w < hf.max_position_embeddings) {
        return Some(format!(
            "`sliding_window` is {w}: attention over a window of the last tokens is not computed \
             here (a window of `null` or of `max_position_embeddings` is)"
        ));
    }
    if hf.hidden_act != "silu" {
        return Some(format!(
            "`hidden_act` is `{}`; the gated MLP computes `silu` only",
            hf.hidden_act
        ));
    }
    // Qwen2's biases are on the query, key and value projections only, which it always has;
    // Llama's and Qwen3's `attention_bias` put one on the output projection too.
    if (hf.attention_bias && !hf.is_qwen2()) || hf.mlp_bias {
        let field = if hf.attention_bias && !hf.is_qwen2() {
            "attention_bias"
        } else {
            "mlp_bias"
        };
        return Some(format!(
            "`{field}` is true; the projections here have no bias"
        ));
    }
    None
}

/// A head's values: `head_dim` where the file gives one (`null` counts as none), else
/// `hidden_size / num_attention_heads`, which must then divide.
fn head_dim(hf: &HfLlama) -> Result<usize, String> {
    if let Some(d) = hf.head_dim {
        return Ok(d);
    }
    match hf.hidden_size.checked_div(hf.num_attention_heads) {
        Some(d) if d * hf.num_attention_heads == hf.hidden_size => Ok(d),
        _ => Err(format!(
            "`num_attention_heads` {} doesn't divide `hidden_size` {} and there is no `head_dim`",
            hf.num_attention_heads, hf.hidden_size
        )),
    }
}

impl LlamaConfig {
    /// The configuration a Hugging Face `config.json` of a `LlamaForCausalLM` (or of a Mistral,
    /// Qwen2 or Qwen3 model of the same architecture) describes, its cache holding
    /// `max_position_embeddings` positions (shorten it with [`LlamaConfig::with_max_seq`]).
    /// Refused with [`ModelError::ConfigFile`], naming the field or the line and column: text
    /// that is not such JSON, a size missing, and every option this decoder does not compute (a
    /// `model_type` other than `llama`, `mistral`, `qwen2` or `qwen3`, a sliding window, another
    /// `hidden_act`, a rotary embedding scaled otherwise than `linear` or `llama3`, biases other
    /// than Qwen2's on the query, key and value projections).
    pub fn from_hf_json(text: &str) -> Result<LlamaConfig, ModelError> {
        let refuse = |why: String| ModelError::ConfigFile { why };
        let hf: HfLlama = serde_json::from_str(text).map_err(|e| refuse(e.to_string()))?;
        if let Some(why) = unsupported(&hf) {
            return Err(refuse(why));
        }
        let (rope_theta, rope_scaling) = rope(&hf).map_err(refuse)?;
        let cfg = LlamaConfig {
            layers: hf.num_hidden_layers,
            hidden: hf.hidden_size,
            heads: hf.num_attention_heads,
            head_dim: head_dim(&hf).map_err(refuse)?,
            kv_heads: hf.num_key_value_heads.unwrap_or(hf.num_attention_heads),
            mlp: hf.intermediate_size,
            vocab: hf.vocab_size,
            rope_theta,
            rope_scaling,
            rms_eps: hf.rms_norm_eps,
            max_seq: hf.max_position_embeddings,
            tie_embeddings: hf.tie_word_embeddings,
            qkv_bias: hf.is_qwen2(),
            qk_norm: hf.is_qwen3(),
        };
        match cfg.problem() {
            Some(why) => Err(ModelError::Config(why)),
            None => Ok(cfg),
        }
    }

    /// [`LlamaConfig::from_hf_json`] of `dir/config.json` (a model directory as
    /// `save_pretrained` writes it).
    pub fn from_hf_dir(dir: &Path) -> Result<LlamaConfig, ModelError> {
        let path = dir.join("config.json");
        let text = std::fs::read_to_string(&path).map_err(|source| ModelError::Read {
            path: path.clone(),
            source,
        })?;
        LlamaConfig::from_hf_json(&text).map_err(|e| match e {
            ModelError::ConfigFile { why } => ModelError::ConfigFile {
                why: format!("{}: {why}", path.display()),
            },
            e => e,
        })
    }
}

/// The tokens that end a model directory's generation (for
/// [`Llama::generate_until`](crate::Llama::generate_until)): `eos_token_id` (one id or a list)
/// of its `generation_config.json` where that names it, of its `config.json` otherwise; none
/// where neither does.
pub fn hf_end_tokens(dir: &Path) -> Result<Vec<u32>, ModelError> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Ids {
        One(u32),
        Many(Vec<u32>),
    }
    #[derive(Deserialize)]
    struct WithEos {
        eos_token_id: Option<Ids>,
    }
    for file in ["generation_config.json", "config.json"] {
        let path = dir.join(file);
        let Ok(text) = std::fs::read_to_string(&path) else {
            continue;
        };
        let parsed: WithEos = serde_json::from_str(&text).map_err(|e| ModelError::ConfigFile {
            why: format!("{}: {e}", path.display()),
        })?;
        match parsed.eos_token_id {
            Some(Ids::One(id)) => return Ok(vec![id]),
            Some(Ids::Many(ids)) => return Ok(ids),
            None => {}
        }
    }
    Ok(Vec::new())
}
