//! Command lists: record many dispatches once, replay them with one submit each (MNN's
//! record-at-resize / replay-at-run), with barriers between dependent dispatches and optional GPU
//! timestamps per dispatch.
//!
//! A list keeps a clone of every tensor, image and pipeline it binds: nothing it uses can be
//! freed while it exists, and its work is always waited for before it is dropped.

use crate::context::{vkerr, Context, Shared};
use crate::kernel::{Bindings, Kernel, Resource};
use crate::pipeline::{descriptor_type, Pipeline};
use crate::{Image, Tensor};
use ash::vk;
use std::any::Any;
use std::sync::Arc;
use std::time::Duration;
use vkprism_core::{BindingKind, MemoryKind, TensorFormat};

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("kernel `{kernel}`: bindings for {given:?} variants, but the loaded variant `{variant}` uses {wanted:?}")]
    MemoryKindMismatch {
        kernel: &'static str,
        variant: String,
        given: MemoryKind,
        wanted: MemoryKind,
    },
    #[error("kernel `{kernel}` variant `{variant}`: binding {binding} (`{name}`) is not given")]
    MissingBinding {
        kernel: &'static str,
        variant: String,
        binding: u32,
        name: &'static str,
    },
    #[error("kernel `{kernel}` variant `{variant}`: binding {binding} (`{name}`) expects a {expected:?} tensor, got {got:?} (precision mismatch: convert the tensor, or load another variant)")]
    FormatMismatch {
        kernel: &'static str,
        variant: String,
        binding: u32,
        name: &'static str,
        expected: TensorFormat,
        got: TensorFormat,
    },
    #[error("kernel `{kernel}`: binding {binding} (`{name}`) is a {kind:?}, given a {given}")]
    KindMismatch {
        kernel: &'static str,
        binding: u32,
        name: &'static str,
        kind: BindingKind,
        given: &'static str,
    },
    #[error("kernel `{kernel}`: binding {binding} (`{name}`) holds {elem}-byte elements; a tensor of {size} bytes is not a whole number of them")]
    PartialElement {
        kernel: &'static str,
        binding: u32,
        name: &'static str,
        elem: u32,
        size: u64,
    },
    #[error("kernel `{kernel}`: binding {binding} (`{name}`) is {size} bytes, over the device's {limit_name} ({limit})")]
    RangeTooLarge {
        kernel: &'static str,
        binding: u32,
        name: &'static str,
        size: u64,
        limit_name: &'static str,
        limit: u64,
    },
    #[error(
        "kernel `{kernel}`: image binding {binding} (`{name}`) is {want}D, the image is {got}D"
    )]
    ImageDims {
        kernel: &'static str,
        binding: u32,
        name: &'static str,
        want: u8,
        got: u8,
    },
    #[error("kernel `{kernel}`: the push constants given are {given} bytes, the kernel's block needs {range}")]
    PushConstantsSize {
        kernel: &'static str,
        given: usize,
        range: u32,
    },
    #[error("dispatch of global size {0:?}: every dimension must be at least 1")]
    ZeroSize([u32; 3]),
    #[error("dispatch of global size {global:?} needs {groups:?} workgroups; the device allows at most {limit:?} (maxComputeWorkGroupCount) and {why}: use a larger workgroup or split the work")]
    TooManyGroups {
        global: [u32; 3],
        groups: [u64; 3],
        limit: [u32; 3],
        /// Why it was not split into several dispatches.
        why: &'static str,
    },
    #[error("a resource belongs to another Vulkan context")]
    ForeignResource,
    #[error("the list has no timestamps (enable them with CommandList::with_timestamps, on a queue that has them)")]
    NoTimestamps,
    #[error("the list was made with room for {0} timed dispatches")]
    TimestampsFull(u32),
    #[error("the list has not been run yet")]
    NotRun,
    #[error(transparent)]
    Context(#[from] crate::context::Error),
}

/// Identity of a bound resource, for barrier decisions.
#[derive(Copy, Clone, PartialEq, Eq)]
enum ResId {
    Buffer(vk::Buffer),
    Image(vk::Image),
}

