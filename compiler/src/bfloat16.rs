//! Phase 5, compile: bf16 cooperative-matrix variants. glslang 13 (the newest this project can
//! install) has no `bfloat16_t`, so a bf16 `_cm` variant's matrix operands are written `cmfp`,
//! which the preamble defines as `float16_t`, and its SPIR-V is retyped here: the 16-bit float
//! type becomes `OpTypeFloat 16 BFloat16KHR` (SPV_KHR_bfloat16), `Float16` gives way to
//! `BFloat16TypeKHR` + `BFloat16CooperativeMatrixKHR`.
//!
//! This is sound only where no fp16 value is computed: a bf16 module may load, store, copy,
//! convert and multiply-add bfloat16 matrices, and nothing else (SPV_KHR_bfloat16 allows no
//! arithmetic on them either). So the module is checked first: the 16-bit float may be the
//! component of cooperative matrices and nothing else, and a matrix of it may only come from a
//! load, a copy or a conversion. Anything else is an error, never a silent change of meaning.
//! The octets the library's kernels stage are the same bytes in either format (`gemm_core.glsl`
//! moves them as `uvec4`s), which is why the retyped module computes in bfloat16.

use crate::reflect::coopmat::{self, instructions, OP_CAPABILITY, OP_TYPE_FLOAT};
use rspirv::dr::{Instruction, Operand};
use rspirv::spirv::Op;
use std::collections::HashSet;

const OP_EXTENSION: u32 = 10;
const CAPABILITY_FLOAT16: u32 = 9;
const CAPABILITY_BFLOAT16_TYPE: u32 = 5116;
const CAPABILITY_BFLOAT16_COOPERATIVE_MATRIX: u32 = 5118;
const EXTENSION: &str = "SPV_KHR_bfloat16";

/// Instructions that may produce a bfloat16 matrix: they move or convert it, never compute in it.
const MATRIX_PRODUCERS: [Op; 8] = [
    Op::CooperativeMatrixLoadKHR,
    Op::Load,
    Op::Phi,
    Op::CopyObject,
    Op::Undef,
    Op::ConstantNull,
    Op::CompositeExtract,
    Op::FConvert,
];

/// The module `words` (glslang's output for a bf16 `_cm` variant) with its 16-bit floats made
/// bfloat16; unchanged when it declares none. The error says which instruction uses `cmfp`
/// outside matrix operands.
pub fn retype(words: &[u32]) -> Result<Vec<u32>, String> {
    let halves = half_types(words);
    if halves.is_empty() {
        return Ok(words.to_vec());
    }
    check(words, &halves)?;
    Ok(rewrite(words, &halves))
}

/// The ids of the module's `OpTypeFloat 16` (no encoding: IEEE half).
fn half_types(words: &[u32]) -> HashSet<u32> {
    instructions(words)
        .filter(|i| i[0] == (3 << 16 | OP_TYPE_FLOAT) && i[2] == 16)
        .map(|i| i[1])
        .collect()
}

/// Refuses a module that uses a 16-bit float other than as a matrix component, or makes a
/// matrix of one other than by moving or converting it.
fn check(words: &[u32], halves: &HashSet<u32>) -> Result<(), String> {
    let module = coopmat::load_module(words)?;
    let matrices: HashSet<u32> = module
        .types_global_values
        .iter()
        .filter(|i| i.class.opcode == Op::TypeCooperativeMatrixKHR)
        .filter(|i| matches!(i.operands.first(), Some(Operand::IdRef(c)) if halves.contains(c)))
        .filter_map(|i| i.result_id)
        .collect();
    let functions = module
        .functions
        .iter()
        .flat_map(|f| f.blocks.iter().flat_map(|b| &b.instructions));
    for inst in module.types_global_values.iter().chain(functions) {
        if uses_half(inst, halves) {
            return Err(refusal(inst, "a 16-bit float value"));
        }
        let makes_matrix = inst.result_type.is_some_and(|t| matrices.contains(&t));
        if makes_matrix && !MATRIX_PRODUCERS.contains(&inst.class.opcode) {
            return Err(refusal(inst, "arithmetic on a `cmfp` matrix"));
        }
    }
    Ok(())
}

