//! Phase 5: SPIR-V reflection. Everything the generated bindings say about descriptors, push
//! constants, specialization constants and the workgroup size is read here from the compiled
//! module, never from the GLSL text.

use rspirv::dr::{Instruction, Module, Operand};
use rspirv::spirv::{BuiltIn, Decoration, Dim, ExecutionMode, ImageFormat, Op, StorageClass};
use std::collections::HashMap;
use vkprism_core::{Access, BindingKind, CoopMatShape, ElementType, LocalSizeDim, ScalarKind};

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Binding {
    pub set: u32,
    pub binding: u32,
    pub name: String,
    pub kind: BindingKind,
    pub access: Access,
    pub element: ElementType,
    pub dims: u8,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PushBlock {
    /// The block's instance name (`p` for `psc`).
    pub instance: String,
    pub size: u32,
    pub members: Vec<PushMember>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PushMember {
    pub name: String,
    pub offset: u32,
    pub scalar: ScalarKind,
    /// Scalars per element (vector width).
    pub components: u32,
    /// Array length, `None` for a single value.
    pub array: Option<u32>,
    pub size: u32,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SpecConstant {
    pub id: u32,
    pub name: String,
    pub scalar: ScalarKind,
    pub default_bits: u32,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Reflection {
    pub bindings: Vec<Binding>,
    pub push: Option<PushBlock>,
    pub spec: Vec<SpecConstant>,
    pub local_size: [LocalSizeDim; 3],
    /// The cooperative-matrix multiply-adds the module performs.
    pub cooperative_matrices: Vec<CoopMatShape>,
}

#[derive(Clone, Debug)]
enum Ty {
    Bool,
    Int {
        width: u32,
        signed: bool,
    },
    Float {
        width: u32,
    },
    Vector {
        elem: u32,
        count: u32,
    },
    Matrix {
        column: u32,
        count: u32,
    },
    Array {
        elem: u32,
        len: u32,
    },
    RuntimeArray {
        elem: u32,
    },
    Struct {
        members: Vec<u32>,
    },
    Pointer {
        pointee: u32,
    },
    Image {
        dim: Dim,
        sampled: u32,
        format: ImageFormat,
    },
    SampledImage {
        image: u32,
    },
    Other,
}

struct Ctx<'m> {
    types: HashMap<u32, Ty>,
    constants: HashMap<u32, u32>,
    names: HashMap<u32, String>,
    member_names: HashMap<(u32, u32), String>,
    decorations: HashMap<u32, Vec<&'m Instruction>>,
    member_decorations: HashMap<(u32, u32), Vec<&'m Instruction>>,
}

fn id(op: &Operand) -> u32 {
    match op {
        Operand::IdRef(i) => *i,
        _ => 0,
    }
}
fn lit(op: &Operand) -> u32 {
    match op {
        Operand::LiteralBit32(v) => *v,
        _ => 0,
    }
}

impl<'m> Ctx<'m> {
    fn new(m: &'m Module) -> Self {
        let mut c = Ctx {
            types: HashMap::new(),
            constants: HashMap::new(),
            names: HashMap::new(),
            member_names: HashMap::new(),
            decorations: HashMap::new(),
            member_decorations: HashMap::new(),
        };
        for i in &m.debug_names {
            match (i.class.opcode, i.operands.as_slice()) {
                (Op::Name, [t, Operand::LiteralString(s)]) => {
                    c.names.insert(id(t), s.clone());
                }
                (Op::MemberName, [t, idx, Operand::LiteralString(s)]) => {
                    c.member_names.insert((id(t), lit(idx)), s.clone());
                }
                _ => {}
            }
        }
        for i in &m.annotations {
            match i.class.opcode {
                Op::Decorate => c.decorations.entry(id(&i.operands[0])).or_default().push(i),
                Op::MemberDecorate => c
                    .member_decorations
                    .entry((id(&i.operands[0]), lit(&i.operands[1])))
                    .or_default()
                    .push(i),
                _ => {}
            }
        }
        for i in &m.types_global_values {
            let Some(rid) = i.result_id else { continue };
            let o = &i.operands;
            let ty = match i.class.opcode {
                Op::TypeBool => Ty::Bool,
                Op::TypeInt => Ty::Int {
                    width: lit(&o[0]),
                    signed: lit(&o[1]) == 1,
                },
                Op::TypeFloat => Ty::Float { width: lit(&o[0]) },
                Op::TypeVector => Ty::Vector {
                    elem: id(&o[0]),
                    count: lit(&o[1]),
                },
                Op::TypeMatrix => Ty::Matrix {
                    column: id(&o[0]),
                    count: lit(&o[1]),
                },
                Op::TypeArray => Ty::Array {
                    elem: id(&o[0]),
                    len: 0,
                },
                Op::TypeRuntimeArray => Ty::RuntimeArray { elem: id(&o[0]) },
                Op::TypeStruct => Ty::Struct {
                    members: o.iter().map(id).collect(),
                },
                Op::TypePointer => Ty::Pointer { pointee: id(&o[1]) },
                Op::TypeImage => {
                    let dim = match &o[1] {
                        Operand::Dim(d) => *d,
                        _ => Dim::Dim2D,
                    };
                    let format = match &o[6] {
                        Operand::ImageFormat(f) => *f,
                        _ => ImageFormat::Unknown,
                    };
                    Ty::Image {
                        dim,
                        sampled: lit(&o[5]),
                        format,
                    }
                }
                Op::TypeSampledImage => Ty::SampledImage { image: id(&o[0]) },
                Op::Constant | Op::SpecConstant => {
                    c.constants.insert(rid, o.first().map(lit).unwrap_or(0));
                    continue;
                }
                _ => Ty::Other,
            };
            c.types.insert(rid, ty);
        }
        // Array lengths are constants declared before the array type: resolve them now.
        for i in &m.types_global_values {
            if i.class.opcode == Op::TypeArray {
                if let (Some(rid), Some(len_id)) = (i.result_id, i.operands.get(1)) {
                    let len = c.constants.get(&id(len_id)).copied().unwrap_or(0);
                    if let Some(Ty::Array { len: l, .. }) = c.types.get_mut(&rid) {
                        *l = len;
                    }
                }
            }
        }
        c
    }

    fn decoration(&self, target: u32, d: Decoration) -> Option<&'m Instruction> {
        self.decorations
            .get(&target)?
            .iter()
            .copied()
            .find(|i| matches!(i.operands.get(1), Some(Operand::Decoration(x)) if *x == d))
    }
    fn decoration_value(&self, target: u32, d: Decoration) -> Option<u32> {
        self.decoration(target, d)
            .and_then(|i| i.operands.get(2))
            .map(lit)
    }
    fn member_decoration(&self, s: u32, m: u32, d: Decoration) -> Option<&'m Instruction> {
        self.member_decorations
            .get(&(s, m))?
            .iter()
            .copied()
            .find(|i| matches!(i.operands.get(2), Some(Operand::Decoration(x)) if *x == d))
    }

    fn scalar(&self, t: u32) -> Option<ScalarKind> {
        Some(match self.types.get(&t)? {
            Ty::Bool => ScalarKind::Bool,
            Ty::Float { width: 32 } => ScalarKind::F32,
            Ty::Float { width: 16 } => ScalarKind::F16,
            Ty::Float { width: 64 } => ScalarKind::F64,
            Ty::Int {
                width: 32,
                signed: true,
            } => ScalarKind::I32,
            Ty::Int {
                width: 32,
                signed: false,
            } => ScalarKind::U32,
            Ty::Int {
                width: 16,
                signed: true,
            } => ScalarKind::I16,
            Ty::Int {
                width: 16,
                signed: false,
            } => ScalarKind::U16,
            Ty::Int {
                width: 8,
                signed: true,
            } => ScalarKind::I8,
            Ty::Int {
                width: 8,
                signed: false,
            } => ScalarKind::U8,
            Ty::Int {
                width: 64,
                signed: true,
            } => ScalarKind::I64,
            Ty::Int {
                width: 64,
                signed: false,
            } => ScalarKind::U64,
            _ => return None,
        })
    }

    /// (scalar, component count) of a scalar, vector, matrix or struct of those with one scalar kind.
    fn flat(&self, t: u32) -> Option<(ScalarKind, u32)> {
        if let Some(s) = self.scalar(t) {
            return Some((s, 1));
        }
        match self.types.get(&t)? {
            Ty::Vector { elem, count } => Some((self.scalar(*elem)?, *count)),
            Ty::Matrix { column, count } => {
                let (s, n) = self.flat(*column)?;
                Some((s, n * count))
            }
            Ty::Struct { members } => {
                let mut kind = None;
                let mut n = 0;
                for m in members {
                    let (s, c) = self.flat(*m)?;
                    if kind.is_some_and(|k| k != s) {
                        return None;
                    }
                    kind = Some(s);
                    n += c;
                }
                Some((kind?, n))
            }
            _ => None,
        }
    }
}

/// Why a module could not be reflected.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReflectError(pub String);

pub fn reflect(words: &[u32]) -> Result<Reflection, ReflectError> {
    let module = crate::coopmat::load_module(words)
        .map_err(|e| ReflectError(format!("SPIR-V parse error: {e}")))?;
    let c = Ctx::new(&module);
    let mut bindings = Vec::new();
    let mut push = None;
    for i in &module.types_global_values {
        if i.class.opcode != Op::Variable {
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
        let pointee = *pointee;
        let name_of = |v: u32, t: u32| {
            c.names
                .get(&t)
                .filter(|n| !n.is_empty())
                .or_else(|| c.names.get(&v))
                .cloned()
                .unwrap_or_default()
        };
        match class {
            StorageClass::PushConstant => {
                push = Some(push_block(
                    &c,
                    pointee,
                    c.names.get(&var).cloned().unwrap_or_default(),
                )?);
            }
            StorageClass::StorageBuffer | StorageClass::Uniform | StorageClass::UniformConstant => {
                let set = c
                    .decoration_value(var, Decoration::DescriptorSet)
                    .unwrap_or(0);
                let Some(binding) = c.decoration_value(var, Decoration::Binding) else {
                    continue;
                };
                let var_nw = c.decoration(var, Decoration::NonWritable).is_some();
                let var_nr = c.decoration(var, Decoration::NonReadable).is_some();
                let (kind, element, dims, members_nw, members_nr, name) = match (
                    class,
                    c.types.get(&pointee),
                ) {
                    (StorageClass::UniformConstant, Some(Ty::SampledImage { image })) => {
                        let (el, dims) = image_element(&c, *image);
                        (
                            BindingKind::SampledImage,
                            el,
                            dims,
                            true,
                            false,
                            c.names.get(&var).cloned().unwrap_or_default(),
                        )
                    }
                    (StorageClass::UniformConstant, Some(Ty::Image { sampled: 2, .. })) => {
                        let (el, dims) = image_element(&c, pointee);
                        (
                            BindingKind::StorageImage,
                            el,
                            dims,
                            false,
                            false,
                            c.names.get(&var).cloned().unwrap_or_default(),
                        )
                    }
                    (StorageClass::UniformConstant, _) => {
                        return Err(ReflectError(format!("binding {binding}: only sampler1D/2D/3D and image1D/2D/3D are supported as opaque descriptors")));
                    }
                    (_, Some(Ty::Struct { members })) => {
                        let is_storage = class == StorageClass::StorageBuffer
                            || c.decoration(pointee, Decoration::BufferBlock).is_some();
                        let kind = if is_storage {
                            BindingKind::StorageBuffer
                        } else {
                            BindingKind::UniformBuffer
                        };
                        let all = |d| {
                            (0..members.len() as u32)
                                .all(|m| c.member_decoration(pointee, m, d).is_some())
                        };
                        let element = block_element(&c, members);
                        (
                            kind,
                            element,
                            0,
                            all(Decoration::NonWritable),
                            all(Decoration::NonReadable),
                            name_of(var, pointee),
                        )
                    }
                    _ => {
                        return Err(ReflectError(format!(
                            "binding {binding}: unsupported descriptor type"
                        )))
                    }
                };
                let nw = var_nw || members_nw;
                let nr = var_nr || members_nr;
                let access = match (nw, nr) {
                    (true, _) => Access::ReadOnly,
                    (false, true) => Access::WriteOnly,
                    _ => Access::ReadWrite,
                };
                bindings.push(Binding {
                    set,
                    binding,
                    name,
                    kind,
                    access,
                    element,
                    dims,
                });
            }
            _ => {}
        }
    }
    bindings.sort_by_key(|b| (b.set, b.binding));

    // Workgroup size: LocalSize execution mode, overridden by a WorkgroupSize spec composite.
    let mut local_size = [LocalSizeDim {
        default: 1,
        spec_id: None,
    }; 3];
    for i in &module.execution_modes {
        if let Some(Operand::ExecutionMode(ExecutionMode::LocalSize)) = i.operands.get(1) {
            for (d, dim) in local_size.iter_mut().enumerate() {
                dim.default = i.operands.get(2 + d).map(lit).unwrap_or(1);
            }
        }
    }
    let mut local_ids = Vec::new();
    for i in &module.types_global_values {
        let Some(rid) = i.result_id else { continue };
        let is_wg = c.decorations.get(&rid).is_some_and(|ds| {
            ds.iter().any(|d| {
                matches!(
                    d.operands.get(2),
                    Some(Operand::BuiltIn(BuiltIn::WorkgroupSize))
                )
            })
        });
        if is_wg && i.class.opcode == Op::SpecConstantComposite {
            for (d, o) in i.operands.iter().take(3).enumerate() {
                let cid = id(o);
                local_size[d].default = c.constants.get(&cid).copied().unwrap_or(1);
                local_size[d].spec_id = c.decoration_value(cid, Decoration::SpecId);
                local_ids.push(cid);
            }
        }
    }

    let mut spec = Vec::new();
    for i in &module.types_global_values {
        let Some(rid) = i.result_id else { continue };
        let default_bits = match i.class.opcode {
            Op::SpecConstant => i.operands.first().map(lit).unwrap_or(0),
            Op::SpecConstantTrue => 1,
            Op::SpecConstantFalse => 0,
            _ => continue,
        };
        let Some(sid) = c.decoration_value(rid, Decoration::SpecId) else {
            continue;
        };
        if local_ids.contains(&rid) {
            continue;
        }
        let scalar = i.result_type.and_then(|t| c.scalar(t)).ok_or_else(|| {
            ReflectError(format!("specialization constant {sid}: unsupported type"))
        })?;
        if scalar.size() != 4 {
            return Err(ReflectError(format!("specialization constant {sid}: only 32-bit int, uint, float and bool are supported")));
        }
        let name = c
            .names
            .get(&rid)
            .cloned()
            .unwrap_or_else(|| format!("constant_{sid}"));
        spec.push(SpecConstant {
            id: sid,
            name,
            scalar,
            default_bits,
        });
    }
    spec.sort_by_key(|s| s.id);
    let cooperative_matrices = crate::coopmat::shapes(&module).map_err(ReflectError)?;
    Ok(Reflection {
        bindings,
        push,
        spec,
        local_size,
        cooperative_matrices,
    })
}

fn image_element(c: &Ctx, image: u32) -> (ElementType, u8) {
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
fn block_element(c: &Ctx, members: &[u32]) -> ElementType {
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

fn push_block(c: &Ctx, ty: u32, instance: String) -> Result<PushBlock, ReflectError> {
    let Some(Ty::Struct { members }) = c.types.get(&ty) else {
        return Err(ReflectError("push constant is not a block".into()));
    };
    let mut out = Vec::new();
    let mut size = 0;
    for (idx, &m) in members.iter().enumerate() {
        let idx = idx as u32;
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
            return Err(ReflectError(format!("push constant member `{name}`: only scalars, vectors and arrays of them are supported")));
        };
        let elem_size = scalar.size() * components;
        let (array_len, member_size) = match array {
            Some((len, stride)) => {
                if stride != elem_size {
                    return Err(ReflectError(format!("push constant member `{name}`: array stride {stride} differs from element size {elem_size}; use a vec4 array")));
                }
                (Some(len), stride * len)
            }
            None => (None, elem_size),
        };
        size = size.max(offset + member_size);
        out.push(PushMember {
            name,
            offset,
            scalar,
            components,
            array: array_len,
            size: member_size,
        });
    }
    out.sort_by_key(|m| m.offset);
    Ok(PushBlock {
        instance,
        size,
        members: out,
    })
}
