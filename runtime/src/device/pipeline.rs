//! Shader modules, layouts and compute pipelines; the device's `VkPipelineCache` (merging saved
//! data in, reading it out); and the driver's statistics of a pipeline.

use super::error::{vkerr, DeviceError};
use super::lock::api_lock;
use super::shared::Shared;
use ash::vk;
use std::sync::Mutex;

/// `vkMergePipelineCaches` needs its destination cache externally synchronized, also against
/// pipeline creation that uses it: both (and reading the cache out) take this lock.
static CACHE_LOCK: Mutex<()> = Mutex::new(());

/// The shader module of `spirv`, a descriptor-set layout of `bindings` (set 0) and a pipeline
/// layout with it (and a compute push-constant range of `push_range` bytes, if any). On an
/// error, what was made is destroyed.
///
/// # Safety
/// `spirv` is a SPIR-V compute module the runtime checked (the driver trusts it); the caller
/// destroys the objects ([`destroy_kernel`]) before `shared`'s device goes.
pub(crate) unsafe fn create_layouts(
    shared: &Shared,
    spirv: &[u32],
    bindings: &[vk::DescriptorSetLayoutBinding<'_>],
    push_range: u32,
) -> Result<
    (
        vk::ShaderModule,
        vk::DescriptorSetLayout,
        vk::PipelineLayout,
    ),
    DeviceError,
> {
    let d = &shared.device;
    let _api = api_lock();
    let code = vk::ShaderModuleCreateInfo::default().code(spirv);
    // SAFETY: the words start with a SPIR-V header (the caller's contract).
    let module =
        unsafe { d.create_shader_module(&code, None) }.map_err(vkerr("vkCreateShaderModule"))?;
    let set_info = vk::DescriptorSetLayoutCreateInfo::default().bindings(bindings);
    // SAFETY: a plain creation; `bindings` lives until the call returns.
    let set_layout = match unsafe { d.create_descriptor_set_layout(&set_info, None) } {
        Ok(l) => l,
        Err(e) => {
            // SAFETY: the module was just made and nothing uses it.
            unsafe { d.destroy_shader_module(module, None) };
            return Err(vkerr("vkCreateDescriptorSetLayout")(e));
        }
    };
    let ranges = [vk::PushConstantRange {
        stage_flags: vk::ShaderStageFlags::COMPUTE,
        offset: 0,
        size: push_range,
    }];
    let layouts = [set_layout];
    let mut info = vk::PipelineLayoutCreateInfo::default().set_layouts(&layouts);
    if push_range > 0 {
        info = info.push_constant_ranges(&ranges);
    }
    // SAFETY: a plain creation; `layouts` and `ranges` live until the call returns.
    match unsafe { d.create_pipeline_layout(&info, None) } {
        Ok(layout) => Ok((module, set_layout, layout)),
        Err(e) => {
            // SAFETY: both were just made and nothing uses them.
            unsafe {
                d.destroy_descriptor_set_layout(set_layout, None);
                d.destroy_shader_module(module, None);
            }
            Err(vkerr("vkCreatePipelineLayout")(e))
        }
    }
}

/// `vkCreateComputePipelines` of `module`'s `main` with `layout`, these (sorted)
/// specialization entries, 4 bytes each, and a required subgroup size if any; capturing
/// statistics where the device's statistics are enabled. Goes through the device's pipeline cache.
///
/// # Safety
/// `module` and `layout` are live objects of this device, and the caller destroys the pipeline
/// before them; `subgroup_size` was checked against the device.
pub(crate) unsafe fn create_compute_pipeline(
    shared: &Shared,
    module: vk::ShaderModule,
    layout: vk::PipelineLayout,
    entries: &[(u32, u32)],
    subgroup_size: Option<u32>,
) -> Result<vk::Pipeline, DeviceError> {
    let map: Vec<vk::SpecializationMapEntry> = entries
        .iter()
        .enumerate()
        .map(|(i, (id, _))| vk::SpecializationMapEntry {
            constant_id: *id,
            offset: i as u32 * 4,
            size: 4,
        })
        .collect();
    let data: Vec<u8> = entries.iter().flat_map(|(_, v)| v.to_le_bytes()).collect();
    let spec_info = vk::SpecializationInfo::default()
        .map_entries(&map)
        .data(&data);
    let mut required = vk::PipelineShaderStageRequiredSubgroupSizeCreateInfo::default()
        .required_subgroup_size(subgroup_size.unwrap_or(0));
    let mut stage = vk::PipelineShaderStageCreateInfo::default()
        .stage(vk::ShaderStageFlags::COMPUTE)
        .module(module)
        .name(c"main")
        .specialization_info(&spec_info);
    if subgroup_size.is_some() {
        stage = stage.push_next(&mut required);
    }
    let flags = if shared.pipeline_statistics {
        vk::PipelineCreateFlags::CAPTURE_STATISTICS_KHR
    } else {
        vk::PipelineCreateFlags::empty()
    };
    let info = vk::ComputePipelineCreateInfo::default()
        .flags(flags)
        .stage(stage)
        .layout(layout);
    // The API lock before any other lock (see `api_lock`).
    let _api = api_lock();
    let _cache = CACHE_LOCK.lock().unwrap_or_else(|e| e.into_inner());
    // SAFETY: everything `info` points to lives until the call returns; the pipeline cache
    // is externally synchronized by CACHE_LOCK; the module and layout are live and the
    // subgroup size was checked (the caller's contract).
    let pipelines = unsafe {
        shared
            .device
            .create_compute_pipelines(shared.pipeline_cache, &[info], None)
    }
    .map_err(|(_, e)| vkerr("vkCreateComputePipelines")(e))?;
    Ok(pipelines[0])
}

/// Destroys a kernel's pipelines, then its pipeline layout, set layout and module.
///
/// # Safety
/// The objects are the kernel's own (made by [`create_layouts`] and
/// [`create_compute_pipeline`]), destroyed once, and no GPU work uses them any more.
pub(crate) unsafe fn destroy_kernel(
    shared: &Shared,
    pipelines: impl IntoIterator<Item = vk::Pipeline>,
    layout: vk::PipelineLayout,
    set_layout: vk::DescriptorSetLayout,
    module: vk::ShaderModule,
) {
    let d = &shared.device;
    let _api = api_lock();
    // SAFETY: the caller's contract.
    unsafe {
        for p in pipelines {
            d.destroy_pipeline(p, None);
        }
        d.destroy_pipeline_layout(layout, None);
        d.destroy_descriptor_set_layout(set_layout, None);
        d.destroy_shader_module(module, None);
    }
}

/// Merges saved cache `data` into the device's pipeline cache (through a temporary cache made
/// from it, destroyed again).
///
/// # Safety
/// `data` passed the runtime's checks of a saved cache (the header Vulkan puts first, for this
/// device; vkprism's trailer and checksum); the driver still validates it.
pub(crate) unsafe fn merge_pipeline_cache(shared: &Shared, data: &[u8]) -> Result<(), DeviceError> {
    let d = &shared.device;
    let _api = api_lock();
    // SAFETY: `data` passed the header and checksum checks (the caller's contract; the driver
    // still validates it); the created cache is destroyed below.
    let loaded = unsafe {
        d.create_pipeline_cache(
            &vk::PipelineCacheCreateInfo::default().initial_data(data),
            None,
        )
    }
    .map_err(vkerr("vkCreatePipelineCache"))?;
    let merged = {
        let _cache = CACHE_LOCK.lock().unwrap_or_else(|e| e.into_inner());
        // SAFETY: the destination is externally synchronized by CACHE_LOCK; both caches belong
        // to this device.
        unsafe { d.merge_pipeline_caches(shared.pipeline_cache, &[loaded]) }
            .map_err(vkerr("vkMergePipelineCaches"))
    };
    // SAFETY: `loaded` is ours and no longer used.
    unsafe { d.destroy_pipeline_cache(loaded, None) };
    merged
}

/// The device's pipeline cache data (`vkGetPipelineCacheData`).
pub(crate) fn pipeline_cache_data(shared: &Shared) -> Result<Vec<u8>, DeviceError> {
    // The API lock before any other lock (see `api_lock`).
    let _api = api_lock();
    let _cache = CACHE_LOCK.lock().unwrap_or_else(|e| e.into_inner());
    // SAFETY: the cache is externally synchronized by CACHE_LOCK while it is read.
    unsafe { shared.device.get_pipeline_cache_data(shared.pipeline_cache) }
        .map_err(vkerr("vkGetPipelineCacheData"))
}

/// Calls `each` with every executable of `pipeline` and its statistics, as the driver reports
/// them (`VK_KHR_pipeline_executable_properties`).
///
/// # Safety
/// The device's pipeline statistics are enabled (`Shared::pipeline_statistics`), and
/// `pipeline` is a live pipeline of this device, made while they were.
pub(crate) unsafe fn pipeline_statistics(
    shared: &Shared,
    pipeline: vk::Pipeline,
    mut each: impl FnMut(
        &vk::PipelineExecutablePropertiesKHR<'_>,
        &[vk::PipelineExecutableStatisticKHR<'_>],
    ),
) -> Result<(), DeviceError> {
    let _api = api_lock();
    let ext =
        ash::khr::pipeline_executable_properties::Device::new(&shared.instance, &shared.device);
    let info = vk::PipelineInfoKHR::default().pipeline(pipeline);
    // SAFETY: the extension and its feature are enabled, and the pipeline is alive (the
    // caller's contract).
    let executables = unsafe { ext.get_pipeline_executable_properties(&info) }
        .map_err(vkerr("vkGetPipelineExecutablePropertiesKHR"))?;
    for (index, executable) in executables.iter().enumerate() {
        let which = vk::PipelineExecutableInfoKHR::default()
            .pipeline(pipeline)
            .executable_index(index as u32);
        // SAFETY: as above; the index is one the driver just listed.
        let stats = unsafe { ext.get_pipeline_executable_statistics(&which) }
            .map_err(vkerr("vkGetPipelineExecutableStatisticsKHR"))?;
        each(executable, &stats);
    }
    Ok(())
}
