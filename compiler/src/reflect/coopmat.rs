//! Cooperative matrices in SPIR-V: a module loader that knows their types (rspirv 0.12's loader
//! stops at `OpTypeCooperativeMatrixKHR`, "not inside block", and its parser at the bfloat16
//! encoding of their components), and the multiply-add shapes a module performs, which the
//! runtime checks against what the device offers.

use rspirv::binary::{Consumer, ParseAction};
use rspirv::dr::{Instruction, Loader, Module, ModuleHeader, Operand};
use rspirv::spirv::Op;
use std::borrow::Cow;
use std::collections::HashMap;
use vkprism_core::{CoopMatShape, Feature, FeatureSet, ScalarKind};

/// `OpTypeFloat`'s opcode.
pub const OP_TYPE_FLOAT: u32 = 22;
/// `OpCapability`'s opcode.
pub const OP_CAPABILITY: u32 = 17;
/// `BFloat16TypeKHR`, `BFloat16DotProductKHR` and `BFloat16CooperativeMatrixKHR`.
const BFLOAT16_CAPABILITIES: [u32; 3] = [5116, 5117, 5118];
/// The `BFloat16KHR` FP encoding (SPV_KHR_bfloat16), the only one vkprism emits.
pub const FP_ENCODING_BFLOAT16: u32 = 0;

/// Loads `words` like `rspirv::dr::load_words`, placing cooperative-matrix type declarations
/// among the module's types and `OpExecutionModeId` (SPIR-V 1.6's `LocalSizeId`, from
/// `vulkan_version: "1.3"`) among its execution modes, where rspirv 0.12's loader fails on both.
///
/// What rspirv 0.12's grammar predates is handled around its parser ([`strip_unparsed`]): the
/// FP-encoding operand of `OpTypeFloat` (SPV_KHR_bfloat16) is taken off before parsing and put
/// back as the instruction's second operand ([`is_bfloat16`] reads it); the bfloat16 and
/// `SPV_NV_cooperative_matrix2` / `SPV_NV_tensor_addressing` capabilities and instructions are
/// left out. Reflection reads no capability ([`super::capabilities`] reads the words), and the
/// instructions left out are tensor layouts and views, the loads and stores through them and
/// the per-element and reduction operations: none declares an interface, and a multiply-add on
/// what they load is over workgroup-scope matrices, which [`shapes`] does not list.
pub fn load_module(words: &[u32]) -> Result<Module, String> {
    let (words, encodings) = strip_unparsed(words);
    let mut loader = CoopMatLoader {
        inner: Loader::new(),
        types: Vec::new(),
        execution_mode_ids: Vec::new(),
    };
    rspirv::binary::parse_words(&words, &mut loader).map_err(|e| e.to_string())?;
    let mut module = loader.inner.module();
    module.types_global_values.extend(loader.types);
    module.execution_modes.extend(loader.execution_mode_ids);
    for t in &mut module.types_global_values {
        let encoding = t.result_id.and_then(|id| encodings.get(&id));
        if let (Op::TypeFloat, Some(e)) = (t.class.opcode, encoding) {
            t.operands.push(Operand::LiteralBit32(*e));
        }
    }
    Ok(module)
}

/// Capabilities rspirv 0.12's grammar does not know: bfloat16 (`BFloat16TypeKHR`,
/// `BFloat16DotProductKHR`, `BFloat16CooperativeMatrixKHR`) and those of
/// `SPV_NV_cooperative_matrix2` and `SPV_NV_tensor_addressing`.
fn unknown_capability(capability: u32) -> bool {
    BFLOAT16_CAPABILITIES.contains(&capability)
        || (5430..=5434).contains(&capability)
        || matches!(capability, 5439 | 5447)
}

/// Opcodes of `SPV_NV_cooperative_matrix2` and `SPV_NV_tensor_addressing` (reductions, tensor
/// loads and stores, per-element operations, tensor layout and view types and their setters,
/// transposes, a matrix's use changed without its type: `OpCooperativeMatrixConvertNV`), which
/// rspirv 0.12's grammar does not know.
fn unknown_opcode(opcode: u32) -> bool {
    (5366..=5384).contains(&opcode) || matches!(opcode, 5293 | 5390)
}

