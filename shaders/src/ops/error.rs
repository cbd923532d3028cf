//! [`OpError`]: why an operation was not recorded, or failed to run.

use vkprism::{CommandError, PipelineError, TensorError, TensorFormat, VariantKey};

/// Why an operation was not recorded (a mistake in the call, found before anything was
/// recorded: the list is as it was), or failed to load, record or run.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum OpError {
    /// An operand's shape doesn't fit the operation: which operand, the shape it has and the
    /// one the operation needs.
    #[error("{op}: `{operand}` has shape {got:?}, expected {want}")]
    Shape {
        /// The operation.
        op: &'static str,
        /// The operand.
        operand: &'static str,
        /// Its shape.
        got: Vec<usize>,
        /// What the operation needs, in words (`[M, K] = [64, 32]`).
        want: String,
    },
    /// The operands' formats differ, or one is not a format the operation takes.
    #[error("{op}: `{operand}` is {got:?}, expected {want}")]
    Format {
        /// The operation.
        op: &'static str,
        /// The operand.
        operand: &'static str,
        /// Its format.
        got: TensorFormat,
        /// The format or formats the operation takes here.
        want: String,
    },
    /// An output is also an input (or two outputs are one tensor): the kernel would read what
    /// it is writing.
    #[error(
        "{op}: `{output}` and `{other}` are one tensor; the output must be a tensor of its own"
    )]
    Aliased {
        /// The operation.
        op: &'static str,
        /// The output.
        output: &'static str,
        /// The operand it shares memory with.
        other: &'static str,
    },
    /// A size the kernel can't take (a row that is not a multiple of 4 elements, ...).
    #[error("{op}: {why}")]
    Unsupported {
        /// The operation.
        op: &'static str,
        /// What and why.
        why: String,
    },
    /// No variant this device runs stores this format (e.g. fp16 tensors on a device without
    /// 16-bit storage or packing).
    #[error("{op}: this device runs no variant on {format:?} tensors (the best is `{variant}`)")]
    FormatUnsupported {
        /// The operation.
        op: &'static str,
        /// The tensors' format.
        format: TensorFormat,
        /// The variant the device would run.
        variant: VariantKey,
    },
    /// Loading a kernel or making a pipeline failed.
    #[error("{op}: {source}")]
    Load {
        /// The operation.
        op: &'static str,
        /// Why.
        source: PipelineError,
    },
    /// Allocating scratch memory failed.
    #[error("{op}: scratch: {source}")]
    Scratch {
        /// The operation.
        op: &'static str,
        /// Why.
        source: TensorError,
    },
    /// Recording a dispatch failed.
    #[error("{op}: {source}")]
    Record {
        /// The operation.
        op: &'static str,
        /// Why.
        source: CommandError,
    },
    /// Making, submitting or waiting for a list failed ([`super::Ops::run`]).
    #[error(transparent)]
    Command(CommandError),
    /// The tuner failed to choose tiles.
    #[error(transparent)]
    Tune(#[from] crate::tuning::TuneError),
}