/// Whether `inst` has a 16-bit float as its result type or an operand, other than as the
/// component of a cooperative-matrix type.
fn uses_half(inst: &Instruction, halves: &HashSet<u32>) -> bool {
    if inst.class.opcode == Op::TypeCooperativeMatrixKHR {
        return false;
    }
    inst.result_type.is_some_and(|t| halves.contains(&t))
        || inst
            .operands
            .iter()
            .any(|o| matches!(o, Operand::IdRef(id) if halves.contains(id)))
}

fn refusal(inst: &Instruction, what: &str) -> String {
    format!(
        "the bf16 cooperative-matrix variant has {what} (`Op{:?}`): in bf16 `_cm` variants `cmfp` \
         may only be the component type of cooperative matrices that are loaded, stored, copied, \
         converted and multiplied (glslang 13 has no `bfloat16_t`, so vkprism retypes `cmfp` \
         matrices to bfloat16, which has no arithmetic); compute in fp32 and convert",
        inst.class.opcode
    )
}

/// `words` with each half type given the `BFloat16KHR` encoding, the `Float16` capability
/// replaced by the two bfloat16 capabilities, and `SPV_KHR_bfloat16` declared.
fn rewrite(words: &[u32], halves: &HashSet<u32>) -> Vec<u32> {
    let mut out = Vec::with_capacity(words.len() + 16);
    out.extend_from_slice(&words[..5]);
    let mut declared = false;
    for inst in instructions(words) {
        let opcode = inst[0] & 0xffff;
        if !declared && opcode != OP_CAPABILITY {
            // Capabilities come first in a module, then extensions: this is the boundary.
            for c in [
                CAPABILITY_BFLOAT16_TYPE,
                CAPABILITY_BFLOAT16_COOPERATIVE_MATRIX,
            ] {
                out.extend_from_slice(&[2 << 16 | OP_CAPABILITY, c]);
            }
            let name = string_words(EXTENSION);
            out.push(((1 + name.len() as u32) << 16) | OP_EXTENSION);
            out.extend(name);
            declared = true;
        }
        match inst {
            [w, CAPABILITY_FLOAT16] if *w == 2 << 16 | OP_CAPABILITY => {}
            [w, id, 16] if *w == 3 << 16 | OP_TYPE_FLOAT && halves.contains(id) => {
                out.extend_from_slice(&[
                    4 << 16 | OP_TYPE_FLOAT,
                    *id,
                    16,
                    coopmat::FP_ENCODING_BFLOAT16,
                ]);
            }
            _ => out.extend_from_slice(inst),
        }
    }
    out
}

/// A SPIR-V literal string: UTF-8, nul-terminated, padded to whole little-endian words.
fn string_words(s: &str) -> Vec<u32> {
    let mut bytes = s.as_bytes().to_vec();
    bytes.push(0);
    while !bytes.len().is_multiple_of(4) {
        bytes.push(0);
    }
    bytes
        .chunks(4)
        .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn malformed_streams_end_the_walk_instead_of_panicking() {
        let header = [0x0723_0203, 0x0001_0000, 0, 8, 0];
        // OpCapability Shader, then a word count of 0, then one past the end.
        let words: Vec<u32> = header.iter().copied().chain([2 << 16 | 17, 1, 0]).collect();
        assert_eq!(instructions(&words).count(), 1);
        let words: Vec<u32> = header.iter().copied().chain([9 << 16 | 17, 1]).collect();
        assert_eq!(instructions(&words).count(), 0);
        assert!(
            retype(&words).is_ok_and(|w| w == words),
            "no half type: unchanged"
        );
        assert_eq!(instructions(&header[..3]).count(), 0);
    }

    #[test]
    fn strings_are_nul_terminated_words() {
        assert_eq!(string_words("abc"), vec![u32::from_le_bytes(*b"abc\0")]);
        assert_eq!(string_words("abcd"), vec![u32::from_le_bytes(*b"abcd"), 0]);
    }
}
