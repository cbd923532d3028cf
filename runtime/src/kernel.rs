//! The traits generated code implements: the contract between `compute_shader!` and the runtime.

use crate::{Image, Tensor};
use vkprism_core::{KernelInfo, MemoryKind};

/// A kernel compiled by `compute_shader!` (the generated `Kernel` unit struct).
pub trait Kernel: 'static {
    /// Variants, bindings, constants: everything the runtime needs.
    const INFO: &'static KernelInfo;
    /// The push-constant block (`NoPushConstants` when the kernel has none).
    type PushConstants: bytemuck::Pod;
    /// The specialization constants other than the workgroup size.
    type SpecConstants: SpecConstants + Default;
}

/// Specialization-constant values for pipeline creation.
pub trait SpecConstants {
    /// `(constant_id, 32-bit value bits)` for every constant.
    fn entries(&self) -> Vec<(u32, u32)>;
}

/// A typed set of descriptors for one memory kind of a kernel (the generated `BufferBindings` /
/// `ImageBindings`).
pub trait Bindings<'a> {
    /// The kernel these bindings are for.
    type Kernel: Kernel;
    /// The memory kind of the variants these bindings fit.
    const MEMORY: MemoryKind;
    /// `(binding number, resource)` per field, descriptor set 0. Generated code returns an
    /// array, so a dispatch allocates nothing for it.
    fn resources(&self) -> impl IntoIterator<Item = (u32, Resource<'a>)>;
}

/// One bound resource.
#[derive(Copy, Clone, Debug)]
pub enum Resource<'a> {
    /// A tensor, for a storage or uniform buffer binding.
    Buffer(&'a Tensor),
    /// An image, for a sampled or storage image binding.
    Image(&'a Image),
}

/// The push constants of a kernel that declares none: zero bytes, nothing is pushed.
#[repr(C)]
#[derive(Copy, Clone, Default, Debug, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct NoPushConstants {
    _unused: [u8; 0],
}
