//! The device layer, the raw layer under the checked one (as wgpu-hal is under wgpu-core): every
//! ash call of the runtime is made here (the one escape hatch is `Context::raw`). Its functions
//! take plain parameters (handles, sizes, flags; no variant policy or options), take the API
//! lock themselves ([`api_lock`]), and leave nothing behind on an error: a creation that makes
//! several objects (a buffer with its memory, an image with its memory, view and sampler, a
//! kernel's module and layouts, a list's pool, buffer and fence) returns them all or destroys
//! what it made. A function whose soundness depends on its caller (handles still alive, a
//! command buffer recording, nothing the GPU still uses destroyed, SPIR-V checked) is an
//! `unsafe fn` with a `# Safety` section; the checked layer above ([`crate::context`] and the
//! modules beside it) calls those with a SAFETY comment saying why the contract holds.
//!
//! - `error.rs`: the error enum and `vkerr`;
//! - `instance.rs` / `messenger.rs`: the loader, the instance, the validation callback;
//! - `physical.rs`: choosing the physical device and its compute queue family;
//! - `features.rs`: one type that queries and enables the feature structs;
//! - `properties.rs`: extensions, limits, image formats, driver strings, memory kind;
//! - `logical.rs`: the logical device;
//! - `lock.rs`: the process-wide lifecycle lock (`api_lock`, `lifecycle_lock`);
//! - `shared.rs`: `Shared` (what every object holds), its device facts and teardown;
//! - `heap.rs`: room per memory heap (budget), allocating and freeing memory, counted per heap;
//! - `submit.rs`: one-shot transfers, submission, bounded fence waits, poisoning;
//! - `buffer.rs`: buffers made with their memory, freed, copied between;
//! - `image.rs`: image format queries; images made with their memory, view and sampler, in
//!   GENERAL layout; destroyed; copied to and from buffers;
//! - `pipeline.rs`: shader modules, layouts, compute pipelines, the pipeline cache, pipeline
//!   statistics;
//! - `command.rs`: command lists' pools, buffers, fences, descriptor sets and recorded commands;
//! - `query.rs`: timestamp queries.

mod buffer;
mod command;
mod error;
mod features;
mod heap;
mod image;
mod instance;
mod lock;
mod logical;
mod messenger;
mod physical;
mod pipeline;
mod properties;
mod query;
mod shared;
mod submit;

pub(crate) use buffer::{copy_buffer, copy_buffer_submit, create_buffer, free_buffer};
pub(crate) use command::{
    allocate_descriptor_set, create_command_objects, create_descriptor_pool,
    destroy_command_objects, destroy_fence, end_recording, record_dispatch, record_transfer,
    DispatchCommands, TransferCommand,
};
pub(crate) use error::vkerr;
pub use error::DeviceError;
pub(crate) use heap::allocate_memory_counted;
pub(crate) use image::{
    copy_buffer_to_image, copy_image_to_buffer, create_image, destroy_image,
    image_format_properties, ImageObjects,
};
pub(crate) use lock::{api_lock, lifecycle_lock};
pub use physical::DeviceSelector;
pub(crate) use pipeline::{
    create_compute_pipeline, create_layouts, destroy_kernel, merge_pipeline_cache,
    pipeline_cache_data, pipeline_statistics,
};
pub(crate) use query::{cmd_start_timestamps, create_timestamp_pool, timestamps};
pub(crate) use shared::{Shared, DEFAULT_STAGING_CHUNK};
pub(crate) use submit::DEFAULT_FENCE_TIMEOUT;

use ash::vk;
use features::PhysicalDeviceFeatures;
use gpu_allocator::vulkan::{Allocator, AllocatorCreateDesc};
use instance::Instance;
use logical::Device;
use std::mem::ManuallyDrop;
use std::sync::{Mutex, RwLock};
use vkprism_core::{CoopMatShapes, DeviceFeatures, Feature, WorkgroupMatrixShapes};

/// What to open, as plain values (the safe layer resolves options and environment variables).
pub(crate) struct OpenRequest {
    /// Enable the Khronos validation layer and record its messages.
    pub validation: bool,
    /// Which physical device (`Auto`: the best by type).
    pub device: DeviceSelector,
    /// Use this queue family (it must have compute); `None`: prefer a compute-only one.
    pub queue_family: Option<usize>,
    /// Stage every transfer even where memory is unified.
    pub force_staging: bool,
    /// How long a fence wait blocks before the context gives up on the GPU.
    pub fence_timeout: std::time::Duration,
    /// Bytes per staged copy.
    pub staging_chunk: u64,
    /// Enable `robustBufferAccess` where the device has it.
    pub robust_buffer_access: bool,
    /// Enable `VK_KHR_pipeline_executable_properties` where the device has it.
    pub pipeline_statistics: bool,
}

