//! Choosing the physical device and its compute queue family, from plain parameters (the safe
//! layer resolves `VKPRISM_DEVICE` / `VKPRISM_QUEUE_FAMILY` before calling).

use super::error::{vkerr, DeviceError};
use ash::vk;

/// Which physical device to use.
#[non_exhaustive]
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum DeviceSelector {
    /// `VKPRISM_DEVICE` if set (an index, or a case-insensitive name substring), else the first
    /// by type: discrete, integrated, virtual, CPU, other.
    #[default]
    Auto,
    /// The device at this index in Vulkan's enumeration order.
    Index(usize),
    /// Case-insensitive substring of the device name.
    Name(String),
}

/// A physical device with its properties and name.
pub(crate) struct Physical {
    pub handle: vk::PhysicalDevice,
    pub properties: vk::PhysicalDeviceProperties,
    pub name: String,
}

/// The device `selector` names (`Auto`: the best by type, ties by index), checked to be 1.1+
/// under the instance's `instance_api`.
///
/// # Safety
/// `instance` is a live instance.
pub(crate) unsafe fn choose(
    instance: &ash::Instance,
    selector: &DeviceSelector,
    instance_api: u32,
) -> Result<Physical, DeviceError> {
    // SAFETY: the caller guarantees `instance` is alive.
    let devices = unsafe { enumerate(instance)? };
    if devices.is_empty() {
        return Err(DeviceError::NoDevice);
    }
    let chosen = match selector {
        DeviceSelector::Auto => devices
            .iter()
            .enumerate()
            .min_by_key(|(i, d)| (type_rank(d.properties.device_type), *i))
            .map(|(i, _)| i),
        DeviceSelector::Index(i) => (*i < devices.len()).then_some(*i),
        DeviceSelector::Name(s) => devices
            .iter()
            .position(|d| d.name.to_lowercase().contains(&s.to_lowercase())),
    };
    let Some(index) = chosen else {
        return Err(DeviceError::DeviceNotFound {
            selector: format!("{selector:?}"),
            available: list(&devices),
        });
    };
    let device = devices
        .into_iter()
        .nth(index)
        .ok_or(DeviceError::NoDevice)?;
    let api = device.properties.api_version.min(instance_api);
    if vk::api_version_minor(api) < 1 && vk::api_version_major(api) == 1 {
        return Err(DeviceError::DeviceTooOld(
            device.name,
            1,
            vk::api_version_minor(api),
        ));
    }
    Ok(device)
}

/// Every physical device, in Vulkan's order.
///
/// # Safety
/// `instance` is a live instance.
unsafe fn enumerate(instance: &ash::Instance) -> Result<Vec<Physical>, DeviceError> {
    // SAFETY: the caller guarantees `instance` is alive.
    let handles = unsafe { instance.enumerate_physical_devices() }
        .map_err(vkerr("vkEnumeratePhysicalDevices"))?;
    Ok(handles
        .into_iter()
        .map(|handle| {
            // SAFETY: `handle` was just enumerated from this live instance.
            let properties = unsafe { instance.get_physical_device_properties(handle) };
            let name = properties
                .device_name_as_c_str()
                .map(|c| c.to_string_lossy().into_owned())
                .unwrap_or_default();
            Physical {
                handle,
                properties,
                name,
            }
        })
        .collect())
}

/// `index: name, ...` for an error message.
fn list(devices: &[Physical]) -> String {
    devices
        .iter()
        .enumerate()
        .map(|(i, d)| format!("{i}: {}", d.name))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Preference by device type, lower first.
fn type_rank(t: vk::PhysicalDeviceType) -> u32 {
    match t {
        vk::PhysicalDeviceType::DISCRETE_GPU => 0,
        vk::PhysicalDeviceType::INTEGRATED_GPU => 1,
        vk::PhysicalDeviceType::VIRTUAL_GPU => 2,
        vk::PhysicalDeviceType::CPU => 3,
        _ => 4,
    }
}

/// A queue family with compute: `forced` if given (and it has compute), else a compute-only
/// family first (dedicated compute engines), else any. Returns (family, timestamp valid bits).
///
/// # Safety
/// `device` comes from the live `instance`.
pub(crate) unsafe fn compute_queue_family(
    instance: &ash::Instance,
    device: &Physical,
    forced: Option<usize>,
) -> Result<(u32, u32), DeviceError> {
    // SAFETY: the caller guarantees the handle belongs to this live instance.
    let families = unsafe { instance.get_physical_device_queue_family_properties(device.handle) };
    let (index, family) = families
        .iter()
        .enumerate()
        .filter(|(i, f)| {
            f.queue_flags.contains(vk::QueueFlags::COMPUTE) && forced.is_none_or(|x| x == *i)
        })
        .min_by_key(|(_, f)| f.queue_flags.contains(vk::QueueFlags::GRAPHICS))
        .ok_or_else(|| match forced {
            Some(index) => DeviceError::NoSuchQueueFamily {
                index,
                device: device.name.clone(),
                compute: families
                    .iter()
                    .enumerate()
                    .filter(|(_, f)| f.queue_flags.contains(vk::QueueFlags::COMPUTE))
                    .map(|(i, _)| i.to_string())
                    .collect::<Vec<_>>()
                    .join(", "),
            },
            None => DeviceError::NoComputeQueue(device.name.clone()),
        })?;
    Ok((index as u32, family.timestamp_valid_bits))
}
