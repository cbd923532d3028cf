//! What the runtime reads from a kernel's SPIR-V words, all in one place. The driver trusts the
//! module it is given, and the kernel's metadata ([`vkprism_core::KernelInfo`]) is written by
//! the compiler or by hand, so before a module reaches the driver the runtime walks its
//! instructions (one iterator, [`instructions`]) for two things:
//!
//! - at load, [`check_spirv`]: that the words are a compute module vkprism can use (the header,
//!   well-formed instructions, an `OpEntryPoint GLCompute "main"`), that the variant's
//!   `reads_num_workgroups` is true where the module reads `gl_NumWorkGroups` (public metadata,
//!   kept true at the cost of one decoration lookup), and that a push-constant block is there exactly where the
//!   kernel declares push constants, with its last member inside the declared range;
//! - per pipeline, [`workgroup_bytes`]: the shared memory the module declares once
//!   specialized, checked against `maxComputeSharedMemorySize`.
//!
//! ## Shared memory per specialization
//!
//! The shared (Workgroup) memory a compute module declares once specialized, checked at pipeline
//! creation against `maxComputeSharedMemorySize`: a driver given more may accept the pipeline
//! and fail at dispatch instead (an H100 lost the device running a kernel with 54 KiB of its
//! 48), and the sizes of vkprism's tiles are specialization constants, so the kernel alone
//! does not say how much it needs.
//!
//! The count is a lower bound: the sum of the Workgroup variables' sizes without padding, with
//! every specialization constant (and `OpSpecConstantOp` integer expression over them)
//! evaluated. What it does not understand (an opcode it does not evaluate, aliased Workgroup
//! blocks, ...) makes it answer `None`, and no check is made: it never refuses a module a
//! driver would run.

use crate::pipeline::{push_range, PipelineError};
use std::collections::HashMap;
use vkprism_core::{KernelInfo, VariantInfo};

/// A constant's value, as far as array lengths need it.
#[derive(Clone, Debug)]
enum Value {
    Int(i64),
    Bool(bool),
    Composite(Vec<u32>),
}

/// The types sizes are computed from.
#[derive(Clone, Debug)]
enum Type {
    Bool,
    /// Width in bits, signed.
    Int(u32, bool),
    Float(u32),
    /// Element type, count.
    Vector(u32, u32),
    /// Column type, count.
    Matrix(u32, u32),
    /// Element type, length constant.
    Array(u32, u32),
    Struct(Vec<u32>),
    /// Pointee.
    Pointer(u32),
}

/// One pass's worth of the module: types, constants, decorations, Workgroup variables.
#[derive(Default)]
struct Module {
    types: HashMap<u32, Type>,
    values: HashMap<u32, Value>,
    spec_ids: HashMap<u32, u32>,
    blocks: Vec<u32>,
    /// Pointer types of Workgroup variables.
    workgroup_vars: Vec<u32>,
}

const STORAGE_WORKGROUP: u32 = 4;

/// Bytes of Workgroup (shared) storage the module `words` declares with the specialization
/// constants `spec` ((constant id, value) pairs, 32-bit; the workgroup size's ids included), or
/// `None` where it can't tell: the figure pipeline creation checks against
/// `maxComputeSharedMemorySize`, for a caller choosing among configurations before making one.
pub fn workgroup_bytes(words: &[u32], spec: &[(u32, u32)]) -> Option<u64> {
    let spec: HashMap<u32, u32> = spec.iter().copied().collect();
    let mut m = Module::default();
    for ins in instructions(words) {
        let (op, ins) = ins.ok()?;
        m.instruction(op, &ins[1..], &spec)?;
    }
    let mut total = 0u64;
    for ptr in &m.workgroup_vars {
        let Some(Type::Pointer(pointee)) = m.types.get(ptr) else {
            return None;
        };
        // Explicitly laid-out blocks may alias one another: their sum says nothing.
        if m.blocks.contains(pointee) {
            return None;
        }
        total = total.saturating_add(m.size(*pointee, 0)?);
    }
    Some(total)
}

