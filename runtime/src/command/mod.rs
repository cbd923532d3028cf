//! Command lists: record many dispatches and transfers once, replay them with one submit each
//! (MNN's record-at-resize / replay-at-run), with barriers between dependent commands and
//! optional GPU timestamps per dispatch; run and wait ([`CommandList::submit_and_wait`]), or
//! submit and wait later ([`CommandList::submit`], a [`Submission`]), several lists in flight.
//!
//! A list keeps a clone of every tensor, image and pipeline it binds: nothing it uses can be
//! freed while it exists, and its work is always waited for before it is dropped.
//!
//! Between lists: every list begins with a global memory barrier (all commands, all writes
//! before it; all reads and writes after it). On the one queue, a pipeline barrier's first
//! scope is every command earlier in submission order, earlier submissions included: so a list
//! runs after every list submitted before it and sees its writes (no semaphores needed; a list
//! submitted later depends on every earlier one, the order of `submit` calls being the order of
//! execution). Within a list, a barrier goes only where a command reads or writes a buffer (or
//! image) that an earlier command since the last barrier wrote, or writes one that such a
//! command used.
//!
//! - `error.rs`: [`CommandError`];
//! - `dispatch.rs`: checking a dispatch (a plan) and recording it (`unsafe`, trusting the plan);
//! - `transfer.rs`: uploads, copies, fills and downloads recorded in a list, their staging
//!   buffers, [`Readback`], [`UploadSlot`];
//! - `submission.rs`: [`Submission`], the run in flight and its fence.

mod dispatch;
mod error;
mod submission;
mod transfer;

pub use error::CommandError;
pub use submission::Submission;
pub use transfer::{Readback, UploadSlot};

use crate::device::{
    allocate_descriptor_set, cmd_start_timestamps, create_command_objects, create_descriptor_pool,
    create_timestamp_pool, destroy_command_objects, end_recording, timestamps, vkerr, Shared,
};
use crate::kernel::{Bindings, Kernel, Resource};
use crate::pipeline::Pipeline;
use crate::tensor::TensorInner;
use crate::{Context, Image, Tensor, TensorFormat};
use ash::vk;
use std::any::Any;
use std::sync::Arc;
use std::time::Duration;
use submission::RunCell;

/// Identity of a bound resource, for barrier decisions.
#[derive(Copy, Clone, PartialEq, Eq)]
enum ResId {
    Buffer(vk::Buffer),
    Image(vk::Image),
}

impl ResId {
    fn of(resource: Resource<'_>) -> ResId {
        match resource {
            Resource::Buffer(t) => ResId::Buffer(t.inner.buffer),
            Resource::Image(i) => ResId::Image(i.inner.image),
        }
    }
}

/// A recorded sequence of dispatches and transfers that can be submitted many times.
pub struct CommandList {
    shared: Arc<Shared>,
    pool: vk::CommandPool,
    cmd: vk::CommandBuffer,
    /// The fence reused by every run (creating a fence per submit costs more than the submit)
    /// and what is in flight, shared with the [`Submission`]s.
    run: Arc<RunCell>,
    descriptor_pools: Vec<vk::DescriptorPool>,
    sets_left: u32,
    query_pool: Option<vk::QueryPool>,
    /// Dispatches the query pool has room for (0: only the list's start and end are timed).
    query_capacity: u32,
    /// Clones of everything bound: keeps it alive while the list exists.
    keep: Vec<Arc<dyn Any + Send + Sync>>,
    /// The tensors' buffers the list uses, once each: a [`Submission`] marks them pending.
    tensors: Vec<Arc<TensorInner>>,
    names: Vec<&'static str>,
    /// What dispatches since the last barrier write.
    written: Vec<ResId>,
    /// Everything dispatches since the last barrier bind, read or written (a later write to
    /// any of it needs a barrier).
    bound: Vec<ResId>,
    barriers: usize,
    recording: bool,
    /// Transfers recorded.
    transfers: usize,
    /// Buffers for kernels' intermediate results ([`CommandList::scratch`]), each with whether
    /// it is free to lend again ([`CommandList::release_scratch`]).
    scratch: Vec<(Tensor, bool)>,
}

