//! [`DeviceReport`]: the device described for people; [`AllocatorStats`]: gpu-allocator's own
//! account of the memory it holds.

use crate::device::Shared;
use crate::select::Options;
use ash::vk;
use std::fmt;
use vkprism_core::DeviceFeatures;

/// A human-readable description of the device (its `Display` is the report).
#[non_exhaustive]
#[derive(Clone, Debug)]
pub struct DeviceReport {
    /// The device's name.
    pub name: String,
    /// Its type (`DISCRETE_GPU`, `CPU`, ...).
    pub device_type: String,
    /// The driver's name (empty before Vulkan 1.2).
    pub driver_name: String,
    /// The driver's version text (empty before Vulkan 1.2).
    pub driver_info: String,
    /// The device's Vulkan version, packed as `VK_MAKE_API_VERSION`.
    pub api_version: u32,
    /// `VkPhysicalDeviceProperties::vendorID` (what a kernel's `ncnn_vendorID` reads).
    pub vendor_id: u32,
    /// `VkPhysicalDeviceProperties::deviceID` (`ncnn_deviceID`).
    pub device_id: u32,
    /// The driver's `VkDriverId`, 0 before Vulkan 1.2 (`ncnn_driverID`).
    pub driver_id: u32,
    /// (bytes, device-local) per memory heap.
    pub heaps: Vec<(u64, bool)>,
    /// (heap index, property flags as Vulkan names them) per memory type, in the driver's order:
    /// where tensors, staging and readback memory can go.
    pub memory_types: Vec<(u32, String)>,
    /// Features and limits.
    pub features: DeviceFeatures,
    /// Whether tensors are mapped directly.
    pub unified_memory: bool,
    /// Discrete VRAM the host maps whole (resizable BAR): uploads in place.
    pub host_visible_vram: bool,
    /// The variant options in force.
    pub options: Options,
}

impl DeviceReport {
    pub(crate) fn new(name: String, s: &Shared, options: Options) -> DeviceReport {
        let heaps = s
            .memory
            .memory_heaps_as_slice()
            .iter()
            .map(|h| (h.size, h.flags.contains(vk::MemoryHeapFlags::DEVICE_LOCAL)))
            .collect();
        let memory_types = s
            .memory
            .memory_types_as_slice()
            .iter()
            .map(|t| (t.heap_index, format!("{:?}", t.property_flags)))
            .collect();
        DeviceReport {
            name,
            memory_types,
            device_type: format!("{:?}", s.properties.device_type),
            driver_name: s.driver.0.clone(),
            driver_info: s.driver.1.clone(),
            api_version: s.properties.api_version,
            vendor_id: s.properties.vendor_id,
            device_id: s.properties.device_id,
            driver_id: s.driver_id,
            heaps,
            features: s.features,
            unified_memory: s.unified_memory,
            host_visible_vram: s.host_visible_vram,
            options,
        }
    }
}

impl fmt::Display for DeviceReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.write_identity(f)?;
        self.write_memory(f)?;
        writeln!(f, "features: {}", self.features.features)?;
        self.write_limits(f)?;
        self.write_matrices(f)?;
        write!(f, "options:  {}", self.options)
    }
}

impl DeviceReport {
    /// The device, driver, ids and Vulkan version lines.
    fn write_identity(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let v = self.api_version;
        writeln!(f, "device:   {} ({})", self.name, self.device_type)?;
        writeln!(f, "driver:   {} {}", self.driver_name, self.driver_info)?;
        writeln!(
            f,
            "ids:      vendor {:#06x}, device {:#06x}, driver {}",
            self.vendor_id, self.device_id, self.driver_id
        )?;
        writeln!(
            f,
            "vulkan:   {}.{}.{}",
            vk::api_version_major(v),
            vk::api_version_minor(v),
            vk::api_version_patch(v)
        )
    }

    /// A line per heap with its memory types under it, then how tensors reach the host.
    fn write_memory(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, (size, local)) in self.heaps.iter().enumerate() {
            writeln!(
                f,
                "heap {i}:   {:.1} GiB{}",
                *size as f64 / (1u64 << 30) as f64,
                if *local { " device-local" } else { "" }
            )?;
            let types: Vec<String> = self
                .memory_types
                .iter()
                .enumerate()
                .filter(|(_, (heap, _))| *heap as usize == i)
                .map(|(t, (_, flags))| format!("type {t}: {flags}"))
                .collect();
            if !types.is_empty() {
                writeln!(f, "          {}", types.join("; "))?;
            }
        }
        let memory = if self.unified_memory {
            "unified (tensors mapped directly)"
        } else if self.host_visible_vram {
            "discrete, VRAM host-visible (resizable BAR): uploads written in place, downloads staged"
        } else {
            "discrete (staged copies)"
        };
        writeln!(f, "memory:   {memory}")
    }

    /// The compute limits, and the multiprocessors where the device says.
    fn write_limits(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
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
        if l.multiprocessors > 0 {
            writeln!(f, "SMs/CUs:  {}", l.multiprocessors)?;
        }
        Ok(())
    }

    /// The cooperative-matrix shapes: subgroup scope, then workgroup scope, where listed.
    fn write_matrices(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let subgroup: Vec<String> = self
            .features
            .cooperative_matrices
            .iter()
            .map(|s| s.to_string())
            .collect();
        if !subgroup.is_empty() {
            writeln!(f, "matrices: subgroup {}", subgroup.join(", "))?;
        }
        let workgroup: Vec<String> = self
            .features
            .workgroup_matrices
            .iter()
            .map(|s| {
                format!(
                    "{} ({} invocations)",
                    s.granularity, s.workgroup_invocations
                )
            })
            .collect();
        if !workgroup.is_empty() {
            writeln!(
                f,
                "          workgroup, multiples of {}",
                workgroup.join(", ")
            )?;
        }
        Ok(())
    }
}

/// gpu-allocator's own figures (its `generate_report`), the other side of
/// [`Context::allocated_bytes`](crate::Context::allocated_bytes): a leak test checks both return
/// to where they were.
#[non_exhaustive]
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct AllocatorStats {
    /// Live allocations (tensors, images, staging buffers).
    pub allocations: usize,
    /// Their bytes, as the allocator counts them.
    pub allocated_bytes: u64,
    /// Device memory blocks the allocator holds (it keeps some after their allocations go).
    pub blocks: usize,
    /// Those blocks' bytes.
    pub capacity_bytes: u64,
}

impl AllocatorStats {
    pub(crate) fn new(s: &Shared) -> AllocatorStats {
        // The API lock before any other lock (see `api_lock`).
        let _api = crate::device::api_lock();
        let guard = s.allocator.lock().unwrap_or_else(|e| e.into_inner());
        let Some(report) = guard.as_ref().map(|a| a.generate_report()) else {
            return AllocatorStats::default();
        };
        AllocatorStats {
            allocations: report.allocations.len(),
            allocated_bytes: report.total_allocated_bytes,
            blocks: report.blocks.len(),
            capacity_bytes: report.total_capacity_bytes,
        }
    }
}