impl Module {
    /// Records what instruction `op` with operands `w` declares; `None` for a constant it can't
    /// evaluate.
    fn instruction(&mut self, op: u32, w: &[u32], spec: &HashMap<u32, u32>) -> Option<()> {
        let at = |n: usize| w.get(n).copied();
        match op {
            // OpDecorate target SpecId id / Block
            71 if at(1) == Some(1) => {
                self.spec_ids.insert(at(0)?, at(2)?);
            }
            71 if at(1) == Some(2) => self.blocks.push(at(0)?),
            20 => self.add_type(at(0)?, Type::Bool),
            21 => self.add_type(at(0)?, Type::Int(at(1)?, at(2)? == 1)),
            22 => self.add_type(at(0)?, Type::Float(at(1)?)),
            23 => self.add_type(at(0)?, Type::Vector(at(1)?, at(2)?)),
            24 => self.add_type(at(0)?, Type::Matrix(at(1)?, at(2)?)),
            28 => self.add_type(at(0)?, Type::Array(at(1)?, at(2)?)),
            30 => self.add_type(at(0)?, Type::Struct(w.get(1..)?.to_vec())),
            32 => self.add_type(at(0)?, Type::Pointer(at(2)?)),
            // OpConstantTrue / False, OpSpecConstantTrue / False
            41 | 48 => self.bool_constant(at(1)?, true, op == 48, spec),
            42 | 49 => self.bool_constant(at(1)?, false, op == 49, spec),
            // OpConstant / OpSpecConstant: type, result, value (low word first)
            43 | 50 => {
                let (ty, id) = (at(0)?, at(1)?);
                let mut bits = at(2)? as u64 | (at(3).unwrap_or(0) as u64) << 32;
                if op == 50 {
                    if let Some(v) = self.spec_ids.get(&id).and_then(|s| spec.get(s)) {
                        bits = *v as u64;
                    }
                }
                if let Some(Type::Int(..)) = self.types.get(&ty) {
                    let v = self.truncate(ty, bits as i64);
                    self.values.insert(id, Value::Int(v));
                }
            }
            // OpConstantComposite / OpSpecConstantComposite
            44 | 51 => {
                self.values
                    .insert(at(1)?, Value::Composite(w.get(2..)?.to_vec()));
            }
            52 => {
                let (ty, id) = (at(0)?, at(1)?);
                if let Some(v) = self.evaluate(ty, at(2)?, w.get(3..)?) {
                    self.values.insert(id, v);
                }
            }
            // OpVariable type result storage
            59 if at(2) == Some(STORAGE_WORKGROUP) => self.workgroup_vars.push(at(0)?),
            _ => {}
        }
        Some(())
    }

    fn add_type(&mut self, id: u32, t: Type) {
        self.types.insert(id, t);
    }

    fn bool_constant(&mut self, id: u32, default: bool, special: bool, spec: &HashMap<u32, u32>) {
        let v = match self.spec_ids.get(&id).and_then(|s| spec.get(s)) {
            Some(v) if special => *v != 0,
            _ => default,
        };
        self.values.insert(id, Value::Bool(v));
    }

    /// `v` as the integer type `ty` holds it (wrapped to its width, sign-extended if signed).
    fn truncate(&self, ty: u32, v: i64) -> i64 {
        match self.types.get(&ty) {
            Some(Type::Int(32, true)) => v as i32 as i64,
            Some(Type::Int(32, false)) => v as u32 as i64,
            Some(Type::Int(16, true)) => v as i16 as i64,
            Some(Type::Int(16, false)) => v as u16 as i64,
            Some(Type::Int(8, true)) => v as i8 as i64,
            Some(Type::Int(8, false)) => v as u8 as i64,
            _ => v,
        }
    }

    fn int(&self, id: u32) -> Option<i64> {
        match self.values.get(&id)? {
            Value::Int(v) => Some(*v),
            _ => None,
        }
    }

    fn boolean(&self, id: u32) -> Option<bool> {
        match self.values.get(&id)? {
            Value::Bool(b) => Some(*b),
            _ => None,
        }
    }