/// The most dispatches one list can time ([`CommandList::with_timestamps`]): a query pool of
/// this many timestamps costs 512 KiB and is reset in well under a second on a CPU driver; far
/// more is almost surely a size bug (`1 << 26` took 29 s and 8.3 GB under the validation layer).
pub const MAX_TIMED_DISPATCHES: u32 = 1 << 16;

/// Descriptor sets per descriptor pool (a list makes another pool when one runs out).
const SETS_PER_POOL: u32 = 256;

/// Descriptors per pool, by type: room for kernels of up to 8 storage buffers (or 2 uniform
/// buffers, 4 sampled and 4 storage images) in every set; a pool short of one type is replaced
/// early (`allocate_set`).
const POOL_SIZES: [vk::DescriptorPoolSize; 4] = [
    vk::DescriptorPoolSize {
        ty: vk::DescriptorType::STORAGE_BUFFER,
        descriptor_count: SETS_PER_POOL * 8,
    },
    vk::DescriptorPoolSize {
        ty: vk::DescriptorType::UNIFORM_BUFFER,
        descriptor_count: SETS_PER_POOL * 2,
    },
    vk::DescriptorPoolSize {
        ty: vk::DescriptorType::COMBINED_IMAGE_SAMPLER,
        descriptor_count: SETS_PER_POOL * 4,
    },
    vk::DescriptorPoolSize {
        ty: vk::DescriptorType::STORAGE_IMAGE,
        descriptor_count: SETS_PER_POOL * 4,
    },
];

impl CommandList {
    /// An empty list, recording.
    pub fn new(ctx: &Context) -> Result<CommandList, CommandError> {
        let shared = ctx.shared.clone();
        shared.check_usable()?;
        let (pool, cmd, fence) = create_command_objects(&shared)?;
        Ok(CommandList {
            shared: shared.clone(),
            pool,
            cmd,
            run: Arc::new(RunCell::new(shared.clone(), fence)),
            descriptor_pools: Vec::new(),
            sets_left: 0,
            query_pool: None,
            query_capacity: 0,
            keep: Vec::new(),
            tensors: Vec::new(),
            names: Vec::new(),
            written: Vec::new(),
            bound: Vec::new(),
            barriers: 0,
            // `create_command_objects` began the buffer.
            recording: true,
            transfers: 0,
            scratch: Vec::new(),
        })
    }

    /// The same, timing every dispatch with GPU timestamps (up to `max_dispatches` of them, at
    /// most [`MAX_TIMED_DISPATCHES`]: more is [`CommandError::TooManyTimestamps`]).
    pub fn with_timestamps(
        ctx: &Context,
        max_dispatches: u32,
    ) -> Result<CommandList, CommandError> {
        if max_dispatches > MAX_TIMED_DISPATCHES {
            return Err(CommandError::TooManyTimestamps {
                asked: max_dispatches,
                max: MAX_TIMED_DISPATCHES,
            });
        }
        let mut list = CommandList::new(ctx)?;
        if list.shared.timestamp_bits == 0 || list.shared.features.limits.timestamp_period_ns == 0.0
        {
            return Err(CommandError::NoTimestamps);
        }
        let qp = create_timestamp_pool(&list.shared, max_dispatches + 1)?;
        list.query_pool = Some(qp);
        list.query_capacity = max_dispatches;
        // SAFETY: the list is recording (it is until `finish`) and only this thread has it; the
        // query pool is the list's, with `max_dispatches + 1` queries.
        unsafe { cmd_start_timestamps(&list.shared, list.cmd, qp, max_dispatches + 1) };
        Ok(list)
    }

    /// The same, timing only the whole list with two timestamps (per-dispatch timestamps
    /// serialize the GPU on some drivers, so this is the figure for throughput).
    pub fn with_total_timing(ctx: &Context) -> Result<CommandList, CommandError> {
        let mut list = CommandList::with_timestamps(ctx, 1)?;
        list.query_capacity = 0;
        Ok(list)
    }

