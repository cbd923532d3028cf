//! The Vulkan instance and device: loading, choosing the physical device, enabling features, the
//! validation layer's messages, the memory allocator and the queue. Everything else holds an
//! `Arc<Shared>`, so the device outlives every object made from it.

use crate::features::{self, Queried};
use crate::select::Options;
use ash::vk;
use gpu_allocator::vulkan::{Allocator, AllocatorCreateDesc};
use std::ffi::{c_void, CStr, CString};
use std::fmt;
use std::sync::{Arc, Mutex};
use vkprism_core::{DeviceFeatures, Feature};

/// Errors creating or using the context.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(
        "no Vulkan loader found (install libvulkan1 and a driver, e.g. mesa-vulkan-drivers): {0}"
    )]
    NoLoader(String),
    #[error("the Vulkan instance supports only version {0}.{1}; vkprism needs 1.1")]
    InstanceTooOld(u32, u32),
    #[error("no Vulkan device found")]
    NoDevice,
    #[error("device selector `{selector}` matches none of: {available}")]
    DeviceNotFound { selector: String, available: String },
    #[error("device `{0}` supports only Vulkan {1}.{2}; vkprism needs 1.1")]
    DeviceTooOld(String, u32, u32),
    #[error("device `{0}` has no compute queue")]
    NoComputeQueue(String),
    #[error("validation was asked for but the layer VK_LAYER_KHRONOS_validation is not installed (Debian: vulkan-validationlayers)")]
    ValidationLayerMissing,
    #[error("the validation layer reported {} message(s):\n{}", .0.len(), .0.join("\n"))]
    Validation(Vec<String>),
    #[error("the device was lost")]
    DeviceLost,
    #[error("the GPU did not finish within {0:?}; it may be hung")]
    Timeout(std::time::Duration),
    #[error("memory allocator: {0}")]
    Allocator(String),
    #[error("Vulkan call {call} failed: {result}")]
    Vk {
        call: &'static str,
        result: vk::Result,
    },
}

pub(crate) fn vkerr(call: &'static str) -> impl Fn(vk::Result) -> Error {
    move |result| {
        if result == vk::Result::ERROR_DEVICE_LOST {
            Error::DeviceLost
        } else {
            Error::Vk { call, result }
        }
    }
}

/// Which physical device to use.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum DeviceSelector {
    /// `VKPRISM_DEVICE` if set (an index, or a case-insensitive name substring), else the first
    /// by type: discrete, integrated, virtual, CPU, other.
    #[default]
    Auto,
    Index(usize),
    /// Case-insensitive substring of the device name.
    Name(String),
}

/// How to create a [`Context`].
#[derive(Clone, Debug, Default)]
pub struct ContextOptions {
    pub device: DeviceSelector,
    /// Khronos validation layer: `None` follows `VKPRISM_VALIDATION` (1 = on).
    pub validation: Option<bool>,
    /// Stage every upload and download through a copy even where device memory is mappable
    /// (to test the staging path, or to compare).
    pub force_staging: bool,
    /// Variant options for every kernel loaded through this context (per-kernel overrides go to
    /// `Context::load_with`).
    pub options: Options,
}

pub(crate) struct Shared {
    /// Keeps the Vulkan loader library loaded for as long as anything uses the device.
    #[allow(dead_code)]
    pub entry: ash::Entry,
    pub instance: ash::Instance,
    debug: Option<(ash::ext::debug_utils::Instance, vk::DebugUtilsMessengerEXT)>,
    /// Validation messages; boxed so the pointer given to the callback stays put.
    messages: Box<Mutex<Vec<String>>>,
    pub device: ash::Device,
    pub queue: Mutex<vk::Queue>,
    pub queue_family: u32,
    pub timestamp_bits: u32,
    pub features: DeviceFeatures,
    pub properties: vk::PhysicalDeviceProperties,
    pub driver: (String, String),
    pub memory: vk::PhysicalDeviceMemoryProperties,
    /// Device-local memory the host can map (integrated GPUs, CPU drivers): tensors live there
    /// and are mapped directly, with no staging copy.
    pub unified_memory: bool,
    pub allocator: Mutex<Option<Allocator>>,
    pub pipeline_cache: vk::PipelineCache,
    pub options: Options,
    /// One-shot transfer submissions.
    pub transfer_pool: Mutex<vk::CommandPool>,
    /// Host access to mapped tensor memory against GPU work: a running command list holds it
    /// shared, a mapped read or write holds it exclusively, so the host never touches memory a
    /// dispatch may be using (which would be a data race, from safe code).
    pub mapped_access: std::sync::RwLock<()>,
}