    /// `OpSpecConstantOp` of result type `ty`: the integer and logical operations constant
    /// expressions in GLSL compile to; `None` for any other (or a division by zero).
    fn evaluate(&self, ty: u32, opcode: u32, a: &[u32]) -> Option<Value> {
        let int = |n: usize| self.int(*a.get(n)?);
        let boolean = |n: usize| self.boolean(*a.get(n)?);
        let (x, y) = (int(0), int(1));
        let u = |v: i64| v as u64;
        let wrap = |v: i64| Some(Value::Int(self.truncate(ty, v)));
        let test = |b: bool| Some(Value::Bool(b));
        match opcode {
            // SConvert, UConvert, Bitcast
            113..=114 | 124 => wrap(x?),
            126 => wrap(x?.wrapping_neg()),
            200 => wrap(!x?),
            128 => wrap(x?.wrapping_add(y?)),
            130 => wrap(x?.wrapping_sub(y?)),
            132 => wrap(x?.wrapping_mul(y?)),
            134 => wrap(u(x?).checked_div(u(y?))? as i64),
            135 => wrap(x?.checked_div(y?)?),
            137 => wrap(u(x?).checked_rem(u(y?))? as i64),
            138 => wrap(x?.checked_rem(y?)?),
            139 => {
                // SMod: the remainder takes the divisor's sign.
                let (x, y) = (x?, y?);
                let r = x.checked_rem(y)?;
                wrap(if r != 0 && (r < 0) != (y < 0) {
                    r + y
                } else {
                    r
                })
            }
            194 => match self.types.get(&ty) {
                Some(Type::Int(32, _)) => wrap(((x? as u32) >> (y? & 31)) as i64),
                _ => wrap((u(x?) >> (y? & 63)) as i64),
            },
            195 => wrap(x? >> (y? & 63)),
            196 => wrap(x? << (y? & 63)),
            197 => wrap(x? | y?),
            198 => wrap(x? ^ y?),
            199 => wrap(x? & y?),
            164 => test(boolean(0)? == boolean(1)?),
            165 => test(boolean(0)? != boolean(1)?),
            166 => test(boolean(0)? || boolean(1)?),
            167 => test(boolean(0)? && boolean(1)?),
            168 => test(!boolean(0)?),
            169 => {
                let pick = if boolean(0)? { a.get(1)? } else { a.get(2)? };
                self.values.get(pick).cloned()
            }
            170 => test(x? == y?),
            171 => test(x? != y?),
            172 => test(u(x?) > u(y?)),
            173 => test(x? > y?),
            174 => test(u(x?) >= u(y?)),
            175 => test(x? >= y?),
            176 => test(u(x?) < u(y?)),
            177 => test(x? < y?),
            178 => test(u(x?) <= u(y?)),
            179 => test(x? <= y?),
            // CompositeExtract composite index...
            81 => {
                let mut v = self.values.get(a.first()?)?.clone();
                for index in a.get(1..)? {
                    let Value::Composite(parts) = v else {
                        return None;
                    };
                    v = self.values.get(parts.get(*index as usize)?)?.clone();
                }
                Some(v)
            }
            _ => None,
        }
    }

    /// Bytes of type `id`, unpadded (`depth` guards against malformed recursive types).
    fn size(&self, id: u32, depth: u32) -> Option<u64> {
        if depth > 64 {
            return None;
        }
        Some(match self.types.get(&id)? {
            Type::Bool => 1,
            Type::Int(bits, _) | Type::Float(bits) => u64::from(*bits).div_ceil(8),
            Type::Vector(t, n) | Type::Matrix(t, n) => {
                self.size(*t, depth + 1)?.saturating_mul(u64::from(*n))
            }
            Type::Array(t, len) => {
                let len = u64::try_from(self.int(*len)?).ok()?;
                self.size(*t, depth + 1)?.saturating_mul(len)
            }
            Type::Struct(members) => {
                let mut sum = 0u64;
                for t in members {
                    sum = sum.saturating_add(self.size(*t, depth + 1)?);
                }
                sum
            }
            Type::Pointer(_) => return None,
        })
    }
}

const SPIRV_MAGIC: u32 = 0x0723_0203;

/// The driver trusts the words it is given: check what makes them a compute module vkprism can
/// use, cheaply (one pass over the words): the header (magic, a SPIR-V version up to 1.6, an id
/// bound), well-formed instructions (no zero length, none running past the end), an
/// `OpEntryPoint GLCompute "main"`, `reads_num_workgroups` set where the module decorates
/// `NumWorkgroups`, and a push-constant block exactly where the kernel declares push constants
/// (its last member starting inside the declared range). Not a full `spirv-val`: the [`crate::Kernel`] contract covers
/// the rest.
pub(crate) fn check_spirv(info: &KernelInfo, variant: &VariantInfo) -> Result<(), PipelineError> {
    let bad = |why| PipelineError::BadSpirv {
        kernel: info.name,
        variant: variant.key.name(),
        why,
    };
    check_header(variant.spirv).map_err(bad)?;
    let facts = scan_module(variant.spirv).map_err(bad)?;
    if !facts.entry {
        return Err(bad("no OpEntryPoint GLCompute named \"main\""));
    }
    if facts.num_workgroups && !variant.reads_num_workgroups {
        return Err(bad(
            "it reads gl_NumWorkGroups (BuiltIn NumWorkgroups) but the variant says it does not",
        ));
    }
    check_push_block(&facts, push_range(info)).map_err(|why| PipelineError::PushConstantsMismatch {
        kernel: info.name,
        variant: variant.key.name(),
        why,
    })
}

