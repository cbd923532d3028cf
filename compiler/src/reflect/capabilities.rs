//! What a module's `OpCapability` declarations need of the device. A variant's key already says
//! what its switches enable (16-bit storage in fp16s, matrices in `_cm`); the module says what the
//! kernel enabled itself: an `#extension` outside any `#if` (ncnn's cooperative-matrix-only
//! kernels), subgroup operations, integer dot products. The runtime requires both.

use super::coopmat::instructions;
use vkprism_core::{Feature, FeatureSet};

/// `OpCapability`'s opcode.
const OP_CAPABILITY: u32 = 17;

/// The feature a SPIR-V capability needs, for those whose feature vkprism knows; the rest need
/// nothing beyond Vulkan 1.1 (`Shader`, `Matrix`, ...) or a feature vkprism doesn't track, which
/// the validation layer reports at pipeline creation.
fn feature(capability: u32) -> Option<Feature> {
    Some(match capability {
        9 => Feature::ShaderFloat16,
        11 => Feature::ShaderInt64,
        22 => Feature::ShaderInt16,
        39 => Feature::ShaderInt8,
        61 => Feature::SubgroupBasic,
        62 => Feature::SubgroupVote,
        63 => Feature::SubgroupArithmetic,
        64 => Feature::SubgroupBallot,
        65 => Feature::SubgroupShuffle,
        66 => Feature::SubgroupShuffleRelative,
        67 => Feature::SubgroupClustered,
        68 => Feature::SubgroupQuad,
        4433 => Feature::StorageBuffer16BitAccess,
        4434 => Feature::UniformAndStorageBuffer16BitAccess,
        4448 => Feature::StorageBuffer8BitAccess,
        5116 => Feature::ShaderBFloat16Type,
        5118 => Feature::ShaderBFloat16CooperativeMatrix,
        5357 => Feature::CooperativeMatrixNv,
        5430 => Feature::CooperativeMatrixReductions,
        5431 => Feature::CooperativeMatrixConversions,
        5432 => Feature::CooperativeMatrixPerElementOperations,
        // CooperativeMatrixTensorAddressingNV, and SPV_NV_tensor_addressing's TensorAddressingNV
        // (its tensor layouts and views), which Vulkan ties to the same feature.
        5433 | 5439 => Feature::CooperativeMatrixTensorAddressing,
        5434 => Feature::CooperativeMatrixBlockLoads,
        // DotProductInputAll, DotProductInput4x8Bit, DotProductInput4x8BitPacked, DotProduct.
        6016..=6019 => Feature::IntegerDotProduct,
        6022 => Feature::CooperativeMatrix,
        _ => return None,
    })
}

/// The features the capabilities declared in `words` need.
pub fn required_features(words: &[u32]) -> FeatureSet {
    instructions(words)
        .filter(|inst| inst.first().map(|w| w & 0xffff) == Some(OP_CAPABILITY))
        .filter_map(|inst| feature(*inst.get(1)?))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn capabilities_map_to_features() {
        let header = [0x0723_0203, 0x0001_0300, 0, 100, 0];
        let capability = |c: u32| [(2 << 16) | OP_CAPABILITY, c];
        let mut words = header.to_vec();
        for c in [1, 9, 61, 63, 6018, 6022, 5432, 5439] {
            words.extend(capability(c));
        }
        let set = required_features(&words);
        assert_eq!(
            set,
            FeatureSet::from_slice(&[
                Feature::ShaderFloat16,
                Feature::SubgroupBasic,
                Feature::SubgroupArithmetic,
                Feature::IntegerDotProduct,
                Feature::CooperativeMatrix,
                Feature::CooperativeMatrixPerElementOperations,
                Feature::CooperativeMatrixTensorAddressing,
            ])
        );
        assert!(required_features(&header).is_empty());
    }
}