/// `words` without what rspirv 0.12 cannot parse ([`unknown_capability`], [`unknown_opcode`],
/// the FP-encoding operand of `OpTypeFloat`), and the encoding of each float type that had one.
/// A malformed stream is returned as it is, for the parser to report.
fn strip_unparsed(words: &[u32]) -> (Cow<'_, [u32]>, HashMap<u32, u32>) {
    let all: Vec<&[u32]> = instructions(words).collect();
    let whole = 5 + all.iter().map(|i| i.len()).sum::<usize>() == words.len();
    let encodings: HashMap<u32, u32> = all
        .iter()
        .filter(|i| i[0] == (4 << 16 | OP_TYPE_FLOAT))
        .map(|i| (i[1], i[3]))
        .collect();
    let unparsed = |inst: &[u32]| match inst {
        [w, c] if *w == (2 << 16 | OP_CAPABILITY) => unknown_capability(*c),
        [w, ..] => unknown_opcode(w & 0xffff),
        [] => false,
    };
    let nothing_to_strip = encodings.is_empty() && !all.iter().any(|i| unparsed(i));
    if !whole || nothing_to_strip {
        return (Cow::Borrowed(words), HashMap::new());
    }
    let mut out = words[..5].to_vec();
    for inst in all {
        match inst {
            _ if unparsed(inst) => {}
            [w, id, width, _] if *w == (4 << 16 | OP_TYPE_FLOAT) => {
                out.extend_from_slice(&[(3 << 16) | OP_TYPE_FLOAT, *id, *width]);
            }
            _ => out.extend_from_slice(inst),
        }
    }
    (Cow::Owned(out), encodings)
}

/// Every instruction after the 5-word header, as its words; a malformed stream (a word count
/// of 0, or past the end) ends the walk early, which callers that need the whole module check.
pub fn instructions(words: &[u32]) -> impl Iterator<Item = &[u32]> {
    let mut rest = words.get(5..).unwrap_or(&[]);
    std::iter::from_fn(move || {
        let count = (*rest.first()? >> 16) as usize;
        if count == 0 || count > rest.len() {
            return None;
        }
        let (inst, tail) = rest.split_at(count);
        rest = tail;
        Some(inst)
    })
}

/// Whether `t` (loaded by [`load_module`]) is `OpTypeFloat … BFloat16KHR`.
pub fn is_bfloat16(t: &Instruction) -> bool {
    t.class.opcode == Op::TypeFloat
        && t.operands.get(1) == Some(&Operand::LiteralBit32(FP_ENCODING_BFLOAT16))
}

/// `rspirv`'s loader, with what it can't place held aside.
struct CoopMatLoader {
    inner: Loader,
    types: Vec<Instruction>,
    execution_mode_ids: Vec<Instruction>,
}

impl Consumer for CoopMatLoader {
    fn initialize(&mut self) -> ParseAction {
        self.inner.initialize()
    }
    fn finalize(&mut self) -> ParseAction {
        self.inner.finalize()
    }
    fn consume_header(&mut self, header: ModuleHeader) -> ParseAction {
        self.inner.consume_header(header)
    }
    fn consume_instruction(&mut self, inst: Instruction) -> ParseAction {
        if matches!(
            inst.class.opcode,
            Op::TypeCooperativeMatrixKHR | Op::TypeCooperativeMatrixNV
        ) {
            self.types.push(inst);
            return ParseAction::Continue;
        }
        if inst.class.opcode == Op::ExecutionModeId {
            self.execution_mode_ids.push(inst);
            return ParseAction::Continue;
        }
        self.inner.consume_instruction(inst)
    }
}

/// One `OpTypeCooperativeMatrixKHR`: component type id, rows and columns, and whether its
/// scope is the subgroup.
struct MatrixType {
    component: u32,
    rows: u32,
    columns: u32,
    subgroup: bool,
}

/// `Scope`'s `Workgroup`.
const SCOPE_WORKGROUP: u32 = 2;
/// `Scope`'s `Subgroup`.
const SCOPE_SUBGROUP: u32 = 3;

