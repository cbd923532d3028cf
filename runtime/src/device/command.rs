//! Command lists' objects and recording: a command pool with one command buffer and a fence,
//! descriptor pools and sets, and the commands a list records (the leading barrier that orders
//! it after earlier submissions; a dispatch with its descriptors, barrier and timestamp; a
//! transfer; the end of recording); everything destroyed together.

use super::error::{vkerr, DeviceError};
use super::lock::api_lock;
use super::shared::Shared;
use ash::vk;

/// A command pool of `shared`'s queue family with one primary command buffer, begun
/// (recording), and an unsignalled fence. On an error nothing is left behind.
pub(crate) fn create_command_objects(
    shared: &Shared,
) -> Result<(vk::CommandPool, vk::CommandBuffer, vk::Fence), DeviceError> {
    let _api = api_lock();
    let d = &shared.device;
    let pool_info = vk::CommandPoolCreateInfo::default().queue_family_index(shared.queue_family);
    // SAFETY: a plain creation on the live device, for the family its queue has.
    let pool =
        unsafe { d.create_command_pool(&pool_info, None) }.map_err(vkerr("vkCreateCommandPool"))?;
    let buffer_info = vk::CommandBufferAllocateInfo::default()
        .command_pool(pool)
        .command_buffer_count(1);
    // SAFETY: `pool` was just made on this device and only this thread has it.
    let allocated = unsafe { d.allocate_command_buffers(&buffer_info) }
        .map_err(vkerr("vkAllocateCommandBuffers"));
    let fence = allocated.and_then(|c| {
        // SAFETY: a plain creation on the live device.
        unsafe { d.create_fence(&vk::FenceCreateInfo::default(), None) }
            .map(|f| (c[0], f))
            .map_err(vkerr("vkCreateFence"))
    });
    let (cmd, fence) = match fence {
        Ok(objects) => objects,
        Err(e) => {
            // SAFETY: the pool was just made and nothing from it is in use (freeing the pool
            // frees its buffer).
            unsafe { d.destroy_command_pool(pool, None) };
            return Err(e);
        }
    };
    // SAFETY: `cmd` is fresh from the pool just made, which only this thread has.
    if let Err(e) = unsafe { d.begin_command_buffer(cmd, &vk::CommandBufferBeginInfo::default()) } {
        // SAFETY: all three were just made and none is in use (the buffer never began).
        unsafe {
            d.destroy_command_pool(pool, None);
            d.destroy_fence(fence, None);
        }
        return Err(vkerr("vkBeginCommandBuffer")(e));
    }
    // Every list starts with a global barrier: its first scope is everything earlier in
    // submission order on the queue (earlier submissions included), so this list's commands run
    // after earlier submissions' (no write-after-read hazard) and see their writes (no
    // read-after-write or write-after-write hazard). That is how lists submitted one after
    // another on the one queue depend on each other without semaphores.
    let all = vk::MemoryBarrier::default()
        .src_access_mask(vk::AccessFlags::MEMORY_WRITE)
        .dst_access_mask(vk::AccessFlags::MEMORY_READ | vk::AccessFlags::MEMORY_WRITE);
    let stages = vk::PipelineStageFlags::ALL_COMMANDS;
    // SAFETY: `cmd` was just begun; the barrier names no handles.
    unsafe {
        d.cmd_pipeline_barrier(
            cmd,
            stages,
            stages,
            vk::DependencyFlags::empty(),
            &[all],
            &[],
            &[],
        )
    };
    Ok((pool, cmd, fence))
}

/// The stages a list's commands run in: compute shaders and transfers.
const LIST_STAGES: vk::PipelineStageFlags = vk::PipelineStageFlags::from_raw(
    vk::PipelineStageFlags::COMPUTE_SHADER.as_raw() | vk::PipelineStageFlags::TRANSFER.as_raw(),
);

/// The barrier between dependent commands of one list, dispatches and transfers alike: every
/// compute-shader or transfer write before it is made visible to every compute-shader or
/// transfer read or write after it, and every such command after it waits for those before it.
/// Always both stages, so that once it is recorded every earlier access is ordered before every
/// later one (the list's hazard tracking forgets what came before a barrier).
///
/// # Safety
/// `cmd` is a command buffer of this device in the recording state that no other thread uses;
/// the caller holds the API lock.
unsafe fn cmd_list_barrier(d: &ash::Device, cmd: vk::CommandBuffer) {
    let mb = vk::MemoryBarrier::default()
        .src_access_mask(vk::AccessFlags::SHADER_WRITE | vk::AccessFlags::TRANSFER_WRITE)
        .dst_access_mask(
            vk::AccessFlags::SHADER_READ
                | vk::AccessFlags::SHADER_WRITE
                | vk::AccessFlags::TRANSFER_READ
                | vk::AccessFlags::TRANSFER_WRITE,
        );
    // SAFETY: the caller's contract; the barrier names no handles.
    unsafe {
        d.cmd_pipeline_barrier(
            cmd,
            LIST_STAGES,
            LIST_STAGES,
            vk::DependencyFlags::empty(),
            &[mb],
            &[],
            &[],
        )
    };
}

