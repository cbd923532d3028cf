//! `Shared`: the device and everything made once per device (allocator, pipeline cache, transfer
//! pool, queue), what every other object holds an `Arc` of; the device's facts, its validation
//! messages, and its teardown. Submission and waits are `submit.rs`, heap room `heap.rs`, the
//! lifecycle lock `lock.rs`.

use super::instance::Instance;
use super::lock::lifecycle_lock;
use super::logical::Device;
use super::messenger::MessageLog;
use ash::vk;
use gpu_allocator::vulkan::{Allocation, Allocator};
use std::mem::ManuallyDrop;
use std::sync::atomic::{AtomicBool, AtomicU64};
use std::sync::{Mutex, RwLock};
use std::time::Duration;
use vkprism_core::{DeviceFact, DeviceFeatures};

/// Bytes per staged copy unless the context was made with another
/// `ContextOptions::staging_chunk`: large enough that a submission per chunk costs little, small
/// enough that the three kept staging buffers (one upload, two readback) stay modest.
pub(crate) const DEFAULT_STAGING_CHUNK: u64 = 64 << 20;

/// The device and what is made once per device. Dropped last (every object holds an `Arc`).
pub(crate) struct Shared {
    /// Dropped by hand in `Drop`, under the lifecycle lock, after what was made from it.
    pub instance: ManuallyDrop<Instance>,
    /// Dropped by hand in `Drop`, before the instance.
    pub device: ManuallyDrop<Device>,
    /// Validation messages; boxed so the address given to the callback stays put. Dropped after
    /// the instance (fields drop after `Drop::drop`).
    pub messages: Box<MessageLog>,
    /// The compute queue; locked while submitting (Vulkan needs queues externally synchronized).
    pub queue: Mutex<vk::Queue>,
    pub queue_family: u32,
    /// Valid bits of the queue's timestamps (0: no timestamps).
    pub timestamp_bits: u32,
    pub features: DeviceFeatures,
    pub properties: vk::PhysicalDeviceProperties,
    /// The driver's (name, info).
    pub driver: (String, String),
    /// The driver's `VkDriverId` (0 before Vulkan 1.2).
    pub driver_id: u32,
    pub memory: vk::PhysicalDeviceMemoryProperties,
    /// Device-local memory the host can map (integrated GPUs, CPU drivers): tensors live there
    /// and are mapped directly, with no staging copy.
    pub unified_memory: bool,
    /// A discrete GPU whose whole VRAM the host can map (resizable BAR): tensors live there,
    /// mapped, and are written in place; reads are staged.
    pub host_visible_vram: bool,
    /// `None` once `Drop` has freed its memory blocks (before the device goes).
    pub allocator: Mutex<Option<Allocator>>,
    pub pipeline_cache: vk::PipelineCache,
    /// One-shot transfer submissions.
    pub transfer_pool: Mutex<vk::CommandPool>,
    /// The staging buffers of tensor transfers, made on first use and kept: allocating (and
    /// pinning) host memory for every chunk cost more than copying it.
    pub staging: Mutex<StagingBuffers>,
    /// Bytes per staged copy, and the size of each staging buffer
    /// (`ContextOptions::staging_chunk`).
    pub staging_chunk: u64,
    /// Host access to mapped tensor memory against GPU work: a running command list holds it
    /// shared, a mapped read or write holds it exclusively, so the host never touches memory a
    /// dispatch may be using (which would be a data race, from safe code).
    pub mapped_access: RwLock<()>,
    /// How long a fence wait blocks before giving up (`ContextOptions::fence_timeout`).
    pub fence_timeout: Duration,
    /// Set when a fence wait timed out: the GPU may still be running work that uses memory the
    /// host can map, so from then on no mapped access, submission or new object is allowed,
    /// and nothing the GPU may use is freed (drops leak instead of waiting).
    pub poisoned: AtomicBool,
    /// `robustBufferAccess` is enabled on the device.
    pub robust_buffer_access: bool,
    /// The physical device (for budget and image-format queries).
    pub physical: vk::PhysicalDevice,
    /// `VK_EXT_memory_budget` is enabled: budgets come from the driver.
    pub memory_budget: bool,
    /// `VK_KHR_pipeline_executable_properties` is enabled: pipelines are made with
    /// `CAPTURE_STATISTICS` and their driver statistics can be read.
    pub pipeline_statistics: bool,
    /// Bytes vkprism has allocated per memory heap (tensors, images, staging).
    pub heap_used: [AtomicU64; vk::MAX_MEMORY_HEAPS],
    /// The most bytes vkprism has held at once, over all heaps, since the context was made or
    /// the mark was last reset.
    pub peak_used: AtomicU64,
}

