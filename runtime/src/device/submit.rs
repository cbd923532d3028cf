//! Submission: one-shot transfers (record, submit, wait, free), command-list submission, fence
//! waits bounded by the fence timeout, and poisoning: a wait that times out marks the context
//! poisoned, after which nothing is submitted, mapped or freed.

use super::error::{vkerr, DeviceError};
use super::lock::api_lock;
use super::shared::Shared;
use ash::vk;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

/// How long a wait spins before it blocks.
const SPIN: Duration = Duration::from_millis(2);
/// How long a fence wait blocks before it reports the GPU as stuck, unless the context was made
/// with another `ContextOptions::fence_timeout`.
pub(crate) const DEFAULT_FENCE_TIMEOUT: Duration = Duration::from_secs(120);
/// A blocking fence wait holds the API lock (shared) for at most this long at a time, so a
/// context being created or dropped on another thread waits at most this long for it.
const WAIT_SLICE: Duration = Duration::from_millis(10);

impl Shared {
    /// Whether a fence wait timed out (see [`Shared::poisoned`]).
    pub fn is_poisoned(&self) -> bool {
        self.poisoned.load(Ordering::Acquire)
    }

    /// `Err` once the context is poisoned: what every submission, mapped access and creation
    /// checks first.
    pub fn check_usable(&self) -> Result<(), DeviceError> {
        if self.is_poisoned() {
            Err(DeviceError::Poisoned(self.fence_timeout))
        } else {
            Ok(())
        }
    }

    /// Records and submits a one-shot command buffer, and waits for it. `record` gets a
    /// command buffer in the recording state, after a barrier making earlier GPU work visible;
    /// a barrier making its writes visible to the host follows it.
    pub fn one_shot(&self, record: impl FnOnce(vk::CommandBuffer)) -> Result<(), DeviceError> {
        let pending = self.one_shot_submit(record)?;
        self.finish(pending)
    }

    /// As [`Shared::one_shot`] without the wait: the caller overlaps host work with the GPU's
    /// and then hands the result to [`Shared::finish`], keeping what `record` used alive (and
    /// untouched by the host where the GPU writes it) until then.
    pub fn one_shot_submit(
        &self,
        record: impl FnOnce(vk::CommandBuffer),
    ) -> Result<PendingOneShot, DeviceError> {
        self.check_usable()?;
        let cmd = {
            let _api = api_lock();
            let pool = self.transfer_pool.lock().unwrap_or_else(|e| e.into_inner());
            // SAFETY: the pool belongs to this device and is locked, so no other thread
            // allocates from, records into or frees into it meanwhile.
            let cmd = unsafe {
                self.device.allocate_command_buffers(
                    &vk::CommandBufferAllocateInfo::default()
                        .command_pool(*pool)
                        .command_buffer_count(1),
                )
            }
            .map_err(vkerr("vkAllocateCommandBuffers"))?[0];
            // SAFETY: `cmd` was just allocated from this device's pool, which is locked while
            // it records (recording needs the pool externally synchronized).
            if let Err(e) = unsafe { self.record_one_shot(cmd, record) } {
                // SAFETY: as above; `cmd` was never submitted.
                unsafe { self.device.free_command_buffers(*pool, &[cmd]) };
                return Err(e);
            }
            cmd
        };
        let api = api_lock();
        // SAFETY: a plain fence creation on this live device.
        let fence = unsafe {
            self.device
                .create_fence(&vk::FenceCreateInfo::default(), None)
        }
        .map_err(vkerr("vkCreateFence"));
        drop(api);
        let fence = match fence {
            Ok(fence) => fence,
            Err(e) => {
                self.free_one_shot(cmd);
                return Err(e);
            }
        };
        // SAFETY: `cmd` is finished and records only what `record` recorded, whose resources
        // the caller keeps alive until `finish`; the fence is new and unsignalled.
        if let Err(e) = unsafe { self.submit(cmd, fence) } {
            {
                let _api = api_lock();
                // SAFETY: the submission failed, so the fence is unused.
                unsafe { self.device.destroy_fence(fence, None) };
            }
            self.free_one_shot(cmd);
            return Err(e);
        }
        Ok(PendingOneShot { cmd, fence })
    }

