//! One type that both reads the device's features and enables them (in the spirit of
//! wgpu-hal's `PhysicalDeviceFeatures`): the `pNext` structs live in one struct, and
//! [`PhysicalDeviceFeatures::slots`] is the one map from a [`Feature`] to its `VkBool32` fields,
//! used by [`query`](PhysicalDeviceFeatures::query) and by
//! [`enable`](PhysicalDeviceFeatures::enable).

use ash::vk;
use std::ffi::{c_void, CStr};
use std::ptr;
use vkprism_core::{Feature, FeatureSet};

/// `VK_KHR_shader_bfloat16`'s name (ash 0.38's headers predate the extension).
const SHADER_BFLOAT16: &CStr = c"VK_KHR_shader_bfloat16";

/// `VkPhysicalDeviceShaderBfloat16FeaturesKHR`, written out: ash 0.38's headers predate
/// `VK_KHR_shader_bfloat16`. Laid out as the C struct (`sType`, `pNext`, then the three
/// `VkBool32`s), which is what lets it join a `pNext` chain.
#[repr(C)]
#[derive(Clone, Copy)]
pub(crate) struct ShaderBfloat16Features {
    s_type: vk::StructureType,
    p_next: *mut c_void,
    shader_bfloat16_type: vk::Bool32,
    shader_bfloat16_dot_product: vk::Bool32,
    shader_bfloat16_cooperative_matrix: vk::Bool32,
}

impl Default for ShaderBfloat16Features {
    fn default() -> Self {
        ShaderBfloat16Features {
            // VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_BFLOAT16_FEATURES_KHR
            s_type: vk::StructureType::from_raw(1_000_141_000),
            p_next: ptr::null_mut(),
            shader_bfloat16_type: vk::FALSE,
            shader_bfloat16_dot_product: vk::FALSE,
            shader_bfloat16_cooperative_matrix: vk::FALSE,
        }
    }
}

// SAFETY: the struct has the C layout of VkPhysicalDeviceShaderBfloat16FeaturesKHR, whose valid
// usage lets it extend both VkPhysicalDeviceFeatures2 and VkDeviceCreateInfo; ash's `push_next`
// only reads and writes its leading `sType` / `pNext`.
unsafe impl vk::ExtendsPhysicalDeviceFeatures2 for ShaderBfloat16Features {}
// SAFETY: as above.
unsafe impl vk::ExtendsDeviceCreateInfo for ShaderBfloat16Features {}

/// `VK_NV_cooperative_matrix2`'s name (ash 0.38's headers predate the extension).
const COOPERATIVE_MATRIX2: &CStr = c"VK_NV_cooperative_matrix2";

/// `VkPhysicalDeviceCooperativeMatrix2FeaturesNV`, written out as
/// [`ShaderBfloat16Features`] is: `sType`, `pNext`, then its seven `VkBool32`s in the order of
/// [`Feature::COOPERATIVE_MATRIX2`].
#[repr(C)]
#[derive(Clone, Copy)]
pub(crate) struct CooperativeMatrix2Features {
    s_type: vk::StructureType,
    p_next: *mut c_void,
    features: [vk::Bool32; 7],
}

impl Default for CooperativeMatrix2Features {
    fn default() -> Self {
        CooperativeMatrix2Features {
            // VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_2_FEATURES_NV
            s_type: vk::StructureType::from_raw(1_000_593_000),
            p_next: ptr::null_mut(),
            features: [vk::FALSE; 7],
        }
    }
}

// SAFETY: the struct has the C layout of VkPhysicalDeviceCooperativeMatrix2FeaturesNV, which
// extends both VkPhysicalDeviceFeatures2 and VkDeviceCreateInfo; ash's `push_next` only reads
// and writes its leading `sType` / `pNext`.
unsafe impl vk::ExtendsPhysicalDeviceFeatures2 for CooperativeMatrix2Features {}
// SAFETY: as above.
unsafe impl vk::ExtendsDeviceCreateInfo for CooperativeMatrix2Features {}

