//! Static kernel metadata, as `compute_shader!` writes it into the user's crate and the runtime
//! reads it. Every value here comes from SPIR-V reflection of the compiled variants (what a
//! variant needs from the device: `VariantInfo::requires`, its key's needs and its module's
//! capabilities').

use crate::{CoopMatShape, DeviceFact, FeatureSet, VariantKey};

/// Everything the runtime needs to know about one kernel.
#[derive(Debug)]
pub struct KernelInfo {
    /// The kernel's module name, as written in the macro.
    pub name: &'static str,
    /// The compiled variants, in a fixed order.
    pub variants: &'static [VariantInfo],
    /// Push-constant block, if the kernel declares one.
    pub push_constants: Option<PushConstantInfo>,
    /// Specialization constants other than the workgroup size.
    pub spec_constants: &'static [SpecConstantInfo],
    /// Workgroup size per dimension: default and the constant id that overrides it.
    pub local_size: [LocalSizeDim; 3],
}

/// One compiled variant.
#[derive(Debug)]
pub struct VariantInfo {
    /// Which variant.
    pub key: VariantKey,
    /// The shader reads `gl_NumWorkGroups` (reflected from the SPIR-V; the runtime checks it
    /// against the module at load).
    pub reads_num_workgroups: bool,
    /// The SPIR-V module (entry point `main`).
    pub spirv: &'static [u32],
    /// Descriptor bindings, sorted by (set, binding).
    pub bindings: &'static [BindingInfo],
    /// The cooperative-matrix multiply-adds the SPIR-V performs (empty unless a `_cm` variant):
    /// the device must offer each.
    pub cooperative_matrices: &'static [CoopMatShape],
    /// The device facts the SPIR-V reads (`ncnn_subgroupSize`, ...): specialization constants
    /// with reserved ids (`DeviceFact::spec_id`) that the runtime fills from the device.
    pub device_facts: &'static [DeviceFact],
    /// The Vulkan API version the SPIR-V was compiled for (the macro's `vulkan_version`, as
    /// [`api_version`] encodes it): a device with a lower one can't load the variant.
    pub vulkan_version: u32,
    /// What the module's own `OpCapability` declarations need of the device beyond what its key
    /// implies: an extension the kernel enables itself (`#extension GL_KHR_cooperative_matrix :
    /// require` outside any `#if`), subgroup operations, integer dot products.
    pub capabilities_require: FeatureSet,
    /// The device facts the kernel tests in `#if` (the same for every variant): what
    /// `key.facts` assumed values for, which the runtime compares with the device.
    pub tested_facts: &'static [DeviceFact],
}

/// A Vulkan API version number, as `VK_MAKE_API_VERSION(0, major, minor, 0)` encodes it.
pub const fn api_version(major: u32, minor: u32) -> u32 {
    (major << 22) | (minor << 12)
}

/// `"1.2"` for an API version number (patch and variant left out).
pub fn api_version_name(version: u32) -> String {
    format!("{}.{}", (version >> 22) & 0x7f, (version >> 12) & 0x3ff)
}

impl VariantInfo {
    /// Device features the variant needs: its key's, and its module's capabilities'.
    pub const fn requires(&self) -> FeatureSet {
        self.key.requires().union(self.capabilities_require)
    }

    /// The binding whose block or variable is named `name` in the GLSL (e.g. `"a_blob"`): its
    /// tensor format in this variant is `.format`. Sturdier than indexing `bindings`.
    pub fn binding(&self, name: &str) -> Option<&BindingInfo> {
        self.bindings.iter().find(|b| b.name == name)
    }

    /// The tensor format of the binding named `name` in this variant (what [`binding`]
    /// finds, its `.format`).
    ///
    /// [`binding`]: VariantInfo::binding
    pub fn format_of(&self, name: &str) -> Option<TensorFormat> {
        self.binding(name).map(|b| b.format)
    }
}

/// One descriptor binding of one variant.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct BindingInfo {
    /// Descriptor set (vkprism kernels use 0 only).
    pub set: u32,
    /// Binding number.
    pub binding: u32,
    /// The block or variable name in the GLSL source.
    pub name: &'static str,
    /// Storage or uniform buffer, sampled or storage image.
    pub kind: BindingKind,
    /// From the `readonly` / `writeonly` qualifiers.
    pub access: Access,
    /// Element type of the runtime array (buffers) or texel (images).
    pub element: ElementType,
    /// The tensor format this binding expects in this variant.
    pub format: TensorFormat,
    /// Image dimensionality (1, 2, 3); 0 for buffers.
    pub dims: u8,
}

