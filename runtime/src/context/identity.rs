//! [`DeviceIdentity`]: the device and its driver as numbers a program can key on (tuning tables,
//! caches of measurements), beside the [`DeviceReport`](crate::DeviceReport) written for people.

use crate::device::Shared;
use ash::vk;

/// What kind of device it is (`VkPhysicalDeviceType`).
#[non_exhaustive]
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum DeviceType {
    /// `VK_PHYSICAL_DEVICE_TYPE_OTHER`, or a value this version of vkprism does not know.
    Other,
    /// A GPU sharing memory with the host (`INTEGRATED_GPU`: laptops, phones, Apple silicon).
    IntegratedGpu,
    /// A GPU with its own memory (`DISCRETE_GPU`).
    DiscreteGpu,
    /// A GPU in a virtual machine (`VIRTUAL_GPU`).
    VirtualGpu,
    /// A CPU implementation (`CPU`: lavapipe, SwiftShader).
    Cpu,
}

impl DeviceType {
    pub(crate) fn from_vk(t: vk::PhysicalDeviceType) -> DeviceType {
        match t {
            vk::PhysicalDeviceType::INTEGRATED_GPU => DeviceType::IntegratedGpu,
            vk::PhysicalDeviceType::DISCRETE_GPU => DeviceType::DiscreteGpu,
            vk::PhysicalDeviceType::VIRTUAL_GPU => DeviceType::VirtualGpu,
            vk::PhysicalDeviceType::CPU => DeviceType::Cpu,
            _ => DeviceType::Other,
        }
    }
}

/// Who made the device and its driver, as `VkPhysicalDeviceProperties` (and, from Vulkan 1.2,
/// `VkPhysicalDeviceDriverProperties`) report them: what a per-device choice or a cache of
/// measurements is keyed by ([`Context::identity`](crate::Context::identity)).
#[non_exhaustive]
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct DeviceIdentity {
    /// The device's name (`deviceName`).
    pub name: String,
    /// Its kind (`deviceType`).
    pub device_type: DeviceType,
    /// `vendorID`: a PCI vendor id (0x10de NVIDIA, 0x1002 AMD, 0x8086 Intel, 0x13b5 ARM, 0x5143
    /// Qualcomm, 0x106b Apple) or a Khronos vendor id (0x10005 Mesa, for lavapipe).
    pub vendor_id: u32,
    /// `deviceID`, chosen by the vendor (NVIDIA's and AMD's are PCI device ids).
    pub device_id: u32,
    /// `driverVersion`, encoded as the vendor chooses (NVIDIA packs 10.8.8.6 bits, others
    /// follow `VK_MAKE_API_VERSION`): compare two for equality, don't decode it.
    pub driver_version: u32,
    /// The driver's `VkDriverId`, 0 before Vulkan 1.2.
    pub driver_id: u32,
    /// `pipelineCacheUUID`: the driver changes it whenever data it cached may no longer apply.
    pub pipeline_cache_uuid: [u8; 16],
}

impl DeviceIdentity {
    pub(crate) fn new(name: String, s: &Shared) -> DeviceIdentity {
        DeviceIdentity {
            name,
            device_type: DeviceType::from_vk(s.properties.device_type),
            vendor_id: s.properties.vendor_id,
            device_id: s.properties.device_id,
            driver_version: s.properties.driver_version,
            driver_id: s.driver_id,
            pipeline_cache_uuid: s.properties.pipeline_cache_uuid,
        }
    }
}