    /// Waits for a submitted one-shot (as [`Shared::wait`], a timeout poisons the context) and
    /// frees its command buffer and fence. On a poisoned context it does not wait: the GPU may
    /// never finish, so both are leaked (the pool with the device, see `Drop for Shared`) and
    /// the caller must not touch what the work used.
    pub fn finish(&self, pending: PendingOneShot) -> Result<(), DeviceError> {
        let PendingOneShot { cmd, fence } = pending;
        self.check_usable()?;
        let result = self.wait(fence);
        if self.is_poisoned() {
            return result;
        }
        {
            let _api = api_lock();
            // SAFETY: the wait finished (after a timeout the context is poisoned and the fence
            // leaked above); an error other than a timeout (a lost device) leaves nothing that
            // will signal it.
            unsafe { self.device.destroy_fence(fence, None) };
        }
        self.free_one_shot(cmd);
        result
    }

    /// Frees a one-shot command buffer that is not pending.
    fn free_one_shot(&self, cmd: vk::CommandBuffer) {
        let _api = api_lock();
        let pool = self.transfer_pool.lock().unwrap_or_else(|e| e.into_inner());
        // SAFETY: the pool is locked and `cmd` came from it; the caller says it is not pending.
        unsafe { self.device.free_command_buffers(*pool, &[cmd]) };
    }

