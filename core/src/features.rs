//! Device features as data: [`Feature`], a [`FeatureSet`] of them, and [`DeviceFeatures`]
//! (features plus [`DeviceLimits`]). The compiler writes what each variant needs; the runtime
//! (`vkprism-runtime`'s `device/features.rs` and `device/properties.rs`) fills what a device
//! offers; tests build them by hand. No Vulkan here.

use crate::{CoopMatShapes, WorkgroupMatrixShapes};
use std::fmt;

/// One device capability that a kernel variant may need.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(u8)]
pub enum Feature {
    /// `storageBuffer16BitAccess`: 16-bit types in storage buffers (fp16 / bf16 storage).
    StorageBuffer16BitAccess = 0,
    /// `uniformAndStorageBuffer16BitAccess`.
    UniformAndStorageBuffer16BitAccess,
    /// `shaderFloat16`: fp16 arithmetic.
    ShaderFloat16,
    /// `storageBuffer8BitAccess`: 8-bit types in storage buffers.
    StorageBuffer8BitAccess,
    /// `shaderInt8`: int8 arithmetic.
    ShaderInt8,
    /// `shaderInt16`.
    ShaderInt16,
    /// `shaderInt64`.
    ShaderInt64,
    /// `shaderBFloat16Type` (VK_KHR_shader_bfloat16).
    ShaderBFloat16Type,
    /// `shaderBFloat16CooperativeMatrix` (VK_KHR_shader_bfloat16): bfloat16 operands of
    /// cooperative matrices.
    ShaderBFloat16CooperativeMatrix,
    /// `cooperativeMatrix` (VK_KHR_cooperative_matrix).
    CooperativeMatrix,
    /// `subgroupSizeControl` + `computeFullSubgroups`.
    SubgroupSizeControl,
    /// `shaderIntegerDotProduct`.
    IntegerDotProduct,
    /// r32f and rgba32f usable as sampled and storage images (image variants in fp32).
    ImageFormatsFp32,
    /// r16f and rgba16f usable as sampled and storage images (image variants in fp16).
    ImageFormatsFp16,
    /// Basic subgroup operations in compute shaders (`VkPhysicalDeviceSubgroupProperties::
    /// supportedOperations` and `supportedStages`).
    SubgroupBasic,
    /// Subgroup vote operations in compute shaders.
    SubgroupVote,
    /// Subgroup arithmetic operations in compute shaders.
    SubgroupArithmetic,
    /// Subgroup ballot operations in compute shaders.
    SubgroupBallot,
    /// Subgroup shuffle operations in compute shaders.
    SubgroupShuffle,
    /// Relative subgroup shuffle operations in compute shaders.
    SubgroupShuffleRelative,
    /// Clustered subgroup operations in compute shaders.
    SubgroupClustered,
    /// Quad subgroup operations in compute shaders.
    SubgroupQuad,
    /// `shaderSubgroupExtendedTypes`: subgroup operations on 8/16/64-bit types.
    ShaderSubgroupExtendedTypes,
    /// `integerDotProduct4x8BitPackedSignedAccelerated` (a property of
    /// `shaderIntegerDotProduct`): the packed signed int8 dot product is fast.
    IntegerDotProduct4x8BitPackedSignedAccelerated,
    /// `integerDotProduct16BitSignedAccelerated`: the signed int16 dot product is fast.
    IntegerDotProduct16BitSignedAccelerated,
    /// `cooperativeMatrix` of `VK_NV_cooperative_matrix`, which the runtime neither reports nor
    /// enables (`VK_KHR_cooperative_matrix` supersedes it): a module that declares the NV
    /// capability is never selected.
    CooperativeMatrixNv,
    /// `cooperativeMatrixWorkgroupScope` (VK_NV_cooperative_matrix2): cooperative matrices
    /// shared by a whole workgroup.
    CooperativeMatrixWorkgroupScope,
    /// `cooperativeMatrixFlexibleDimensions` (VK_NV_cooperative_matrix2): matrix sizes that are
    /// multiples of the device's granularity rather than its listed shapes.
    CooperativeMatrixFlexibleDimensions,
    /// `cooperativeMatrixReductions` (VK_NV_cooperative_matrix2).
    CooperativeMatrixReductions,
    /// `cooperativeMatrixConversions` (VK_NV_cooperative_matrix2).
    CooperativeMatrixConversions,
    /// `cooperativeMatrixPerElementOperations` (VK_NV_cooperative_matrix2): a function applied
    /// to every element with its row and column.
    CooperativeMatrixPerElementOperations,
    /// `cooperativeMatrixTensorAddressing` (VK_NV_cooperative_matrix2): loads and stores through
    /// tensor layouts, clamped at the tensor's edges.
    CooperativeMatrixTensorAddressing,
    /// `cooperativeMatrixBlockLoads` (VK_NV_cooperative_matrix2).
    CooperativeMatrixBlockLoads,
}

