//! Everything else read from the physical device: extensions, limits, image-format support,
//! cooperative-matrix shapes, driver strings, memory properties.

use super::features::lists_extension;
use super::physical::Physical;
use ash::vk;
use std::ffi::c_void;
use vkprism_core::{
    CoopMatShape, CoopMatShapes, DeviceLimits, Feature, FeatureSet, ScalarKind,
    WorkgroupMatrixShape, WorkgroupMatrixShapes,
};

/// The device's extension names.
///
/// # Safety
/// `device` comes from the live `instance`.
pub(crate) unsafe fn extensions(
    instance: &ash::Instance,
    device: vk::PhysicalDevice,
) -> Result<Vec<String>, vk::Result> {
    // SAFETY: the caller vouches for both handles.
    let props = unsafe { instance.enumerate_device_extension_properties(device)? };
    Ok(props
        .iter()
        .map(|e| {
            e.extension_name_as_c_str()
                .map(|c| c.to_string_lossy().into_owned())
                .unwrap_or_default()
        })
        .collect())
}

/// Features that are not in a feature struct: the image formats the image variants need, usable
/// as sampled and storage images; the subgroup operations compute shaders may use; which integer
/// dot products are fast (properties of a Vulkan 1.3 device at `api`).
///
/// # Safety
/// `device` comes from the live `instance`, which is Vulkan 1.1+.
pub(crate) unsafe fn other_features(
    instance: &ash::Instance,
    device: vk::PhysicalDevice,
    api: u32,
) -> FeatureSet {
    let image_ok = |formats: &[vk::Format]| {
        formats.iter().all(|f| {
            // SAFETY: the caller vouches for both handles.
            let p = unsafe { instance.get_physical_device_format_properties(device, *f) };
            p.optimal_tiling_features.contains(
                vk::FormatFeatureFlags::SAMPLED_IMAGE | vk::FormatFeatureFlags::STORAGE_IMAGE,
            )
        })
    };
    let mut set = FeatureSet::EMPTY;
    let mut put = |f: Feature, on: bool| {
        if on {
            set.insert(f)
        }
    };
    put(
        Feature::ImageFormatsFp32,
        image_ok(&[vk::Format::R32_SFLOAT, vk::Format::R32G32B32A32_SFLOAT]),
    );
    put(
        Feature::ImageFormatsFp16,
        image_ok(&[vk::Format::R16_SFLOAT, vk::Format::R16G16B16A16_SFLOAT]),
    );
    let vulkan13 = vk::api_version_major(api) > 1 || vk::api_version_minor(api) >= 3;
    let mut subgroup = vk::PhysicalDeviceSubgroupProperties::default();
    let mut dot = vk::PhysicalDeviceShaderIntegerDotProductProperties::default();
    let mut p2 = vk::PhysicalDeviceProperties2::default().push_next(&mut subgroup);
    if vulkan13 {
        p2 = p2.push_next(&mut dot);
    }
    // SAFETY: the subgroup struct is core in 1.1, the dot-product one in 1.3 (chained only
    // there); both are alive for the call, and the caller vouches for the handles.
    unsafe { instance.get_physical_device_properties2(device, &mut p2) };
    let in_compute = subgroup
        .supported_stages
        .contains(vk::ShaderStageFlags::COMPUTE);
    for (k, f) in Feature::SUBGROUP_OPERATIONS.into_iter().enumerate() {
        let bit = vk::SubgroupFeatureFlags::from_raw(1 << k);
        put(f, in_compute && subgroup.supported_operations.contains(bit));
    }
    put(
        Feature::IntegerDotProduct4x8BitPackedSignedAccelerated,
        dot.integer_dot_product4x8_bit_packed_signed_accelerated == vk::TRUE,
    );
    put(
        Feature::IntegerDotProduct16BitSignedAccelerated,
        dot.integer_dot_product16_bit_signed_accelerated == vk::TRUE,
    );
    set
}