/// The physical device, read once: what it offers and how to enable it.
struct Chosen {
    physical: physical::Physical,
    extensions: Vec<String>,
    structs: PhysicalDeviceFeatures,
    features: DeviceFeatures,
    /// The driver's name and info strings (its id is in `features`).
    driver: (String, String),
    queue_family: u32,
    timestamp_bits: u32,
}

/// Opens a device as `request` says, enabling every feature vkprism uses that it has.
///
/// # Safety
/// The caller holds [`lifecycle_lock`].
pub(crate) unsafe fn open(request: &OpenRequest) -> Result<Shared, DeviceError> {
    let messages = Box::<messenger::MessageLog>::default();
    // SAFETY: the log is boxed and moves into `Shared` with the instance, which drops the
    // instance before the log (see `Shared`'s fields).
    let instance = unsafe { Instance::create(request.validation, &messages)? };
    // SAFETY: `instance` is alive for the whole call.
    let chosen = unsafe { choose(&instance, request)? };
    let mut enabled = chosen.structs.enable(chosen.features.features);
    let robust = request.robust_buffer_access && chosen.structs.has_robust_buffer_access();
    if robust {
        enabled.enable_robust_buffer_access();
    }
    // SAFETY: the handles come from this instance.
    let statistics = request.pipeline_statistics
        && unsafe {
            properties::pipeline_executable_info(
                &instance,
                chosen.physical.handle,
                &chosen.extensions,
            )
        };
    let memory_budget =
        features::lists_extension(&chosen.extensions, ash::ext::memory_budget::NAME);
    // SAFETY: the handles and structs were read from this instance; `Shared` drops the device
    // before the instance, and an error here drops it before `instance` (declared earlier).
    let device = unsafe {
        Device::create(
            &instance,
            chosen.physical.handle,
            chosen.queue_family,
            &mut enabled,
            &chosen.extensions,
            memory_budget,
            statistics,
        )?
    };
    let enabled = Enabled {
        robust_buffer_access: robust,
        memory_budget,
        pipeline_statistics: statistics,
    };
    // SAFETY: as above.
    unsafe { finish(messages, instance, device, chosen, request, enabled) }
}

/// What was enabled beyond the features.
struct Enabled {
    robust_buffer_access: bool,
    memory_budget: bool,
    pipeline_statistics: bool,
}

/// Chooses the physical device and reads what it offers.
///
/// # Safety
/// `instance` is alive.
unsafe fn choose(instance: &Instance, request: &OpenRequest) -> Result<Chosen, DeviceError> {
    // SAFETY: the caller guarantees `instance` is alive; every handle below comes from it.
    unsafe {
        let physical = physical::choose(instance, &request.device, instance.api_version)?;
        let pd = physical.handle;
        let extensions = properties::extensions(instance, pd)
            .map_err(vkerr("vkEnumerateDeviceExtensionProperties"))?;
        let api = physical.properties.api_version;
        let structs = PhysicalDeviceFeatures::query(instance, pd, api, &extensions);
        let set = structs
            .supported()
            .union(properties::other_features(instance, pd, api));
        let cooperative_matrices = if set.contains(Feature::CooperativeMatrix) {
            properties::coopmat_shapes(instance.entry(), instance, pd)
                .map_err(vkerr("vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR"))?
        } else {
            CoopMatShapes::default()
        };
        let workgroup_matrices = if set.contains(Feature::CooperativeMatrixFlexibleDimensions) {
            properties::workgroup_shapes(instance.entry(), instance, pd).map_err(vkerr(
                "vkGetPhysicalDeviceCooperativeMatrixFlexibleDimensionsPropertiesNV",
            ))?
        } else {
            WorkgroupMatrixShapes::default()
        };
        let vulkan12 = vk::api_version_major(api) > 1 || vk::api_version_minor(api) >= 2;
        let (driver_name, driver_info, driver_id) = properties::driver(instance, pd, vulkan12);
        let features = DeviceFeatures {
            features: set,
            limits: properties::limits(instance, &physical, &extensions),
            cooperative_matrices,
            workgroup_matrices,
            // The device is used at the instance's version when that is the lower one.
            api_version: api.min(instance.api_version),
            vendor_id: physical.properties.vendor_id,
            driver_id,
        };
        let (queue_family, timestamp_bits) =
            physical::compute_queue_family(instance, &physical, request.queue_family)?;
        Ok(Chosen {
            physical,
            extensions,
            structs,
            features,
            driver: (driver_name, driver_info),
            queue_family,
            timestamp_bits,
        })
    }
}