/// A recorded sequence of dispatches that can be submitted many times.
pub struct CommandList {
    shared: Arc<Shared>,
    pool: vk::CommandPool,
    cmd: vk::CommandBuffer,
    /// Reused by every run (creating a fence per submit costs more than the submit).
    fence: vk::Fence,
    descriptor_pools: Vec<vk::DescriptorPool>,
    sets_left: u32,
    query_pool: Option<vk::QueryPool>,
    /// Dispatches the query pool has room for (0: only the list's start and end are timed).
    query_capacity: u32,
    /// A submission may be running: wait before destroying anything.
    in_flight: bool,
    /// Clones of everything bound: keeps it alive while the list exists.
    keep: Vec<Arc<dyn Any + Send + Sync>>,
    names: Vec<&'static str>,
    written: Vec<ResId>,
    read: Vec<ResId>,
    barriers: usize,
    recording: bool,
    runs: u64,
}

// SAFETY: every Vulkan handle here is used only through &mut self (recording, submitting) and the
// queue is locked while submitting, so moving the list to another thread is sound.
unsafe impl Send for CommandList {}

const SETS_PER_POOL: u32 = 256;
/// The most dispatches one oversized dispatch is split into: more is almost surely a size bug
/// (and recording it would take long), so it is refused instead.
const MAX_SPLIT: u64 = 1024;

impl CommandList {
    /// An empty list, recording.
    pub fn new(ctx: &Context) -> Result<CommandList, Error> {
        let shared = ctx.shared.clone();
        let d = &shared.device;
        let pool = unsafe {
            d.create_command_pool(
                &vk::CommandPoolCreateInfo::default().queue_family_index(shared.queue_family),
                None,
            )
        }
        .map_err(vkerr("vkCreateCommandPool"))?;
        let cmd = match unsafe {
            d.allocate_command_buffers(
                &vk::CommandBufferAllocateInfo::default()
                    .command_pool(pool)
                    .command_buffer_count(1),
            )
        } {
            Ok(c) => c[0],
            Err(e) => {
                unsafe { d.destroy_command_pool(pool, None) };
                return Err(vkerr("vkAllocateCommandBuffers")(e).into());
            }
        };
        let fence = match unsafe { d.create_fence(&vk::FenceCreateInfo::default(), None) } {
            Ok(f) => f,
            Err(e) => {
                unsafe { d.destroy_command_pool(pool, None) };
                return Err(vkerr("vkCreateFence")(e).into());
            }
        };
        let list = CommandList {
            shared: shared.clone(),
            pool,
            cmd,
            fence,
            descriptor_pools: Vec::new(),
            sets_left: 0,
            query_pool: None,
            query_capacity: 0,
            in_flight: false,
            keep: Vec::new(),
            names: Vec::new(),
            written: Vec::new(),
            read: Vec::new(),
            barriers: 0,
            recording: false,
            runs: 0,
        };
        unsafe { d.begin_command_buffer(cmd, &vk::CommandBufferBeginInfo::default()) }
            .map_err(vkerr("vkBeginCommandBuffer"))?;
        let mut list = list;
        list.recording = true;
        Ok(list)
    }

    /// The same, timing every dispatch with GPU timestamps (up to `max_dispatches` of them).
    pub fn with_timestamps(ctx: &Context, max_dispatches: u32) -> Result<CommandList, Error> {
        let mut list = CommandList::new(ctx)?;
        if list.shared.timestamp_bits == 0 || list.shared.features.limits.timestamp_period_ns == 0.0
        {
            return Err(Error::NoTimestamps);
        }
        let d = &list.shared.device;
        let qp = unsafe {
            d.create_query_pool(
                &vk::QueryPoolCreateInfo::default()
                    .query_type(vk::QueryType::TIMESTAMP)
                    .query_count(max_dispatches + 1),
                None,
            )
        }
        .map_err(vkerr("vkCreateQueryPool"))?;
        list.query_pool = Some(qp);
        list.query_capacity = max_dispatches;
        unsafe {
            d.cmd_reset_query_pool(list.cmd, qp, 0, max_dispatches + 1);
            d.cmd_write_timestamp(list.cmd, vk::PipelineStageFlags::TOP_OF_PIPE, qp, 0);
        }
        Ok(list)
    }