/// Whether the device lists `VK_KHR_pipeline_executable_properties` and has its
/// `pipelineExecutableInfo` feature (driver statistics of a pipeline: registers, spills, ...).
///
/// # Safety
/// `device` comes from the live `instance`, which is Vulkan 1.1+.
pub(crate) unsafe fn pipeline_executable_info(
    instance: &ash::Instance,
    device: vk::PhysicalDevice,
    extensions: &[String],
) -> bool {
    if !lists_extension(extensions, ash::khr::pipeline_executable_properties::NAME) {
        return false;
    }
    let mut feature = vk::PhysicalDevicePipelineExecutablePropertiesFeaturesKHR::default();
    let mut features = vk::PhysicalDeviceFeatures2::default().push_next(&mut feature);
    // SAFETY: the caller vouches for both handles; the extension is listed, so its struct may
    // be chained.
    unsafe { instance.get_physical_device_features2(device, &mut features) };
    feature.pipeline_executable_info == vk::TRUE
}

/// The limits kernels and tensors are checked against, and the device's multiprocessors where
/// it lists among `extensions` an extension that says how many ([`multiprocessors`]).
///
/// # Safety
/// `device` comes from the live `instance`, which is Vulkan 1.1+.
pub(crate) unsafe fn limits(
    instance: &ash::Instance,
    device: &Physical,
    extensions: &[String],
) -> DeviceLimits {
    let api = device.properties.api_version;
    let vulkan13 = vk::api_version_major(api) > 1 || vk::api_version_minor(api) >= 3;
    let lists = |name| lists_extension(extensions, name);
    let has_sm_builtins = lists(ash::nv::shader_sm_builtins::NAME);
    let has_amd_cores = lists(ash::amd::shader_core_properties::NAME);
    let has_arm_cores = lists(ash::arm::shader_core_builtins::NAME);
    let mut subgroup = vk::PhysicalDeviceSubgroupProperties::default();
    let mut maintenance3 = vk::PhysicalDeviceMaintenance3Properties::default();
    let mut size_control = vk::PhysicalDeviceSubgroupSizeControlProperties::default();
    let mut sms = vk::PhysicalDeviceShaderSMBuiltinsPropertiesNV::default();
    let mut amd = vk::PhysicalDeviceShaderCorePropertiesAMD::default();
    let mut arm = vk::PhysicalDeviceShaderCoreBuiltinsPropertiesARM::default();
    let mut p2 = vk::PhysicalDeviceProperties2::default()
        .push_next(&mut subgroup)
        .push_next(&mut maintenance3);
    if vulkan13 {
        p2 = p2.push_next(&mut size_control);
    }
    if has_sm_builtins {
        p2 = p2.push_next(&mut sms);
    }
    if has_amd_cores {
        p2 = p2.push_next(&mut amd);
    }
    if has_arm_cores {
        p2 = p2.push_next(&mut arm);
    }
    // SAFETY: the chained structs are core in 1.1 (the 1.3 one only on 1.3, the core-count
    // ones only where their extension is listed) and alive for the call; the caller vouches
    // for the handles.
    unsafe { instance.get_physical_device_properties2(device.handle, &mut p2) };
    let cores = CoreCounts {
        nvidia_sms: has_sm_builtins.then_some(sms.shader_sm_count),
        amd: has_amd_cores.then_some([
            amd.shader_engine_count,
            amd.shader_arrays_per_engine_count,
            amd.compute_units_per_shader_array,
        ]),
        arm_cores: has_arm_cores.then_some(arm.shader_core_count),
    };
    let l = device.properties.limits;
    DeviceLimits {
        max_compute_work_group_count: l.max_compute_work_group_count,
        max_compute_work_group_size: l.max_compute_work_group_size,
        max_compute_work_group_invocations: l.max_compute_work_group_invocations,
        max_compute_shared_memory_size: l.max_compute_shared_memory_size,
        max_storage_buffer_range: l.max_storage_buffer_range as u64,
        max_uniform_buffer_range: l.max_uniform_buffer_range as u64,
        max_memory_allocation_size: maintenance3.max_memory_allocation_size,
        max_push_constants_size: l.max_push_constants_size,
        max_image_dimension_1d: l.max_image_dimension1_d,
        max_image_dimension_2d: l.max_image_dimension2_d,
        max_image_dimension_3d: l.max_image_dimension3_d,
        subgroup_size: subgroup.subgroup_size,
        min_subgroup_size: size_control.min_subgroup_size,
        max_subgroup_size: size_control.max_subgroup_size,
        timestamp_period_ns: l.timestamp_period,
        multiprocessors: multiprocessors(cores),
    }
}

