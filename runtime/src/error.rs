//! The crate-level error: every module has its own enum, wrapped here.

/// Any vkprism runtime error.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(transparent)]
    Context(#[from] crate::device::Error),
    #[error(transparent)]
    Select(#[from] crate::select::SelectError),
    #[error(transparent)]
    Tensor(#[from] crate::tensor::Error),
    #[error(transparent)]
    Pipeline(#[from] crate::pipeline::Error),
    #[error(transparent)]
    Command(#[from] crate::command::Error),
}

pub type Result<T, E = Error> = std::result::Result<T, E>;
