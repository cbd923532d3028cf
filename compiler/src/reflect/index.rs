//! An index over one SPIR-V module: its types, constants, names and decorations by id, which
//! the rest of reflection looks things up in.

use super::coopmat;
use rspirv::dr::{Instruction, Module, Operand};
use rspirv::spirv::{Decoration, Dim, ImageFormat, Op};
use std::collections::HashMap;
use vkprism_core::ScalarKind;

/// A type declaration, with the ids it refers to.
#[derive(Clone, Debug)]
pub(super) enum Ty {
    Bool,
    Int {
        width: u32,
        signed: bool,
    },
    Float {
        width: u32,
        /// SPIR-V's `BFloat16KHR` encoding (`OpTypeFloat 16 BFloat16KHR`).
        bfloat16: bool,
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

/// Lookup tables over a module, by result id.
pub(super) struct ModuleIndex<'m> {
    pub types: HashMap<u32, Ty>,
    /// Values of 32-bit (spec) constants.
    pub constants: HashMap<u32, u32>,
    pub names: HashMap<u32, String>,
    pub member_names: HashMap<(u32, u32), String>,
    pub decorations: HashMap<u32, Vec<&'m Instruction>>,
    member_decorations: HashMap<(u32, u32), Vec<&'m Instruction>>,
}

/// The id an operand refers to (0 if it refers to none).
pub(super) fn id(op: &Operand) -> u32 {
    match op {
        Operand::IdRef(i) => *i,
        _ => 0,
    }
}

/// A 32-bit literal operand's value (0 if it is none).
pub(super) fn lit(op: &Operand) -> u32 {
    match op {
        Operand::LiteralBit32(v) => *v,
        _ => 0,
    }
}

impl<'m> ModuleIndex<'m> {
    pub fn new(m: &'m Module) -> Self {
        let mut index = ModuleIndex {
            types: HashMap::new(),
            constants: HashMap::new(),
            names: HashMap::new(),
            member_names: HashMap::new(),
            decorations: HashMap::new(),
            member_decorations: HashMap::new(),
        };
        index.add_names(m);
        index.add_annotations(m);
        index.add_types_and_constants(m);
        index.resolve_array_lengths(m);
        index
    }

    fn add_names(&mut self, m: &Module) {
        for i in &m.debug_names {
            match (i.class.opcode, i.operands.as_slice()) {
                (Op::Name, [t, Operand::LiteralString(s)]) => {
                    self.names.insert(id(t), s.clone());
                }
                (Op::MemberName, [t, idx, Operand::LiteralString(s)]) => {
                    self.member_names.insert((id(t), lit(idx)), s.clone());
                }
                _ => {}
            }
        }
    }

    fn add_annotations(&mut self, m: &'m Module) {
        for i in &m.annotations {
            match i.class.opcode {
                Op::Decorate => self
                    .decorations
                    .entry(id(&i.operands[0]))
                    .or_default()
                    .push(i),
                Op::MemberDecorate => self
                    .member_decorations
                    .entry((id(&i.operands[0]), lit(&i.operands[1])))
                    .or_default()
                    .push(i),
                _ => {}
            }
        }
    }

    fn add_types_and_constants(&mut self, m: &Module) {
        for i in &m.types_global_values {
            let Some(rid) = i.result_id else { continue };
            match i.class.opcode {
                Op::Constant | Op::SpecConstant => {
                    self.constants
                        .insert(rid, i.operands.first().map(lit).unwrap_or(0));
                }
                _ => {
                    self.types.insert(rid, type_of(i));
                }
            }
        }
    }

    /// Array lengths are constants declared before the array type: resolved once all are known.
    fn resolve_array_lengths(&mut self, m: &Module) {
        for i in &m.types_global_values {
            if i.class.opcode == Op::TypeArray {
                if let (Some(rid), Some(len_id)) = (i.result_id, i.operands.get(1)) {
                    let len = self.constants.get(&id(len_id)).copied().unwrap_or(0);
                    if let Some(Ty::Array { len: l, .. }) = self.types.get_mut(&rid) {
                        *l = len;
                    }
                }
            }
        }
    }

    pub fn decoration(&self, target: u32, d: Decoration) -> Option<&'m Instruction> {
        self.decorations
            .get(&target)?
            .iter()
            .copied()
            .find(|i| matches!(i.operands.get(1), Some(Operand::Decoration(x)) if *x == d))
    }
    pub fn decoration_value(&self, target: u32, d: Decoration) -> Option<u32> {
        self.decoration(target, d)
            .and_then(|i| i.operands.get(2))
            .map(lit)
    }
    pub fn member_decoration(&self, s: u32, m: u32, d: Decoration) -> Option<&'m Instruction> {
        self.member_decorations
            .get(&(s, m))?
            .iter()
            .copied()
            .find(|i| matches!(i.operands.get(2), Some(Operand::Decoration(x)) if *x == d))
    }

    pub fn scalar(&self, t: u32) -> Option<ScalarKind> {
        Some(match self.types.get(&t)? {
            Ty::Bool => ScalarKind::Bool,
            Ty::Float {
                width: 16,
                bfloat16: true,
            } => ScalarKind::Bf16,
            Ty::Float { bfloat16: true, .. } => return None,
            Ty::Float { width: 32, .. } => ScalarKind::F32,
            Ty::Float { width: 16, .. } => ScalarKind::F16,
            Ty::Float { width: 64, .. } => ScalarKind::F64,
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
    pub fn flat(&self, t: u32) -> Option<(ScalarKind, u32)> {
        if let Some(s) = self.scalar(t) {
            return Some((s, 1));
        }
        match self.types.get(&t)? {
            Ty::Vector { elem, count } => Some((self.scalar(*elem)?, *count)),
            Ty::Matrix { column, count } => {
                let (s, n) = self.flat(*column)?;
                Some((s, n.checked_mul(*count)?))
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
                    n = u32::checked_add(n, c)?;
                }
                Some((kind?, n))
            }
            _ => None,
        }
    }
}

/// The type an `OpType…` instruction declares (`Other` for any other instruction; array lengths
/// are filled in later).
fn type_of(i: &Instruction) -> Ty {
    let o = &i.operands;
    match i.class.opcode {
        Op::TypeBool => Ty::Bool,
        Op::TypeInt => Ty::Int {
            width: lit(&o[0]),
            signed: lit(&o[1]) == 1,
        },
        Op::TypeFloat => Ty::Float {
            width: lit(&o[0]),
            bfloat16: coopmat::is_bfloat16(i),
        },
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
        _ => Ty::Other,
    }
}
