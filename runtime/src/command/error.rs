//! The errors of recording and running command lists. Every variant but `Device` (and the
//! memory errors inside `Tensor`) is found before anything is recorded or submitted: the
//! caller's to fix.

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
    /// A dimension of the grid needs more workgroups than the device allows in one dispatch.
    #[error("kernel `{kernel}`: dispatch of global size {global:?} needs {groups} workgroups along {axis}, the device allows at most {limit} (maxComputeWorkGroupCount[{dim}]): spread the work over the other dimensions, loop over a grid stride, or use a larger workgroup", axis = ["x", "y", "z"][*dim])]
    TooManyGroups {
        /// The kernel's name.
        kernel: &'static str,
        /// The dimension over the limit (0 x, 1 y, 2 z; the first one over it).
        dim: usize,
        /// The global size asked for.
        global: [u32; 3],
        /// Workgroups the grid needs along `dim`.
        groups: u32,
        /// `maxComputeWorkGroupCount[dim]`.
        limit: u32,
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
    /// A view bound at a byte offset the device can't bind at.
    #[error("kernel `{kernel}`: binding {binding} (`{name}`) is given a view at byte {offset} of its buffer, which is not a multiple of the device's {limit_name} ({alignment}): make views that are bound start at aligned offsets (Tensor::binding_alignment)")]
    MisalignedView {
        /// The kernel's name.
        kernel: &'static str,
        /// The binding number.
        binding: u32,
        /// The binding's name in the shader.
        name: &'static str,
        /// The view's byte offset in its buffer.
        offset: u64,
        /// The Vulkan limit's name.
        limit_name: &'static str,
        /// The limit, in bytes.
        alignment: u64,
    },
    /// A copy between tensors of different byte sizes.
    #[error("copy of {src} bytes into a tensor of {dst} bytes: copy between tensors (or views) of the same size")]
    CopySize {
        /// Bytes of the source.
        src: u64,
        /// Bytes of the destination.
        dst: u64,
    },
    /// A copy between tensors of different formats (neither [`TensorFormat::Raw`]).
    #[error("copy from a {src:?} tensor into a {dst:?} tensor: copies move bytes, so the formats must match (or one be Raw)")]
    CopyFormat {
        /// The source's format.
        src: TensorFormat,
        /// The destination's format.
        dst: TensorFormat,
    },
    /// A copy whose source and destination overlap in one buffer.
    #[error("copy between overlapping ranges of one buffer (bytes {src_offset} and {dst_offset}, {size} bytes)")]
    OverlappingCopy {
        /// The source's byte offset.
        src_offset: u64,
        /// The destination's byte offset.
        dst_offset: u64,
        /// Bytes copied.
        size: u64,
    },
    /// A fill of a view that does not start and end on 4-byte boundaries (`vkCmdFillBuffer`
    /// writes 32-bit words).
    #[error("fill of {size} bytes at byte {offset}: fills write whole 32-bit words, so a view must start at a multiple of 4 bytes and end at one (or at the end of its buffer)")]
    FillAlignment {
        /// The view's byte offset.
        offset: u64,
        /// Its bytes.
        size: u64,
    },
    /// The list's last submission has not finished: it can't be submitted again, and its
    /// timings can't be read, until it is waited for.
    #[error("the command list's last submission is still running: wait for its Submission (or use submit_and_wait, which waits) before submitting it again or reading its timings")]
    StillPending,
    /// [`crate::Submission::wait`] called again after it returned `Ok`.
    #[error("this submission was already waited for")]
    AlreadyWaited,
    /// A [`crate::Readback`] read before its list's run finished (or before any run).
    #[error("the readback's command list has not finished a run: wait for its Submission (or use submit_and_wait) before reading")]
    NotComplete,
    /// A tensor error of a transfer (data of the wrong length or format, staging memory).
    #[error(transparent)]
    Tensor(#[from] crate::tensor::TensorError),
    /// A device error while recording or running.
    #[error(transparent)]
    Device(#[from] crate::device::DeviceError),
}

debug_as_display!(CommandError);
