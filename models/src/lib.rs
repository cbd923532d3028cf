//! Whole networks built on the kernel library's operation layer ([`vkprism_shaders::Ops`]).
//!
//! - `llama.rs`: [`Llama`], a Llama-style decoder with a KV cache (prefill, decode, greedy
//!   or sampled generation), each step one command list; `forward.rs` records a step,
//!   `cache.rs` holds the KV cache, `device_weights.rs` the weights in GPU memory;
//! - `generation.rs`: [`Generation`], the generated tokens as an iterator, each decode step
//!   queued behind the one before (the token chosen on the GPU, [`Generated`]);
//! - `sampling.rs`: [`Sampling`] (temperature, top-k, top-p, seed), drawn on the GPU by the
//!   decoder, and [`Sampler`], the same draw on the host from logits a caller holds;
//! - `int8.rs`: [`WeightStorage`] and the per-row int8 quantization of a decoder's weights;
//!   `row_blocks.rs`: passes over a weight's rows split across threads, for loading;
//! - `config.rs`: [`LlamaConfig`] (TinyLlama's, and a small one for tests); `hf_config.rs`:
//!   [`LlamaConfig::from_hf_json`], a Hugging Face `config.json`, and [`hf_end_tokens`];
//! - `weights.rs`: the weights' names and shapes ([`weight_shapes`], Hugging Face's state-dict
//!   names), [`WeightSource`], [`HostWeights`] (random weights for tests, safetensors output);
//!   `safetensors_io.rs`: [`SafetensorsFile`]; `checkpoint.rs`: [`Checkpoint`], safetensors
//!   files on disk (one, or a model directory's shards) read a tensor at a time;
//! - `reference.rs`: [`ReferenceLlama`], the same forward pass on the CPU;
//! - `error.rs`: [`ModelError`];
//! - [`session`]: [`session::Session`], a graph of operations built in Rust, its memory planned
//!   by liveness and every node recorded once per input shape, replayed per run;
//! - [`resnet`]: ResNet-50 in torchvision's layout ([`resnet::ResNet`]), batch norm folded into
//!   the convolutions at load, run as a [`session::Session`].

mod cache;
mod checkpoint;
mod config;
mod device_weights;
mod error;
mod forward;
mod generation;
mod hf_config;
pub use hf_config::hf_end_tokens;
mod int8;
mod llama;
pub mod reference;
pub mod resnet;
mod row_blocks;
mod safetensors_io;
mod sampling;
pub mod session;
mod weights;

pub use checkpoint::Checkpoint;
pub use config::LlamaConfig;
pub use error::ModelError;
pub use generation::{Generated, Generation};
pub use int8::WeightStorage;
pub use llama::{KernelTime, Llama, LlamaMemory, Logits, DECODE_SPAN};
pub use reference::ReferenceLlama;
pub use safetensors_io::SafetensorsFile;
pub use sampling::{Sampler, Sampling};
pub use vkprism_shaders::RopeScaling;
pub use weights::{
    layer_bias, layer_weight, weight_shapes, HostWeights, WeightSource, LAYER_PARTS,
    QKV_BIAS_PARTS, QK_NORM_PARTS,
};
