//! Reading device features and limits through the full `pNext` chain, once, into the shared
//! vocabulary (`vkprism_core::DeviceFeatures`), and building the chain that enables them.

use ash::vk;
use std::ffi::CStr;
use vkprism_core::{
    CoopMatShape, CoopMatShapes, DeviceFeatures, DeviceLimits, Feature, FeatureSet, ScalarKind,
};

/// What the physical device offers, as read from Vulkan.
pub(crate) struct Queried {
    pub features: DeviceFeatures,
    pub extensions: Vec<String>,
    /// Whether the device uses the 1.2 feature structs (else the 1.1 extension structs).
    pub vulkan12: bool,
}

fn has(exts: &[String], name: &CStr) -> bool {
    let n = name.to_string_lossy();
    exts.iter().any(|e| *e == n)
}

/// # Safety
/// `pd` must come from `instance`, created from `entry`.
pub(crate) unsafe fn query(
    entry: &ash::Entry,
    instance: &ash::Instance,
    pd: vk::PhysicalDevice,
) -> Result<Queried, vk::Result> {
    let props = instance.get_physical_device_properties(pd);
    let api_version = props.api_version;
    let extensions: Vec<String> = instance
        .enumerate_device_extension_properties(pd)?
        .iter()
        .map(|e| {
            e.extension_name_as_c_str()
                .map(|c| c.to_string_lossy().into_owned())
                .unwrap_or_default()
        })
        .collect();
    let vulkan12 =
        vk::api_version_major(api_version) > 1 || vk::api_version_minor(api_version) >= 2;
    let vulkan13 =
        vk::api_version_major(api_version) > 1 || vk::api_version_minor(api_version) >= 3;

    let mut set = FeatureSet::EMPTY;
    let mut f11 = vk::PhysicalDeviceVulkan11Features::default();
    let mut f12 = vk::PhysicalDeviceVulkan12Features::default();
    let mut f13 = vk::PhysicalDeviceVulkan13Features::default();
    let mut s16 = vk::PhysicalDevice16BitStorageFeatures::default();
    let mut s8 = vk::PhysicalDevice8BitStorageFeatures::default();
    let mut f16i8 = vk::PhysicalDeviceShaderFloat16Int8Features::default();
    let mut coop = vk::PhysicalDeviceCooperativeMatrixFeaturesKHR::default();
    let has_coop = has(&extensions, ash::khr::cooperative_matrix::NAME);
    let mut f2 = vk::PhysicalDeviceFeatures2::default();
    if vulkan12 {
        f2 = f2.push_next(&mut f11).push_next(&mut f12);
        if vulkan13 {
            f2 = f2.push_next(&mut f13);
        }
    } else {
        f2 = f2.push_next(&mut s16);
        if has(&extensions, ash::khr::shader_float16_int8::NAME) {
            f2 = f2.push_next(&mut f16i8);
        }
        if has(&extensions, ash::khr::_8bit_storage::NAME) {
            f2 = f2.push_next(&mut s8);
        }
    }
    if has_coop {
        f2 = f2.push_next(&mut coop);
    }
    instance.get_physical_device_features2(pd, &mut f2);
    let base = f2.features;
    let on = |b: vk::Bool32| b == vk::TRUE;
    let mut put = |f: Feature, b: bool| {
        if b {
            set.insert(f)
        }
    };
    put(Feature::ShaderInt16, on(base.shader_int16));
    put(Feature::ShaderInt64, on(base.shader_int64));
    if vulkan12 {
        put(
            Feature::StorageBuffer16BitAccess,
            on(f11.storage_buffer16_bit_access),
        );
        put(
            Feature::UniformAndStorageBuffer16BitAccess,
            on(f11.uniform_and_storage_buffer16_bit_access),
        );
        put(Feature::ShaderFloat16, on(f12.shader_float16));
        put(Feature::ShaderInt8, on(f12.shader_int8));
        put(
            Feature::StorageBuffer8BitAccess,
            on(f12.storage_buffer8_bit_access),
        );
    } else {
        put(
            Feature::StorageBuffer16BitAccess,
            on(s16.storage_buffer16_bit_access),
        );
        put(
            Feature::UniformAndStorageBuffer16BitAccess,
            on(s16.uniform_and_storage_buffer16_bit_access),
        );
        put(Feature::ShaderFloat16, on(f16i8.shader_float16));
        put(Feature::ShaderInt8, on(f16i8.shader_int8));
        put(
            Feature::StorageBuffer8BitAccess,
            on(s8.storage_buffer8_bit_access),
        );
    }
    if vulkan13 {
        put(
            Feature::SubgroupSizeControl,
            on(f13.subgroup_size_control) && on(f13.compute_full_subgroups),
        );
        put(
            Feature::IntegerDotProduct,
            on(f13.shader_integer_dot_product),
        );
    }
    // vkprism's `_cm` variants are compiled with the Vulkan memory model (glslang does so for
    // GL_KHR_memory_scope_semantics), so the feature counts only together with it.
    let coopmat = has_coop && on(coop.cooperative_matrix) && vulkan12 && on(f12.vulkan_memory_model);
    put(Feature::CooperativeMatrix, coopmat);
    // ash 0.38 predates VK_KHR_shader_bfloat16's structs: the extension's presence is reported,
    // nothing is enabled (no variant needs it: bf16s uses 16-bit storage).
    put(
        Feature::ShaderBFloat16Type,
        extensions.iter().any(|e| e == "VK_KHR_shader_bfloat16"),
    );

    let image_ok = |formats: &[vk::Format]| {
        formats.iter().all(|f| {
            let p = instance.get_physical_device_format_properties(pd, *f);
            p.optimal_tiling_features.contains(
                vk::FormatFeatureFlags::SAMPLED_IMAGE | vk::FormatFeatureFlags::STORAGE_IMAGE,
            )
        })
    };
    put(
        Feature::ImageFormatsFp32,
        image_ok(&[vk::Format::R32_SFLOAT, vk::Format::R32G32B32A32_SFLOAT]),
    );
    put(
        Feature::ImageFormatsFp16,
        image_ok(&[vk::Format::R16_SFLOAT, vk::Format::R16G16B16A16_SFLOAT]),
    );

    let mut subgroup = vk::PhysicalDeviceSubgroupProperties::default();
    let mut p11 = vk::PhysicalDeviceMaintenance3Properties::default();
    let mut sgc = vk::PhysicalDeviceSubgroupSizeControlProperties::default();
    let mut p2 = vk::PhysicalDeviceProperties2::default()
        .push_next(&mut subgroup)
        .push_next(&mut p11);
    if vulkan13 {
        p2 = p2.push_next(&mut sgc);
    }
    instance.get_physical_device_properties2(pd, &mut p2);
    let l = props.limits;
    let limits = DeviceLimits {
        max_compute_work_group_count: l.max_compute_work_group_count,
        max_compute_work_group_size: l.max_compute_work_group_size,
        max_compute_work_group_invocations: l.max_compute_work_group_invocations,
        max_compute_shared_memory_size: l.max_compute_shared_memory_size,
        max_storage_buffer_range: l.max_storage_buffer_range as u64,
        max_uniform_buffer_range: l.max_uniform_buffer_range as u64,
        max_memory_allocation_size: p11.max_memory_allocation_size,
        max_push_constants_size: l.max_push_constants_size,
        max_image_dimension_1d: l.max_image_dimension1_d,
        max_image_dimension_2d: l.max_image_dimension2_d,
        max_image_dimension_3d: l.max_image_dimension3_d,
        subgroup_size: subgroup.subgroup_size,
        min_subgroup_size: sgc.min_subgroup_size,
        max_subgroup_size: sgc.max_subgroup_size,
        timestamp_period_ns: l.timestamp_period,
    };
    let cooperative_matrices = if coopmat {
        coopmat_shapes(entry, instance, pd)?
    } else {
        CoopMatShapes::default()
    };
    Ok(Queried {
        features: DeviceFeatures {
            features: set,
            limits,
            cooperative_matrices,
        },
        extensions,
        vulkan12,
    })
}

