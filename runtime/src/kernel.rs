//! The traits generated code implements: the contract between `compute_shader!` and the runtime.

use crate::{Image, Tensor};
use vkprism_core::{KernelInfo, MemoryKind};

/// A kernel compiled by `compute_shader!` (the generated `Kernel` unit struct).
///
/// # Safety
/// The runtime hands [`Kernel::INFO`] to the driver, which trusts it; `compute_shader!` derives
/// it from SPIR-V reflection. A hand-written impl must make every variant's metadata describe
/// its SPIR-V exactly:
/// - `spirv` is a valid SPIR-V compute module (as `spirv-val` accepts it for the Vulkan
///   version the device offers) with an entry point `main`, using only what its `requires`
///   lists;
/// - `bindings` lists every descriptor the module uses (set 0), each with its real kind,
///   access, element type and stride, and `format` the tensor format the shader reads and
///   writes there; the shader indexes images and buffers only where the runtime's checks
///   allow (no larger element than declared);
/// - `push_constants` is the size of the module's push-constant block (`None` when it has
///   none), and `PushConstants` is a type of at least that size whose layout matches it;
/// - `spec_constants` and `local_size` name the module's specialization-constant ids (the
///   workgroup size's ids really are its `LocalSizeId` / `WorkgroupSize` constants);
/// - `reads_num_workgroups` is true where the shader reads `gl_NumWorkGroups`.
///
/// The runtime checks what is cheap (the SPIR-V header, instruction lengths and entry point,
/// `reads_num_workgroups` against a `NumWorkgroups` decoration, that a push-constant block
/// exists exactly when one is declared, push-constant sizes,
/// duplicate specialization ids, every binding against its resource); a lie about the rest is
/// undefined behaviour in the driver.
pub unsafe trait Kernel: 'static {
    /// Variants, bindings, constants: everything the runtime needs.
    const INFO: &'static KernelInfo;
    /// The push-constant block (`NoPushConstants` when the kernel has none).
    type PushConstants: bytemuck::Pod;
    /// The specialization constants other than the workgroup size.
    type SpecConstants: SpecConstants + Default;
}

/// Specialization-constant values for pipeline creation.
///
/// Safe to implement: the runtime refuses an id given twice (also against the workgroup
/// size's ids) with `PipelineError::DuplicateSpecId`; an id the module does not have is
/// ignored by Vulkan.
pub trait SpecConstants {
    /// `(constant_id, 32-bit value bits)` for every constant.
    fn entries(&self) -> Vec<(u32, u32)>;
}

/// A typed set of descriptors for one memory kind of a kernel (the generated `BufferBindings` /
/// `ImageBindings`).
///
/// Safe to implement: every dispatch checks what the resources claim against the loaded
/// variant's bindings (memory kind, a resource for every binding, kind, format, size, image
/// dimensions, same context); resources for binding numbers the variant lacks are ignored.
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
#[non_exhaustive]
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