impl Shared {
    pub fn take_messages(&self) -> Vec<String> {
        std::mem::take(&mut *self.messages.lock().unwrap_or_else(|e| e.into_inner()))
    }

    /// Records and submits a one-shot command buffer, and waits for it.
    pub fn one_shot(&self, record: impl FnOnce(vk::CommandBuffer)) -> Result<(), Error> {
        let pool = self.transfer_pool.lock().unwrap_or_else(|e| e.into_inner());
        unsafe {
            let cmd = self
                .device
                .allocate_command_buffers(
                    &vk::CommandBufferAllocateInfo::default()
                        .command_pool(*pool)
                        .command_buffer_count(1),
                )
                .map_err(vkerr("vkAllocateCommandBuffers"))?[0];
            let result = (|| {
                self.device
                    .begin_command_buffer(
                        cmd,
                        &vk::CommandBufferBeginInfo::default()
                            .flags(vk::CommandBufferUsageFlags::ONE_TIME_SUBMIT),
                    )
                    .map_err(vkerr("vkBeginCommandBuffer"))?;
                // Earlier GPU work (other submissions) becomes visible to this one, and this one's
                // writes to the host.
                let all = vk::MemoryBarrier::default()
                    .src_access_mask(vk::AccessFlags::MEMORY_WRITE)
                    .dst_access_mask(vk::AccessFlags::MEMORY_READ | vk::AccessFlags::MEMORY_WRITE);
                self.device.cmd_pipeline_barrier(
                    cmd,
                    vk::PipelineStageFlags::ALL_COMMANDS,
                    vk::PipelineStageFlags::ALL_COMMANDS,
                    vk::DependencyFlags::empty(),
                    &[all],
                    &[],
                    &[],
                );
                record(cmd);
                let host = vk::MemoryBarrier::default()
                    .src_access_mask(vk::AccessFlags::MEMORY_WRITE)
                    .dst_access_mask(vk::AccessFlags::HOST_READ);
                self.device.cmd_pipeline_barrier(
                    cmd,
                    vk::PipelineStageFlags::ALL_COMMANDS,
                    vk::PipelineStageFlags::HOST,
                    vk::DependencyFlags::empty(),
                    &[host],
                    &[],
                    &[],
                );
                self.device
                    .end_command_buffer(cmd)
                    .map_err(vkerr("vkEndCommandBuffer"))?;
                self.submit_and_wait(cmd)
            })();
            self.device.free_command_buffers(*pool, &[cmd]);
            result
        }
    }

    /// Submits one command buffer and waits on a fence made for it.
    ///
    /// # Safety
    /// `cmd` must be a finished command buffer of this device whose resources are alive.
    pub unsafe fn submit_and_wait(&self, cmd: vk::CommandBuffer) -> Result<(), Error> {
        let fence = self
            .device
            .create_fence(&vk::FenceCreateInfo::default(), None)
            .map_err(vkerr("vkCreateFence"))?;
        let r = self.submit(cmd, fence).and_then(|_| self.wait(fence));
        self.device.destroy_fence(fence, None);
        r
    }

    /// Submits `cmd`, signalling the unsignalled `fence`.
    ///
    /// # Safety
    /// As [`Shared::submit_and_wait`]; `fence` belongs to this device and is unsignalled.
    pub unsafe fn submit(&self, cmd: vk::CommandBuffer, fence: vk::Fence) -> Result<(), Error> {
        let cmds = [cmd];
        let submit = vk::SubmitInfo::default().command_buffers(&cmds);
        let queue = self.queue.lock().unwrap_or_else(|e| e.into_inner());
        self.device
            .queue_submit(*queue, &[submit], fence)
            .map_err(vkerr("vkQueueSubmit"))
    }