impl Shared {
    /// The value of a device fact a kernel reads (`ncnn_subgroupSize`, ...) in a pipeline that
    /// requires `subgroup_size` (`None`: the device's default), as the `int` the kernel sees.
    pub fn device_fact(&self, fact: DeviceFact, subgroup_size: Option<u32>) -> u32 {
        match fact {
            DeviceFact::SubgroupSize => subgroup_size.unwrap_or(self.features.limits.subgroup_size),
            DeviceFact::VendorId => self.properties.vendor_id,
            DeviceFact::DeviceId => self.properties.device_id,
            DeviceFact::DriverId => self.driver_id,
            DeviceFact::Supports(f) => u32::from(self.features.supports(f)),
        }
    }

    /// Validation messages recorded since the last call, removed.
    pub fn take_messages(&self) -> Vec<String> {
        std::mem::take(&mut *self.messages.lock().unwrap_or_else(|e| e.into_inner()))
    }

    /// Validation messages recorded so far, left in place.
    pub fn messages(&self) -> Vec<String> {
        self.messages
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }
}

/// The kept staging buffers, `Shared::staging_chunk` bytes each: one for uploads, and two for
/// downloads, which alternate so the GPU copies one chunk into one while the host reads the
/// previous chunk out of the other.
#[derive(Default)]
pub(crate) struct StagingBuffers {
    pub upload: Option<(vk::Buffer, Allocation)>,
    pub readback: [Option<(vk::Buffer, Allocation)>; 2],
}

impl Drop for Shared {
    fn drop(&mut self) {
        // Every submission was waited for already (a list's work before the list goes, a
        // one-shot before it returns), so this returns at once; it is a bounded wait all the
        // same (no `Drop` waits without a bound), and a timeout poisons the context. Another
        // error (device loss) still lets the device be destroyed.
        if !self.is_poisoned() {
            let _ = self.wait_idle();
        }
        let staging = std::mem::take(self.staging.get_mut().unwrap_or_else(|e| e.into_inner()));
        if self.is_poisoned() {
            // A transfer the GPU may still run could be using them.
            std::mem::forget(staging);
        } else {
            let [readback_a, readback_b] = staging.readback;
            let kept = [staging.upload, readback_a, readback_b];
            for (buffer, allocation) in kept.into_iter().flatten() {
                super::buffer::free_buffer(self, buffer, Some(allocation));
            }
        }
        if self.is_poisoned() {
            // The GPU may still be running work that uses this device's objects and memory,
            // and waiting for it may never return: leak the device, the instance, the
            // allocator's memory and the message log the validation callback writes to,
            // rather than hang or free what the GPU uses.
            if let Some(allocator) = self
                .allocator
                .get_mut()
                .unwrap_or_else(|e| e.into_inner())
                .take()
            {
                std::mem::forget(allocator);
            }
            std::mem::forget(std::mem::take(&mut self.messages));
            return;
        }
        let _serial = lifecycle_lock();
        // SAFETY: this is the last reference to the device (every object holds an Arc of
        // Shared), and all its work has completed (the bounded idle wait above returned, or
        // the device is lost; a wait that timed out poisoned the context, handled above), so
        // nothing uses the device: the per-device objects, then the device, then the instance
        // are destroyed in reverse order of creation, once.
        unsafe {
            // The allocator frees its memory blocks against the device: drop it first.
            drop(
                self.allocator
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .take(),
            );
            self.device
                .destroy_pipeline_cache(self.pipeline_cache, None);
            let pool = self
                .transfer_pool
                .get_mut()
                .unwrap_or_else(|e| e.into_inner());
            self.device.destroy_command_pool(*pool, None);
            ManuallyDrop::drop(&mut self.device);
            ManuallyDrop::drop(&mut self.instance);
        }
    }
}
