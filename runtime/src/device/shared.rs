//! `Shared`: the device and everything made once per device (allocator, pipeline cache, transfer
//! pool, queue), what every other object holds an `Arc` of; submission, fence waits, one-shot
//! transfers, and the process-wide lifecycle lock.

use super::error::{vkerr, Error};
use super::instance::Instance;
use super::logical::Device;
use super::messenger::MessageLog;
use ash::vk;
use gpu_allocator::vulkan::{Allocation, Allocator};
use std::cell::Cell;
use std::mem::ManuallyDrop;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Mutex, RwLock, RwLockReadGuard, RwLockWriteGuard};
use std::time::{Duration, Instant};
use vkprism_core::{DeviceFact, DeviceFeatures};

/// How long a wait spins before it blocks.
const SPIN: Duration = Duration::from_millis(2);
/// How long a fence wait blocks before it reports the GPU as stuck, unless the context was made
/// with another `ContextOptions::fence_timeout`.
pub(crate) const DEFAULT_FENCE_TIMEOUT: Duration = Duration::from_secs(120);
/// Bytes per staged copy unless the context was made with another
/// `ContextOptions::staging_chunk`: large enough that a submission per chunk costs little, small
/// enough that the three kept staging buffers (one upload, two readback) stay modest.
pub(crate) const DEFAULT_STAGING_CHUNK: u64 = 64 << 20;
/// A blocking fence wait holds the API lock (shared) for at most this long at a time, so a
/// context being created or dropped on another thread waits at most this long for it.
const WAIT_SLICE: Duration = Duration::from_millis(10);

/// The process-wide Vulkan lifecycle lock. The rule it enforces: **creating or destroying an
/// instance or a device excludes every other Vulkan call in the process**; other calls run
/// concurrently with each other (holding it shared).
///
/// Why: the Khronos validation layer (and some drivers) keep per-instance and per-device state
/// in process-wide tables keyed by dispatchable handle (the layer's `layer_data_map`). Creating
/// or destroying an instance or device inserts into or erases from those tables, and in
/// VVL 1.3.239 every other call looks its object up in them without a lock: a lookup on one
/// thread during an insertion on another read a table being rehashed (SIGSEGV inside the layer
/// under `vkGetFenceStatus`, 2 runs in 10 with 8 threads making contexts). This is the data
/// race in `GetLayerDataPtr` of KhronosGroup/Vulkan-ValidationLayers#4391, whose fix in the layer
/// is the same scheme: a shared lock for lookups, an exclusive one for insertions and erasures.
/// Serializing only creation and destruction against each other (what an earlier `Mutex` did)
/// is not enough.
/// Seen on NVIDIA 580 too: contexts created and dropped concurrently crashed in the driver.
///
/// Cost: an uncontended shared acquisition per checked operation (tens of nanoseconds; nested
/// acquisitions on one thread are counted, not re-locked), and calls pause while a context is
/// being created or dropped elsewhere in the process.
static LIFECYCLE: RwLock<()> = RwLock::new(());

thread_local! {
    /// How many [`ApiGuard`]s this thread holds (only the outermost one holds the lock, so a
    /// nested acquisition never waits behind a queued writer, which would deadlock).
    static API_DEPTH: Cell<u32> = const { Cell::new(0) };
}

/// Holds the lifecycle lock exclusively: taken around every instance and device creation and
/// destruction.
pub(crate) fn lifecycle_lock() -> RwLockWriteGuard<'static, ()> {
    debug_assert_eq!(
        API_DEPTH.with(|d| d.get()),
        0,
        "a context created or destroyed while this thread makes Vulkan calls would deadlock"
    );
    LIFECYCLE.write().unwrap_or_else(|e| e.into_inner())
}

/// The lifecycle lock held shared (see [`LIFECYCLE`]): taken around every other Vulkan call.
pub(crate) struct ApiGuard {
    /// `None` for a nested guard (an outer one on this thread holds the lock).
    _lock: Option<RwLockReadGuard<'static, ()>>,
}

/// Takes the lifecycle lock shared for the calling thread (reentrant).
///
/// Lock order: take it before any other lock that is held while it is taken (the queue, the
/// transfer pool, the allocator, the pipeline cache lock), never after one: with a context
/// being created elsewhere (a queued writer), a thread waiting for it while holding such a lock
/// would deadlock with one holding it and waiting for that lock.
pub(crate) fn api_lock() -> ApiGuard {
    let depth = API_DEPTH.with(|d| {
        let n = d.get();
        d.set(n + 1);
        n
    });
    ApiGuard {
        _lock: (depth == 0).then(|| LIFECYCLE.read().unwrap_or_else(|e| e.into_inner())),
    }
}