/// What a device's extensions say of its compute cores (`None`: the extension is not listed).
#[derive(Copy, Clone, Debug, Default)]
struct CoreCounts {
    /// `shaderSMCount` (`VK_NV_shader_sm_builtins`).
    nvidia_sms: Option<u32>,
    /// Shader engines, arrays an engine, compute units an array
    /// (`VK_AMD_shader_core_properties`).
    amd: Option<[u32; 3]>,
    /// `shaderCoreCount` (`VK_ARM_shader_core_builtins`).
    arm_cores: Option<u32>,
}

/// The units the grid rules count as multiprocessors: NVIDIA's SMs, AMD's compute units (each
/// runs workgroups as an SM does), Arm's shader cores; 0 where no extension says.
fn multiprocessors(c: CoreCounts) -> u32 {
    let amd_units = c
        .amd
        .map(|[engines, arrays, units]| engines * arrays * units);
    c.nvidia_sms.or(amd_units).or(c.arm_cores).unwrap_or(0)
}

/// The driver's name and info strings and its `VkDriverId` (empty and 0 before Vulkan 1.2,
/// which added them).
///
/// # Safety
/// `device` comes from the live `instance`.
pub(crate) unsafe fn driver(
    instance: &ash::Instance,
    device: vk::PhysicalDevice,
    vulkan12: bool,
) -> (String, String, u32) {
    let mut driver = vk::PhysicalDeviceDriverProperties::default();
    if vulkan12 {
        let mut p2 = vk::PhysicalDeviceProperties2::default().push_next(&mut driver);
        // SAFETY: the driver-properties struct is core in 1.2 and alive for the call.
        unsafe { instance.get_physical_device_properties2(device, &mut p2) };
    }
    let text = |c: Result<&std::ffi::CStr, _>| {
        c.map(|c| c.to_string_lossy().into_owned())
            .unwrap_or_default()
    };
    (
        text(driver.driver_name_as_c_str()),
        text(driver.driver_info_as_c_str()),
        driver.driver_id.as_raw() as u32,
    )
}

/// Whether tensors can live in device-local memory the host maps (integrated GPUs, CPU
/// drivers): then they are mapped directly, with no staging copy.
pub(crate) fn is_unified(
    device_type: vk::PhysicalDeviceType,
    memory: &vk::PhysicalDeviceMemoryProperties,
) -> bool {
    matches!(
        device_type,
        vk::PhysicalDeviceType::INTEGRATED_GPU | vk::PhysicalDeviceType::CPU
    ) && memory.memory_types_as_slice().iter().any(|t| {
        t.property_flags.contains(
            vk::MemoryPropertyFlags::DEVICE_LOCAL
                | vk::MemoryPropertyFlags::HOST_VISIBLE
                | vk::MemoryPropertyFlags::HOST_COHERENT,
        )
    })
}

/// Whether a discrete GPU's whole device-local memory is also host-visible (resizable BAR, as on
/// the H100): then tensors live there mapped, and the host writes them in place; reads still go
/// through a staging copy (host reads of uncached VRAM are slow). A small BAR window (256 MiB,
/// the default without resizable BAR) does not count.
pub(crate) fn is_rebar(
    device_type: vk::PhysicalDeviceType,
    memory: &vk::PhysicalDeviceMemoryProperties,
) -> bool {
    let heaps = memory.memory_heaps_as_slice();
    let largest_local = heaps
        .iter()
        .filter(|h| h.flags.contains(vk::MemoryHeapFlags::DEVICE_LOCAL))
        .map(|h| h.size)
        .max()
        .unwrap_or(0);
    let all = vk::MemoryPropertyFlags::DEVICE_LOCAL
        | vk::MemoryPropertyFlags::HOST_VISIBLE
        | vk::MemoryPropertyFlags::HOST_COHERENT;
    device_type == vk::PhysicalDeviceType::DISCRETE_GPU
        && memory.memory_types_as_slice().iter().any(|t| {
            t.property_flags.contains(all)
                && heaps
                    .get(t.heap_index as usize)
                    .is_some_and(|h| h.size >= largest_local / 10 * 9)
        })
}

