//! Device facts a kernel reads at run time: ncnn's `ncnn_subgroupSize`, `ncnn_vendorID`, ... and
//! its feature booleans (`ncnn_shaderInt64`), which ncnn defines as macros because it compiles
//! its kernels on the device. vkprism compiles at build time, so each is a specialization
//! constant with an id of its own, which the runtime fills from the device when it creates a
//! pipeline. In `#if` they can't work (the preprocessor runs at build time): the compiler
//! refuses that use.

use crate::Feature;

/// One fact about the device a pipeline is created on, read by a kernel as an `int`
/// specialization constant (`ncnn_<name>`, ncnn's spelling).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum DeviceFact {
    /// `ncnn_subgroupSize`: the pipeline's subgroup size (the required one where the pipeline
    /// asks for one, else the device's default).
    SubgroupSize,
    /// `ncnn_vendorID`: `VkPhysicalDeviceProperties::vendorID` (0x10DE NVIDIA, 0x1002 AMD, ...).
    VendorId,
    /// `ncnn_deviceID`: `VkPhysicalDeviceProperties::deviceID`.
    DeviceId,
    /// `ncnn_driverID`: `VkPhysicalDeviceDriverProperties::driverID` (`VkDriverId`; 0 before
    /// Vulkan 1.2).
    DriverId,
    /// `ncnn_<feature>`: 1 when the device supports the feature, else 0.
    Supports(Feature),
}

/// The specialization-constant id of the first device fact; the rest follow in
/// [`DeviceFact::ALL`] order (ids 236 to 250, after the workgroup size's 233 to 235).
pub const FIRST_DEVICE_FACT_ID: u32 = 236;

impl DeviceFact {
    /// Every device fact, in id order.
    pub const ALL: [DeviceFact; 15] = [
        DeviceFact::SubgroupSize,
        DeviceFact::VendorId,
        DeviceFact::DeviceId,
        DeviceFact::DriverId,
        DeviceFact::Supports(Feature::StorageBuffer16BitAccess),
        DeviceFact::Supports(Feature::UniformAndStorageBuffer16BitAccess),
        DeviceFact::Supports(Feature::ShaderFloat16),
        DeviceFact::Supports(Feature::StorageBuffer8BitAccess),
        DeviceFact::Supports(Feature::ShaderInt8),
        DeviceFact::Supports(Feature::ShaderInt16),
        DeviceFact::Supports(Feature::ShaderInt64),
        DeviceFact::Supports(Feature::ShaderBFloat16Type),
        DeviceFact::Supports(Feature::CooperativeMatrix),
        DeviceFact::Supports(Feature::SubgroupSizeControl),
        DeviceFact::Supports(Feature::IntegerDotProduct),
    ];

    /// The GLSL name (`ncnn_subgroupSize`, `ncnn_shaderInt64`).
    pub const fn glsl_name(self) -> &'static str {
        match self {
            DeviceFact::SubgroupSize => "ncnn_subgroupSize",
            DeviceFact::VendorId => "ncnn_vendorID",
            DeviceFact::DeviceId => "ncnn_deviceID",
            DeviceFact::DriverId => "ncnn_driverID",
            DeviceFact::Supports(f) => match f {
                Feature::StorageBuffer16BitAccess => "ncnn_storageBuffer16BitAccess",
                Feature::UniformAndStorageBuffer16BitAccess => {
                    "ncnn_uniformAndStorageBuffer16BitAccess"
                }
                Feature::ShaderFloat16 => "ncnn_shaderFloat16",
                Feature::StorageBuffer8BitAccess => "ncnn_storageBuffer8BitAccess",
                Feature::ShaderInt8 => "ncnn_shaderInt8",
                Feature::ShaderInt16 => "ncnn_shaderInt16",
                Feature::ShaderInt64 => "ncnn_shaderInt64",
                Feature::ShaderBFloat16Type => "ncnn_shaderBFloat16Type",
                Feature::CooperativeMatrix => "ncnn_cooperativeMatrix",
                Feature::SubgroupSizeControl => "ncnn_subgroupSizeControl",
                Feature::IntegerDotProduct => "ncnn_shaderIntegerDotProduct",
                // Not in ALL (no id left: 236 to 250 are taken): preprocessor facts only
                // (`tested.rs`).
                Feature::SubgroupBasic => "ncnn_subgroup_basic",
                Feature::SubgroupVote => "ncnn_subgroup_vote",
                Feature::SubgroupArithmetic => "ncnn_subgroup_arithmetic",
                Feature::SubgroupBallot => "ncnn_subgroup_ballot",
                Feature::SubgroupShuffle => "ncnn_subgroup_shuffle",
                Feature::SubgroupShuffleRelative => "ncnn_subgroup_shuffle_relative",
                Feature::SubgroupClustered => "ncnn_subgroup_clustered",
                Feature::SubgroupQuad => "ncnn_subgroup_quad",
                Feature::ShaderSubgroupExtendedTypes => "ncnn_shaderSubgroupExtendedTypes",
                Feature::IntegerDotProduct4x8BitPackedSignedAccelerated => {
                    "ncnn_integerDotProduct4x8BitPackedSignedAccelerated"
                }
                Feature::IntegerDotProduct16BitSignedAccelerated => {
                    "ncnn_integerDotProduct16BitSignedAccelerated"
                }
                // Not facts ncnn names: not a Vulkan feature (image formats), or one vkprism
                // never reports.
                Feature::ShaderBFloat16CooperativeMatrix
                | Feature::ImageFormatsFp32
                | Feature::ImageFormatsFp16
                | Feature::CooperativeMatrixNv
                | Feature::CooperativeMatrixWorkgroupScope
                | Feature::CooperativeMatrixFlexibleDimensions
                | Feature::CooperativeMatrixReductions
                | Feature::CooperativeMatrixConversions
                | Feature::CooperativeMatrixPerElementOperations
                | Feature::CooperativeMatrixTensorAddressing
                | Feature::CooperativeMatrixBlockLoads => "",
            },
        }
    }

    /// The fact named `name` in GLSL.
    pub fn from_glsl_name(name: &str) -> Option<DeviceFact> {
        DeviceFact::ALL.into_iter().find(|f| f.glsl_name() == name)
    }

    /// Its specialization-constant id.
    pub fn spec_id(self) -> u32 {
        let index = DeviceFact::ALL
            .iter()
            .position(|f| *f == self)
            .unwrap_or(DeviceFact::ALL.len());
        FIRST_DEVICE_FACT_ID + index as u32
    }

    /// The fact whose specialization-constant id is `id`.
    pub fn from_spec_id(id: u32) -> Option<DeviceFact> {
        let index = id.checked_sub(FIRST_DEVICE_FACT_ID)?;
        DeviceFact::ALL.get(index as usize).copied()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_ids_round_trip() {
        for (k, fact) in DeviceFact::ALL.into_iter().enumerate() {
            assert!(fact.glsl_name().starts_with("ncnn_"), "{fact:?}");
            assert_eq!(DeviceFact::from_glsl_name(fact.glsl_name()), Some(fact));
            assert_eq!(fact.spec_id(), 236 + k as u32);
            assert_eq!(DeviceFact::from_spec_id(fact.spec_id()), Some(fact));
        }
        assert_eq!(DeviceFact::from_spec_id(235), None);
        assert_eq!(DeviceFact::from_spec_id(251), None);
        assert_eq!(
            DeviceFact::from_glsl_name("ncnn_shaderInt64"),
            Some(DeviceFact::Supports(Feature::ShaderInt64))
        );
    }
}
