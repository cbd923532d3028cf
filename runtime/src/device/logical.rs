//! The logical device: created with one compute queue and the features asked for.

use super::error::{vkerr, DeviceError};
use super::features::{lists_extension, PhysicalDeviceFeatures};
use ash::vk;
use std::ffi::CStr;

/// A logical device; destroys it when dropped.
pub(crate) struct Device {
    raw: ash::Device,
}

impl Device {
    /// A device on `physical` with one queue of `queue_family`, the features in `enabled`
    /// (from [`PhysicalDeviceFeatures::enable`]) and the extensions they need, plus
    /// `VK_KHR_portability_subset` where the device lists it (the spec requires enabling it),
    /// `VK_EXT_memory_budget` with `memory_budget` (the device lists it), and
    /// `VK_KHR_pipeline_executable_properties` with its feature on with `pipeline_statistics`
    /// (the device has both).
    ///
    /// # Safety
    /// `physical` comes from the live `instance`; `queue_family` and `enabled` were read from
    /// it; the returned device is dropped before the instance.
    pub unsafe fn create(
        instance: &ash::Instance,
        physical: vk::PhysicalDevice,
        queue_family: u32,
        enabled: &mut PhysicalDeviceFeatures,
        available_extensions: &[String],
        memory_budget: bool,
        pipeline_statistics: bool,
    ) -> Result<Device, DeviceError> {
        let mut extensions: Vec<&CStr> = enabled.extensions();
        if memory_budget {
            extensions.push(ash::ext::memory_budget::NAME);
        }
        if pipeline_statistics {
            extensions.push(ash::khr::pipeline_executable_properties::NAME);
        }
        let mut executable_info =
            vk::PhysicalDevicePipelineExecutablePropertiesFeaturesKHR::default()
                .pipeline_executable_info(true);
        let portability = ash::khr::portability_subset::NAME;
        if lists_extension(available_extensions, portability) {
            extensions.insert(0, portability);
        }
        let extension_ptrs: Vec<*const std::ffi::c_char> =
            extensions.iter().map(|n| n.as_ptr()).collect();
        let priorities = [1.0f32];
        let queues = [vk::DeviceQueueCreateInfo::default()
            .queue_family_index(queue_family)
            .queue_priorities(&priorities)];
        let info = vk::DeviceCreateInfo::default()
            .queue_create_infos(&queues)
            .enabled_extension_names(&extension_ptrs);
        let mut info = enabled.add_to_device_create(info);
        if pipeline_statistics {
            info = info.push_next(&mut executable_info);
        }
        // SAFETY: everything `info` points to (queues, priorities, extension names, the
        // feature chain) lives until the call returns; the caller vouches for the handles.
        let raw = unsafe { instance.create_device(physical, &info, None) }
            .map_err(vkerr("vkCreateDevice"))?;
        Ok(Device { raw })
    }
}

impl std::ops::Deref for Device {
    type Target = ash::Device;
    fn deref(&self) -> &ash::Device {
        &self.raw
    }
}

impl Drop for Device {
    fn drop(&mut self) {
        // SAFETY: the device's owner destroys every object made from it first (`Shared::drop`
        // after a bounded idle wait; creation before any object exists), and the instance is
        // dropped after the device.
        unsafe { self.raw.destroy_device(None) };
    }
}