/// Chains every struct `$this` holds into `$info` (a `PhysicalDeviceFeatures2` to query, or a
/// `DeviceCreateInfo` to enable): the one chain order both use.
macro_rules! chain_all {
    ($this:ident, $info:ident) => {
        if $this.vulkan12 {
            $info = $info
                .push_next(&mut $this.vulkan11)
                .push_next(&mut $this.vulkan12_features);
            if let Some(f) = &mut $this.vulkan13 {
                $info = $info.push_next(f);
            }
        } else {
            $info = $info.push_next(&mut $this.storage16);
            if let Some(f) = &mut $this.float16_int8 {
                $info = $info.push_next(f);
            }
            if let Some(f) = &mut $this.storage8 {
                $info = $info.push_next(f);
            }
        }
        if let Some(f) = &mut $this.cooperative_matrix {
            $info = $info.push_next(f);
        }
        if let Some(f) = &mut $this.bfloat16 {
            $info = $info.push_next(f);
        }
        if let Some(f) = &mut $this.cooperative_matrix2 {
            $info = $info.push_next(f);
        }
    };
}

/// The device's feature structs. On a Vulkan 1.2+ device the core 1.1/1.2(/1.3) structs are
/// used; on 1.1 the extension structs (`VK_KHR_16bit_storage` is core there, the others only
/// when the extension is present).
#[derive(Clone, Copy)]
pub(crate) struct PhysicalDeviceFeatures {
    /// Whether the 1.2 core structs are used (else the 1.1 extension structs).
    vulkan12: bool,
    core: vk::PhysicalDeviceFeatures,
    vulkan11: vk::PhysicalDeviceVulkan11Features<'static>,
    vulkan12_features: vk::PhysicalDeviceVulkan12Features<'static>,
    vulkan13: Option<vk::PhysicalDeviceVulkan13Features<'static>>,
    storage16: vk::PhysicalDevice16BitStorageFeatures<'static>,
    float16_int8: Option<vk::PhysicalDeviceShaderFloat16Int8Features<'static>>,
    storage8: Option<vk::PhysicalDevice8BitStorageFeatures<'static>>,
    cooperative_matrix: Option<vk::PhysicalDeviceCooperativeMatrixFeaturesKHR<'static>>,
    bfloat16: Option<ShaderBfloat16Features>,
    cooperative_matrix2: Option<CooperativeMatrix2Features>,
}

/// What vkprism enables when the device has it: what variants and pipelines use (16/8-bit
/// storage, fp16/int8 arithmetic, int16/int64, subgroup size control for
/// `PipelineDesc::subgroup_size`, cooperative matrices with the Vulkan memory model the `_cm`
/// variants are compiled for, bfloat16 matrices for the bf16 `_cm` variants, integer dot products
/// and subgroup operations on 8/16/64-bit types for the variants whose module declares them).
/// (Validation layers older than the cooperative-matrix extension, like Debian 12's 1.3.239, flag
/// its feature struct as unknown: bench/prepare.sh carries a newer one to NVIDIA machines.)
pub(crate) const ENABLED: FeatureSet = FeatureSet::from_slice(&[
    Feature::ShaderInt16,
    Feature::ShaderInt64,
    Feature::StorageBuffer16BitAccess,
    Feature::UniformAndStorageBuffer16BitAccess,
    Feature::ShaderFloat16,
    Feature::ShaderInt8,
    Feature::StorageBuffer8BitAccess,
    Feature::SubgroupSizeControl,
    Feature::CooperativeMatrix,
    Feature::ShaderBFloat16Type,
    Feature::ShaderBFloat16CooperativeMatrix,
    Feature::IntegerDotProduct,
    Feature::ShaderSubgroupExtendedTypes,
    Feature::CooperativeMatrixWorkgroupScope,
    Feature::CooperativeMatrixFlexibleDimensions,
    Feature::CooperativeMatrixReductions,
    Feature::CooperativeMatrixConversions,
    Feature::CooperativeMatrixPerElementOperations,
    Feature::CooperativeMatrixTensorAddressing,
    Feature::CooperativeMatrixBlockLoads,
]);

/// Whether `extensions` (a device's, as enumerated) lists the extension `name`.
pub(super) fn lists_extension(extensions: &[String], name: &CStr) -> bool {
    let n = name.to_string_lossy();
    extensions.iter().any(|e| *e == n)
}

impl PhysicalDeviceFeatures {
    /// Empty structs shaped for a device of `api_version` with `extensions`.
    fn shape(api_version: u32, extensions: &[String]) -> Self {
        let major = vk::api_version_major(api_version);
        let minor = vk::api_version_minor(api_version);
        let vulkan12 = major > 1 || minor >= 2;
        let vulkan13 = major > 1 || minor >= 3;
        let pre12_ext = |name| !vulkan12 && lists_extension(extensions, name);
        PhysicalDeviceFeatures {
            vulkan12,
            core: Default::default(),
            vulkan11: Default::default(),
            vulkan12_features: Default::default(),
            vulkan13: vulkan13.then(Default::default),
            storage16: Default::default(),
            float16_int8: pre12_ext(ash::khr::shader_float16_int8::NAME).then(Default::default),
            storage8: pre12_ext(ash::khr::_8bit_storage::NAME).then(Default::default),
            cooperative_matrix: lists_extension(extensions, ash::khr::cooperative_matrix::NAME)
                .then(Default::default),
            bfloat16: lists_extension(extensions, SHADER_BFLOAT16).then(Default::default),
            cooperative_matrix2: lists_extension(extensions, COOPERATIVE_MATRIX2)
                .then(Default::default),
        }
    }