/// The subgroup-scope shapes `vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR` reports, those
/// whose component types vkprism names (bf16 and fp8 ones are left out).
///
/// # Safety
/// `device` comes from the live `instance`, created from `entry`, with
/// VK_KHR_cooperative_matrix present.
pub(crate) unsafe fn coopmat_shapes(
    entry: &ash::Entry,
    instance: &ash::Instance,
    device: vk::PhysicalDevice,
) -> Result<CoopMatShapes, vk::Result> {
    let ext = ash::khr::cooperative_matrix::Instance::new(entry, instance);
    // SAFETY: the caller guarantees the extension is present on `device`.
    let props = unsafe { ext.get_physical_device_cooperative_matrix_properties(device) }?;
    Ok(props
        .iter()
        .filter(|p| p.scope == vk::ScopeKHR::SUBGROUP)
        .filter_map(|p| {
            let types = [p.a_type, p.b_type, p.c_type, p.result_type];
            coopmat_shape((p.m_size, p.n_size, p.k_size), types)
        })
        .collect())
}

/// `VkCooperativeMatrixFlexibleDimensionsPropertiesNV`, written out: ash 0.38's headers predate
/// `VK_NV_cooperative_matrix2`. Laid out as the C struct.
#[repr(C)]
#[derive(Clone, Copy)]
struct FlexibleDimensionsProperties {
    s_type: vk::StructureType,
    p_next: *mut c_void,
    m_granularity: u32,
    n_granularity: u32,
    k_granularity: u32,
    a_type: vk::ComponentTypeKHR,
    b_type: vk::ComponentTypeKHR,
    c_type: vk::ComponentTypeKHR,
    result_type: vk::ComponentTypeKHR,
    saturating_accumulation: vk::Bool32,
    scope: vk::ScopeKHR,
    workgroup_invocations: u32,
}

impl Default for FlexibleDimensionsProperties {
    fn default() -> Self {
        FlexibleDimensionsProperties {
            // VK_STRUCTURE_TYPE_COOPERATIVE_MATRIX_FLEXIBLE_DIMENSIONS_PROPERTIES_NV
            s_type: vk::StructureType::from_raw(1_000_593_001),
            p_next: std::ptr::null_mut(),
            m_granularity: 0,
            n_granularity: 0,
            k_granularity: 0,
            a_type: vk::ComponentTypeKHR::FLOAT16,
            b_type: vk::ComponentTypeKHR::FLOAT16,
            c_type: vk::ComponentTypeKHR::FLOAT16,
            result_type: vk::ComponentTypeKHR::FLOAT16,
            saturating_accumulation: vk::FALSE,
            scope: vk::ScopeKHR::WORKGROUP,
            workgroup_invocations: 0,
        }
    }
}

/// `vkGetPhysicalDeviceCooperativeMatrixFlexibleDimensionsPropertiesNV`.
type FlexibleDimensionsFn = unsafe extern "system" fn(
    vk::PhysicalDevice,
    *mut u32,
    *mut FlexibleDimensionsProperties,
) -> vk::Result;

/// The workgroup-scope shape families
/// `vkGetPhysicalDeviceCooperativeMatrixFlexibleDimensionsPropertiesNV` reports, those whose
/// component types vkprism names; none where the loader does not know the command.
///
/// # Safety
/// `device` comes from the live `instance`, created from `entry`, with
/// VK_NV_cooperative_matrix2 present.
pub(crate) unsafe fn workgroup_shapes(
    entry: &ash::Entry,
    instance: &ash::Instance,
    device: vk::PhysicalDevice,
) -> Result<WorkgroupMatrixShapes, vk::Result> {
    let name = c"vkGetPhysicalDeviceCooperativeMatrixFlexibleDimensionsPropertiesNV";
    // SAFETY: the instance is alive and the name is a NUL-terminated command name.
    let Some(f) = (unsafe { entry.get_instance_proc_addr(instance.handle(), name.as_ptr()) })
    else {
        return Ok(WorkgroupMatrixShapes::default());
    };
    // SAFETY: the loader returned this command's address for this name, whose C signature
    // `FlexibleDimensionsFn` is.
    let query: FlexibleDimensionsFn = unsafe { std::mem::transmute(f) };
    let mut count = 0u32;
    // SAFETY: a count query (null array), `device` from the caller.
    unsafe { query(device, &mut count, std::ptr::null_mut()) }.result()?;
    let mut props = vec![FlexibleDimensionsProperties::default(); count as usize];
    // SAFETY: `props` holds `count` structs with their sType set and no pNext chain.
    unsafe { query(device, &mut count, props.as_mut_ptr()) }.result()?;
    props.truncate(count as usize);
    Ok(props
        .iter()
        .filter(|p| p.scope == vk::ScopeKHR::WORKGROUP)
        .filter_map(|p| {
            let types = [p.a_type, p.b_type, p.c_type, p.result_type];
            let mnk = (p.m_granularity, p.n_granularity, p.k_granularity);
            Some(WorkgroupMatrixShape {
                granularity: coopmat_shape(mnk, types)?,
                workgroup_invocations: p.workgroup_invocations,
            })
        })
        .collect())
}