    /// The same, timing only the whole list with two timestamps (per-dispatch timestamps
    /// serialize the GPU on some drivers, so this is the figure for throughput).
    pub fn with_total_timing(ctx: &Context) -> Result<CommandList, Error> {
        let mut list = CommandList::with_timestamps(ctx, 1)?;
        list.query_capacity = 0;
        Ok(list)
    }

    /// Records one dispatch of `global` invocations (rounded up to whole workgroups).
    pub fn dispatch<'a, B: Bindings<'a>>(
        &mut self,
        pipeline: &Pipeline<B::Kernel>,
        bindings: &B,
        push: &<B::Kernel as Kernel>::PushConstants,
        global: [u32; 3],
    ) -> Result<(), Error> {
        let info = <B::Kernel as Kernel>::INFO;
        let kernel = &pipeline.kernel;
        if !Arc::ptr_eq(&kernel.shared, &self.shared) {
            return Err(Error::ForeignResource);
        }
        let variant = kernel.variant;
        let vname = || variant.key.name();
        if B::MEMORY != variant.key.memory {
            return Err(Error::MemoryKindMismatch {
                kernel: info.name,
                variant: vname(),
                given: B::MEMORY,
                wanted: variant.key.memory,
            });
        }
        if global.contains(&0) {
            return Err(Error::ZeroSize(global));
        }
        let range = crate::pipeline::push_range(info);
        let given = std::mem::size_of_val(push);
        if given < range as usize {
            return Err(Error::PushConstantsSize {
                kernel: info.name,
                given,
                range,
            });
        }
        let local = pipeline.local_size;
        let groups = [0, 1, 2].map(|i| (global[i] as u64).div_ceil(local[i] as u64));
        let limit = self.shared.features.limits.max_compute_work_group_count;
        // Over the limit: split into base-offset dispatches when the shader can't tell (it never
        // reads gl_NumWorkGroups), else refuse. Never truncate. The u32 bound keeps base + count
        // representable.
        let split = groups.iter().zip(limit).any(|(g, l)| *g > l as u64);
        if split {
            let pieces: u64 = (0..3)
                .map(|i| groups[i].div_ceil(limit[i].max(1) as u64))
                .product();
            let why = if !kernel.dispatch_base {
                Some("the shader reads gl_NumWorkGroups, so it can't be split")
            } else if pieces > MAX_SPLIT {
                Some("splitting it would take more than 1024 dispatches")
            } else {
                None
            };
            if let Some(why) = why {
                return Err(Error::TooManyGroups {
                    global,
                    groups,
                    limit,
                    why,
                });
            }
        }
        if self.query_pool.is_some()
            && self.query_capacity > 0
            && self.names.len() as u32 >= self.query_capacity
        {
            return Err(Error::TimestampsFull(self.query_capacity));
        }

        // Validate every binding against the variant before touching the command buffer.
        let resources = bindings.resources();
        let limits = &self.shared.features.limits;
        let mut writes = Vec::new();
        let mut uses = Vec::new();
        for b in variant.bindings {
            let Some((_, res)) = resources.iter().find(|(n, _)| *n == b.binding) else {
                return Err(Error::MissingBinding {
                    kernel: info.name,
                    variant: vname(),
                    binding: b.binding,
                    name: b.name,
                });
            };
            match (b.kind, res) {
                (BindingKind::StorageBuffer | BindingKind::UniformBuffer, Resource::Buffer(t)) => {
                    if !Arc::ptr_eq(&t.inner.shared, &self.shared) {
                        return Err(Error::ForeignResource);
                    }
                    if b.format != TensorFormat::Raw && t.format() != b.format {
                        return Err(Error::FormatMismatch {
                            kernel: info.name,
                            variant: vname(),
                            binding: b.binding,
                            name: b.name,
                            expected: b.format,
                            got: t.format(),
                        });
                    }
                    let stride = b.element.stride as u64;
                    if stride > 0 && t.size_bytes() % stride != 0 {
                        return Err(Error::PartialElement {
                            kernel: info.name,
                            binding: b.binding,
                            name: b.name,
                            elem: b.element.stride,
                            size: t.size_bytes(),
                        });
                    }
                    let (limit, limit_name) = if b.kind == BindingKind::UniformBuffer {
                        (limits.max_uniform_buffer_range, "maxUniformBufferRange")
                    } else {
                        (limits.max_storage_buffer_range, "maxStorageBufferRange")
                    };
                    if t.size_bytes() > limit {
                        return Err(Error::RangeTooLarge {
                            kernel: info.name,
                            binding: b.binding,
                            name: b.name,
                            size: t.size_bytes(),
                            limit_name,
                            limit,
                        });
                    }
                }
                (BindingKind::SampledImage | BindingKind::StorageImage, Resource::Image(im)) => {
                    if !Arc::ptr_eq(&im.inner.shared, &self.shared) {
                        return Err(Error::ForeignResource);
                    }
                    if im.format() != b.format {
                        return Err(Error::FormatMismatch {
                            kernel: info.name,
                            variant: vname(),
                            binding: b.binding,
                            name: b.name,
                            expected: b.format,
                            got: im.format(),
                        });
                    }
                    if b.dims != 0 && im.dims() != b.dims {
                        return Err(Error::ImageDims {
                            kernel: info.name,
                            binding: b.binding,
                            name: b.name,
                            want: b.dims,
                            got: im.dims(),
                        });
                    }
                }
                (kind, Resource::Buffer(_)) => {
                    return Err(Error::KindMismatch {
                        kernel: info.name,
                        binding: b.binding,
                        name: b.name,
                        kind,
                        given: "buffer",
                    })
                }
                (kind, Resource::Image(_)) => {
                    return Err(Error::KindMismatch {
                        kernel: info.name,
                        binding: b.binding,
                        name: b.name,
                        kind,
                        given: "image",
                    })
                }
            }
            let id = match res {
                Resource::Buffer(t) => ResId::Buffer(t.inner.buffer),
                Resource::Image(i) => ResId::Image(i.inner.image),
            };
            uses.push(id);
            if b.access.writes() {
                writes.push(id);
            }
        }

        let set = self.allocate_set(kernel.set_layout)?;
        let d = &self.shared.device;
        // Write descriptors.
        let mut buffer_infos = Vec::new();
        let mut image_infos = Vec::new();
        for b in variant.bindings {
            let (_, res) = resources
                .iter()
                .find(|(n, _)| *n == b.binding)
                .expect("validated above");
            match res {
                Resource::Buffer(t) => buffer_infos.push((
                    b,
                    [vk::DescriptorBufferInfo {
                        buffer: t.inner.buffer,
                        offset: 0,
                        range: vk::WHOLE_SIZE,
                    }],
                )),
                Resource::Image(im) => image_infos.push((
                    b,
                    [vk::DescriptorImageInfo {
                        sampler: if b.kind == BindingKind::SampledImage {
                            im.inner.sampler
                        } else {
                            vk::Sampler::null()
                        },
                        image_view: im.inner.view,
                        image_layout: vk::ImageLayout::GENERAL,
                    }],
                )),
            }
        }
        let mut writes_vk: Vec<vk::WriteDescriptorSet> = Vec::new();
        for (b, bi) in &buffer_infos {
            writes_vk.push(
                vk::WriteDescriptorSet::default()
                    .dst_set(set)
                    .dst_binding(b.binding)
                    .descriptor_type(descriptor_type(b.kind))
                    .buffer_info(bi),
            );
        }
        for (b, ii) in &image_infos {
            writes_vk.push(
                vk::WriteDescriptorSet::default()
                    .dst_set(set)
                    .dst_binding(b.binding)
                    .descriptor_type(descriptor_type(b.kind))
                    .image_info(ii),
            );
        }
        unsafe { d.update_descriptor_sets(&writes_vk, &[]) };

        // A barrier when this dispatch reads or writes what an earlier one wrote (RAW, WAW), or
        // writes what an earlier one read (WAR).
        let hazard = uses.iter().any(|u| self.written.contains(u))
            || writes.iter().any(|w| self.read.contains(w));
        unsafe {
            if hazard {
                let mb = vk::MemoryBarrier::default()
                    .src_access_mask(vk::AccessFlags::SHADER_WRITE)
                    .dst_access_mask(vk::AccessFlags::SHADER_READ | vk::AccessFlags::SHADER_WRITE);
                d.cmd_pipeline_barrier(
                    self.cmd,
                    vk::PipelineStageFlags::COMPUTE_SHADER,
                    vk::PipelineStageFlags::COMPUTE_SHADER,
                    vk::DependencyFlags::empty(),
                    &[mb],
                    &[],
                    &[],
                );
                self.written.clear();
                self.read.clear();
                self.barriers += 1;
            }
            d.cmd_bind_pipeline(self.cmd, vk::PipelineBindPoint::COMPUTE, pipeline.pipeline);
            d.cmd_bind_descriptor_sets(
                self.cmd,
                vk::PipelineBindPoint::COMPUTE,
                kernel.layout,
                0,
                &[set],
                &[],
            );
            // Checked above: at least `range` bytes; any beyond it are trailing padding.
            let bytes = &bytemuck::bytes_of(push)[..range as usize];
            if !bytes.is_empty() {
                d.cmd_push_constants(
                    self.cmd,
                    kernel.layout,
                    vk::ShaderStageFlags::COMPUTE,
                    0,
                    bytes,
                );
            }
            if split {
                // Checked above: every group count fits in u32 and every limit is >= 1.
                let g = groups.map(|g| g as u32);
                let step = limit.map(|l| l.max(1));
                for bz in (0..g[2]).step_by(step[2] as usize) {
                    for by in (0..g[1]).step_by(step[1] as usize) {
                        for bx in (0..g[0]).step_by(step[0] as usize) {
                            d.cmd_dispatch_base(
                                self.cmd,
                                bx,
                                by,
                                bz,
                                step[0].min(g[0] - bx),
                                step[1].min(g[1] - by),
                                step[2].min(g[2] - bz),
                            );
                        }
                    }
                }
            } else {
                d.cmd_dispatch(
                    self.cmd,
                    groups[0] as u32,
                    groups[1] as u32,
                    groups[2] as u32,
                );
            }
            if let (Some(qp), true) = (self.query_pool, self.query_capacity > 0) {
                d.cmd_write_timestamp(
                    self.cmd,
                    vk::PipelineStageFlags::BOTTOM_OF_PIPE,
                    qp,
                    self.names.len() as u32 + 1,
                );
            }
        }
        self.written.extend(writes);
        self.read.extend(uses);
        for (_, r) in resources {
            match r {
                Resource::Buffer(t) => self.keep.push(t.inner.clone()),
                Resource::Image(i) => self.keep.push(i.inner.clone()),
            }
        }
        self.keep.push(kernel.clone() as Arc<dyn Any + Send + Sync>);
        self.names.push(info.name);
        Ok(())
    }