    /// Waits for `fence`: spinning on its status first (a blocking wait can take hundreds of
    /// microseconds to wake up on some drivers), then blocking, and giving up with an error
    /// after `WAIT_TIMEOUT` rather than hanging on a stuck GPU.
    pub fn wait(&self, fence: vk::Fence) -> Result<(), Error> {
        let start = std::time::Instant::now();
        while start.elapsed() < SPIN {
            match unsafe { self.device.get_fence_status(fence) } {
                Ok(true) => return Ok(()),
                Ok(false) => std::hint::spin_loop(),
                Err(e) => return Err(vkerr("vkGetFenceStatus")(e)),
            }
        }
        match unsafe {
            self.device
                .wait_for_fences(&[fence], true, WAIT_TIMEOUT.as_nanos() as u64)
        } {
            Ok(()) => Ok(()),
            Err(vk::Result::TIMEOUT) => Err(Error::Timeout(WAIT_TIMEOUT)),
            Err(e) => Err(vkerr("vkWaitForFences")(e)),
        }
    }
}

/// How long a wait spins before it blocks.
const SPIN: std::time::Duration = std::time::Duration::from_millis(2);
/// How long a wait blocks before it reports the GPU as stuck.
const WAIT_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(120);

/// Serializes creating and destroying instances and devices. Seen on NVIDIA 580 with the
/// validation layer: contexts created and dropped concurrently on several threads crashed in
/// the driver about one run in three; serialized, never. Costs nothing in steady state.
static LIFECYCLE: Mutex<()> = Mutex::new(());

impl Drop for Shared {
    fn drop(&mut self) {
        let _serial = LIFECYCLE.lock().unwrap_or_else(|e| e.into_inner());
        unsafe {
            let _ = self.device.device_wait_idle();
            // The allocator frees its memory blocks against the device: drop it first.
            drop(
                self.allocator
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .take(),
            );
            self.device
                .destroy_pipeline_cache(self.pipeline_cache, None);
            self.device.destroy_command_pool(
                *self
                    .transfer_pool
                    .get_mut()
                    .unwrap_or_else(|e| e.into_inner()),
                None,
            );
            self.device.destroy_device(None);
            if let Some((du, m)) = self.debug.take() {
                du.destroy_debug_utils_messenger(m, None);
            }
            self.instance.destroy_instance(None);
        }
    }
}

/// A Vulkan device ready for compute. Cheap to clone.
#[derive(Clone)]
pub struct Context {
    pub(crate) shared: Arc<Shared>,
}

unsafe extern "system" fn on_message(
    severity: vk::DebugUtilsMessageSeverityFlagsEXT,
    kind: vk::DebugUtilsMessageTypeFlagsEXT,
    data: *const vk::DebugUtilsMessengerCallbackDataEXT<'_>,
    user: *mut c_void,
) -> vk::Bool32 {
    // Never panic here: unwinding across the FFI boundary is undefined behaviour.
    if user.is_null()
        || data.is_null()
        || !kind.contains(vk::DebugUtilsMessageTypeFlagsEXT::VALIDATION)
    {
        return vk::FALSE;
    }
    let text = unsafe { (*data).message_as_c_str() }
        .map(|c| c.to_string_lossy().into_owned())
        .unwrap_or_default();
    let sink = unsafe { &*(user as *const Mutex<Vec<String>>) };
    if let Ok(mut v) = sink.lock() {
        v.push(format!("{severity:?}: {text}"));
    }
    vk::FALSE
}

fn type_rank(t: vk::PhysicalDeviceType) -> u32 {
    match t {
        vk::PhysicalDeviceType::DISCRETE_GPU => 0,
        vk::PhysicalDeviceType::INTEGRATED_GPU => 1,
        vk::PhysicalDeviceType::VIRTUAL_GPU => 2,
        vk::PhysicalDeviceType::CPU => 3,
        _ => 4,
    }
}

impl Context {
    /// A context on the default device (see [`DeviceSelector::Auto`]).
    pub fn new() -> Result<Context, Error> {
        Context::with_options(ContextOptions::default())
    }