/// `VK_COMPONENT_TYPE_BFLOAT16_KHR` (VK_KHR_shader_bfloat16, newer than ash 0.38's headers).
const BFLOAT16: vk::ComponentTypeKHR = vk::ComponentTypeKHR::from_raw(1_000_141_000);

/// The scalar kind of a cooperative-matrix component type, if vkprism names it.
/// The M×N×K shape over the component types `[a, b, c, result]`, or `None` where one has no
/// [`ScalarKind`].
fn coopmat_shape(
    (m, n, k): (u32, u32, u32),
    [a, b, c, result]: [vk::ComponentTypeKHR; 4],
) -> Option<CoopMatShape> {
    Some(CoopMatShape {
        m,
        n,
        k,
        a: scalar(a)?,
        b: scalar(b)?,
        c: scalar(c)?,
        result: scalar(result)?,
    })
}

fn scalar(t: vk::ComponentTypeKHR) -> Option<ScalarKind> {
    Some(match t {
        vk::ComponentTypeKHR::FLOAT16 => ScalarKind::F16,
        BFLOAT16 => ScalarKind::Bf16,
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

#[cfg(test)]
mod core_count_tests {
    use super::*;

    #[test]
    fn multiprocessors_from_whichever_extension_says() {
        assert_eq!(multiprocessors(CoreCounts::default()), 0);
        let nvidia = CoreCounts {
            nvidia_sms: Some(132),
            ..Default::default()
        };
        assert_eq!(multiprocessors(nvidia), 132);
        // 6 engines of 2 arrays of 8 compute units.
        let amd = CoreCounts {
            amd: Some([6, 2, 8]),
            ..Default::default()
        };
        assert_eq!(multiprocessors(amd), 96);
        let arm = CoreCounts {
            arm_cores: Some(10),
            ..Default::default()
        };
        assert_eq!(multiprocessors(arm), 10);
    }
}

#[cfg(test)]
mod rebar_tests {
    use super::*;

    /// Memory with one device-local heap of `vram` bytes, a host heap, and a host-visible
    /// device-local type on a heap of `bar` bytes.
    fn memory(vram: u64, bar: u64) -> vk::PhysicalDeviceMemoryProperties {
        let mut m = vk::PhysicalDeviceMemoryProperties {
            memory_heap_count: 3,
            memory_type_count: 2,
            ..Default::default()
        };
        m.memory_heaps[0] = vk::MemoryHeap {
            size: vram,
            flags: vk::MemoryHeapFlags::DEVICE_LOCAL,
        };
        m.memory_heaps[1] = vk::MemoryHeap {
            size: 64 << 30,
            flags: vk::MemoryHeapFlags::empty(),
        };
        m.memory_heaps[2] = vk::MemoryHeap {
            size: bar,
            flags: vk::MemoryHeapFlags::DEVICE_LOCAL,
        };
        m.memory_types[0] = vk::MemoryType {
            property_flags: vk::MemoryPropertyFlags::DEVICE_LOCAL,
            heap_index: 0,
        };
        m.memory_types[1] = vk::MemoryType {
            property_flags: vk::MemoryPropertyFlags::DEVICE_LOCAL
                | vk::MemoryPropertyFlags::HOST_VISIBLE
                | vk::MemoryPropertyFlags::HOST_COHERENT,
            heap_index: 2,
        };
        m
    }

    #[test]
    fn only_whole_host_visible_vram_on_a_discrete_gpu_counts_as_resizable_bar() {
        let discrete = vk::PhysicalDeviceType::DISCRETE_GPU;
        assert!(is_rebar(discrete, &memory(80 << 30, 80 << 30)));
        assert!(
            !is_rebar(discrete, &memory(80 << 30, 256 << 20)),
            "a 256 MiB window"
        );
        assert!(!is_rebar(
            vk::PhysicalDeviceType::INTEGRATED_GPU,
            &memory(8 << 30, 8 << 30)
        ));
    }
}