    /// Reads every struct of a device of `api_version` with `extensions` in one
    /// `vkGetPhysicalDeviceFeatures2`.
    ///
    /// # Safety
    /// `device` comes from the live `instance`, which is Vulkan 1.1+.
    pub unsafe fn query(
        instance: &ash::Instance,
        device: vk::PhysicalDevice,
        api_version: u32,
        extensions: &[String],
    ) -> Self {
        let mut this = Self::shape(api_version, extensions);
        this.unchain();
        let core = {
            let mut features2 = vk::PhysicalDeviceFeatures2::default();
            chain_all!(this, features2);
            // SAFETY: every struct in the chain is alive for this call and was chained only if
            // the device's version or extensions define it; the caller vouches for the handles.
            unsafe { instance.get_physical_device_features2(device, &mut features2) };
            features2.features
        };
        this.core = core;
        this.unchain();
        this
    }

    /// Clears every `pNext`: a chain built for one call must not leak into the next (ash's
    /// `push_next` follows an existing chain, and these structs move).
    fn unchain(&mut self) {
        self.vulkan11.p_next = ptr::null_mut();
        self.vulkan12_features.p_next = ptr::null_mut();
        self.storage16.p_next = ptr::null_mut();
        if let Some(f) = &mut self.vulkan13 {
            f.p_next = ptr::null_mut();
        }
        if let Some(f) = &mut self.float16_int8 {
            f.p_next = ptr::null_mut();
        }
        if let Some(f) = &mut self.storage8 {
            f.p_next = ptr::null_mut();
        }
        if let Some(f) = &mut self.cooperative_matrix {
            f.p_next = ptr::null_mut();
        }
        if let Some(f) = &mut self.bfloat16 {
            f.p_next = ptr::null_mut();
        }
        if let Some(f) = &mut self.cooperative_matrix2 {
            f.p_next = ptr::null_mut();
        }
    }