    /// Records one dispatch of `global` invocations (rounded up to whole workgroups), after
    /// checking it against the loaded variant and the device; on an error nothing is recorded.
    ///
    /// A list records until it is first submitted ([`CommandList::submit_and_wait`],
    /// [`CommandList::submit`]); after that it can only be replayed, and a dispatch (or
    /// transfer) is [`CommandError::NotRecording`] (make a new list for more work: recording is
    /// cheap, and a replayed list stays what it was).
    pub fn dispatch<'a, B: Bindings<'a>>(
        &mut self,
        pipeline: &Pipeline<B::Kernel>,
        bindings: &B,
        push: &<B::Kernel as Kernel>::PushConstants,
        global: [u32; 3],
    ) -> Result<(), CommandError> {
        self.check_recording()?;
        let plan = self.plan(pipeline, bindings, push, global)?;
        // SAFETY: the plan was just made for this pipeline on this list, which is recording.
        unsafe { self.record(pipeline, plan) }
    }

    /// `Ok` while the list records (and the context is usable).
    fn check_recording(&self) -> Result<(), CommandError> {
        if !self.recording {
            return Err(CommandError::NotRecording {
                dispatches: self.names.len(),
            });
        }
        self.shared.check_usable()?;
        Ok(())
    }

    /// Whether a command that uses `used` (reads or writes) and writes `written` needs the
    /// list's barrier first: it reads or writes what an earlier command since the last barrier
    /// wrote (RAW, WAW), or writes what such a command used (WAR).
    fn needs_barrier(&self, used: &[ResId], written: &[ResId]) -> bool {
        used.iter().any(|u| self.written.contains(u))
            || written.iter().any(|w| self.bound.contains(w))
    }

    /// Notes a command recorded (after the barrier if `barrier`) that used `used` and wrote
    /// `written`. Every barrier orders all earlier compute and transfer accesses before all
    /// later ones, so what came before one is forgotten.
    fn note_accesses(&mut self, barrier: bool, used: &[ResId], written: &[ResId]) {
        if barrier {
            self.written.clear();
            self.bound.clear();
            self.barriers += 1;
        }
        self.written.extend_from_slice(written);
        self.bound.extend_from_slice(used);
    }

    /// Keeps a tensor's buffer alive with the list, and notes it once for pending marks.
    fn keep_tensor(&mut self, t: &Tensor) {
        if !self.tensors.iter().any(|k| Arc::ptr_eq(k, &t.inner)) {
            self.tensors.push(t.inner.clone());
            self.keep.push(t.inner.clone());
        }
    }

    /// A descriptor set of `layout` from the list's current pool (a new pool when it is full).
    fn allocate_set(
        &mut self,
        layout: vk::DescriptorSetLayout,
    ) -> Result<vk::DescriptorSet, CommandError> {
        if self.sets_left == 0 {
            let pool = create_descriptor_pool(&self.shared, SETS_PER_POOL, &POOL_SIZES)?;
            self.descriptor_pools.push(pool);
            self.sets_left = SETS_PER_POOL;
        }
        let pool = *self.descriptor_pools.last().expect("pushed above");
        // SAFETY: the pool is this list's (only `&mut self` allocates from it) and `layout` is a
        // live layout of the same device (the list keeps its kernel).
        match unsafe { allocate_descriptor_set(&self.shared, pool, layout) } {
            Ok(s) => {
                self.sets_left -= 1;
                Ok(s)
            }
            // A pool can run out of one descriptor type before its set count: start a new one.
            Err(vk::Result::ERROR_OUT_OF_POOL_MEMORY | vk::Result::ERROR_FRAGMENTED_POOL)
                if self.sets_left < SETS_PER_POOL =>
            {
                self.sets_left = 0;
                self.allocate_set(layout)
            }
            Err(e) => Err(vkerr("vkAllocateDescriptorSets")(e).into()),
        }
    }

    /// Number of dispatches recorded.
    pub fn len(&self) -> usize {
        self.names.len()
    }
    /// Whether no dispatch is recorded.
    pub fn is_empty(&self) -> bool {
        self.names.is_empty()
    }
    /// Barriers recorded between dependent commands (dispatches and transfers).
    pub fn barrier_count(&self) -> usize {
        self.barriers
    }
    /// Number of transfers recorded (uploads, copies, fills, downloads).
    pub fn transfer_count(&self) -> usize {
        self.transfers
    }

    fn finish(&mut self) -> Result<(), CommandError> {
        if self.recording {
            let end_timestamp = match (self.query_pool, self.query_capacity) {
                (Some(qp), 0) => Some(qp),
                _ => None,
            };
            // SAFETY: `self.recording`: the buffer is recording and used only through
            // `&mut self`; the query pool is the list's, with 2 queries when only the whole list
            // is timed.
            unsafe { end_recording(&self.shared, self.cmd, end_timestamp) }?;
            self.recording = false;
        }
        Ok(())
    }