    /// Records `cmd` (begin, barriers around `record`, end).
    ///
    /// # Safety
    /// `cmd` is a fresh command buffer of this device whose pool the caller holds locked; the
    /// caller holds the API lock.
    unsafe fn record_one_shot(
        &self,
        cmd: vk::CommandBuffer,
        record: impl FnOnce(vk::CommandBuffer),
    ) -> Result<(), DeviceError> {
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
                .map_err(vkerr("vkEndCommandBuffer"))
        }
    }

    /// Submits `cmd`, signalling the unsignalled `fence`.
    ///
    /// # Safety
    /// `cmd` must be a finished command buffer of this device whose resources stay alive until
    /// `fence` signals; `fence` belongs to this device and is unsignalled.
    pub unsafe fn submit(
        &self,
        cmd: vk::CommandBuffer,
        fence: vk::Fence,
    ) -> Result<(), DeviceError> {
        self.check_usable()?;
        let cmds = [cmd];
        let submit = vk::SubmitInfo::default().command_buffers(&cmds);
        let _api = api_lock();
        let queue = self.queue.lock().unwrap_or_else(|e| e.into_inner());
        // SAFETY: the queue is locked (external synchronization); the caller vouches for `cmd`
        // and `fence`.
        unsafe { self.device.queue_submit(*queue, &[submit], fence) }
            .map_err(vkerr("vkQueueSubmit"))
    }

    /// Resets `fence` and submits `cmd`, signalling it: a command list's run.
    ///
    /// # Safety
    /// As [`Shared::submit`], except that `fence` may be signalled, but not pending (the last
    /// submission that signals it was waited for, or there was none).
    pub unsafe fn reset_and_submit(
        &self,
        cmd: vk::CommandBuffer,
        fence: vk::Fence,
    ) -> Result<(), DeviceError> {
        let _api = api_lock();
        // SAFETY: the fence belongs to this device and is not pending (the caller's contract).
        unsafe { self.device.reset_fences(&[fence]) }.map_err(vkerr("vkResetFences"))?;
        // SAFETY: the fence is now unsignalled; the caller vouches for `cmd`.
        unsafe { self.submit(cmd, fence) }
    }

    /// Waits for `fence`: spinning on its status first (a blocking wait can take hundreds of
    /// microseconds to wake up on some drivers), then blocking, and giving up with an error
    /// after [`Shared::fence_timeout`] rather than hanging on a stuck GPU. A timeout poisons
    /// the context (see [`Shared::poisoned`]) before this returns, so a caller holding
    /// `mapped_access` releases it only once host access is refused.
    pub fn wait(&self, fence: vk::Fence) -> Result<(), DeviceError> {
        let r = self.wait_unpoisoned(fence);
        if let Err(DeviceError::Timeout(_)) = r {
            self.poisoned.store(true, Ordering::Release);
        }
        r
    }

    /// Whether `fence` is signalled, without waiting.
    pub fn fence_signalled(&self, fence: vk::Fence) -> Result<bool, DeviceError> {
        let _api = api_lock();
        // SAFETY: querying a fence of this device has no other precondition.
        unsafe { self.device.get_fence_status(fence) }.map_err(vkerr("vkGetFenceStatus"))
    }

    fn wait_unpoisoned(&self, fence: vk::Fence) -> Result<(), DeviceError> {
        let start = Instant::now();
        let timeout = self.fence_timeout;
        while start.elapsed() < SPIN.min(timeout) {
            let _api = api_lock();
            // SAFETY: querying a fence of this device has no other precondition.
            match unsafe { self.device.get_fence_status(fence) } {
                Ok(true) => return Ok(()),
                Ok(false) => std::hint::spin_loop(),
                Err(e) => return Err(vkerr("vkGetFenceStatus")(e)),
            }
        }
        // Block in slices, so a context made or dropped elsewhere gets the lifecycle lock.
        loop {
            let left = timeout.saturating_sub(start.elapsed());
            let slice = left.min(WAIT_SLICE);
            let _api = api_lock();
            // SAFETY: as above; waiting does not modify the fence.
            match unsafe {
                self.device
                    .wait_for_fences(&[fence], true, slice.as_nanos() as u64)
            } {
                Ok(()) => return Ok(()),
                Err(vk::Result::TIMEOUT) if left > slice => continue,
                Err(vk::Result::TIMEOUT) => return Err(DeviceError::Timeout(timeout)),
                Err(e) => return Err(vkerr("vkWaitForFences")(e)),
            }
        }
    }

    /// Waits until the device is idle (the queue locked meanwhile): bounded as fence waits
    /// are (a fence submitted after everything else signals when the queue is idle).
    pub fn wait_idle(&self) -> Result<(), DeviceError> {
        self.check_usable()?;
        let api = api_lock();
        // SAFETY: a plain fence creation on this live device.
        let fence = unsafe {
            self.device
                .create_fence(&vk::FenceCreateInfo::default(), None)
        }
        .map_err(vkerr("vkCreateFence"))?;
        let r = {
            let queue = self.queue.lock().unwrap_or_else(|e| e.into_inner());
            // SAFETY: the queue is locked (external synchronization); an empty submission
            // signals `fence` once all earlier submissions to the queue have completed.
            unsafe { self.device.queue_submit(*queue, &[], fence) }.map_err(vkerr("vkQueueSubmit"))
        };
        drop(api);
        let r = r.and_then(|_| self.wait(fence));
        if !self.is_poisoned() {
            let _api = api_lock();
            // SAFETY: the fence signalled, or was never submitted: it is unused.
            unsafe { self.device.destroy_fence(fence, None) };
        }
        r
    }
}

/// A one-shot command buffer submitted by [`Shared::one_shot_submit`] and not yet waited for.
/// Give it to [`Shared::finish`]; dropped instead, its command buffer and fence are leaked
/// (never freed while the GPU may use them).
#[must_use = "a pending one-shot must be finished (waited for) before what it uses is touched"]
pub struct PendingOneShot {
    cmd: vk::CommandBuffer,
    fence: vk::Fence,
}
