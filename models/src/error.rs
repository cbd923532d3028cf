//! [`ModelError`]: why a model could not be loaded or could not run a step.

use vkprism::{CommandError, TensorError, TensorFormat};
use vkprism_shaders::OpError;

/// Why a model could not be loaded (a weight file that doesn't fit its configuration), or why a
/// step was refused or failed. A refused step changes nothing: the model stays usable.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ModelError {
    /// The configuration makes no model (heads not dividing the width, ...).
    #[error("configuration: {0}")]
    Config(String),
    /// A Hugging Face `config.json` that is not JSON, lacks a size, or asks for what this
    /// decoder does not compute: the field (or line and column) and why.
    #[error("config.json: {why}")]
    ConfigFile {
        /// What is wrong, and where.
        why: String,
    },
    /// A file could not be read.
    #[error("reading {}: {source}", path.display())]
    Read {
        /// The file.
        path: std::path::PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// A model directory whose weights can't be found from its index (not JSON, a shard
    /// outside the directory) or that has neither weights file.
    #[error("weights: {0}")]
    Index(String),
    /// The weights lack a tensor the configuration needs.
    #[error("weights: no tensor `{name}`")]
    MissingTensor {
        /// Its name, as in the state dict.
        name: String,
    },
    /// A weight tensor has another shape than the configuration needs.
    #[error("weights: `{name}` has shape {got:?}, expected {want:?}")]
    WrongShape {
        /// Its name.
        name: String,
        /// The shape it has.
        got: Vec<usize>,
        /// The shape the configuration needs.
        want: Vec<usize>,
    },
    /// A weight tensor is stored in a type the loader doesn't convert (only F32, F16, BF16).
    #[error("weights: `{name}` is {dtype}, expected F32, F16 or BF16")]
    UnsupportedDtype {
        /// Its name.
        name: String,
        /// Its type, as the file names it.
        dtype: String,
    },
    /// The file is not a whole safetensors file (truncated, a corrupt header, offsets past
    /// its end).
    #[error("weights: not a valid safetensors file: {0}")]
    Corrupt(String),
    /// Reading the weight file failed.
    #[error("weights: {0}")]
    Io(#[from] std::io::Error),
    /// The tensor format asked for is not a float format the model runs in.
    #[error("the model runs in F32, F16 or Bf16, not {0:?}")]
    Format(TensorFormat),
    /// A step would run past the KV cache's positions.
    #[error("{cached} cached positions and {new} new tokens are more than the cache's {max_seq}")]
    SequenceTooLong {
        /// Positions already in the cache.
        cached: usize,
        /// Tokens the step adds.
        new: usize,
        /// The cache's positions.
        max_seq: usize,
    },
    /// [`Llama::truncate`](crate::Llama::truncate) past the sequence's end.
    #[error("can't go back to position {position}: the sequence holds {held}")]
    TruncatePast {
        /// The position asked for.
        position: usize,
        /// Positions held.
        held: usize,
    },
    /// A [`Sampling`](crate::Sampling) that describes no distribution.
    #[error("sampling: {0}")]
    Sampling(String),
    /// A step was given no tokens.
    #[error("a step needs at least one token")]
    NoTokens,
    /// A token id past the vocabulary.
    #[error("token {token} is past the vocabulary of {vocab}")]
    TokenOutOfRange {
        /// The id.
        token: u32,
        /// The vocabulary's size.
        vocab: usize,
    },
    /// An operation was refused or failed to record.
    #[error(transparent)]
    Op(#[from] OpError),
    /// Making, running or reading a command list failed.
    #[error(transparent)]
    Command(#[from] CommandError),
    /// Allocating or writing a tensor failed.
    #[error(transparent)]
    Tensor(#[from] TensorError),
}