    /// Ends recording (the first time) and runs the list once: one submit, then a fence wait.
    /// A run still in flight from [`CommandList::submit`] is waited for first (bounded).
    ///
    /// If the wait times out ([`crate::ContextOptions::fence_timeout`]), the GPU may still be
    /// running the list: the context is poisoned before host access to mapped memory is
    /// released, so no mapped read or write can race with the GPU (see
    /// [`crate::Context::is_poisoned`]).
    pub fn submit_and_wait(&mut self) -> Result<(), CommandError> {
        self.shared.check_usable()?;
        // An earlier run may still be pending (submitted, or a wait failed without timing
        // out), and a pending buffer can't be resubmitted: wait for it first (bounded).
        self.run.wait_pending()?;
        self.finish()?;
        // Mapped tensors are not read or written by the host while this runs.
        let shared = self.shared.clone();
        let _gpu = shared
            .mapped_access
            .read()
            .unwrap_or_else(|e| e.into_inner());
        // SAFETY: `cmd` is finished and everything it uses is kept alive by `self.keep`; the
        // run cell is the list's.
        unsafe { self.run.submit_and_wait(self.cmd) }
    }

    /// Ends recording (the first time) and submits the list without waiting: the
    /// [`Submission`] waits ([`Submission::wait`], bounded by the fence timeout as
    /// [`CommandList::submit_and_wait`] is) or polls ([`Submission::is_done`]). Several lists
    /// may be in flight at once; they run in the order they were submitted, each after the
    /// previous ones' work and seeing their writes (see the module docs: every list starts with
    /// a global barrier).
    ///
    /// While the run is in flight, host reads and writes of the tensors it uses (any view of
    /// their buffers) are refused with [`crate::TensorError::Pending`], and the list itself can't
    /// be submitted again: [`CommandError::StillPending`] (wait for the submission first;
    /// [`CommandList::submit_and_wait`] waits for it). Dropping the list waits for the run.
    pub fn submit(&mut self) -> Result<Submission, CommandError> {
        self.shared.check_usable()?;
        self.run.check_idle()?;
        self.finish()?;
        // SAFETY: `cmd` is finished and everything it uses is kept alive by `self.keep` (the
        // list waits for the run before it is dropped); `self.tensors` are its tensors.
        unsafe { self.run.submit(self.cmd, &self.tensors) }
    }

    /// GPU time of each dispatch in the last run (with its barrier, if any, and the transfers
    /// recorded between it and the dispatch before it), in order.
    pub fn timings(&self) -> Result<Vec<Duration>, CommandError> {
        if self.query_capacity == 0 {
            return Err(CommandError::NoTimestamps);
        }
        self.read_timestamps(self.names.len() + 1)
    }

    /// GPU time of the whole last run.
    pub fn total_time(&self) -> Result<Duration, CommandError> {
        if self.query_capacity == 0 {
            return Ok(self.read_timestamps(2)?[0]);
        }
        Ok(self.timings()?.iter().sum())
    }

    fn read_timestamps(&self, n: usize) -> Result<Vec<Duration>, CommandError> {
        let qp = self.query_pool.ok_or(CommandError::NoTimestamps)?;
        self.run.check_ran()?;
        let mut ticks = vec![0u64; n];
        // SAFETY: the pool is the list's; WAIT returns the results of the last run, which has
        // finished (`check_ran`: one has, and none is pending), and `n` queries fit in the pool (`query_capacity + 1`, or 2).
        unsafe { timestamps(&self.shared, qp, &mut ticks) }?;
        let mask = if self.shared.timestamp_bits >= 64 {
            u64::MAX
        } else {
            (1u64 << self.shared.timestamp_bits) - 1
        };
        let period = self.shared.features.limits.timestamp_period_ns as f64;
        Ok(ticks
            .windows(2)
            .map(|w| {
                Duration::from_nanos(
                    (((w[1] & mask).wrapping_sub(w[0] & mask) & mask) as f64 * period) as u64,
                )
            })
            .collect())
    }