    pub fn with_options(opts: ContextOptions) -> Result<Context, Error> {
        let _serial = LIFECYCLE.lock().unwrap_or_else(|e| e.into_inner());
        let validation = opts
            .validation
            .unwrap_or_else(|| std::env::var("VKPRISM_VALIDATION").is_ok_and(|v| v == "1"));
        let entry = unsafe { ash::Entry::load() }.map_err(|e| Error::NoLoader(e.to_string()))?;
        let version = unsafe { entry.try_enumerate_instance_version() }
            .map_err(vkerr("vkEnumerateInstanceVersion"))?
            .unwrap_or(vk::API_VERSION_1_0);
        if vk::api_version_major(version) == 1 && vk::api_version_minor(version) < 1 {
            return Err(Error::InstanceTooOld(1, vk::api_version_minor(version)));
        }
        let api = version.min(vk::API_VERSION_1_3);
        let messages: Box<Mutex<Vec<String>>> = Box::default();

        let layer = c"VK_LAYER_KHRONOS_validation";
        let mut layers = Vec::new();
        let mut exts = Vec::new();
        let available_exts = unsafe { entry.enumerate_instance_extension_properties(None) }
            .map_err(vkerr("vkEnumerateInstanceExtensionProperties"))?;
        let has_ext = |n: &CStr| {
            available_exts
                .iter()
                .any(|e| e.extension_name_as_c_str() == Ok(n))
        };
        if validation {
            let have = unsafe { entry.enumerate_instance_layer_properties() }
                .map_err(vkerr("vkEnumerateInstanceLayerProperties"))?
                .iter()
                .any(|l| l.layer_name_as_c_str() == Ok(layer));
            if !have {
                return Err(Error::ValidationLayerMissing);
            }
            layers.push(layer.as_ptr());
            exts.push(ash::ext::debug_utils::NAME.as_ptr());
        }
        let mut flags = vk::InstanceCreateFlags::empty();
        if has_ext(ash::khr::portability_enumeration::NAME) {
            exts.push(ash::khr::portability_enumeration::NAME.as_ptr());
            flags |= vk::InstanceCreateFlags::ENUMERATE_PORTABILITY_KHR;
        }
        let app_name = CString::new("vkprism").unwrap_or_default();
        let app = vk::ApplicationInfo::default()
            .application_name(&app_name)
            .engine_name(&app_name)
            .api_version(api);
        let severity = vk::DebugUtilsMessageSeverityFlagsEXT::WARNING
            | vk::DebugUtilsMessageSeverityFlagsEXT::ERROR;
        let kinds = vk::DebugUtilsMessageTypeFlagsEXT::VALIDATION
            | vk::DebugUtilsMessageTypeFlagsEXT::GENERAL;
        let user = &*messages as *const Mutex<Vec<String>> as *mut c_void;
        let mut debug_info = vk::DebugUtilsMessengerCreateInfoEXT::default()
            .message_severity(severity)
            .message_type(kinds)
            .pfn_user_callback(Some(on_message))
            .user_data(user);
        let mut info = vk::InstanceCreateInfo::default()
            .application_info(&app)
            .enabled_layer_names(&layers)
            .enabled_extension_names(&exts)
            .flags(flags);
        if validation {
            // Also catches messages from vkCreateInstance / vkDestroyInstance themselves.
            info = info.push_next(&mut debug_info);
        }
        let instance =
            unsafe { entry.create_instance(&info, None) }.map_err(vkerr("vkCreateInstance"))?;
        let debug = if validation {
            let du = ash::ext::debug_utils::Instance::new(&entry, &instance);
            let info = vk::DebugUtilsMessengerCreateInfoEXT::default()
                .message_severity(severity)
                .message_type(kinds)
                .pfn_user_callback(Some(on_message))
                .user_data(user);
            match unsafe { du.create_debug_utils_messenger(&info, None) } {
                Ok(m) => Some((du, m)),
                Err(e) => {
                    unsafe { instance.destroy_instance(None) };
                    return Err(vkerr("vkCreateDebugUtilsMessengerEXT")(e));
                }
            }
        } else {
            None
        };
        // From here on, errors must clean up: build in a closure, destroy on failure.
        match unsafe { Self::create_device(&entry, &instance, &opts, api) } {
            Ok((
                physical,
                device,
                queue_family,
                queried,
                timestamp_bits,
                props,
                driver,
                memory,
                unified,
            )) => {
                // A failure from here on must destroy what was made, in reverse order.
                let cleanup = |cache: Option<vk::PipelineCache>| unsafe {
                    if let Some(c) = cache {
                        device.destroy_pipeline_cache(c, None);
                    }
                    device.destroy_device(None);
                    if let Some((du, m)) = &debug {
                        du.destroy_debug_utils_messenger(*m, None);
                    }
                    instance.destroy_instance(None);
                };
                let allocator = match Allocator::new(&AllocatorCreateDesc {
                    instance: instance.clone(),
                    device: device.clone(),
                    physical_device: physical,
                    debug_settings: Default::default(),
                    buffer_device_address: false,
                    allocation_sizes: Default::default(),
                }) {
                    Ok(a) => a,
                    Err(e) => {
                        cleanup(None);
                        return Err(Error::Allocator(e.to_string()));
                    }
                };
                let pipeline_cache = match unsafe {
                    device.create_pipeline_cache(&vk::PipelineCacheCreateInfo::default(), None)
                } {
                    Ok(c) => c,
                    Err(e) => {
                        drop(allocator);
                        cleanup(None);
                        return Err(vkerr("vkCreatePipelineCache")(e));
                    }
                };
                let pool = match unsafe {
                    device.create_command_pool(
                        &vk::CommandPoolCreateInfo::default()
                            .queue_family_index(queue_family)
                            .flags(vk::CommandPoolCreateFlags::TRANSIENT),
                        None,
                    )
                } {
                    Ok(p) => p,
                    Err(e) => {
                        drop(allocator);
                        cleanup(Some(pipeline_cache));
                        return Err(vkerr("vkCreateCommandPool")(e));
                    }
                };
                let queue = unsafe { device.get_device_queue(queue_family, 0) };
                Ok(Context {
                    shared: Arc::new(Shared {
                        entry: entry.clone(),
                        instance: instance.clone(),
                        debug,
                        messages,
                        device: device.clone(),
                        queue: Mutex::new(queue),
                        queue_family,
                        timestamp_bits,
                        features: queried.features,
                        properties: props,
                        driver,
                        memory,
                        unified_memory: unified && !opts.force_staging,
                        allocator: Mutex::new(Some(allocator)),
                        pipeline_cache,
                        options: opts.options.clamp_to(&queried.features),
                        transfer_pool: Mutex::new(pool),
                        mapped_access: std::sync::RwLock::new(()),
                    }),
                })
            }
            Err(e) => {
                unsafe {
                    if let Some((du, m)) = &debug {
                        du.destroy_debug_utils_messenger(*m, None);
                    }
                    instance.destroy_instance(None);
                }
                Err(e)
            }
        }
    }