    /// The `VkBool32` fields that together hold `feature` on this device, each given to `f`
    /// (none: the device has no struct for it, or it is not a struct feature). The one map
    /// between [`Feature`] and Vulkan's structs.
    fn slots(&mut self, feature: Feature, mut f: impl FnMut(&mut vk::Bool32)) {
        let v12 = self.vulkan12;
        match feature {
            Feature::ShaderInt16 => f(&mut self.core.shader_int16),
            Feature::ShaderInt64 => f(&mut self.core.shader_int64),
            Feature::StorageBuffer16BitAccess if v12 => {
                f(&mut self.vulkan11.storage_buffer16_bit_access)
            }
            Feature::StorageBuffer16BitAccess => f(&mut self.storage16.storage_buffer16_bit_access),
            Feature::UniformAndStorageBuffer16BitAccess if v12 => {
                f(&mut self.vulkan11.uniform_and_storage_buffer16_bit_access)
            }
            Feature::UniformAndStorageBuffer16BitAccess => {
                f(&mut self.storage16.uniform_and_storage_buffer16_bit_access)
            }
            Feature::ShaderFloat16 if v12 => f(&mut self.vulkan12_features.shader_float16),
            Feature::ShaderFloat16 => self
                .float16_int8
                .iter_mut()
                .for_each(|s| f(&mut s.shader_float16)),
            Feature::ShaderInt8 if v12 => f(&mut self.vulkan12_features.shader_int8),
            Feature::ShaderInt8 => self
                .float16_int8
                .iter_mut()
                .for_each(|s| f(&mut s.shader_int8)),
            Feature::StorageBuffer8BitAccess if v12 => {
                f(&mut self.vulkan12_features.storage_buffer8_bit_access)
            }
            Feature::StorageBuffer8BitAccess => self
                .storage8
                .iter_mut()
                .for_each(|s| f(&mut s.storage_buffer8_bit_access)),
            Feature::SubgroupSizeControl => self.vulkan13.iter_mut().for_each(|s| {
                f(&mut s.subgroup_size_control);
                f(&mut s.compute_full_subgroups);
            }),
            Feature::IntegerDotProduct => self
                .vulkan13
                .iter_mut()
                .for_each(|s| f(&mut s.shader_integer_dot_product)),
            // vkprism's `_cm` variants are compiled with the Vulkan memory model (glslang does
            // so for GL_KHR_memory_scope_semantics), so the feature counts only together with
            // it, which needs the 1.2 structs.
            Feature::CooperativeMatrix if v12 => {
                if let Some(s) = &mut self.cooperative_matrix {
                    f(&mut s.cooperative_matrix);
                    f(&mut self.vulkan12_features.vulkan_memory_model);
                }
            }
            Feature::CooperativeMatrix => {}
            Feature::ShaderBFloat16Type => self
                .bfloat16
                .iter_mut()
                .for_each(|s| f(&mut s.shader_bfloat16_type)),
            // bfloat16 matrices are cooperative matrices: the feature counts only with
            // `CooperativeMatrix` (and the memory model that comes with it).
            Feature::ShaderBFloat16CooperativeMatrix if v12 => {
                if let (Some(s), Some(c)) = (&mut self.bfloat16, &mut self.cooperative_matrix) {
                    f(&mut s.shader_bfloat16_cooperative_matrix);
                    f(&mut s.shader_bfloat16_type);
                    f(&mut c.cooperative_matrix);
                    f(&mut self.vulkan12_features.vulkan_memory_model);
                }
            }
            Feature::ShaderBFloat16CooperativeMatrix => {}
            Feature::ShaderSubgroupExtendedTypes if v12 => {
                f(&mut self.vulkan12_features.shader_subgroup_extended_types)
            }
            Feature::ShaderSubgroupExtendedTypes => {}
            // VK_NV_cooperative_matrix2's features extend cooperative matrices: each counts only
            // with `CooperativeMatrix` (and its memory model).
            Feature::CooperativeMatrixWorkgroupScope
            | Feature::CooperativeMatrixFlexibleDimensions
            | Feature::CooperativeMatrixReductions
            | Feature::CooperativeMatrixConversions
            | Feature::CooperativeMatrixPerElementOperations
            | Feature::CooperativeMatrixTensorAddressing
            | Feature::CooperativeMatrixBlockLoads
                if v12 =>
            {
                let index = Feature::COOPERATIVE_MATRIX2
                    .iter()
                    .position(|x| *x == feature);
                if let (Some(s), Some(c), Some(i)) = (
                    &mut self.cooperative_matrix2,
                    &mut self.cooperative_matrix,
                    index,
                ) {
                    f(&mut s.features[i]);
                    f(&mut c.cooperative_matrix);
                    f(&mut self.vulkan12_features.vulkan_memory_model);
                }
            }
            Feature::CooperativeMatrixWorkgroupScope
            | Feature::CooperativeMatrixFlexibleDimensions
            | Feature::CooperativeMatrixReductions
            | Feature::CooperativeMatrixConversions
            | Feature::CooperativeMatrixPerElementOperations
            | Feature::CooperativeMatrixTensorAddressing
            | Feature::CooperativeMatrixBlockLoads => {}
            // Not struct features: format and device properties (`properties.rs`), or one
            // vkprism never enables (`VK_NV_cooperative_matrix`: the KHR extension supersedes it).
            Feature::ImageFormatsFp32
            | Feature::ImageFormatsFp16
            | Feature::SubgroupBasic
            | Feature::SubgroupVote
            | Feature::SubgroupArithmetic
            | Feature::SubgroupBallot
            | Feature::SubgroupShuffle
            | Feature::SubgroupShuffleRelative
            | Feature::SubgroupClustered
            | Feature::SubgroupQuad
            | Feature::IntegerDotProduct4x8BitPackedSignedAccelerated
            | Feature::IntegerDotProduct16BitSignedAccelerated
            | Feature::CooperativeMatrixNv => {}
        }
    }

    /// The features these structs report: a feature whose fields are all true.
    pub fn supported(&self) -> FeatureSet {
        let mut this = *self;
        let mut set = FeatureSet::EMPTY;
        for feature in Feature::ALL {
            let (mut any, mut all) = (false, true);
            this.slots(feature, |b| {
                any = true;
                all &= *b == vk::TRUE;
            });
            if any && all {
                set.insert(feature);
            }
        }
        set
    }