    /// A tensor of `shape` and `format` for intermediate results that live within this list
    /// (a split GEMM's partial sums, attention's shares), for a command that reads `reads`
    /// and writes it: a view of one of the list's scratch buffers given back by
    /// [`CommandList::release_scratch`] where one is large enough and writing it adds no barrier
    /// that command would not need anyway, otherwise a new one. Writing a buffer that a command
    /// since the last barrier used needs a barrier; so a buffer no such command used is lent
    /// first, and one that such a command used only where one of `reads` was written since the
    /// last barrier (the command waits for the barrier then anyway). A replayed step of many
    /// dependent passes then holds the largest of them, not their sum, and independent ones
    /// recorded side by side (a network's two branches) run side by side. Uses of one buffer
    /// are ordered like any other tensor's, and the list runs one submission at a time;
    /// nothing outside the list may read it.
    pub fn scratch(
        &mut self,
        ctx: &Context,
        shape: &[usize],
        format: TensorFormat,
        reads: &[&Tensor],
    ) -> Result<Tensor, CommandError> {
        let bytes = shape.iter().product::<usize>() as u64 * format.size() as u64;
        let barrier_anyway = reads
            .iter()
            .any(|t| self.written.contains(&ResId::Buffer(t.inner.buffer)));
        let bound = &self.bound;
        let fits = |t: &Tensor, free: bool| free && t.format() == format && t.size_bytes() >= bytes;
        let unused = |t: &Tensor| !bound.contains(&ResId::Buffer(t.inner.buffer));
        let lend = self
            .scratch
            .iter()
            .position(|(t, free)| fits(t, *free) && unused(t))
            .or_else(|| {
                let any = self.scratch.iter().position(|(t, free)| fits(t, *free));
                any.filter(|_| barrier_anyway)
            });
        if let Some(i) = lend {
            let (t, free) = &mut self.scratch[i];
            let view = t.view(0, shape)?;
            *free = false;
            return Ok(view);
        }
        let t = Tensor::new(ctx, shape, format)?;
        self.scratch.push((t.clone(), false));
        Ok(t)
    }

    /// Bytes of the scratch buffers this list holds ([`CommandList::scratch`]).
    pub fn scratch_bytes(&self) -> u64 {
        self.scratch.iter().map(|(t, _)| t.size_bytes()).sum()
    }

    /// Gives `t` (from [`CommandList::scratch`]) back once every pass that uses it is recorded:
    /// a later request of this list may be lent its buffer. Anything else is ignored.
    pub fn release_scratch(&mut self, t: &Tensor) {
        for (s, free) in &mut self.scratch {
            if s.raw_buffer() == t.raw_buffer() {
                *free = true;
            }
        }
    }

    /// The kernel name of each dispatch, in order.
    pub fn dispatch_names(&self) -> &[&'static str] {
        &self.names
    }
}

impl Drop for CommandList {
    fn drop(&mut self) {
        // A failed or timed-out wait leaves work possibly running: it must finish before its
        // command buffer, descriptor sets and what it binds go. Wait for it, bounded by the
        // fence timeout; if it does not finish (or the context is already poisoned), leak the
        // list's objects, what it keeps alive and the device rather than hang or free memory
        // the GPU may be using.
        if self.run.is_pending() && (self.shared.is_poisoned() || self.run.wait_pending().is_err())
        {
            std::mem::forget(std::mem::take(&mut self.keep));
            std::mem::forget(std::mem::take(&mut self.tensors));
            std::mem::forget(self.shared.clone());
            // The fence stays with the run, never destroyed while it may signal.
            std::mem::forget(self.run.clone());
            return;
        }
        // SAFETY: the list's own objects, destroyed once; its work has finished (waited for
        // above, or never submitted), and `cmd` came from `pool`.
        unsafe {
            destroy_command_objects(
                &self.shared,
                self.recording,
                self.cmd,
                self.descriptor_pools.drain(..),
                self.query_pool.take(),
                self.pool,
            )
        }
    }
}

// A list moves between threads (e.g. recorded on one, run on another): everything in it is
// Send without any `unsafe impl` (handles are plain values; what they name is owned through
// Arcs of Send + Sync types). This fails to compile if that ever changes.
const _: () = {
    const fn assert_send<T: Send>() {}
    assert_send::<CommandList>();
    assert_send::<Submission>();
    assert_send::<Readback>();
    assert_send::<UploadSlot>();
    assert_send::<Tensor>();
    assert_send::<Image>();
};
