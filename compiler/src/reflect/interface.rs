//! The kernel's interface variables: descriptor bindings (buffers and images) and the
//! push-constant block.

use super::index::{lit, ModuleIndex, Ty};
use super::{Binding, PushBlock, PushMember, ReflectError};
use rspirv::dr::{Instruction, Operand};
use rspirv::spirv::{Decoration, Dim, ImageFormat, StorageClass};
use vkprism_core::{Access, BindingKind, ElementType, ScalarKind};

/// The module's interface variables: `(descriptor bindings sorted by (set, binding), push block)`.
pub(super) fn interface(
    c: &ModuleIndex,
    globals: &[Instruction],
) -> Result<(Vec<Binding>, Option<PushBlock>), ReflectError> {
    let mut bindings = Vec::new();
    let mut push = None;
    for i in globals {
        if i.class.opcode != rspirv::spirv::Op::Variable {
            continue;
        }
        let (Some(var), Some(ptr)) = (i.result_id, i.result_type) else {
            continue;
        };
        let class = match i.operands.first() {
            Some(Operand::StorageClass(s)) => *s,
            _ => continue,
        };
        let Some(Ty::Pointer { pointee }) = c.types.get(&ptr) else {
            continue;
        };
        match class {
            StorageClass::PushConstant => {
                let instance = c.names.get(&var).cloned().unwrap_or_default();
                push = Some(push_block(c, *pointee, instance)?);
            }
            StorageClass::StorageBuffer | StorageClass::Uniform | StorageClass::UniformConstant => {
                bindings.extend(descriptor(c, var, *pointee, class)?);
            }
            _ => {}
        }
    }
    bindings.sort_by_key(|b| (b.set, b.binding));
    Ok((bindings, push))
}

/// What a descriptor variable's type says about it.
struct DescriptorType {
    kind: BindingKind,
    element: ElementType,
    dims: u8,
    /// Every member of the block is `NonWritable` (sampled images: always).
    members_non_writable: bool,
    /// Every member of the block is `NonReadable`.
    members_non_readable: bool,
    name: String,
}

/// The binding of the descriptor variable `var` (of type pointer to `pointee`); `None` for a
/// variable without a binding number.
fn descriptor(
    c: &ModuleIndex,
    var: u32,
    pointee: u32,
    class: StorageClass,
) -> Result<Option<Binding>, ReflectError> {
    let set = c
        .decoration_value(var, Decoration::DescriptorSet)
        .unwrap_or(0);
    let Some(binding) = c.decoration_value(var, Decoration::Binding) else {
        return Ok(None);
    };
    let t = if class == StorageClass::UniformConstant {
        opaque_descriptor(c, var, pointee, binding)?
    } else {
        block_descriptor(c, var, pointee, class, binding)?
    };
    let non_writable =
        c.decoration(var, Decoration::NonWritable).is_some() || t.members_non_writable;
    let non_readable =
        c.decoration(var, Decoration::NonReadable).is_some() || t.members_non_readable;
    let access = match (non_writable, non_readable) {
        (true, _) => Access::ReadOnly,
        (false, true) => Access::WriteOnly,
        _ => Access::ReadWrite,
    };
    Ok(Some(Binding {
        set,
        binding,
        name: t.name,
        kind: t.kind,
        access,
        element: t.element,
        dims: t.dims,
    }))
}

/// A sampled image (`sampler1D/2D/3D`) or storage image (`image1D/2D/3D`).
fn opaque_descriptor(
    c: &ModuleIndex,
    var: u32,
    pointee: u32,
    binding: u32,
) -> Result<DescriptorType, ReflectError> {
    let name = c.names.get(&var).cloned().unwrap_or_default();
    match c.types.get(&pointee) {
        Some(Ty::SampledImage { image }) => {
            let (element, dims) = image_element(c, *image);
            Ok(DescriptorType {
                kind: BindingKind::SampledImage,
                element,
                dims,
                members_non_writable: true,
                members_non_readable: false,
                name,
            })
        }
        Some(Ty::Image { sampled: 2, .. }) => {
            let (element, dims) = image_element(c, pointee);
            Ok(DescriptorType {
                kind: BindingKind::StorageImage,
                element,
                dims,
                members_non_writable: false,
                members_non_readable: false,
                name,
            })
        }
        _ => Err(ReflectError(format!("binding {binding}: only sampler1D/2D/3D and image1D/2D/3D are supported as opaque descriptors"))),
    }
}

/// A storage or uniform buffer block.
fn block_descriptor(
    c: &ModuleIndex,
    var: u32,
    pointee: u32,
    class: StorageClass,
    binding: u32,
) -> Result<DescriptorType, ReflectError> {
    let Some(Ty::Struct { members }) = c.types.get(&pointee) else {
        return Err(ReflectError(format!(
            "binding {binding}: unsupported descriptor type"
        )));
    };
    let is_storage = class == StorageClass::StorageBuffer
        || c.decoration(pointee, Decoration::BufferBlock).is_some();
    let all_members =
        |d| (0..members.len() as u32).all(|m| c.member_decoration(pointee, m, d).is_some());
    // A block's own name, else its variable's.
    let name = c
        .names
        .get(&pointee)
        .filter(|n| !n.is_empty())
        .or_else(|| c.names.get(&var))
        .cloned()
        .unwrap_or_default();
    Ok(DescriptorType {
        kind: if is_storage {
            BindingKind::StorageBuffer
        } else {
            BindingKind::UniformBuffer
        },
        element: block_element(c, members),
        dims: 0,
        members_non_writable: all_members(Decoration::NonWritable),
        members_non_readable: all_members(Decoration::NonReadable),
        name,
    })
}