/// A transfer a list records (see [`record_transfer`]).
pub(crate) enum TransferCommand {
    /// `vkCmdCopyBuffer` of one region.
    Copy {
        src: vk::Buffer,
        dst: vk::Buffer,
        region: vk::BufferCopy,
    },
    /// `vkCmdFillBuffer` of `size` bytes at `offset` with the 32-bit `data`.
    Fill {
        dst: vk::Buffer,
        offset: u64,
        size: u64,
        data: u32,
    },
}

/// Records a transfer into `cmd`, after the list's barrier (compute and transfer writes before,
/// compute and transfer accesses after) if `barrier`.
///
/// # Safety
/// `cmd` is a command buffer of this device in the recording state that no other thread uses;
/// the buffers are live buffers of this device, kept alive until the work has finished, made
/// with TRANSFER_SRC (a copy's `src`) and TRANSFER_DST usage; a copy's region lies inside both
/// buffers and, if they are the same buffer, its source and destination do not overlap; a
/// fill's offset and size are multiples of 4 and lie inside `dst`.
pub(crate) unsafe fn record_transfer(
    shared: &Shared,
    cmd: vk::CommandBuffer,
    barrier: bool,
    transfer: &TransferCommand,
) {
    let d = &shared.device;
    let _api = api_lock();
    // SAFETY: the caller's contract.
    unsafe {
        if barrier {
            cmd_list_barrier(d, cmd);
        }
        match *transfer {
            TransferCommand::Copy { src, dst, region } => {
                d.cmd_copy_buffer(cmd, src, dst, &[region])
            }
            TransferCommand::Fill {
                dst,
                offset,
                size,
                data,
            } => d.cmd_fill_buffer(cmd, dst, offset, size, data),
        }
    }
}

/// Destroys a fence.
///
/// # Safety
/// The fence is of this device, destroyed once, and no submission that signals it is pending.
pub(crate) unsafe fn destroy_fence(shared: &Shared, fence: vk::Fence) {
    let _api = api_lock();
    // SAFETY: the caller's contract.
    unsafe { shared.device.destroy_fence(fence, None) };
}

/// A descriptor pool for `max_sets` sets with `sizes` descriptors.
pub(crate) fn create_descriptor_pool(
    shared: &Shared,
    max_sets: u32,
    sizes: &[vk::DescriptorPoolSize],
) -> Result<vk::DescriptorPool, DeviceError> {
    let info = vk::DescriptorPoolCreateInfo::default()
        .max_sets(max_sets)
        .pool_sizes(sizes);
    let _api = api_lock();
    // SAFETY: a plain creation on a live device; `info` points only at `sizes`, which outlives
    // the call.
    unsafe { shared.device.create_descriptor_pool(&info, None) }
        .map_err(vkerr("vkCreateDescriptorPool"))
}

/// A descriptor set of `layout` from `pool`, or the driver's result (a full pool answers
/// `ERROR_OUT_OF_POOL_MEMORY` or `ERROR_FRAGMENTED_POOL`).
///
/// # Safety
/// No other thread uses `pool` meanwhile, and `layout` is a live layout of this device.
pub(crate) unsafe fn allocate_descriptor_set(
    shared: &Shared,
    pool: vk::DescriptorPool,
    layout: vk::DescriptorSetLayout,
) -> Result<vk::DescriptorSet, vk::Result> {
    let layouts = [layout];
    let _api = api_lock();
    // SAFETY: the caller's contract; `layouts` lives until the call returns.
    unsafe {
        shared.device.allocate_descriptor_sets(
            &vk::DescriptorSetAllocateInfo::default()
                .descriptor_pool(pool)
                .set_layouts(&layouts),
        )
    }
    .map(|s| s[0])
}

/// One checked dispatch, as a command list records it (see [`record_dispatch`]).
pub(crate) struct DispatchCommands<'a> {
    /// The descriptor set's writes (each naming `set`).
    pub writes: &'a [vk::WriteDescriptorSet<'a>],
    /// The list's barrier (compute and transfer writes before, compute and transfer accesses
    /// after) goes before the dispatch.
    pub barrier: bool,
    pub pipeline: vk::Pipeline,
    pub layout: vk::PipelineLayout,
    pub set: vk::DescriptorSet,
    /// The push-constant bytes (empty: none).
    pub push: &'a [u8],
    /// Workgroups per dimension.
    pub groups: [u32; 3],
    /// A timestamp (query pool, index) written once the dispatch is done (bottom of pipe).
    pub timestamp: Option<(vk::QueryPool, u32)>,
}