/// The shapes of every `OpCooperativeMatrixMulAddKHR` on subgroup-scope matrices in `module`,
/// each once: the shapes a device lists in `vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR`.
/// Workgroup-scope matrices (`SPV_NV_cooperative_matrix2`) are left out: their sizes are the
/// kernel's tiles, which the device's `cooperativeMatrixWorkgroupScope` and
/// `cooperativeMatrixFlexibleDimensions` features cover. Rows and columns given by
/// specialization constants are read at their default values.
pub fn shapes(module: &Module) -> Result<Vec<CoopMatShape>, String> {
    let globals = &module.types_global_values;
    let constant = |id: u32| constant_value(module, id);
    let scalar = |id: u32| scalar_kind(globals.iter().find(|i| i.result_id == Some(id))?);
    let mut matrices = HashMap::new();
    for i in globals
        .iter()
        .filter(|i| i.class.opcode == Op::TypeCooperativeMatrixKHR)
    {
        let ids: Vec<u32> = i.operands.iter().filter_map(|o| o.id_ref_any()).collect();
        if let (Some(rid), [component, scope, rows, columns, ..]) = (i.result_id, ids.as_slice()) {
            let (rows, columns) = (constant(*rows), constant(*columns));
            let (Some(rows), Some(columns)) = (rows, columns) else {
                return Err(
                    "cooperative matrix with rows or columns that are not constants".into(),
                );
            };
            matrices.insert(
                rid,
                MatrixType {
                    component: *component,
                    rows,
                    columns,
                    subgroup: constant(*scope) == Some(SCOPE_SUBGROUP),
                },
            );
        }
    }
    let value_types = value_types(module);
    let mut out = Vec::new();
    for f in &module.functions {
        for inst in f.blocks.iter().flat_map(|b| &b.instructions) {
            if inst.class.opcode != Op::CooperativeMatrixMulAddKHR {
                continue;
            }
            let operand = |n: usize| {
                let id = inst.operands.get(n)?.id_ref_any()?;
                matrices.get(value_types.get(&id)?)
            };
            let result = inst.result_type.and_then(|t| matrices.get(&t));
            if result.is_some_and(|r| !r.subgroup) {
                continue;
            }
            let (Some(a), Some(b), Some(c), Some(r)) = (operand(0), operand(1), operand(2), result)
            else {
                return Err("cooperative-matrix multiply-add on values of unknown type".into());
            };
            let kind = |m: &MatrixType| {
                scalar(m.component).ok_or("cooperative matrix of an unsupported component type")
            };
            let shape = CoopMatShape {
                m: a.rows,
                n: b.columns,
                k: a.columns,
                a: kind(a)?,
                b: kind(b)?,
                c: kind(c)?,
                result: kind(r)?,
            };
            if !out.contains(&shape) {
                out.push(shape);
            }
        }
    }
    Ok(out)
}

/// What a module's workgroup-scope cooperative matrices (`SPV_NV_cooperative_matrix2`) need of
/// the device, which they declare with no capability: `cooperativeMatrixWorkgroupScope`, and
/// `cooperativeMatrixFlexibleDimensions` for their sizes (a device lists workgroup-scope sizes
/// only as multiples of a granularity).
pub fn scope_features(module: &Module) -> FeatureSet {
    let workgroup = module
        .types_global_values
        .iter()
        .filter(|i| i.class.opcode == Op::TypeCooperativeMatrixKHR)
        .filter_map(|i| i.operands.get(1)?.id_ref_any())
        .any(|scope| constant_value(module, scope) == Some(SCOPE_WORKGROUP));
    match workgroup {
        true => FeatureSet::from_slice(&[
            Feature::CooperativeMatrixWorkgroupScope,
            Feature::CooperativeMatrixFlexibleDimensions,
        ]),
        false => FeatureSet::EMPTY,
    }
}

/// The value of the 32-bit constant `id` (a specialization constant's default).
fn constant_value(module: &Module, id: u32) -> Option<u32> {
    let c = module
        .types_global_values
        .iter()
        .find(|i| i.result_id == Some(id))?;
    match c.operands.first() {
        Some(Operand::LiteralBit32(v)) => Some(*v),
        _ => None,
    }
}

/// The result type of every value a function instruction or global defines.
fn value_types(module: &Module) -> HashMap<u32, u32> {
    let functions = module.functions.iter().flat_map(|f| {
        f.parameters
            .iter()
            .chain(f.blocks.iter().flat_map(|b| &b.instructions))
    });
    module
        .types_global_values
        .iter()
        .chain(functions)
        .filter_map(|i| Some((i.result_id?, i.result_type?)))
        .collect()
}

fn scalar_kind(t: &Instruction) -> Option<ScalarKind> {
    let width = |n: usize| match t.operands.get(n) {
        Some(Operand::LiteralBit32(w)) => Some(*w),
        _ => None,
    };
    match t.class.opcode {
        Op::TypeFloat if t.operands.len() > 1 => match width(0)? {
            16 if is_bfloat16(t) => Some(ScalarKind::Bf16),
            _ => None,
        },
        Op::TypeFloat => match width(0)? {
            16 => Some(ScalarKind::F16),
            32 => Some(ScalarKind::F32),
            64 => Some(ScalarKind::F64),
            _ => None,
        },
        Op::TypeInt => {
            let signed = width(1)? == 1;
            Some(match (width(0)?, signed) {
                (8, true) => ScalarKind::I8,
                (8, false) => ScalarKind::U8,
                (16, true) => ScalarKind::I16,
                (16, false) => ScalarKind::U16,
                (32, true) => ScalarKind::I32,
                (32, false) => ScalarKind::U32,
                (64, true) => ScalarKind::I64,
                _ => ScalarKind::U64,
            })
        }
        _ => None,
    }
}
