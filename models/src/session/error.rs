//! [`SessionError`]: why a graph could not become a session, or a session could not be
//! resized or run. Every failed call leaves the session as it was: still usable.

use vkprism_shaders::ops::OpError;

/// An error of building, resizing or running a [`super::Session`].
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SessionError {
    /// The graph is malformed: no output, a value of another graph, a constant whose data
    /// does not fill its shape, two nodes of one name.
    #[error("graph: {0}")]
    Graph(String),
    /// The input's shape does not fit the graph's declaration, or its data is not that many
    /// values.
    #[error("input `{input}`: {why}")]
    InputShape {
        /// The input's name.
        input: String,
        /// What is wrong.
        why: String,
    },
    /// A node's operands have shapes it cannot take (found by shape inference).
    #[error("node `{node}`: {why}")]
    Shape {
        /// The node's name.
        node: String,
        /// What mismatched.
        why: String,
    },
    /// The session was asked for a format other than F32, F16 or Bf16.
    #[error("format {0:?}: a session runs in F32, F16 or Bf16")]
    Format(vkprism::TensorFormat),
    /// [`super::Session::run`] before any input shape was given.
    #[error("no input shape yet: prepare or resize the session first")]
    NotPrepared,
    /// An operation refused its operands or failed to record.
    #[error("node `{node}`: {source}")]
    Op {
        /// The node's name.
        node: String,
        /// What the operation said (boxed: it is the largest error by far).
        source: Box<OpError>,
    },
    /// The device failed: allocating, uploading, running or reading back.
    #[error("device: {0}")]
    Device(#[from] vkprism::Error),
}

impl From<vkprism::CommandError> for SessionError {
    fn from(e: vkprism::CommandError) -> SessionError {
        SessionError::Device(e.into())
    }
}

impl From<vkprism::TensorError> for SessionError {
    fn from(e: vkprism::TensorError) -> SessionError {
        SessionError::Device(e.into())
    }
}