impl Feature {
    /// Every feature, in declaration order.
    pub const ALL: [Feature; 33] = [
        Feature::StorageBuffer16BitAccess,
        Feature::UniformAndStorageBuffer16BitAccess,
        Feature::ShaderFloat16,
        Feature::StorageBuffer8BitAccess,
        Feature::ShaderInt8,
        Feature::ShaderInt16,
        Feature::ShaderInt64,
        Feature::ShaderBFloat16Type,
        Feature::ShaderBFloat16CooperativeMatrix,
        Feature::CooperativeMatrix,
        Feature::SubgroupSizeControl,
        Feature::IntegerDotProduct,
        Feature::ImageFormatsFp32,
        Feature::ImageFormatsFp16,
        Feature::SubgroupBasic,
        Feature::SubgroupVote,
        Feature::SubgroupArithmetic,
        Feature::SubgroupBallot,
        Feature::SubgroupShuffle,
        Feature::SubgroupShuffleRelative,
        Feature::SubgroupClustered,
        Feature::SubgroupQuad,
        Feature::ShaderSubgroupExtendedTypes,
        Feature::IntegerDotProduct4x8BitPackedSignedAccelerated,
        Feature::IntegerDotProduct16BitSignedAccelerated,
        Feature::CooperativeMatrixNv,
        Feature::CooperativeMatrixWorkgroupScope,
        Feature::CooperativeMatrixFlexibleDimensions,
        Feature::CooperativeMatrixReductions,
        Feature::CooperativeMatrixConversions,
        Feature::CooperativeMatrixPerElementOperations,
        Feature::CooperativeMatrixTensorAddressing,
        Feature::CooperativeMatrixBlockLoads,
    ];

    /// The features of `VK_NV_cooperative_matrix2`, in the order of its feature struct.
    pub const COOPERATIVE_MATRIX2: [Feature; 7] = [
        Feature::CooperativeMatrixWorkgroupScope,
        Feature::CooperativeMatrixFlexibleDimensions,
        Feature::CooperativeMatrixReductions,
        Feature::CooperativeMatrixConversions,
        Feature::CooperativeMatrixPerElementOperations,
        Feature::CooperativeMatrixTensorAddressing,
        Feature::CooperativeMatrixBlockLoads,
    ];

    /// The subgroup operations, in `VkSubgroupFeatureFlagBits` order (bit 0 basic, ..., bit 7
    /// quad).
    pub const SUBGROUP_OPERATIONS: [Feature; 8] = [
        Feature::SubgroupBasic,
        Feature::SubgroupVote,
        Feature::SubgroupArithmetic,
        Feature::SubgroupBallot,
        Feature::SubgroupShuffle,
        Feature::SubgroupShuffleRelative,
        Feature::SubgroupClustered,
        Feature::SubgroupQuad,
    ];

    /// The name Vulkan gives the feature (or the condition, for image formats).
    pub const fn vulkan_name(self) -> &'static str {
        match self {
            Feature::StorageBuffer16BitAccess => "storageBuffer16BitAccess",
            Feature::UniformAndStorageBuffer16BitAccess => "uniformAndStorageBuffer16BitAccess",
            Feature::ShaderFloat16 => "shaderFloat16",
            Feature::StorageBuffer8BitAccess => "storageBuffer8BitAccess",
            Feature::ShaderInt8 => "shaderInt8",
            Feature::ShaderInt16 => "shaderInt16",
            Feature::ShaderInt64 => "shaderInt64",
            Feature::ShaderBFloat16Type => "shaderBFloat16Type",
            Feature::ShaderBFloat16CooperativeMatrix => "shaderBFloat16CooperativeMatrix",
            Feature::CooperativeMatrix => "cooperativeMatrix",
            Feature::SubgroupSizeControl => "subgroupSizeControl",
            Feature::IntegerDotProduct => "shaderIntegerDotProduct",
            Feature::ImageFormatsFp32 => "r32f/rgba32f sampled+storage images",
            Feature::ImageFormatsFp16 => "r16f/rgba16f sampled+storage images",
            Feature::SubgroupBasic => "subgroup basic operations",
            Feature::SubgroupVote => "subgroup vote operations",
            Feature::SubgroupArithmetic => "subgroup arithmetic operations",
            Feature::SubgroupBallot => "subgroup ballot operations",
            Feature::SubgroupShuffle => "subgroup shuffle operations",
            Feature::SubgroupShuffleRelative => "subgroup relative shuffle operations",
            Feature::SubgroupClustered => "subgroup clustered operations",
            Feature::SubgroupQuad => "subgroup quad operations",
            Feature::ShaderSubgroupExtendedTypes => "shaderSubgroupExtendedTypes",
            Feature::IntegerDotProduct4x8BitPackedSignedAccelerated => {
                "integerDotProduct4x8BitPackedSignedAccelerated"
            }
            Feature::IntegerDotProduct16BitSignedAccelerated => {
                "integerDotProduct16BitSignedAccelerated"
            }
            Feature::CooperativeMatrixNv => "VK_NV_cooperative_matrix",
            Feature::CooperativeMatrixWorkgroupScope => "cooperativeMatrixWorkgroupScope",
            Feature::CooperativeMatrixFlexibleDimensions => "cooperativeMatrixFlexibleDimensions",
            Feature::CooperativeMatrixReductions => "cooperativeMatrixReductions",
            Feature::CooperativeMatrixConversions => "cooperativeMatrixConversions",
            Feature::CooperativeMatrixPerElementOperations => {
                "cooperativeMatrixPerElementOperations"
            }
            Feature::CooperativeMatrixTensorAddressing => "cooperativeMatrixTensorAddressing",
            Feature::CooperativeMatrixBlockLoads => "cooperativeMatrixBlockLoads",
        }
    }
}