/// What a binding holds.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum BindingKind {
    /// A `buffer` block.
    StorageBuffer,
    /// A `uniform` block.
    UniformBuffer,
    /// `sampler1D/2D/3D` (combined image sampler).
    SampledImage,
    /// `image1D/2D/3D` with a format qualifier.
    StorageImage,
}

/// How the shader accesses a binding.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum Access {
    /// `readonly` (and every sampled image).
    ReadOnly,
    /// `writeonly`.
    WriteOnly,
    /// Neither qualifier.
    ReadWrite,
}

impl Access {
    /// Whether the shader may write the binding.
    pub const fn writes(self) -> bool {
        !matches!(self, Access::ReadOnly)
    }
}

/// The scalar kind of an element.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum ScalarKind {
    /// `float`.
    F32,
    /// `float16_t`.
    F16,
    /// bfloat16 (`bfloat16_t`; SPIR-V's 16-bit float with the `BFloat16KHR` encoding).
    Bf16,
    /// `int`.
    I32,
    /// `uint`.
    U32,
    /// `int16_t`.
    I16,
    /// `uint16_t`.
    U16,
    /// `int8_t`.
    I8,
    /// `uint8_t`.
    U8,
    /// `int64_t`.
    I64,
    /// `uint64_t`.
    U64,
    /// `double`.
    F64,
    /// `bool` (32 bits in interfaces).
    Bool,
}

impl ScalarKind {
    /// Bytes of one value.
    pub const fn size(self) -> u32 {
        match self {
            ScalarKind::F32 | ScalarKind::I32 | ScalarKind::U32 | ScalarKind::Bool => 4,
            ScalarKind::F16 | ScalarKind::Bf16 | ScalarKind::I16 | ScalarKind::U16 => 2,
            ScalarKind::I8 | ScalarKind::U8 => 1,
            ScalarKind::I64 | ScalarKind::U64 | ScalarKind::F64 => 8,
        }
    }
}

/// An element type: `components` scalars, `stride` bytes apart in an array.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct ElementType {
    /// The scalar type.
    pub scalar: ScalarKind,
    /// Scalars per element (vector width); 0 when unknown (sampled images).
    pub components: u32,
    /// Array stride in bytes (0 for images and non-array blocks).
    pub stride: u32,
}

/// How a tensor's elements are stored in GPU memory.
#[non_exhaustive]
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum TensorFormat {
    /// IEEE single precision.
    F32,
    /// IEEE half, also the layout of packed fp16 (`packHalf2x16` puts element 0 in the low half).
    F16,
    /// bfloat16, the top 16 bits of an f32.
    Bf16,
    /// Signed 8-bit integers.
    I8,
    /// Signed 16-bit integers (also the layout of packed int16: element 0 in the low half).
    I16,
    /// Signed 32-bit integers.
    I32,
    /// Unsigned 32-bit integers.
    U32,
    /// Anything else (a struct, or a type the runtime does not convert): bytes as given.
    Raw,
}

impl TensorFormat {
    /// Bytes per element.
    pub const fn size(self) -> usize {
        match self {
            TensorFormat::F32 | TensorFormat::I32 | TensorFormat::U32 => 4,
            TensorFormat::F16 | TensorFormat::Bf16 | TensorFormat::I16 => 2,
            TensorFormat::I8 | TensorFormat::Raw => 1,
        }
    }
}

/// The push-constant block.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct PushConstantInfo {
    /// The block's size in bytes.
    pub size: u32,
}

/// One specialization constant.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct SpecConstantInfo {
    /// Its `constant_id`.
    pub id: u32,
    /// Its name in GLSL.
    pub name: &'static str,
    /// Its type (32-bit int, uint, float or bool).
    pub scalar: ScalarKind,
    /// Default value's bits as SPIR-V stores them (32-bit).
    pub default_bits: u32,
}

/// One dimension of the workgroup size.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct LocalSizeDim {
    /// The default size.
    pub default: u32,
    /// Specialization constant id overriding it (always set by vkprism: 233, 234, 235 unless the
    /// kernel names its own).
    pub spec_id: Option<u32>,
}