/// Makes the per-device objects (allocator, pipeline cache, transfer pool) and `Shared`.
///
/// On an error everything given is dropped, in reverse order of the parameters: the device,
/// the instance, then the message log its callback writes to.
///
/// # Safety
/// `device` was made on `chosen.physical` of `instance`; `messages` is the instance's log.
unsafe fn finish(
    messages: Box<messenger::MessageLog>,
    instance: Instance,
    device: Device,
    chosen: Chosen,
    request: &OpenRequest,
    enabled: Enabled,
) -> Result<Shared, DeviceError> {
    let pd = chosen.physical.handle;
    let allocator = Allocator::new(&AllocatorCreateDesc {
        instance: (*instance).clone(),
        device: (*device).clone(),
        physical_device: pd,
        debug_settings: Default::default(),
        buffer_device_address: false,
        allocation_sizes: Default::default(),
    })
    .map_err(|e| DeviceError::Allocator(e.to_string()))?;
    let (pipeline_cache, transfer_pool) = match create_cache_and_pool(&device, chosen.queue_family)
    {
        Ok(objects) => objects,
        Err(e) => {
            drop(allocator);
            return Err(e);
        }
    };
    // SAFETY: the device was created with one queue of this family.
    let queue = unsafe { device.get_device_queue(chosen.queue_family, 0) };
    let properties = chosen.physical.properties;
    // SAFETY: the handles come from this instance.
    let memory = unsafe { instance.get_physical_device_memory_properties(pd) };
    let unified = properties::is_unified(properties.device_type, &memory);
    let rebar = properties::is_rebar(properties.device_type, &memory);
    Ok(Shared {
        instance: ManuallyDrop::new(instance),
        device: ManuallyDrop::new(device),
        messages,
        queue: Mutex::new(queue),
        queue_family: chosen.queue_family,
        timestamp_bits: chosen.timestamp_bits,
        features: chosen.features,
        properties,
        driver: chosen.driver,
        driver_id: chosen.features.driver_id,
        memory,
        unified_memory: unified && !request.force_staging,
        host_visible_vram: rebar && !request.force_staging,
        allocator: Mutex::new(Some(allocator)),
        pipeline_cache,
        transfer_pool: Mutex::new(transfer_pool),
        staging: Mutex::new(Default::default()),
        staging_chunk: request.staging_chunk,
        mapped_access: RwLock::new(()),
        fence_timeout: request.fence_timeout,
        poisoned: Default::default(),
        robust_buffer_access: enabled.robust_buffer_access,
        physical: pd,
        memory_budget: enabled.memory_budget,
        pipeline_statistics: enabled.pipeline_statistics,
        heap_used: Default::default(),
        peak_used: Default::default(),
    })
}

/// The device's pipeline cache and transient command pool for one-shot transfers. On an error
/// nothing is left behind.
fn create_cache_and_pool(
    device: &Device,
    queue_family: u32,
) -> Result<(vk::PipelineCache, vk::CommandPool), DeviceError> {
    // SAFETY: a plain creation on the live device.
    let cache =
        unsafe { device.create_pipeline_cache(&vk::PipelineCacheCreateInfo::default(), None) }
            .map_err(vkerr("vkCreatePipelineCache"))?;
    let pool_info = vk::CommandPoolCreateInfo::default()
        .queue_family_index(queue_family)
        .flags(vk::CommandPoolCreateFlags::TRANSIENT);
    // SAFETY: a plain creation on the live device, for a family it was created with.
    match unsafe { device.create_command_pool(&pool_info, None) } {
        Ok(pool) => Ok((cache, pool)),
        Err(e) => {
            // SAFETY: the cache was just made and nothing uses it.
            unsafe { device.destroy_pipeline_cache(cache, None) };
            Err(vkerr("vkCreateCommandPool")(e))
        }
    }
}