/// The subgroup-scope shapes `vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR` reports, those
/// whose component types vkprism names (bf16 and fp8 ones are left out).
///
/// # Safety
/// `pd` must come from `instance`, created from `entry`, with VK_KHR_cooperative_matrix present.
unsafe fn coopmat_shapes(
    entry: &ash::Entry,
    instance: &ash::Instance,
    pd: vk::PhysicalDevice,
) -> Result<CoopMatShapes, vk::Result> {
    let ext = ash::khr::cooperative_matrix::Instance::new(entry, instance);
    // SAFETY: the caller guarantees the extension is present on `pd`.
    let props = unsafe { ext.get_physical_device_cooperative_matrix_properties(pd) }?;
    Ok(props
        .iter()
        .filter(|p| p.scope == vk::ScopeKHR::SUBGROUP)
        .filter_map(|p| {
            Some(CoopMatShape {
                m: p.m_size,
                n: p.n_size,
                k: p.k_size,
                a: scalar(p.a_type)?,
                b: scalar(p.b_type)?,
                c: scalar(p.c_type)?,
                result: scalar(p.result_type)?,
            })
        })
        .collect())
}

fn scalar(t: vk::ComponentTypeKHR) -> Option<ScalarKind> {
    Some(match t {
        vk::ComponentTypeKHR::FLOAT16 => ScalarKind::F16,
        vk::ComponentTypeKHR::FLOAT32 => ScalarKind::F32,
        vk::ComponentTypeKHR::FLOAT64 => ScalarKind::F64,
        vk::ComponentTypeKHR::SINT8 => ScalarKind::I8,
        vk::ComponentTypeKHR::UINT8 => ScalarKind::U8,
        vk::ComponentTypeKHR::SINT16 => ScalarKind::I16,
        vk::ComponentTypeKHR::UINT16 => ScalarKind::U16,
        vk::ComponentTypeKHR::SINT32 => ScalarKind::I32,
        vk::ComponentTypeKHR::UINT32 => ScalarKind::U32,
        vk::ComponentTypeKHR::SINT64 => ScalarKind::I64,
        vk::ComponentTypeKHR::UINT64 => ScalarKind::U64,
        _ => return None,
    })
}