/// The 5-word header: magic, a version from 1.0 to 1.6, a plausible id bound, schema 0.
fn check_header(w: &[u32]) -> Result<(), &'static str> {
    if w.len() < 5 {
        return Err("shorter than the 5-word header");
    }
    if w[0] != SPIRV_MAGIC {
        return Err("no SPIR-V magic number (or words of the wrong endianness)");
    }
    let (major, minor) = ((w[1] >> 16) & 0xff, (w[1] >> 8) & 0xff);
    if major != 1 || minor > 6 || w[1] & 0xff00_00ff != 0 {
        return Err("not a SPIR-V version from 1.0 to 1.6");
    }
    let bound = w[3];
    if bound == 0 || bound > 1 << 22 || w[4] != 0 {
        return Err("an id bound of 0 or over 4194304, or a nonzero schema word");
    }
    Ok(())
}

/// What [`check_spirv`] needs to know of a module, from one pass over its instructions.
#[derive(Default)]
struct ModuleFacts {
    /// An `OpEntryPoint GLCompute "main"`.
    entry: bool,
    /// Something is decorated `BuiltIn NumWorkgroups`.
    num_workgroups: bool,
    /// (pointer id, pointee) of push-constant pointer types.
    pointers: Vec<(u32, u32)>,
    /// Pointer types of push-constant variables.
    push_vars: Vec<u32>,
    /// (struct id, member offset) of every member offset decoration.
    offsets: Vec<(u32, u32)>,
}

/// Walks the instructions after the header (`w` passed [`check_header`]).
fn scan_module(w: &[u32]) -> Result<ModuleFacts, &'static str> {
    const OP_ENTRY_POINT: u32 = 15;
    const OP_DECORATE: u32 = 71;
    const OP_MEMBER_DECORATE: u32 = 72;
    const DECORATION_BUILTIN: u32 = 11;
    const BUILTIN_NUM_WORKGROUPS: u32 = 24;
    const OP_VARIABLE: u32 = 59;
    const OP_TYPE_POINTER: u32 = 32;
    const EXECUTION_MODEL_GLCOMPUTE: u32 = 5;
    const STORAGE_CLASS_PUSH_CONSTANT: u32 = 9;
    const DECORATION_OFFSET: u32 = 35;
    let mut facts = ModuleFacts::default();
    for ins in instructions(w) {
        let (op, ins) = ins?;
        let count = ins.len();
        match op {
            // "main\0" packed little-endian: 'm' 'a' 'i' 'n', then a NUL word.
            OP_ENTRY_POINT
                if count >= 4
                    && ins[1] == EXECUTION_MODEL_GLCOMPUTE
                    && ins[3..].starts_with(&[0x6e69_616d, 0]) =>
            {
                facts.entry = true;
            }
            OP_TYPE_POINTER if count == 4 && ins[2] == STORAGE_CLASS_PUSH_CONSTANT => {
                facts.pointers.push((ins[1], ins[3]))
            }
            OP_VARIABLE if count >= 4 && ins[3] == STORAGE_CLASS_PUSH_CONSTANT => {
                facts.push_vars.push(ins[1])
            }
            OP_MEMBER_DECORATE if count >= 5 && ins[3] == DECORATION_OFFSET => {
                facts.offsets.push((ins[1], ins[4]))
            }
            OP_DECORATE
                if count >= 4
                    && ins[2] == DECORATION_BUILTIN
                    && ins[3] == BUILTIN_NUM_WORKGROUPS =>
            {
                facts.num_workgroups = true
            }
            OP_MEMBER_DECORATE
                if count >= 5
                    && ins[3] == DECORATION_BUILTIN
                    && ins[4] == BUILTIN_NUM_WORKGROUPS =>
            {
                facts.num_workgroups = true
            }
            _ => {}
        }
    }
    Ok(facts)
}

