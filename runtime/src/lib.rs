//! vkprism's runtime: a small ash-based Vulkan compute runtime that runs `compute_shader!`
//! kernels.
//!
//! - [`Context`]: instance and device, features as data ([`DeviceFeatures`]), validation messages,
//!   a report for people; every `Context` method is in [`context`].
//! - [`select`]: [`Options`] and the load-time variant choice.
//! - [`Tensor`] / [`Image`]: GPU memory with a format, converted on upload and download.
//! - [`LoadedKernel`] / [`Pipeline`]: a kernel's chosen variant ([`Context::load`], or
//!   [`Context::load_with`] and a [`LoadOptions`]) and its pipelines, cached per specialization
//!   values and workgroup size; the `VkPipelineCache` saved to disk with a checked header and
//!   trailer.
//! - [`CommandList`]: record once, replay with one submit, barriers only between dependent
//!   dispatches and transfers (uploads, copies, fills, downloads into a [`Readback`]),
//!   timestamps per dispatch; each dispatch is one `vkCmdDispatch`, and a grid over
//!   `maxComputeWorkGroupCount` in any dimension is refused (a kernel spreads large counts over
//!   y and z, or loops over a grid stride). Run and wait, or submit and wait later ([`Submission`]), several lists in flight in order.
//! - Views of part of a tensor ([`Tensor::view`]) and a [`ScratchArena`] of them.
//! - [`include_spirv!`]: SPIR-V files as `&'static [u32]` for hand-written [`KernelInfo`]s (the
//!   runtime's own tests and benchmark use it; `compute_shader!` embeds its words itself).
//! - [`Error`]: any error, sorted by what the caller can do (fix the call, recreate the context
//!   after device loss, free memory, look at the system); each module has its own enum, named
//!   for it ([`DeviceError`], [`TensorError`], [`PipelineError`], [`CommandError`],
//!   [`SelectError`]), and `Error` is the only one named `Error`.
//!
//! Layers: `device/` is the raw layer, a thin layer over ash that makes every ash call of the
//! runtime; its functions take plain parameters (no variant policy), take the API lock
//! themselves and undo partial creation themselves, and those whose soundness rests on the
//! caller (handles alive, not in use by the GPU, a command buffer recording, SPIR-V checked) are
//! `unsafe fn`s with their contract. [`context`] and the modules beside it (tensors, images,
//! pipelines, command lists, the pipeline cache) are the checked safe layer: they check
//! everything the driver would otherwise trust and make no ash call; their few `unsafe` blocks
//! call those `unsafe fn`s (mostly "this handle is alive and the GPU is done with it", and the
//! `unsafe` recording of a checked dispatch in `command/dispatch.rs`). What the runtime reads
//! from SPIR-V (the checks before a module reaches the driver, shared memory per
//! specialization) is `spirv.rs`. Every `unsafe` block says why it is sound. The escape
//! hatches: `Tensor::raw_buffer` (safe to call; using the handle is where `unsafe` starts) and
//! the `unsafe fn Context::raw` (the ash instance and device).

/// `Debug` for an error type that prints what `Display` prints, then its sources: what a user
/// sees from `fn main() -> Result<(), Box<dyn Error>>` (which prints `Error: {:?}`) or from
/// `unwrap`, as anyhow-style errors do, instead of the enum's structure. The variants' fields
/// stay public for code that wants them.
macro_rules! debug_as_display {
    ($($ty:ty),*) => {$(
        impl ::std::fmt::Debug for $ty {
            fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                ::std::fmt::Display::fmt(self, f)?;
                let mut source = ::std::error::Error::source(self);
                if source.is_some() {
                    f.write_str("\n\nCaused by:")?;
                }
                while let Some(s) = source {
                    write!(f, "\n    {s}")?;
                    source = s.source();
                }
                Ok(())
            }
        }
    )*};
}

mod cache;
pub mod command;
pub mod context;
mod convert;
mod device;
mod error;
mod half_bits;
mod host_copy;
mod image;
mod kernel;
pub mod pipeline;
mod scratch;
pub mod select;
mod spirv;
mod statistics;
pub mod tensor;

pub use command::{CommandError, CommandList, Readback, Submission, UploadSlot};
pub use context::{
    AllocatorStats, Context, ContextOptions, DeviceError, DeviceIdentity, DeviceReport,
    DeviceSelector, DeviceType,
};
pub use convert::{decode_f32, encode_f32};
pub use error::{Error, Invalid, Result};
pub use image::Image;
pub use kernel::{Bindings, Kernel, NoPushConstants, Resource, SpecConstants};
pub use pipeline::{LoadOptions, LoadedKernel, Pipeline, PipelineDesc, PipelineError};
pub use scratch::ScratchArena;
pub use select::{
    force_variant, select_variant, unrunnable_reason, Excluded, Options, Rejection, SelectError,
    SelectFailure, Selection,
};
pub use spirv::workgroup_bytes;
pub use statistics::{PipelineStatistic, StatisticValue};
pub use tensor::{Tensor, TensorError};
pub use vkprism_core::{
    api_version, api_version_name, Access, BindingInfo, BindingKind, ComparedIds, CoopMatShape,
    CoopMatShapes, DeviceFact, DeviceFeatures, DeviceLimits, ElementType, FactChoice, FactFamily,
    FactMismatch, Feature, FeatureSet, FloatMode, IdChoice, IdFact, Int16Mode, Int8Mode,
    KernelInfo, LocalSizeDim, MemoryKind, ParseVariantError, PushConstantInfo, ScalarKind,
    ShapeList, SpecConstantInfo, TensorFormat, VariantInfo, VariantKey, WorkgroupMatrixShape,
    WorkgroupMatrixShapes,
};

/// Includes a SPIR-V file (as `include_bytes!` finds it) as `&'static [u32]`, usable in `const`
/// items such as a hand-written [`KernelInfo`]. The bytes are aligned to 4 and reinterpreted in
/// place; a compile-time check rejects a file that is not whole little-endian SPIR-V words.
#[macro_export]
macro_rules! include_spirv {
    ($path:expr) => {{
        #[repr(C, align(4))]
        struct Aligned<T: ?Sized>(T);
        const BYTES: &Aligned<[u8]> = &Aligned(*include_bytes!($path));
        // SAFETY: the bytes are 4-aligned and live for 'static; `len / 4` words stay inside.
        const WORDS: &[u32] = unsafe {
            ::core::slice::from_raw_parts(BYTES.0.as_ptr() as *const u32, BYTES.0.len() / 4)
        };
        const _: () = assert!(
            BYTES.0.len() % 4 == 0 && WORDS.len() >= 5 && WORDS[0] == 0x0723_0203,
            "not a little-endian SPIR-V module"
        );
        WORDS
    }};
}

/// Support for code generated by `compute_shader!`. Not public API.
#[doc(hidden)]
pub mod __private {
    pub use crate::kernel::{Bindings, Kernel, NoPushConstants, Resource, SpecConstants};
    pub use crate::{Image, Tensor};
    pub use bytemuck;
    pub use vkprism_core::*;
}
