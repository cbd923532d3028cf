//! [`LlamaConfig`]: the sizes of a Llama-style decoder.

use vkprism_shaders::{RopeFrequencies, RopeScaling};

/// The sizes of a Llama-style decoder (Hugging Face's `LlamaConfig` fields, renamed).
#[derive(Copy, Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct LlamaConfig {
    /// Decoder layers (`num_hidden_layers`).
    pub layers: usize,
    /// Width of the residual stream (`hidden_size`).
    pub hidden: usize,
    /// Query heads (`num_attention_heads`).
    pub heads: usize,
    /// Values in one head (`head_dim`): `hidden / heads` in most models, not in all (Mistral
    /// Nemo's 128 over a hidden of 5120 and 32 heads).
    pub head_dim: usize,
    /// Key and value heads (`num_key_value_heads`), dividing `heads` (grouped-query attention).
    pub kv_heads: usize,
    /// Width of the gated MLP (`intermediate_size`).
    pub mlp: usize,
    /// Tokens in the vocabulary (`vocab_size`).
    pub vocab: usize,
    /// The rotary embedding's frequency base (`rope_theta`).
    pub rope_theta: f32,
    /// How the rotary embedding's frequencies are scaled (`rope_scaling`; Llama 3.1 and later
    /// scale theirs).
    pub rope_scaling: RopeScaling,
    /// The RMS norms' epsilon (`rms_norm_eps`).
    pub rms_eps: f32,
    /// Positions the KV cache holds: the longest sequence, prompt and generated tokens together.
    pub max_seq: usize,
    /// The output projection is the embedding (`tie_word_embeddings`): no `lm_head.weight`.
    pub tie_embeddings: bool,
    /// The query, key and value projections add a bias (Qwen2's): `self_attn.{q,k,v}_proj.bias`.
    pub qkv_bias: bool,
    /// Each query and key head is RMS-normalized with a weight of its own before it turns
    /// (Qwen3's): `self_attn.q_norm.weight` and `self_attn.k_norm.weight`, `[head_dim]` each.
    pub qk_norm: bool,
}

impl LlamaConfig {
    /// TinyLlama-1.1B's configuration, with a cache of 2048 positions.
    pub fn tinyllama() -> LlamaConfig {
        LlamaConfig {
            layers: 22,
            hidden: 2048,
            heads: 32,
            head_dim: 64,
            kv_heads: 4,
            mlp: 5632,
            vocab: 32000,
            rope_theta: 10000.0,
            rope_scaling: RopeScaling::None,
            rms_eps: 1e-5,
            max_seq: 2048,
            tie_embeddings: false,
            qkv_bias: false,
            qk_norm: false,
        }
    }

    /// Llama 3.2 1B's configuration: 16 layers, hidden 2048, 32 heads of 64 over 8 key/value
    /// heads, MLP 8192, vocabulary 128256, the output projection tied to the embedding, rotary
    /// base 500000 scaled as `llama3`; a cache of 2048 positions (the model reaches 131072:
    /// [`LlamaConfig::with_max_seq`]).
    pub fn llama32_1b() -> LlamaConfig {
        LlamaConfig {
            layers: 16,
            hidden: 2048,
            heads: 32,
            head_dim: 64,
            kv_heads: 8,
            mlp: 8192,
            vocab: 128256,
            rope_theta: 500000.0,
            rope_scaling: RopeScaling::Llama3 {
                factor: 32.0,
                low_freq_factor: 1.0,
                high_freq_factor: 4.0,
                original_max_positions: 8192,
            },
            rms_eps: 1e-5,
            max_seq: 2048,
            tie_embeddings: true,
            qkv_bias: false,
            qk_norm: false,
        }
    }

    /// Qwen2.5 0.5B's configuration: 24 layers, hidden 896, 14 heads of 64 over 2 key/value
    /// heads, MLP 4864, vocabulary 151936, biases on the query, key and value projections, the
    /// output projection tied to the embedding, rotary base 1000000; a cache of 2048 positions
    /// (the model reaches 32768: [`LlamaConfig::with_max_seq`]).
    pub fn qwen25_05b() -> LlamaConfig {
        LlamaConfig {
            layers: 24,
            hidden: 896,
            heads: 14,
            head_dim: 64,
            kv_heads: 2,
            mlp: 4864,
            vocab: 151936,
            rope_theta: 1_000_000.0,
            rope_scaling: RopeScaling::None,
            rms_eps: 1e-6,
            max_seq: 2048,
            tie_embeddings: true,
            qkv_bias: true,
            qk_norm: false,
        }
    }