/// The instructions after a module's 5-word header: each opcode with the whole instruction
/// (its first word included), or an error at the first of length 0 or running past the end
/// (and nothing after it).
pub(crate) fn instructions(
    w: &[u32],
) -> impl Iterator<Item = Result<(u32, &[u32]), &'static str>> + '_ {
    let mut i = 5;
    std::iter::from_fn(move || {
        let first = *w.get(i)?;
        let count = (first >> 16) as usize;
        if count == 0 || i + count > w.len() {
            i = w.len();
            return Some(Err("an instruction of length 0 or running past the end"));
        }
        let ins = &w[i..i + count];
        i += count;
        Some(Ok((first & 0xffff, ins)))
    })
}

/// A push-constant block exactly where the kernel declares `range` bytes of push constants, its
/// last member starting inside them.
fn check_push_block(facts: &ModuleFacts, range: u32) -> Result<(), String> {
    let block = facts
        .pointers
        .iter()
        .find(|(ptr, _)| facts.push_vars.contains(ptr))
        .map(|(_, pointee)| *pointee);
    match (block, range) {
        (None, 0) => Ok(()),
        (Some(_), 0) => Err(
            "the SPIR-V has a push-constant block, but the kernel declares no push constants".into(),
        ),
        (None, r) => Err(format!(
            "the kernel declares {r} bytes of push constants, but the SPIR-V has no push-constant block"
        )),
        (Some(block), r) => {
            let last = facts
                .offsets
                .iter()
                .filter(|(s, _)| *s == block)
                .map(|(_, o)| *o)
                .max()
                .unwrap_or(0);
            if last >= r {
                return Err(format!(
                    "the kernel declares {r} bytes of push constants, but the SPIR-V's block has a member at byte {last}"
                ));
            }
            Ok(())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One instruction: its word count and opcode, then its operands.
    fn ins(op: u32, operands: &[u32]) -> Vec<u32> {
        let mut w = vec![((operands.len() as u32 + 1) << 16) | op];
        w.extend_from_slice(operands);
        w
    }

    /// A module with `shared float s[n * 4 + 1][2]` (n: specialization constant 7, default 16)
    /// and `shared vec4 t[3]`, plus `extra` instructions before the variables.
    fn module(extra: &[Vec<u32>]) -> Vec<u32> {
        let mut w = vec![0x0723_0203, 0x0001_0300, 0, 100, 0];
        for i in [
            ins(71, &[3, 1, 7]),         // OpDecorate %3 SpecId 7
            ins(21, &[1, 32, 1]),        // %1 = int
            ins(22, &[2, 32]),           // %2 = float
            ins(50, &[1, 3, 16]),        // %3 = OpSpecConstant int 16
            ins(43, &[1, 4, 4]),         // %4 = 4
            ins(43, &[1, 5, 1]),         // %5 = 1
            ins(52, &[1, 6, 132, 3, 4]), // %6 = n * 4
            ins(52, &[1, 8, 128, 6, 5]), // %8 = %6 + 1
            ins(43, &[1, 9, 2]),         // %9 = 2
            ins(28, &[10, 2, 9]),        // %10 = float[2]
            ins(28, &[11, 10, 8]),       // %11 = float[2][n*4+1]
            ins(32, &[12, 4, 11]),       // %12 = Workgroup pointer
            ins(23, &[13, 2, 4]),        // %13 = vec4
            ins(43, &[1, 14, 3]),        // %14 = 3
            ins(28, &[15, 13, 14]),      // %15 = vec4[3]
            ins(32, &[16, 4, 15]),       // %16 = Workgroup pointer
        ]
        .iter()
        .chain(extra)
        {
            w.extend(i);
        }
        w.extend(ins(59, &[12, 20, 4]));
        w.extend(ins(59, &[16, 21, 4]));
        w
    }

    #[test]
    fn sizes_follow_the_specialization_constants() {
        let w = module(&[]);
        // Default n = 16: 65 × 2 floats + 3 vec4s.
        assert_eq!(workgroup_bytes(&w, &[]), Some(65 * 8 + 48));
        assert_eq!(workgroup_bytes(&w, &[(7, 1000)]), Some(4001 * 8 + 48));
        // Another constant id leaves n alone.
        assert_eq!(workgroup_bytes(&w, &[(8, 1000)]), Some(65 * 8 + 48));
    }

    #[test]
    fn what_it_cannot_evaluate_is_not_checked() {
        // An array whose length is an expression it does not evaluate (OpSpecConstantOp
        // QuantizeToF16, 116): no answer rather than a guess.
        let mut opaque = module(&[
            ins(52, &[1, 30, 116, 3]),
            ins(28, &[31, 2, 30]),
            ins(32, &[32, 4, 31]),
        ]);
        opaque.extend(ins(59, &[32, 33, 4]));
        assert_eq!(workgroup_bytes(&opaque, &[]), None);
        // An instruction running past the end of the words.
        let whole = module(&[]);
        assert_eq!(workgroup_bytes(&whole[..whole.len() - 1], &[]), None);
        // A Block-decorated Workgroup struct (explicit layout, may alias): not summed.
        let aliased = module(&[
            ins(71, &[40, 2]),
            ins(30, &[40, 2]),
            ins(32, &[41, 4, 40]),
            ins(59, &[41, 42, 4]),
        ]);
        assert_eq!(workgroup_bytes(&aliased, &[]), None);
        // No Workgroup variable at all.
        assert_eq!(
            workgroup_bytes(&[0x0723_0203, 0x0001_0300, 0, 10, 0], &[]),
            Some(0)
        );
    }

    #[test]
    fn spirv_checks_refuse_what_is_not_a_compute_module() {
        use vkprism_core::{FloatMode, VariantKey};
        fn check(words: &'static [u32], push: Option<u32>) -> Result<(), PipelineError> {
            let variants: &'static [VariantInfo] = Box::leak(Box::new([VariantInfo {
                key: VariantKey::new(FloatMode::Fp32),
                spirv: words,
                bindings: &[],
                cooperative_matrices: &[],
                device_facts: &[],
                reads_num_workgroups: false,
                vulkan_version: vkprism_core::api_version(1, 1),
                capabilities_require: vkprism_core::FeatureSet::EMPTY,
                tested_facts: &[],
            }]));
            let info = KernelInfo {
                name: "k",
                variants,
                push_constants: push.map(|size| vkprism_core::PushConstantInfo { size }),
                spec_constants: &[],
                local_size: [vkprism_core::LocalSizeDim {
                    default: 1,
                    spec_id: None,
                }; 3],
            };
            check_spirv(&info, &variants[0])
        }
        fn leak(w: Vec<u32>) -> &'static [u32] {
            Box::leak(w.into_boxed_slice())
        }
        let header = vec![SPIRV_MAGIC, 0x0001_0300, 0, 100, 0];
        // OpEntryPoint GLCompute %1 "main" (count 5: opcode word, model, id, "main", NUL).
        let entry = [(5 << 16) | 15, 5, 1, 0x6e69_616d, 0];
        let why = |r: Result<(), PipelineError>| match r {
            Err(PipelineError::BadSpirv { why, .. }) => why,
            other => panic!("{other:?}"),
        };
        let mut ok = header.clone();
        ok.extend(entry);
        assert!(check(leak(ok.clone()), None).is_ok());
        assert!(why(check(leak(header.clone()), None)).contains("OpEntryPoint"));
        let mut v = ok.clone();
        v[1] = 0x0002_0000;
        assert!(why(check(leak(v), None)).contains("version"));
        let mut v = ok.clone();
        v[3] = 0;
        assert!(why(check(leak(v), None)).contains("bound"));
        let mut v = ok.clone();
        v.push(9 << 16);
        assert!(why(check(leak(v), None)).contains("past the end"));
        let mut v = ok.clone();
        v[5] = (5 << 16) | 15;
        v[8] = 0x6e69_616e; // "nain"
        assert!(why(check(leak(v), None)).contains("OpEntryPoint"));
        // Reads gl_NumWorkGroups without saying so.
        let mut v = ok.clone();
        v.extend([(4 << 16) | 71, 7, 11, 24]);
        assert!(why(check(leak(v), None)).contains("gl_NumWorkGroups"));
        // Push constants declared but no block in the module.
        assert!(matches!(
            check(leak(ok), Some(16)),
            Err(PipelineError::PushConstantsMismatch { .. })
        ));
    }
}
