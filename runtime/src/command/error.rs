//! The errors of recording and running command lists. Every variant but `Context` is found
//! before anything is recorded: the caller's to fix.

use vkprism_core::{BindingKind, MemoryKind, TensorFormat};

/// Errors recording or running a [`crate::CommandList`].
#[non_exhaustive]
#[derive(thiserror::Error)]
pub enum CommandError {
    /// The bindings are for buffer variants and the loaded variant uses images, or the reverse.
    #[error("kernel `{kernel}`: bindings for {given:?} variants, but the loaded variant `{variant}` uses {wanted:?}")]
    MemoryKindMismatch {
        /// The kernel's name.
        kernel: &'static str,
        /// The loaded variant's name.
        variant: String,
        /// The bindings' memory kind.
        given: MemoryKind,
        /// The variant's memory kind.
        wanted: MemoryKind,
    },
    /// A binding the variant uses was given no resource.
    #[error("kernel `{kernel}` variant `{variant}`: binding {binding} (`{name}`) is not given")]
    MissingBinding {
        /// The kernel's name.
        kernel: &'static str,
        /// The loaded variant's name.
        variant: String,
        /// The binding number.
        binding: u32,
        /// The binding's name in the shader.
        name: &'static str,
    },
    /// A tensor or image holds another format than the variant's binding reads.
    #[error("kernel `{kernel}` variant `{variant}`: binding {binding} (`{name}`) expects a {expected:?} tensor, got {got:?} (precision mismatch: convert the tensor, or load another variant)")]
    FormatMismatch {
        /// The kernel's name.
        kernel: &'static str,
        /// The loaded variant's name.
        variant: String,
        /// The binding number.
        binding: u32,
        /// The binding's name in the shader.
        name: &'static str,
        /// The format the binding reads.
        expected: TensorFormat,
        /// The format of the resource given.
        got: TensorFormat,
    },
    /// A buffer given for an image binding, or an image for a buffer binding.
    #[error("kernel `{kernel}`: binding {binding} (`{name}`) is a {kind:?}, given a {given}")]
    KindMismatch {
        /// The kernel's name.
        kernel: &'static str,
        /// The binding number.
        binding: u32,
        /// The binding's name in the shader.
        name: &'static str,
        /// The binding's descriptor kind.
        kind: BindingKind,
        /// `"buffer"` or `"image"`.
        given: &'static str,
    },
    /// A tensor's size is not a whole number of the binding's elements.
    #[error("kernel `{kernel}`: binding {binding} (`{name}`) holds {elem}-byte elements; a tensor of {size} bytes is not a whole number of them")]
    PartialElement {
        /// The kernel's name.
        kernel: &'static str,
        /// The binding number.
        binding: u32,
        /// The binding's name in the shader.
        name: &'static str,
        /// Bytes per element.
        elem: u32,
        /// Bytes of the tensor.
        size: u64,
    },
    /// A tensor is larger than the device lets one binding see.
    #[error("kernel `{kernel}`: binding {binding} (`{name}`) is {size} bytes, over the device's {limit_name} ({limit})")]
    RangeTooLarge {
        /// The kernel's name.
        kernel: &'static str,
        /// The binding number.
        binding: u32,
        /// The binding's name in the shader.
        name: &'static str,
        /// Bytes of the tensor.
        size: u64,
        /// The Vulkan limit's name.
        limit_name: &'static str,
        /// The limit, in bytes.
        limit: u64,
    },
    /// An image of other dimensions than the binding's.
    #[error(
        "kernel `{kernel}`: image binding {binding} (`{name}`) is {want}D, the image is {got}D"
    )]
    ImageDims {
        /// The kernel's name.
        kernel: &'static str,
        /// The binding number.
        binding: u32,
        /// The binding's name in the shader.
        name: &'static str,
        /// The binding's dimensions.
        want: u8,
        /// The image's dimensions.
        got: u8,
    },
    /// The push-constant value is smaller than the kernel's block.
    #[error("kernel `{kernel}`: the push constants given are {given} bytes, the kernel's block needs {range}")]
    PushConstantsSize {
        /// The kernel's name.
        kernel: &'static str,
        /// Bytes of the value given.
        given: usize,
        /// Bytes of the kernel's push-constant range.
        range: u32,
    },
    /// A global size with a zero dimension.
    #[error("dispatch of global size {0:?}: every dimension must be at least 1")]
    ZeroSize([u32; 3]),
    /// More workgroups than the device allows, and the dispatch can't be split.
    #[error("dispatch of global size {global:?} needs {groups:?} workgroups; the device allows at most {limit:?} (maxComputeWorkGroupCount) and {why}: use a larger workgroup or split the work")]
    TooManyGroups {
        /// The global size asked for.
        global: [u32; 3],
        /// Workgroups it needs per dimension.
        groups: [u64; 3],
        /// `maxComputeWorkGroupCount`.
        limit: [u32; 3],
        /// Why it was not split into several dispatches.
        why: &'static str,
    },
    /// A pipeline, tensor or image of another context.
    #[error("a resource belongs to another Vulkan context")]
    ForeignResource,
    /// Timings asked of a list made without timestamps (or on a queue without them).
    #[error("the list has no timestamps (enable them with CommandList::with_timestamps, on a queue that has them)")]
    NoTimestamps,
    /// More timed dispatches than the list was made for.
    #[error("the list was made with room for {0} timed dispatches")]
    TimestampsFull(u32),
    /// A dispatch recorded into a list that was already submitted (lists record until their
    /// first submit, then replay).
    #[error("the command list was already submitted with {dispatches} dispatch(es) and is no longer recording: it can only be replayed; record further work into a new CommandList")]
    NotRecording {
        /// Dispatches the list holds.
        dispatches: usize,
    },
    /// More timed dispatches asked of [`crate::CommandList::with_timestamps`] than it allows.
    #[error("a list can time at most {max} dispatches (asked for {asked}); time fewer, or use several lists")]
    TooManyTimestamps {
        /// The number asked for.
        asked: u32,
        /// [`crate::command::MAX_TIMED_DISPATCHES`].
        max: u32,
    },
    /// Timings asked before the list ran.
    #[error("the list has not been run yet")]
    NotRun,
    /// A device error while recording or running.
    #[error(transparent)]
    Device(#[from] crate::device::DeviceError),
}

debug_as_display!(CommandError);