    fn allocate_set(
        &mut self,
        layout: vk::DescriptorSetLayout,
    ) -> Result<vk::DescriptorSet, Error> {
        let d = &self.shared.device;
        if self.sets_left == 0 {
            let sizes = [
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
            let pool = unsafe {
                d.create_descriptor_pool(
                    &vk::DescriptorPoolCreateInfo::default()
                        .max_sets(SETS_PER_POOL)
                        .pool_sizes(&sizes),
                    None,
                )
            }
            .map_err(vkerr("vkCreateDescriptorPool"))?;
            self.descriptor_pools.push(pool);
            self.sets_left = SETS_PER_POOL;
        }
        let pool = *self.descriptor_pools.last().expect("pushed above");
        let layouts = [layout];
        match unsafe {
            d.allocate_descriptor_sets(
                &vk::DescriptorSetAllocateInfo::default()
                    .descriptor_pool(pool)
                    .set_layouts(&layouts),
            )
        } {
            Ok(s) => {
                self.sets_left -= 1;
                Ok(s[0])
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
    pub fn is_empty(&self) -> bool {
        self.names.is_empty()
    }
    /// Barriers recorded between dependent dispatches.
    pub fn barrier_count(&self) -> usize {
        self.barriers
    }

    fn finish(&mut self) -> Result<(), Error> {
        if self.recording {
            let d = &self.shared.device;
            unsafe {
                // Shader writes become visible to the host (mapped tensors) and to later
                // submissions.
                let mb = vk::MemoryBarrier::default()
                    .src_access_mask(vk::AccessFlags::SHADER_WRITE)
                    .dst_access_mask(
                        vk::AccessFlags::HOST_READ
                            | vk::AccessFlags::MEMORY_READ
                            | vk::AccessFlags::MEMORY_WRITE,
                    );
                d.cmd_pipeline_barrier(
                    self.cmd,
                    vk::PipelineStageFlags::COMPUTE_SHADER,
                    vk::PipelineStageFlags::HOST | vk::PipelineStageFlags::ALL_COMMANDS,
                    vk::DependencyFlags::empty(),
                    &[mb],
                    &[],
                    &[],
                );
                if let (Some(qp), 0) = (self.query_pool, self.query_capacity) {
                    d.cmd_write_timestamp(self.cmd, vk::PipelineStageFlags::BOTTOM_OF_PIPE, qp, 1);
                }
                d.end_command_buffer(self.cmd)
                    .map_err(vkerr("vkEndCommandBuffer"))?;
            }
            self.recording = false;
        }
        Ok(())
    }

    /// Ends recording (the first time) and runs the list once: one submit, then a fence wait.
    pub fn submit_and_wait(&mut self) -> Result<(), Error> {
        self.finish()?;
        // Mapped tensors are not read or written by the host while this runs.
        let shared = self.shared.clone();
        let _gpu = shared
            .mapped_access
            .read()
            .unwrap_or_else(|e| e.into_inner());
        let d = &self.shared.device;
        unsafe {
            d.reset_fences(&[self.fence])
                .map_err(vkerr("vkResetFences"))?;
            self.shared.submit(self.cmd, self.fence)?;
        }
        self.in_flight = true;
        self.shared.wait(self.fence)?;
        self.in_flight = false;
        self.runs += 1;
        Ok(())
    }

    /// GPU time of each dispatch in the last run (with its barrier, if any), in order.
    pub fn timings(&self) -> Result<Vec<Duration>, Error> {
        if self.query_capacity == 0 {
            return Err(Error::NoTimestamps);
        }
        self.read_timestamps(self.names.len() + 1)
    }

    /// GPU time of the whole last run.
    pub fn total_time(&self) -> Result<Duration, Error> {
        if self.query_capacity == 0 {
            return Ok(self.read_timestamps(2)?[0]);
        }
        Ok(self.timings()?.iter().sum())
    }

    fn read_timestamps(&self, n: usize) -> Result<Vec<Duration>, Error> {
        let qp = self.query_pool.ok_or(Error::NoTimestamps)?;
        if self.runs == 0 {
            return Err(Error::NotRun);
        }
        let mut ticks = vec![0u64; n];
        unsafe {
            self.shared.device.get_query_pool_results(
                qp,
                0,
                &mut ticks,
                vk::QueryResultFlags::TYPE_64 | vk::QueryResultFlags::WAIT,
            )
        }
        .map_err(vkerr("vkGetQueryPoolResults"))?;
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

    /// The kernel name of each dispatch, in order.
    pub fn dispatch_names(&self) -> &[&'static str] {
        &self.names
    }
}

impl Drop for CommandList {
    fn drop(&mut self) {
        let d = &self.shared.device;
        unsafe {
            // A failed or timed-out wait leaves work possibly running: it must finish before its
            // command buffer and descriptor sets go.
            if self.in_flight {
                let _ = d.device_wait_idle();
            }
            if self.recording {
                let _ = d.end_command_buffer(self.cmd);
            }
            for p in self.descriptor_pools.drain(..) {
                d.destroy_descriptor_pool(p, None);
            }
            if let Some(qp) = self.query_pool.take() {
                d.destroy_query_pool(qp, None);
            }
            d.destroy_command_pool(self.pool, None);
            d.destroy_fence(self.fence, None);
        }
    }
}

impl Context {
    /// Records with `f`, runs once, waits: for one-off work.
    pub fn run(&self, f: impl FnOnce(&mut CommandList) -> Result<(), Error>) -> Result<(), Error> {
        let mut list = CommandList::new(self)?;
        f(&mut list)?;
        list.submit_and_wait()
    }
}

#[allow(dead_code)]
fn _assert_send() {
    fn s<T: Send>() {}
    s::<CommandList>();
    s::<Tensor>();
    s::<Image>();
}
