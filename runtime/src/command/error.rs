//! The errors of recording and running command lists.

use vkprism_core::{BindingKind, MemoryKind, TensorFormat};

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("kernel `{kernel}`: bindings for {given:?} variants, but the loaded variant `{variant}` uses {wanted:?}")]
    MemoryKindMismatch {
        kernel: &'static str,
        variant: String,
        given: MemoryKind,
        wanted: MemoryKind,
    },
    #[error("kernel `{kernel}` variant `{variant}`: binding {binding} (`{name}`) is not given")]
    MissingBinding {
        kernel: &'static str,
        variant: String,
        binding: u32,
        name: &'static str,
    },
    #[error("kernel `{kernel}` variant `{variant}`: binding {binding} (`{name}`) expects a {expected:?} tensor, got {got:?} (precision mismatch: convert the tensor, or load another variant)")]
    FormatMismatch {
        kernel: &'static str,
        variant: String,
        binding: u32,
        name: &'static str,
        expected: TensorFormat,
        got: TensorFormat,
    },
    #[error("kernel `{kernel}`: binding {binding} (`{name}`) is a {kind:?}, given a {given}")]
    KindMismatch {
        kernel: &'static str,
        binding: u32,
        name: &'static str,
        kind: BindingKind,
        given: &'static str,
    },
    #[error("kernel `{kernel}`: binding {binding} (`{name}`) holds {elem}-byte elements; a tensor of {size} bytes is not a whole number of them")]
    PartialElement {
        kernel: &'static str,
        binding: u32,
        name: &'static str,
        elem: u32,
        size: u64,
    },
    #[error("kernel `{kernel}`: binding {binding} (`{name}`) is {size} bytes, over the device's {limit_name} ({limit})")]
    RangeTooLarge {
        kernel: &'static str,
        binding: u32,
        name: &'static str,
        size: u64,
        limit_name: &'static str,
        limit: u64,
    },
    #[error(
        "kernel `{kernel}`: image binding {binding} (`{name}`) is {want}D, the image is {got}D"
    )]
    ImageDims {
        kernel: &'static str,
        binding: u32,
        name: &'static str,
        want: u8,
        got: u8,
    },
    #[error("kernel `{kernel}`: the push constants given are {given} bytes, the kernel's block needs {range}")]
    PushConstantsSize {
        kernel: &'static str,
        given: usize,
        range: u32,
    },
    #[error("dispatch of global size {0:?}: every dimension must be at least 1")]
    ZeroSize([u32; 3]),
    #[error("dispatch of global size {global:?} needs {groups:?} workgroups; the device allows at most {limit:?} (maxComputeWorkGroupCount) and {why}: use a larger workgroup or split the work")]
    TooManyGroups {
        global: [u32; 3],
        groups: [u64; 3],
        limit: [u32; 3],
        /// Why it was not split into several dispatches.
        why: &'static str,
    },
    #[error("a resource belongs to another Vulkan context")]
    ForeignResource,
    #[error("the list has no timestamps (enable them with CommandList::with_timestamps, on a queue that has them)")]
    NoTimestamps,
    #[error("the list was made with room for {0} timed dispatches")]
    TimestampsFull(u32),
    #[error("the list has not been run yet")]
    NotRun,
    #[error(transparent)]
    Context(#[from] crate::device::Error),
}