impl Drop for ApiGuard {
    fn drop(&mut self) {
        API_DEPTH.with(|d| d.set(d.get() - 1));
    }
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
}

/// How much of a heap is free for one more allocation, and the figures that say why.
#[derive(Copy, Clone, Debug)]
pub(crate) struct HeapRoom {
    /// The heap's index.
    pub heap: usize,
    /// Bytes still available to this process in the heap.
    pub available: u64,
    /// The budget (`VK_EXT_memory_budget`), or the heap's size without it.
    pub budget: u64,
    /// The heap's size.
    pub size: u64,
}

/// The room in heap `heap` of `size` bytes, of which vkprism allocated `ours`: with
/// `VK_EXT_memory_budget`'s `(heapBudget, heapUsage)`, the budget (at most the heap's size) less
/// the larger of the driver's usage and ours (a driver may not count what it has not touched);
/// without it (or with a budget of 0, which no driver that tracks it reports), the heap's size
/// less ours.
fn room(heap: usize, size: u64, ours: u64, budget: Option<(u64, u64)>) -> HeapRoom {
    let (budget, used) = match budget {
        Some((b, u)) if b > 0 => (b.min(size), u.max(ours)),
        _ => (size, ours),
    };
    HeapRoom {
        heap,
        available: budget.saturating_sub(used),
        budget,
        size,
    }
}

impl Shared {
    /// Whether a fence wait timed out (see [`Shared::poisoned`]).
    pub fn is_poisoned(&self) -> bool {
        self.poisoned.load(Ordering::Acquire)
    }

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

    /// `Err` once the context is poisoned: what every submission, mapped access and creation
    /// checks first.
    pub fn check_usable(&self) -> Result<(), Error> {
        if self.is_poisoned() {
            Err(Error::Poisoned(self.fence_timeout))
        } else {
            Ok(())
        }
    }

    /// Room in each heap a memory type in `type_bits` with `flags` lives in: the driver's budget
    /// minus its usage with `VK_EXT_memory_budget`, else the heap's size minus what vkprism
    /// allocated there.
    pub fn heap_room(&self, type_bits: u32, flags: vk::MemoryPropertyFlags) -> Vec<HeapRoom> {
        let mut heaps: Vec<usize> = self
            .memory
            .memory_types_as_slice()
            .iter()
            .enumerate()
            .filter(|(i, t)| type_bits & (1 << i) != 0 && t.property_flags.contains(flags))
            .map(|(_, t)| t.heap_index as usize)
            .collect();
        heaps.sort_unstable();
        heaps.dedup();
        let budget = self.memory_budget.then(|| {
            let mut budget = vk::PhysicalDeviceMemoryBudgetPropertiesEXT::default();
            let mut props = vk::PhysicalDeviceMemoryProperties2::default().push_next(&mut budget);
            let _api = api_lock();
            // SAFETY: a query on this instance's physical device, whose VK_EXT_memory_budget
            // is enabled; `props` chains only `budget`, which lives until the call returns.
            unsafe {
                self.instance
                    .get_physical_device_memory_properties2(self.physical, &mut props)
            };
            (budget.heap_budget, budget.heap_usage)
        });
        heaps
            .into_iter()
            .filter(|h| *h < self.memory.memory_heap_count as usize)
            .map(|heap| {
                let size = self.memory.memory_heaps[heap].size;
                let ours = self.heap_used[heap].load(Ordering::Relaxed);
                room(heap, size, ours, budget.map(|(b, u)| (b[heap], u[heap])))
            })
            .collect()
    }

    /// The heap an allocation of memory with `flags` (allowed by `type_bits`) came from.
    pub fn heap_of(&self, type_bits: u32, flags: vk::MemoryPropertyFlags) -> Option<usize> {
        self.memory
            .memory_types_as_slice()
            .iter()
            .enumerate()
            .find(|(i, t)| type_bits & (1 << i) != 0 && t.property_flags == flags)
            .map(|(_, t)| t.heap_index as usize)
    }