impl fmt::Display for Feature {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.vulkan_name())
    }
}

/// A set of [`Feature`]s (a bit set; `Copy`, usable in `const` contexts).
#[derive(Copy, Clone, Default, PartialEq, Eq, Hash)]
pub struct FeatureSet(u64);

impl FeatureSet {
    /// The empty set.
    pub const EMPTY: FeatureSet = FeatureSet(0);

    /// The set holding exactly `features`.
    pub const fn from_slice(features: &[Feature]) -> FeatureSet {
        let mut bits = 0;
        let mut i = 0;
        while i < features.len() {
            bits |= 1u64 << features[i] as u8;
            i += 1;
        }
        FeatureSet(bits)
    }

    /// Every feature vkprism knows.
    pub const fn all() -> FeatureSet {
        FeatureSet::from_slice(&Feature::ALL)
    }

    /// Whether `f` is in the set.
    pub const fn contains(self, f: Feature) -> bool {
        self.0 & (1u64 << f as u8) != 0
    }

    /// Whether every feature of `other` is in the set.
    pub const fn contains_all(self, other: FeatureSet) -> bool {
        self.0 & other.0 == other.0
    }

    /// The set plus `f`.
    pub const fn with(self, f: Feature) -> FeatureSet {
        FeatureSet(self.0 | (1u64 << f as u8))
    }

    /// The set less `f`.
    pub const fn without(self, f: Feature) -> FeatureSet {
        FeatureSet(self.0 & !(1u64 << f as u8))
    }

    /// Adds `f`.
    pub fn insert(&mut self, f: Feature) {
        *self = self.with(f);
    }

    /// Features in either set.
    pub const fn union(self, other: FeatureSet) -> FeatureSet {
        FeatureSet(self.0 | other.0)
    }

    /// The features of `self` that `other` lacks.
    pub const fn difference(self, other: FeatureSet) -> FeatureSet {
        FeatureSet(self.0 & !other.0)
    }

    /// Whether the set is empty.
    pub const fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// The features in the set, in declaration order.
    pub fn iter(self) -> impl Iterator<Item = Feature> {
        Feature::ALL.into_iter().filter(move |f| self.contains(*f))
    }
}

impl FromIterator<Feature> for FeatureSet {
    fn from_iter<I: IntoIterator<Item = Feature>>(iter: I) -> Self {
        let mut s = FeatureSet::EMPTY;
        for f in iter {
            s.insert(f);
        }
        s
    }
}

impl fmt::Debug for FeatureSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_set().entries(self.iter()).finish()
    }
}

impl fmt::Display for FeatureSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.is_empty() {
            return f.write_str("(none)");
        }
        let names: Vec<_> = self.iter().map(Feature::vulkan_name).collect();
        f.write_str(&names.join(", "))
    }
}