    #[allow(clippy::type_complexity)]
    unsafe fn create_device(
        entry: &ash::Entry,
        instance: &ash::Instance,
        opts: &ContextOptions,
        instance_api: u32,
    ) -> Result<
        (
            vk::PhysicalDevice,
            ash::Device,
            u32,
            Queried,
            u32,
            vk::PhysicalDeviceProperties,
            (String, String),
            vk::PhysicalDeviceMemoryProperties,
            bool,
        ),
        Error,
    > {
        let pds = instance
            .enumerate_physical_devices()
            .map_err(vkerr("vkEnumeratePhysicalDevices"))?;
        if pds.is_empty() {
            return Err(Error::NoDevice);
        }
        let named: Vec<(vk::PhysicalDevice, vk::PhysicalDeviceProperties, String)> = pds
            .iter()
            .map(|pd| {
                let p = instance.get_physical_device_properties(*pd);
                let name = p
                    .device_name_as_c_str()
                    .map(|c| c.to_string_lossy().into_owned())
                    .unwrap_or_default();
                (*pd, p, name)
            })
            .collect();
        let selector = match &opts.device {
            DeviceSelector::Auto => match std::env::var("VKPRISM_DEVICE") {
                Ok(v) if !v.is_empty() => match v.parse::<usize>() {
                    Ok(i) => DeviceSelector::Index(i),
                    Err(_) => DeviceSelector::Name(v),
                },
                _ => DeviceSelector::Auto,
            },
            s => s.clone(),
        };
        let available = || {
            named
                .iter()
                .enumerate()
                .map(|(i, n)| format!("{i}: {}", n.2))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let chosen = match &selector {
            DeviceSelector::Auto => named
                .iter()
                .enumerate()
                .min_by_key(|(i, n)| (type_rank(n.1.device_type), *i))
                .map(|(_, n)| n),
            DeviceSelector::Index(i) => named.get(*i),
            DeviceSelector::Name(s) => named
                .iter()
                .find(|n| n.2.to_lowercase().contains(&s.to_lowercase())),
        };
        let Some((pd, props, name)) = chosen else {
            return Err(Error::DeviceNotFound {
                selector: format!("{selector:?}"),
                available: available(),
            });
        };
        let (pd, props) = (*pd, *props);
        let api = props.api_version.min(instance_api);
        if vk::api_version_minor(api) < 1 && vk::api_version_major(api) == 1 {
            return Err(Error::DeviceTooOld(
                name.clone(),
                1,
                vk::api_version_minor(api),
            ));
        }
        let queried =
            features::query(entry, instance, pd).map_err(vkerr("vkEnumerateDeviceExtensionProperties"))?;
        let families = instance.get_physical_device_queue_family_properties(pd);
        // VKPRISM_QUEUE_FAMILY=<index> picks the queue family (to compare engines).
        let forced = std::env::var("VKPRISM_QUEUE_FAMILY")
            .ok()
            .and_then(|v| v.parse::<usize>().ok());
        let (family, fprops) = families
            .iter()
            .enumerate()
            .filter(|(i, f)| {
                f.queue_flags.contains(vk::QueueFlags::COMPUTE) && forced.is_none_or(|x| x == *i)
            })
            // A compute-only queue first (dedicated compute engines), else any compute queue.
            .min_by_key(|(_, f)| f.queue_flags.contains(vk::QueueFlags::GRAPHICS))
            .ok_or_else(|| Error::NoComputeQueue(name.clone()))?;
        let family = family as u32;

        // Enable what variants can use: 16/8-bit storage, fp16/int8 arithmetic, int16/int64.
        let f = &queried.features.features;
        let b = |x: Feature| f.contains(x);
        let base = vk::PhysicalDeviceFeatures::default()
            .shader_int16(b(Feature::ShaderInt16))
            .shader_int64(b(Feature::ShaderInt64));
        let mut f11 = vk::PhysicalDeviceVulkan11Features::default()
            .storage_buffer16_bit_access(b(Feature::StorageBuffer16BitAccess))
            .uniform_and_storage_buffer16_bit_access(b(
                Feature::UniformAndStorageBuffer16BitAccess,
            ));
        let mut f12 = vk::PhysicalDeviceVulkan12Features::default()
            .shader_float16(b(Feature::ShaderFloat16))
            .shader_int8(b(Feature::ShaderInt8))
            .storage_buffer8_bit_access(b(Feature::StorageBuffer8BitAccess))
            .vulkan_memory_model(b(Feature::CooperativeMatrix));
        // Lets pipelines fix their subgroup size (PipelineDesc::subgroup_size).
        let mut f13 = vk::PhysicalDeviceVulkan13Features::default()
            .subgroup_size_control(b(Feature::SubgroupSizeControl))
            .compute_full_subgroups(b(Feature::SubgroupSizeControl));
        let mut s16 = vk::PhysicalDevice16BitStorageFeatures::default()
            .storage_buffer16_bit_access(b(Feature::StorageBuffer16BitAccess))
            .uniform_and_storage_buffer16_bit_access(b(
                Feature::UniformAndStorageBuffer16BitAccess,
            ));
        let mut f16i8 = vk::PhysicalDeviceShaderFloat16Int8Features::default()
            .shader_float16(b(Feature::ShaderFloat16))
            .shader_int8(b(Feature::ShaderInt8));
        let mut s8 = vk::PhysicalDevice8BitStorageFeatures::default()
            .storage_buffer8_bit_access(b(Feature::StorageBuffer8BitAccess));
        let mut dev_exts: Vec<*const i8> = Vec::new();
        let ext_present = |n: &CStr| {
            queried
                .extensions
                .iter()
                .any(|e| e.as_str() == n.to_string_lossy())
        };
        if ext_present(ash::khr::portability_subset::NAME) {
            dev_exts.push(ash::khr::portability_subset::NAME.as_ptr());
        }
        let priorities = [1.0f32];
        let qinfo = [vk::DeviceQueueCreateInfo::default()
            .queue_family_index(family)
            .queue_priorities(&priorities)];
        let mut info = vk::DeviceCreateInfo::default()
            .queue_create_infos(&qinfo)
            .enabled_features(&base);
        if queried.vulkan12 {
            info = info.push_next(&mut f11).push_next(&mut f12);
            if f.contains(Feature::SubgroupSizeControl) {
                info = info.push_next(&mut f13);
            }
        } else {
            info = info.push_next(&mut s16);
            if ext_present(ash::khr::shader_float16_int8::NAME) {
                dev_exts.push(ash::khr::shader_float16_int8::NAME.as_ptr());
                info = info.push_next(&mut f16i8);
            }
            if ext_present(ash::khr::_8bit_storage::NAME) {
                dev_exts.push(ash::khr::_8bit_storage::NAME.as_ptr());
                info = info.push_next(&mut s8);
            }
        }
        // Cooperative matrices, with the Vulkan memory model `_cm` variants are compiled for.
        // (Validation layers older than the extension, like Debian 12's 1.3.239, flag its
        // feature struct as unknown: bench/prepare.sh carries a newer one to NVIDIA machines.)
        let mut coop = vk::PhysicalDeviceCooperativeMatrixFeaturesKHR::default().cooperative_matrix(true);
        if f.contains(Feature::CooperativeMatrix) {
            dev_exts.push(ash::khr::cooperative_matrix::NAME.as_ptr());
            info = info.push_next(&mut coop);
        }
        let info = info.enabled_extension_names(&dev_exts);
        let device = instance
            .create_device(pd, &info, None)
            .map_err(vkerr("vkCreateDevice"))?;

        let mut driver = vk::PhysicalDeviceDriverProperties::default();
        if queried.vulkan12 {
            let mut p2 = vk::PhysicalDeviceProperties2::default().push_next(&mut driver);
            instance.get_physical_device_properties2(pd, &mut p2);
        }
        let driver_strings = (
            driver
                .driver_name_as_c_str()
                .map(|c| c.to_string_lossy().into_owned())
                .unwrap_or_default(),
            driver
                .driver_info_as_c_str()
                .map(|c| c.to_string_lossy().into_owned())
                .unwrap_or_default(),
        );
        let memory = instance.get_physical_device_memory_properties(pd);
        let unified = matches!(
            props.device_type,
            vk::PhysicalDeviceType::INTEGRATED_GPU | vk::PhysicalDeviceType::CPU
        ) && memory.memory_types_as_slice().iter().any(|t| {
            t.property_flags.contains(
                vk::MemoryPropertyFlags::DEVICE_LOCAL
                    | vk::MemoryPropertyFlags::HOST_VISIBLE
                    | vk::MemoryPropertyFlags::HOST_COHERENT,
            )
        });
        Ok((
            pd,
            device,
            family,
            queried,
            fprops.timestamp_valid_bits,
            props,
            driver_strings,
            memory,
            unified,
        ))
    }

    /// What the device offers.
    pub fn features(&self) -> &DeviceFeatures {
        &self.shared.features
    }

    /// The variant options in force (the user's, cleared where the device lacks the feature).
    pub fn options(&self) -> &Options {
        &self.shared.options
    }

    /// The device's name.
    pub fn device_name(&self) -> String {
        self.shared
            .properties
            .device_name_as_c_str()
            .map(|c| c.to_string_lossy().into_owned())
            .unwrap_or_default()
    }

    /// Whether tensors are mapped directly (device-local memory the host can see).
    pub fn unified_memory(&self) -> bool {
        self.shared.unified_memory
    }

    /// Validation-layer messages since the last call (empty when validation is off), removing
    /// them.
    pub fn take_validation_messages(&self) -> Vec<String> {
        self.shared.take_messages()
    }

    /// Validation-layer warnings and errors recorded so far (not removed; see
    /// [`Context::take_validation_messages`]).
    pub fn validation_messages(&self) -> Vec<String> {
        self.shared
            .messages
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// `Err` listing every validation message recorded since the last check (and clears them):
    /// what tests call after GPU work.
    pub fn check_validation(&self) -> Result<(), Error> {
        let m = self.take_validation_messages();
        if m.is_empty() {
            Ok(())
        } else {
            Err(Error::Validation(m))
        }
    }

    /// Whether the validation layer is on.
    pub fn validation_enabled(&self) -> bool {
        self.shared.debug.is_some()
    }

    /// A report of the device for people.
    pub fn report(&self) -> DeviceReport {
        let s = &self.shared;
        let heaps = s
            .memory
            .memory_heaps_as_slice()
            .iter()
            .map(|h| (h.size, h.flags.contains(vk::MemoryHeapFlags::DEVICE_LOCAL)))
            .collect();
        DeviceReport {
            name: self.device_name(),
            device_type: format!("{:?}", s.properties.device_type),
            driver_name: s.driver.0.clone(),
            driver_info: s.driver.1.clone(),
            api_version: s.properties.api_version,
            heaps,
            features: s.features,
            unified_memory: s.unified_memory,
            options: s.options,
        }
    }

    /// The raw ash instance and device, for what vkprism does not wrap.
    ///
    /// # Safety
    /// The handles stay valid while this context (or anything made from it) lives. The caller
    /// must follow the Vulkan specification: not destroy them, externally synchronize the queue
    /// with vkprism (which locks it while submitting), and keep any object it creates from
    /// outliving the context.
    pub unsafe fn raw(&self) -> (&ash::Instance, &ash::Device) {
        (&self.shared.instance, &self.shared.device)
    }

    /// Waits until the device is idle.
    pub fn wait_idle(&self) -> Result<(), Error> {
        let _q = self.shared.queue.lock().unwrap_or_else(|e| e.into_inner());
        unsafe { self.shared.device.device_wait_idle() }.map_err(vkerr("vkDeviceWaitIdle"))
    }
}

impl fmt::Debug for Context {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Context")
            .field("device", &self.device_name())
            .finish()
    }
}

/// A human-readable description of the device (its `Display` is the report).
#[derive(Clone, Debug)]
pub struct DeviceReport {
    pub name: String,
    pub device_type: String,
    pub driver_name: String,
    pub driver_info: String,
    pub api_version: u32,
    /// (bytes, device-local)
    pub heaps: Vec<(u64, bool)>,
    pub features: DeviceFeatures,
    pub unified_memory: bool,
    pub options: Options,
}

impl fmt::Display for DeviceReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let v = self.api_version;
        writeln!(f, "device:   {} ({})", self.name, self.device_type)?;
        writeln!(f, "driver:   {} {}", self.driver_name, self.driver_info)?;
        writeln!(
            f,
            "vulkan:   {}.{}.{}",
            vk::api_version_major(v),
            vk::api_version_minor(v),
            vk::api_version_patch(v)
        )?;
        for (i, (size, local)) in self.heaps.iter().enumerate() {
            writeln!(
                f,
                "heap {i}:   {:.1} GiB{}",
                *size as f64 / (1u64 << 30) as f64,
                if *local { " device-local" } else { "" }
            )?;
        }
        writeln!(
            f,
            "memory:   {}",
            if self.unified_memory {
                "unified (tensors mapped directly)"
            } else {
                "discrete (staged copies)"
            }
        )?;
        writeln!(f, "features: {}", self.features.features)?;
        let l = &self.features.limits;
        writeln!(
            f,
            "limits:   workgroup count {:?}, workgroup size {:?} ({} invocations), shared memory {} KiB, subgroup {}, storage range {} MiB, allocation {} MiB, timestamp period {} ns",
            l.max_compute_work_group_count,
            l.max_compute_work_group_size,
            l.max_compute_work_group_invocations,
            l.max_compute_shared_memory_size / 1024,
            l.subgroup_size,
            l.max_storage_buffer_range >> 20,
            l.max_memory_allocation_size >> 20,
            l.timestamp_period_ns
        )?;
        write!(f, "options:  {}", self.options)
    }
}
