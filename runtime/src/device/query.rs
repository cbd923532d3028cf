//! Timestamp queries: a query pool, the timestamps a list records, and reading them back.

use super::error::{vkerr, DeviceError};
use super::lock::api_lock;
use super::shared::Shared;
use ash::vk;

/// A query pool of `count` timestamp queries.
pub(crate) fn create_timestamp_pool(
    shared: &Shared,
    count: u32,
) -> Result<vk::QueryPool, DeviceError> {
    let _api = api_lock();
    // SAFETY: a plain creation on the live device.
    unsafe {
        shared.device.create_query_pool(
            &vk::QueryPoolCreateInfo::default()
                .query_type(vk::QueryType::TIMESTAMP)
                .query_count(count),
            None,
        )
    }
    .map_err(vkerr("vkCreateQueryPool"))
}

/// Resets the `count` queries of `qp` and writes the start timestamp (query 0, top of pipe).
///
/// # Safety
/// `cmd` is a command buffer of this device in the recording state that no other thread uses;
/// `qp` is a live timestamp query pool of this device with `count` (at least 1) queries.
pub(crate) unsafe fn cmd_start_timestamps(
    shared: &Shared,
    cmd: vk::CommandBuffer,
    qp: vk::QueryPool,
    count: u32,
) {
    let d = &shared.device;
    let _api = api_lock();
    // SAFETY: the caller's contract.
    unsafe {
        d.cmd_reset_query_pool(cmd, qp, 0, count);
        d.cmd_write_timestamp(cmd, vk::PipelineStageFlags::TOP_OF_PIPE, qp, 0);
    }
}

/// Reads the first `ticks.len()` timestamps of `qp` (64-bit, waiting for them).
///
/// # Safety
/// `qp` is a live timestamp query pool of this device with at least `ticks.len()` queries,
/// all written by work that was submitted (so the wait ends).
pub(crate) unsafe fn timestamps(
    shared: &Shared,
    qp: vk::QueryPool,
    ticks: &mut [u64],
) -> Result<(), DeviceError> {
    let _api = api_lock();
    // SAFETY: the caller's contract.
    unsafe {
        shared.device.get_query_pool_results(
            qp,
            0,
            ticks,
            vk::QueryResultFlags::TYPE_64 | vk::QueryResultFlags::WAIT,
        )
    }
    .map_err(vkerr("vkGetQueryPoolResults"))
}
