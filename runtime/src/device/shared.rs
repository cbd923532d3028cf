//! `Shared`: the device and everything made once per device (allocator, pipeline cache, transfer
//! pool, queue), what every other object holds an `Arc` of; submission, fence waits, one-shot
//! transfers, and the process-wide lifecycle lock.

use super::error::{vkerr, Error};
use super::instance::Instance;
use super::logical::Device;
use super::messenger::MessageLog;
use ash::vk;
use gpu_allocator::vulkan::Allocator;
use std::mem::ManuallyDrop;
use std::sync::{Mutex, MutexGuard, RwLock};
use std::time::{Duration, Instant};
use vkprism_core::DeviceFeatures;

/// How long a wait spins before it blocks.
const SPIN: Duration = Duration::from_millis(2);
/// How long a wait blocks before it reports the GPU as stuck.
const WAIT_TIMEOUT: Duration = Duration::from_secs(120);

/// Serializes creating and destroying instances and devices. Seen on NVIDIA 580 with the
/// validation layer: contexts created and dropped concurrently on several threads crashed in
/// the driver about one run in three; serialized, never. Costs nothing in steady state.
static LIFECYCLE: Mutex<()> = Mutex::new(());

/// Holds the lifecycle lock: taken around every instance and device creation and destruction.
pub(crate) fn lifecycle_lock() -> MutexGuard<'static, ()> {
    LIFECYCLE.lock().unwrap_or_else(|e| e.into_inner())
}

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
    pub memory: vk::PhysicalDeviceMemoryProperties,
    /// Device-local memory the host can map (integrated GPUs, CPU drivers): tensors live there
    /// and are mapped directly, with no staging copy.
    pub unified_memory: bool,
    /// `None` once `Drop` has freed its memory blocks (before the device goes).
    pub allocator: Mutex<Option<Allocator>>,
    pub pipeline_cache: vk::PipelineCache,
    /// One-shot transfer submissions.
    pub transfer_pool: Mutex<vk::CommandPool>,
    /// Host access to mapped tensor memory against GPU work: a running command list holds it
    /// shared, a mapped read or write holds it exclusively, so the host never touches memory a
    /// dispatch may be using (which would be a data race, from safe code).
    pub mapped_access: RwLock<()>,
}

impl Shared {
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

    /// Records and submits a one-shot command buffer, and waits for it. `record` gets a
    /// command buffer in the recording state, after a barrier making earlier GPU work visible;
    /// a barrier making its writes visible to the host follows it.
    pub fn one_shot(&self, record: impl FnOnce(vk::CommandBuffer)) -> Result<(), Error> {
        let pool = self.transfer_pool.lock().unwrap_or_else(|e| e.into_inner());
        // SAFETY: the pool belongs to this device and is locked, so no other thread allocates
        // from or frees into it meanwhile.
        let cmd = unsafe {
            self.device.allocate_command_buffers(
                &vk::CommandBufferAllocateInfo::default()
                    .command_pool(*pool)
                    .command_buffer_count(1),
            )
        }
        .map_err(vkerr("vkAllocateCommandBuffers"))?[0];
        // SAFETY: `cmd` was just allocated from this device's locked pool.
        let result = unsafe { self.record_and_run(cmd, record) };
        // SAFETY: the pool is locked and `cmd` came from it. `record_and_run` waited for the
        // buffer or failed before submitting it, so it is not pending, except after
        // `Error::Timeout`: the GPU is then presumed hung and the buffer is freed anyway, as
        // vkprism always did (a known gap, not widened here).
        unsafe { self.device.free_command_buffers(*pool, &[cmd]) };
        result
    }