    /// Counts `bytes` more (or, with `add` false, fewer) allocated by vkprism in `heap`.
    pub fn count_heap(&self, heap: Option<usize>, bytes: u64, add: bool) {
        if let Some(counter) = heap.and_then(|h| self.heap_used.get(h)) {
            if add {
                counter.fetch_add(bytes, Ordering::Relaxed);
            } else {
                counter.fetch_sub(bytes, Ordering::Relaxed);
            }
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

    /// Records and submits a one-shot command buffer, and waits for it. `record` gets a
    /// command buffer in the recording state, after a barrier making earlier GPU work visible;
    /// a barrier making its writes visible to the host follows it.
    pub fn one_shot(&self, record: impl FnOnce(vk::CommandBuffer)) -> Result<(), Error> {
        let pending = self.one_shot_submit(record)?;
        self.finish(pending)
    }

    /// As [`Shared::one_shot`] without the wait: the caller overlaps host work with the GPU's
    /// and then hands the result to [`Shared::finish`], keeping what `record` used alive (and
    /// untouched by the host where the GPU writes it) until then.
    pub fn one_shot_submit(
        &self,
        record: impl FnOnce(vk::CommandBuffer),
    ) -> Result<PendingOneShot, Error> {
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
    pub fn finish(&self, pending: PendingOneShot) -> Result<(), Error> {
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
                .map_err(vkerr("vkEndCommandBuffer"))
        }
    }

    /// Submits `cmd`, signalling the unsignalled `fence`.
    ///
    /// # Safety
    /// `cmd` must be a finished command buffer of this device whose resources stay alive until
    /// `fence` signals; `fence` belongs to this device and is unsignalled.
    pub unsafe fn submit(&self, cmd: vk::CommandBuffer, fence: vk::Fence) -> Result<(), Error> {
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

    /// Waits for `fence`: spinning on its status first (a blocking wait can take hundreds of
    /// microseconds to wake up on some drivers), then blocking, and giving up with an error
    /// after [`Shared::fence_timeout`] rather than hanging on a stuck GPU. A timeout poisons
    /// the context (see [`Shared::poisoned`]) before this returns, so a caller holding
    /// `mapped_access` releases it only once host access is refused.
    pub fn wait(&self, fence: vk::Fence) -> Result<(), Error> {
        let r = self.wait_unpoisoned(fence);
        if let Err(Error::Timeout(_)) = r {
            self.poisoned.store(true, Ordering::Release);
        }
        r
    }

    fn wait_unpoisoned(&self, fence: vk::Fence) -> Result<(), Error> {
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
                Err(vk::Result::TIMEOUT) => return Err(Error::Timeout(timeout)),
                Err(e) => return Err(vkerr("vkWaitForFences")(e)),
            }
        }
    }

    /// Waits until the device is idle (the queue locked meanwhile): bounded as fence waits
    /// are (a fence submitted after everything else signals when the queue is idle).
    pub fn wait_idle(&self) -> Result<(), Error> {
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
                crate::tensor::free_buffer(self, buffer, Some(allocation));
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc;

    #[test]
    fn heap_room_uses_the_budget_where_there_is_one() {
        let gib = 1u64 << 30;
        // No VK_EXT_memory_budget: the heap's size less what vkprism allocated.
        let r = room(0, 2 * gib, gib / 2, None);
        assert_eq!(
            (r.available, r.budget, r.size),
            (gib + gib / 2, 2 * gib, 2 * gib)
        );
        // With it: the budget less the driver's usage...
        let r = room(1, 80 * gib, gib, Some((60 * gib, 10 * gib)));
        assert_eq!((r.available, r.budget, r.heap), (50 * gib, 60 * gib, 1));
        // ... or less ours where the driver counts less, never above the heap's size, never
        // negative; a zero budget means the driver does not track it.
        assert_eq!(
            room(0, 8 * gib, 3 * gib, Some((4 * gib, gib))).available,
            gib
        );
        assert_eq!(room(0, 8 * gib, 0, Some((16 * gib, 0))).budget, 8 * gib);
        assert_eq!(room(0, 8 * gib, 0, Some((gib, 2 * gib))).available, 0);
        assert_eq!(room(0, 8 * gib, gib, Some((0, 0))).available, 7 * gib);
    }

    #[test]
    fn creation_waits_for_calls_and_nested_calls_never_relock() {
        let outer = api_lock();
        let nested = api_lock();
        let (tx, rx) = mpsc::channel();
        let creator = std::thread::spawn(move || {
            let _exclusive = lifecycle_lock();
            tx.send(()).unwrap();
        });
        std::thread::sleep(Duration::from_millis(50));
        assert!(rx.try_recv().is_err(), "creation ran during a call");
        // With the creator queued, a nested acquisition must not wait for it (a deadlock).
        let again = api_lock();
        drop((again, nested));
        std::thread::sleep(Duration::from_millis(20));
        assert!(rx.try_recv().is_err(), "creation ran during the outer call");
        drop(outer);
        rx.recv_timeout(Duration::from_secs(5))
            .expect("creation proceeds once the calls are done");
        creator.join().unwrap();
        assert_eq!(API_DEPTH.with(|d| d.get()), 0);
    }
}