    /// Structs of the same shape that enable exactly `requested` (clipped to [`ENABLED`] and to
    /// what this device supports). The 1.3 and cooperative-matrix structs are chained only when
    /// they enable something.
    pub fn enable(&self, requested: FeatureSet) -> Self {
        let supported = self.supported();
        let on: Vec<Feature> = Feature::ALL
            .into_iter()
            .filter(|f| requested.contains(*f) && ENABLED.contains(*f) && supported.contains(*f))
            .collect();
        let mut enabled = PhysicalDeviceFeatures {
            vulkan12: self.vulkan12,
            core: Default::default(),
            vulkan11: Default::default(),
            vulkan12_features: Default::default(),
            vulkan13: self
                .vulkan13
                .filter(|v| {
                    on.contains(&Feature::SubgroupSizeControl)
                        || on.contains(&Feature::IntegerDotProduct)
                        || has_maintenance4(v)
                })
                .map(|_| Default::default()),
            storage16: Default::default(),
            float16_int8: self.float16_int8.map(|_| Default::default()),
            storage8: self.storage8.map(|_| Default::default()),
            cooperative_matrix: self
                .cooperative_matrix
                .filter(|_| on.contains(&Feature::CooperativeMatrix))
                .map(|_| Default::default()),
            bfloat16: self
                .bfloat16
                .filter(|_| {
                    on.contains(&Feature::ShaderBFloat16Type)
                        || on.contains(&Feature::ShaderBFloat16CooperativeMatrix)
                })
                .map(|_| Default::default()),
            cooperative_matrix2: self
                .cooperative_matrix2
                .filter(|_| Feature::COOPERATIVE_MATRIX2.iter().any(|f| on.contains(f)))
                .map(|_| Default::default()),
        };
        for feature in on {
            enabled.slots(feature, |b| *b = vk::TRUE);
        }
        // Kernels compiled for Vulkan 1.3 (`vulkan_version: "1.3"`, SPIR-V 1.6) declare their
        // specializable workgroup size with `LocalSizeId`, which needs `maintenance4` (core in
        // 1.3 and supported by every 1.3 device).
        if let (Some(e), Some(s)) = (&mut enabled.vulkan13, &self.vulkan13) {
            if has_maintenance4(s) {
                e.maintenance4 = vk::TRUE;
            }
        }
        // With the Vulkan memory model on (for cooperative matrices), a module may use the
        // `Device` memory scope only if `vulkanMemoryModelDeviceScope` is on too, and every GLSL
        // atomic defaults to that scope (int8p / int16p single-element stores, for one).
        if enabled.vulkan12_features.vulkan_memory_model == vk::TRUE
            && self.vulkan12_features.vulkan_memory_model_device_scope == vk::TRUE
        {
            enabled.vulkan12_features.vulkan_memory_model_device_scope = vk::TRUE;
        }
        enabled
    }

    /// Whether the device offers `robustBufferAccess` (a core 1.0 feature).
    pub fn has_robust_buffer_access(&self) -> bool {
        self.core.robust_buffer_access == vk::TRUE
    }

    /// Turns `robustBufferAccess` on in structs made by [`enable`](Self::enable) (only where
    /// [`has_robust_buffer_access`](Self::has_robust_buffer_access)).
    pub fn enable_robust_buffer_access(&mut self) {
        self.core.robust_buffer_access = vk::TRUE;
    }

    /// The device extensions these structs need enabled.
    pub fn extensions(&self) -> Vec<&'static CStr> {
        let mut names = Vec::new();
        if self.float16_int8.is_some() {
            names.push(ash::khr::shader_float16_int8::NAME);
        }
        if self.storage8.is_some() {
            names.push(ash::khr::_8bit_storage::NAME);
        }
        if self.cooperative_matrix.is_some() {
            names.push(ash::khr::cooperative_matrix::NAME);
        }
        if self.bfloat16.is_some() {
            names.push(SHADER_BFLOAT16);
        }
        if self.cooperative_matrix2.is_some() {
            names.push(COOPERATIVE_MATRIX2);
        }
        names
    }

    /// Chains these structs (made by [`enable`](Self::enable)) into `info`.
    pub fn add_to_device_create<'a>(
        &'a mut self,
        info: vk::DeviceCreateInfo<'a>,
    ) -> vk::DeviceCreateInfo<'a> {
        self.unchain();
        let mut info = info.enabled_features(&self.core);
        chain_all!(self, info);
        info
    }
}

/// Whether the Vulkan 1.3 features offer `maintenance4`.
fn has_maintenance4(v: &vk::PhysicalDeviceVulkan13Features<'_>) -> bool {
    v.maintenance4 == vk::TRUE
}