    /// Records `cmd` (begin, barriers around `record`, end), submits it and waits.
    ///
    /// # Safety
    /// `cmd` is a fresh command buffer of this device, used by no other thread.
    unsafe fn record_and_run(
        &self,
        cmd: vk::CommandBuffer,
        record: impl FnOnce(vk::CommandBuffer),
    ) -> Result<(), Error> {
        let d = &self.device;
        // SAFETY: `cmd` is in the initial state and exclusively ours (the caller's contract).
        unsafe {
            d.begin_command_buffer(
                cmd,
                &vk::CommandBufferBeginInfo::default()
                    .flags(vk::CommandBufferUsageFlags::ONE_TIME_SUBMIT),
            )
        }
        .map_err(vkerr("vkBeginCommandBuffer"))?;
        // Earlier GPU work (other submissions) becomes visible to this one, and this one's
        // writes to the host.
        let all = vk::MemoryBarrier::default()
            .src_access_mask(vk::AccessFlags::MEMORY_WRITE)
            .dst_access_mask(vk::AccessFlags::MEMORY_READ | vk::AccessFlags::MEMORY_WRITE);
        let host = vk::MemoryBarrier::default()
            .src_access_mask(vk::AccessFlags::MEMORY_WRITE)
            .dst_access_mask(vk::AccessFlags::HOST_READ);
        let stages = vk::PipelineStageFlags::ALL_COMMANDS;
        let none = vk::DependencyFlags::empty();
        // SAFETY: `cmd` is recording; barriers reference no handles.
        unsafe { d.cmd_pipeline_barrier(cmd, stages, stages, none, &[all], &[], &[]) };
        record(cmd);
        // SAFETY: as above; `record` only records into `cmd`.
        unsafe {
            d.cmd_pipeline_barrier(
                cmd,
                stages,
                vk::PipelineStageFlags::HOST,
                none,
                &[host],
                &[],
                &[],
            );
            d.end_command_buffer(cmd)
                .map_err(vkerr("vkEndCommandBuffer"))?;
            self.submit_and_wait(cmd)
        }
    }

    /// Submits one command buffer and waits on a fence made for it.
    ///
    /// # Safety
    /// `cmd` must be a finished command buffer of this device whose resources are alive.
    pub unsafe fn submit_and_wait(&self, cmd: vk::CommandBuffer) -> Result<(), Error> {
        // SAFETY: a plain fence creation on this live device.
        let fence = unsafe {
            self.device
                .create_fence(&vk::FenceCreateInfo::default(), None)
        }
        .map_err(vkerr("vkCreateFence"))?;
        // SAFETY: the caller's contract for `cmd`; the fence is new and unsignalled.
        let r = unsafe { self.submit(cmd, fence) }.and_then(|_| self.wait(fence));
        // SAFETY: the wait finished or the submission failed, so the fence is unused, except
        // after `Error::Timeout` (the GPU presumed hung; see `one_shot`).
        unsafe { self.device.destroy_fence(fence, None) };
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
        // SAFETY: the queue is locked (external synchronization); the caller vouches for `cmd`
        // and `fence`.
        unsafe { self.device.queue_submit(*queue, &[submit], fence) }
            .map_err(vkerr("vkQueueSubmit"))
    }

    /// Waits for `fence`: spinning on its status first (a blocking wait can take hundreds of
    /// microseconds to wake up on some drivers), then blocking, and giving up with an error
    /// after `WAIT_TIMEOUT` rather than hanging on a stuck GPU.
    pub fn wait(&self, fence: vk::Fence) -> Result<(), Error> {
        let start = Instant::now();
        while start.elapsed() < SPIN {
            // SAFETY: querying a fence of this device has no other precondition.
            match unsafe { self.device.get_fence_status(fence) } {
                Ok(true) => return Ok(()),
                Ok(false) => std::hint::spin_loop(),
                Err(e) => return Err(vkerr("vkGetFenceStatus")(e)),
            }
        }
        // SAFETY: as above; waiting does not modify the fence.
        match unsafe {
            self.device
                .wait_for_fences(&[fence], true, WAIT_TIMEOUT.as_nanos() as u64)
        } {
            Ok(()) => Ok(()),
            Err(vk::Result::TIMEOUT) => Err(Error::Timeout(WAIT_TIMEOUT)),
            Err(e) => Err(vkerr("vkWaitForFences")(e)),
        }
    }

    /// Waits until the device is idle (the queue locked meanwhile).
    pub fn wait_idle(&self) -> Result<(), Error> {
        let _queue = self.queue.lock().unwrap_or_else(|e| e.into_inner());
        // SAFETY: the queue is locked, which is the external synchronization this call needs.
        unsafe { self.device.device_wait_idle() }.map_err(vkerr("vkDeviceWaitIdle"))
    }
}

impl Drop for Shared {
    fn drop(&mut self) {
        let _serial = lifecycle_lock();
        // SAFETY: this is the last reference to the device (every object holds an Arc of
        // Shared), so after vkDeviceWaitIdle nothing uses it: the per-device objects, then the
        // device, then the instance are destroyed in reverse order of creation, once.
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