/// Writes the dispatch's descriptors, then records into `cmd`: the list's barrier (compute and
/// transfer writes before, compute and transfer accesses after) if asked for; the pipeline, set 0 and
/// push constants (if any) bound; the dispatch (one `vkCmdDispatch`); and the timestamp, if
/// asked for.
///
/// # Safety
/// `cmd` is a command buffer of this device in the recording state that no other thread uses.
/// `set` is a live set of this device that no GPU work uses, allocated with the set layout
/// `layout` was made with, and the writes name it, with bindings and descriptor types of that
/// layout and live resources of this device; `pipeline` is live and made with `layout`; `push`
/// is empty or exactly the layout's push-constant range; every group count fits the device's
/// `maxComputeWorkGroupCount`; the timestamp's query lies inside its live timestamp pool.
pub(crate) unsafe fn record_dispatch(
    shared: &Shared,
    cmd: vk::CommandBuffer,
    dispatch: &DispatchCommands<'_>,
) {
    let d = &shared.device;
    let compute = vk::PipelineBindPoint::COMPUTE;
    let _api = api_lock();
    // SAFETY: the caller's contract; the infos the writes point to outlive the call.
    unsafe { d.update_descriptor_sets(dispatch.writes, &[]) };
    if dispatch.barrier {
        // SAFETY: the caller guarantees the buffer is recording; we hold the API lock.
        unsafe { cmd_list_barrier(d, cmd) };
    }
    let layout = dispatch.layout;
    // SAFETY: the caller's contract: the list is recording; pipeline, layout and set are alive
    // and compatible; the push bytes are exactly the layout's range; group counts fit the
    // limits; the query lies inside its pool.
    unsafe {
        d.cmd_bind_pipeline(cmd, compute, dispatch.pipeline);
        d.cmd_bind_descriptor_sets(cmd, compute, layout, 0, &[dispatch.set], &[]);
        if !dispatch.push.is_empty() {
            let stage = vk::ShaderStageFlags::COMPUTE;
            d.cmd_push_constants(cmd, layout, stage, 0, dispatch.push);
        }
        let g = dispatch.groups;
        d.cmd_dispatch(cmd, g[0], g[1], g[2]);
        if let Some((qp, index)) = dispatch.timestamp {
            let bottom = vk::PipelineStageFlags::BOTTOM_OF_PIPE;
            d.cmd_write_timestamp(cmd, bottom, qp, index);
        }
    }
}

/// Ends a list's recording: a barrier making shader and transfer writes visible to the host (mapped
/// tensors) and to later submissions, the end timestamp (query 1 of `end_timestamp`) when the
/// list is timed as a whole, then `vkEndCommandBuffer`.
///
/// # Safety
/// `cmd` is a command buffer of this device in the recording state that no other thread uses;
/// `end_timestamp`, if any, is a live timestamp query pool of this device with at least 2
/// queries.
pub(crate) unsafe fn end_recording(
    shared: &Shared,
    cmd: vk::CommandBuffer,
    end_timestamp: Option<vk::QueryPool>,
) -> Result<(), DeviceError> {
    let d = &shared.device;
    let _api = api_lock();
    // SAFETY: the caller's contract; the barrier names no handles.
    unsafe {
        // Shader and transfer writes become visible to the host (mapped tensors, readback
        // buffers) and to later submissions.
        let mb = vk::MemoryBarrier::default()
            .src_access_mask(vk::AccessFlags::SHADER_WRITE | vk::AccessFlags::TRANSFER_WRITE)
            .dst_access_mask(
                vk::AccessFlags::HOST_READ
                    | vk::AccessFlags::MEMORY_READ
                    | vk::AccessFlags::MEMORY_WRITE,
            );
        d.cmd_pipeline_barrier(
            cmd,
            LIST_STAGES,
            vk::PipelineStageFlags::HOST | vk::PipelineStageFlags::ALL_COMMANDS,
            vk::DependencyFlags::empty(),
            &[mb],
            &[],
            &[],
        );
        if let Some(qp) = end_timestamp {
            d.cmd_write_timestamp(cmd, vk::PipelineStageFlags::BOTTOM_OF_PIPE, qp, 1);
        }
        d.end_command_buffer(cmd)
            .map_err(vkerr("vkEndCommandBuffer"))
    }
}

/// Destroys a list's objects: ends its command buffer if it is still `recording`, then
/// destroys its descriptor pools, its query pool (if any) and its command pool (its fence is
/// destroyed with [`destroy_fence`] by whoever holds it last).
///
/// # Safety
/// The objects are the list's own, destroyed once, and its work has finished (or was never
/// submitted); `cmd` came from `pool`.
pub(crate) unsafe fn destroy_command_objects(
    shared: &Shared,
    recording: bool,
    cmd: vk::CommandBuffer,
    descriptor_pools: impl IntoIterator<Item = vk::DescriptorPool>,
    query_pool: Option<vk::QueryPool>,
    pool: vk::CommandPool,
) {
    let d = &shared.device;
    let _api = api_lock();
    // SAFETY: the caller's contract; the buffer is ended before its pool goes.
    unsafe {
        if recording {
            let _ = d.end_command_buffer(cmd);
        }
        for p in descriptor_pools {
            d.destroy_descriptor_pool(p, None);
        }
        if let Some(qp) = query_pool {
            d.destroy_query_pool(qp, None);
        }
        d.destroy_command_pool(pool, None);
    }
}