    /// Qwen3 0.6B's configuration: 28 layers, hidden 1024, 16 heads of 128 over 8 key/value
    /// heads (heads wider than the stream: 2048 query values), each query and key head
    /// normalized before it turns, MLP 3072, vocabulary 151936, the output projection tied to
    /// the embedding, rotary base 1000000; a cache of 2048 positions (the model reaches 40960:
    /// [`LlamaConfig::with_max_seq`]).
    pub fn qwen3_06b() -> LlamaConfig {
        LlamaConfig {
            layers: 28,
            hidden: 1024,
            heads: 16,
            head_dim: 128,
            kv_heads: 8,
            mlp: 3072,
            vocab: 151936,
            rope_theta: 1_000_000.0,
            rope_scaling: RopeScaling::None,
            rms_eps: 1e-6,
            max_seq: 2048,
            tie_embeddings: true,
            qkv_bias: false,
            qk_norm: true,
        }
    }

    /// A two-layer decoder of the same shape rules, small enough for a CPU driver: hidden 256,
    /// 4 heads of 64 over 2 key/value heads, MLP 688, vocabulary 512, 64 positions.
    pub fn small() -> LlamaConfig {
        LlamaConfig {
            layers: 2,
            hidden: 256,
            heads: 4,
            head_dim: 64,
            kv_heads: 2,
            mlp: 688,
            vocab: 512,
            rope_theta: 10000.0,
            rope_scaling: RopeScaling::None,
            rms_eps: 1e-5,
            max_seq: 64,
            tie_embeddings: false,
            qkv_bias: false,
            qk_norm: false,
        }
    }

    /// This configuration with a cache of `max_seq` positions.
    pub fn with_max_seq(mut self, max_seq: usize) -> LlamaConfig {
        self.max_seq = max_seq;
        self
    }

    /// This configuration with its rotary frequencies of base `theta` scaled as `scaling` says.
    pub fn with_rope(mut self, theta: f32, scaling: RopeScaling) -> LlamaConfig {
        self.rope_theta = theta;
        self.rope_scaling = scaling;
        self
    }

    /// The rotary embedding's frequencies: the base and the scaling.
    pub fn rope_frequencies(&self) -> RopeFrequencies {
        RopeFrequencies::new(self.rope_theta).with_scaling(self.rope_scaling)
    }

    /// This configuration with the output projection tied to the embedding (`on`).
    pub fn with_tied_embeddings(mut self, on: bool) -> LlamaConfig {
        self.tie_embeddings = on;
        self
    }

    /// This configuration with biases on the query, key and value projections (`on`).
    pub fn with_qkv_bias(mut self, on: bool) -> LlamaConfig {
        self.qkv_bias = on;
        self
    }

    /// This configuration with each query and key head normalized before it turns (`on`).
    pub fn with_qk_norm(mut self, on: bool) -> LlamaConfig {
        self.qk_norm = on;
        self
    }

    /// The dimension of one head (the field's value).
    pub fn head_dim(&self) -> usize {
        self.head_dim
    }

    /// The width of the query projection (and of attention's output): `heads · head_dim`.
    pub fn q_dim(&self) -> usize {
        self.heads * self.head_dim
    }

    /// The width of the key (and of the value) projection: `kv_heads · head_dim`.
    pub fn kv_dim(&self) -> usize {
        self.kv_heads * self.head_dim()
    }

    /// Why these sizes make no decoder (heads not dividing the width, an odd head dimension,
    /// ...), or `None`.
    pub fn problem(&self) -> Option<String> {
        let sizes = [
            ("layers", self.layers),
            ("hidden", self.hidden),
            ("heads", self.heads),
            ("head_dim", self.head_dim),
            ("kv_heads", self.kv_heads),
            ("mlp", self.mlp),
            ("vocab", self.vocab),
            ("max_seq", self.max_seq),
        ];
        if let Some((name, _)) = sizes.iter().find(|(_, v)| *v == 0) {
            return Some(format!("`{name}` is 0"));
        }
        if !self.heads.is_multiple_of(self.kv_heads) {
            return Some(format!(
                "{} KV heads don't divide {} heads",
                self.kv_heads, self.heads
            ));
        }
        if !self.head_dim().is_multiple_of(2) {
            return Some(format!("head dimension {} is odd", self.head_dim()));
        }
        self.rope_frequencies()
            .problem()
            .map(|why| format!("the rotary embedding: {why}"))
    }
}