fn image_element(c: &ModuleIndex, image: u32) -> (ElementType, u8) {
    match c.types.get(&image) {
        Some(Ty::Image { dim, format, .. }) => {
            let (scalar, components) = match format {
                ImageFormat::R32f => (ScalarKind::F32, 1),
                ImageFormat::Rgba32f => (ScalarKind::F32, 4),
                ImageFormat::R16f => (ScalarKind::F16, 1),
                ImageFormat::Rgba16f => (ScalarKind::F16, 4),
                // Sampled images carry no format: the tensor decides.
                _ => (ScalarKind::F32, 0),
            };
            let dims = match dim {
                Dim::Dim1D => 1,
                Dim::Dim3D => 3,
                _ => 2,
            };
            (
                ElementType {
                    scalar,
                    components,
                    stride: 0,
                },
                dims,
            )
        }
        _ => (
            ElementType {
                scalar: ScalarKind::F32,
                components: 0,
                stride: 0,
            },
            2,
        ),
    }
}

/// The element of a buffer block: its (last) runtime array's element, else its first member.
fn block_element(c: &ModuleIndex, members: &[u32]) -> ElementType {
    let unknown = ElementType {
        scalar: ScalarKind::U8,
        components: 0,
        stride: 0,
    };
    let Some(&last) = members.last() else {
        return unknown;
    };
    match c.types.get(&last) {
        Some(Ty::RuntimeArray { elem }) | Some(Ty::Array { elem, .. }) => {
            let stride = c
                .decoration_value(last, Decoration::ArrayStride)
                .unwrap_or(0);
            c.flat(*elem)
                .map(|(scalar, components)| ElementType {
                    scalar,
                    components,
                    stride,
                })
                .unwrap_or(ElementType { stride, ..unknown })
        }
        _ => c
            .flat(members[0])
            .map(|(scalar, components)| ElementType {
                scalar,
                components,
                stride: 0,
            })
            .unwrap_or(unknown),
    }
}

/// The largest push-constant block accepted (no device offers more than a few KiB; the check
/// keeps the sizes far from `u32` overflow and the generated struct small).
const MAX_PUSH_BYTES: u32 = 1 << 16;

fn push_block(c: &ModuleIndex, ty: u32, instance: String) -> Result<PushBlock, ReflectError> {
    let Some(Ty::Struct { members }) = c.types.get(&ty) else {
        return Err(ReflectError("push constant is not a block".into()));
    };
    let mut out = Vec::new();
    for (idx, &m) in members.iter().enumerate() {
        out.push(push_member(c, ty, idx as u32, m)?);
    }
    let mut size = 0u32;
    for m in &out {
        let end = m
            .offset
            .checked_add(m.size)
            .filter(|&e| e <= MAX_PUSH_BYTES);
        let Some(end) = end else {
            return Err(ReflectError(format!("push constant member `{}` ends past byte {MAX_PUSH_BYTES} of the block; Vulkan devices offer 128 to 4096 bytes of push constants", m.name)));
        };
        size = size.max(end);
    }
    out.sort_by_key(|m| m.offset);
    Ok(PushBlock {
        instance,
        size,
        members: out,
    })
}

/// Member `idx` (of type `m`) of the push-constant block `ty`.
fn push_member(c: &ModuleIndex, ty: u32, idx: u32, m: u32) -> Result<PushMember, ReflectError> {
    let name = c
        .member_names
        .get(&(ty, idx))
        .cloned()
        .unwrap_or_else(|| format!("member{idx}"));
    let offset = c
        .member_decoration(ty, idx, Decoration::Offset)
        .and_then(|i| i.operands.get(3))
        .map(lit)
        .unwrap_or(0);
    let (elem, array) = match c.types.get(&m) {
        Some(Ty::Array { elem, len }) => (
            *elem,
            Some((
                *len,
                c.decoration_value(m, Decoration::ArrayStride).unwrap_or(0),
            )),
        ),
        _ => (m, None),
    };
    let flat = match c.types.get(&elem) {
        Some(Ty::Vector { .. }) => c.flat(elem),
        _ => c.scalar(elem).map(|s| (s, 1)),
    };
    let Some((scalar, components)) = flat else {
        return Err(ReflectError(format!(
            "push constant member `{name}`: only scalars, vectors and arrays of them are supported"
        )));
    };
    let elem_size = scalar.size() * components;
    let (array_len, size) = match array {
        Some((_, stride)) if stride != elem_size => {
            return Err(ReflectError(format!("push constant member `{name}`: array stride {stride} differs from element size {elem_size}; use a vec4 array")));
        }
        Some((len, stride)) => match stride.checked_mul(len).filter(|&s| s <= MAX_PUSH_BYTES) {
            Some(size) => (Some(len), size),
            None => return Err(ReflectError(format!("push constant member `{name}`: {len} elements of {stride} bytes are more than {MAX_PUSH_BYTES} bytes; Vulkan devices offer 128 to 4096 bytes of push constants"))),
        },
        None => (None, elem_size),
    };
    Ok(PushMember {
        name,
        offset,
        scalar,
        components,
        array: array_len,
        size,
    })
}