/// The limits the runtime checks before it asks the driver for something it would refuse.
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct DeviceLimits {
    /// `maxComputeWorkGroupCount`.
    pub max_compute_work_group_count: [u32; 3],
    /// `maxComputeWorkGroupSize`.
    pub max_compute_work_group_size: [u32; 3],
    /// `maxComputeWorkGroupInvocations`.
    pub max_compute_work_group_invocations: u32,
    /// `maxComputeSharedMemorySize` (bytes).
    pub max_compute_shared_memory_size: u32,
    /// `maxStorageBufferRange` (bytes).
    pub max_storage_buffer_range: u64,
    /// `maxUniformBufferRange` (bytes).
    pub max_uniform_buffer_range: u64,
    /// `maxMemoryAllocationSize` (bytes).
    pub max_memory_allocation_size: u64,
    /// `maxPushConstantsSize` (bytes).
    pub max_push_constants_size: u32,
    /// `maxImageDimension1D`.
    pub max_image_dimension_1d: u32,
    /// `maxImageDimension2D`.
    pub max_image_dimension_2d: u32,
    /// `maxImageDimension3D`.
    pub max_image_dimension_3d: u32,
    /// The default subgroup size.
    pub subgroup_size: u32,
    /// The smallest subgroup size a pipeline may require (with `subgroupSizeControl`); 0 when
    /// unknown.
    pub min_subgroup_size: u32,
    /// The largest subgroup size a pipeline may require; 0 when unknown.
    pub max_subgroup_size: u32,
    /// Nanoseconds per timestamp tick; 0 when the queue has no timestamps.
    pub timestamp_period_ns: f32,
    /// The device's multiprocessors, which the kernels' grid rules size their waves by:
    /// NVIDIA's SMs (`shaderSMCount` of `VK_NV_shader_sm_builtins`), AMD's compute units
    /// (`VK_AMD_shader_core_properties`: engines × arrays × units), Arm's shader cores
    /// (`VK_ARM_shader_core_builtins`); 0 where the device does not say.
    pub multiprocessors: u32,
}

impl Default for DeviceLimits {
    /// The minimums the Vulkan 1.2 specification guarantees.
    fn default() -> Self {
        DeviceLimits {
            max_compute_work_group_count: [65535; 3],
            max_compute_work_group_size: [128, 128, 64],
            max_compute_work_group_invocations: 128,
            max_compute_shared_memory_size: 16384,
            max_storage_buffer_range: 1 << 27,
            max_uniform_buffer_range: 16384,
            max_memory_allocation_size: 1 << 30,
            max_push_constants_size: 128,
            max_image_dimension_1d: 4096,
            max_image_dimension_2d: 4096,
            max_image_dimension_3d: 256,
            subgroup_size: 1,
            min_subgroup_size: 0,
            max_subgroup_size: 0,
            timestamp_period_ns: 0.0,
            multiprocessors: 0,
        }
    }
}

/// What a device offers: its features, limits and cooperative-matrix shapes. Built by the
/// runtime from the driver, or by hand.
#[derive(Copy, Clone, Debug, Default, PartialEq)]
pub struct DeviceFeatures {
    /// What the device supports.
    pub features: FeatureSet,
    /// Its limits.
    pub limits: DeviceLimits,
    /// Subgroup-scope shapes of `vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR` whose
    /// component types vkprism knows; empty without `cooperativeMatrix`.
    pub cooperative_matrices: CoopMatShapes,
    /// Workgroup-scope shape families of `VK_NV_cooperative_matrix2`
    /// (`vkGetPhysicalDeviceCooperativeMatrixFlexibleDimensionsPropertiesNV`) whose component
    /// types vkprism knows; empty without `cooperativeMatrixFlexibleDimensions`.
    pub workgroup_matrices: WorkgroupMatrixShapes,
    /// The Vulkan API version the device is used at (the lower of the instance's and the
    /// device's, as [`crate::api_version`] encodes it): variants compiled for a higher one
    /// can't run.
    pub api_version: u32,
    /// `VkPhysicalDeviceProperties::vendorID` (`ncnn_vendorID`).
    pub vendor_id: u32,
    /// `VkPhysicalDeviceDriverProperties::driverID` (`ncnn_driverID`; 0 before Vulkan 1.2).
    pub driver_id: u32,
}

impl DeviceFeatures {
    /// These features with the limits the specification guarantees, at Vulkan 1.1 (the lowest
    /// vkprism runs on).
    pub fn new(features: FeatureSet) -> Self {
        DeviceFeatures {
            features,
            limits: DeviceLimits::default(),
            cooperative_matrices: CoopMatShapes::default(),
            workgroup_matrices: WorkgroupMatrixShapes::default(),
            api_version: crate::api_version(1, 1),
            vendor_id: 0,
            driver_id: 0,
        }
    }

    /// Whether the device has `f`.
    pub fn supports(&self, f: Feature) -> bool {
        self.features.contains(f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn set_operations() {
        let s = FeatureSet::from_slice(&[Feature::ShaderFloat16, Feature::ShaderInt8]);
        assert!(s.contains(Feature::ShaderFloat16));
        assert!(!s.contains(Feature::StorageBuffer16BitAccess));
        let need = FeatureSet::EMPTY
            .with(Feature::StorageBuffer16BitAccess)
            .with(Feature::ShaderFloat16);
        assert_eq!(
            need.difference(s).iter().collect::<Vec<_>>(),
            vec![Feature::StorageBuffer16BitAccess]
        );
        assert!(FeatureSet::all().contains_all(need));
        assert_eq!(FeatureSet::all().iter().count(), Feature::ALL.len());
        assert_eq!(s.to_string(), "shaderFloat16, shaderInt8");
    }
}
