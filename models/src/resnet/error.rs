//! [`ResNetError`]: what loading weights or running the network can fail with.

use crate::session::SessionError;
use vkprism_shaders::ops::OpError;

/// An error of loading weights or of a forward pass. A failed call leaves the model usable.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ResNetError {
    /// The weights lack a tensor the network needs.
    #[error("weights: no tensor `{name}`")]
    MissingTensor {
        /// The tensor's name (PyTorch's `state_dict` key).
        name: String,
    },
    /// A tensor of the weights has another shape than the network needs.
    #[error("weights: `{name}` has shape {got:?}, the network needs {want:?}")]
    WrongShape {
        /// The tensor's name.
        name: String,
        /// Its shape in the file.
        got: Vec<usize>,
        /// The shape the configuration gives it.
        want: Vec<usize>,
    },
    /// A tensor of the weights is stored in a type other than F32, F16 or BF16.
    #[error("weights: `{name}` is stored as {dtype}; F32, F16 or BF16 expected")]
    UnsupportedDtype {
        /// The tensor's name.
        name: String,
        /// Its type in the file.
        dtype: String,
    },
    /// The safetensors data ends before what its header describes.
    #[error("weights: the safetensors data is truncated ({0})")]
    Truncated(safetensors::SafeTensorError),
    /// The safetensors data is malformed otherwise.
    #[error("weights: not valid safetensors data: {0}")]
    Safetensors(safetensors::SafeTensorError),
    /// The weights file could not be read or written.
    #[error("weights file {path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// What the system said.
        source: std::io::Error,
    },
    /// The input is not `[batch, h, w, 3]` channels-last data of that many values.
    #[error("input: {why}")]
    InputShape {
        /// What is wrong.
        why: String,
    },
    /// The model was asked for a format other than F32, F16 or Bf16.
    #[error("format {0:?}: the model runs in F32, F16 or Bf16")]
    Format(vkprism::TensorFormat),
    /// An operation refused its operands or failed to record (a bug here, or a device that
    /// runs no variant of the model's format).
    #[error(transparent)]
    Op(#[from] OpError),
    /// The device failed: allocating, uploading, running or reading back.
    #[error("device: {0}")]
    Device(#[from] vkprism::Error),
    /// The session refused the network's graph or an input size it cannot take (images too
    /// small for the network's kernels).
    #[error(transparent)]
    Session(Box<SessionError>),
}

impl From<SessionError> for ResNetError {
    fn from(e: SessionError) -> ResNetError {
        match e {
            SessionError::Op { source, .. } => ResNetError::Op(*source),
            SessionError::Device(e) => ResNetError::Device(e),
            SessionError::Format(f) => ResNetError::Format(f),
            SessionError::InputShape { why, .. } => ResNetError::InputShape { why },
            e => ResNetError::Session(Box::new(e)),
        }
    }
}

impl From<vkprism::CommandError> for ResNetError {
    fn from(e: vkprism::CommandError) -> ResNetError {
        ResNetError::Device(e.into())
    }
}

impl From<vkprism::TensorError> for ResNetError {
    fn from(e: vkprism::TensorError) -> ResNetError {
        ResNetError::Device(e.into())
    }
}

impl From<safetensors::SafeTensorError> for ResNetError {
    fn from(e: safetensors::SafeTensorError) -> ResNetError {
        use safetensors::SafeTensorError as E;
        match e {
            E::MetadataIncompleteBuffer | E::HeaderTooSmall | E::InvalidHeaderLength => {
                ResNetError::Truncated(e)
            }
            e => ResNetError::Safetensors(e),
        }
    }
}
