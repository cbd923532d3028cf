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

use std::collections::HashMap;

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

/// Bytes of Workgroup storage the module `words` declares with the specialization constants
/// `spec` ((constant id, value) pairs, 32-bit), or `None` where it can't tell.
pub fn workgroup_bytes(words: &[u32], spec: &[(u32, u32)]) -> Option<u64> {
    let spec: HashMap<u32, u32> = spec.iter().copied().collect();
    let mut m = Module::default();
    for ins in crate::pipeline::instructions(words) {
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

#[cfg(test)]
mod tests {
    use super::workgroup_bytes;

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
}
