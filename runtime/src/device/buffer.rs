//! Buffers: created, given memory and bound in one call (or nothing is left behind), freed, and
//! copied between by one-shot submissions.

use super::error::{vkerr, DeviceError};
use super::heap::free_memory;
use super::lock::api_lock;
use super::shared::Shared;
use super::submit::PendingOneShot;
use ash::vk;
use gpu_allocator::vulkan::Allocation;

/// A buffer of `size` bytes with `usage`, with the memory `allocate` gives for it (called with
/// the new buffer and its requirements) bound to it. On an error nothing is left behind: what
/// was made is destroyed, or (on a poisoned context, as every free) leaked.
///
/// # Safety
/// `size` is nonzero and at most the device's `maxMemoryAllocationSize`.
pub(crate) unsafe fn create_buffer<E: From<DeviceError>>(
    shared: &Shared,
    size: u64,
    usage: vk::BufferUsageFlags,
    allocate: impl FnOnce(vk::Buffer, vk::MemoryRequirements) -> Result<Allocation, E>,
) -> Result<(vk::Buffer, Allocation), E> {
    let device = &shared.device;
    let api = api_lock();
    // SAFETY: a plain creation on the live device; the size was checked against
    // maxMemoryAllocationSize (the caller's contract).
    let buffer = unsafe {
        device.create_buffer(
            &vk::BufferCreateInfo::default()
                .size(size)
                .usage(usage)
                .sharing_mode(vk::SharingMode::EXCLUSIVE),
            None,
        )
    }
    .map_err(vkerr("vkCreateBuffer"))?;
    drop(api);
    let requirements = {
        let _api = api_lock();
        // SAFETY: `buffer` is a live buffer of this device (just made).
        unsafe { device.get_buffer_memory_requirements(buffer) }
    };
    let allocation = match allocate(buffer, requirements) {
        Ok(a) => a,
        Err(e) => {
            let _api = api_lock();
            // SAFETY: the buffer was just made and nothing uses it.
            unsafe { device.destroy_buffer(buffer, None) };
            return Err(e);
        }
    };
    let api = api_lock();
    // SAFETY: the memory was allocated for this buffer's requirements and is unbound.
    let bound =
        unsafe { device.bind_buffer_memory(buffer, allocation.memory(), allocation.offset()) };
    drop(api);
    if let Err(e) = bound {
        free_buffer(shared, buffer, Some(allocation));
        return Err(vkerr("vkBindBufferMemory")(e).into());
    }
    Ok((buffer, allocation))
}

/// Frees a buffer's memory (if any) and destroys the buffer; leaks both when the context is
/// poisoned (the GPU may still use them).
pub(crate) fn free_buffer(shared: &Shared, buffer: vk::Buffer, allocation: Option<Allocation>) {
    if shared.is_poisoned() {
        return;
    }
    if let Some(a) = allocation {
        free_memory(shared, a);
    }
    let _api = api_lock();
    // SAFETY: the caller owns `buffer` and no GPU work uses it any more (tensors are freed by
    // their last Arc, which command lists hold until their work is done; staging buffers after
    // their one-shot copy was waited for; after a timeout nothing is freed, above).
    unsafe { shared.device.destroy_buffer(buffer, None) };
}

/// Copies `region` from `src` to `dst` in a one-shot submission, and waits for it.
///
/// # Safety
/// `src` and `dst` are live buffers of this device that stay alive until this returns, the
/// region lies inside both, and the host does not touch `dst`'s memory meanwhile.
pub(crate) unsafe fn copy_buffer(
    shared: &Shared,
    src: vk::Buffer,
    dst: vk::Buffer,
    region: vk::BufferCopy,
) -> Result<(), DeviceError> {
    // SAFETY: `cmd` is recording (one_shot's contract); the caller vouches for the buffers and
    // the region, and they outlive the wait.
    shared.one_shot(|cmd| unsafe { shared.device.cmd_copy_buffer(cmd, src, dst, &[region]) })
}

/// As [`copy_buffer`] without the wait: hand the result to [`Shared::finish`].
///
/// # Safety
/// As [`copy_buffer`], until the copy is finished: both buffers stay alive, and the host does
/// not touch `dst`'s memory, until `Shared::finish` returns for it (or, on a poisoned context,
/// ever again).
pub(crate) unsafe fn copy_buffer_submit(
    shared: &Shared,
    src: vk::Buffer,
    dst: vk::Buffer,
    region: vk::BufferCopy,
) -> Result<PendingOneShot, DeviceError> {
    // SAFETY: `cmd` is recording (one_shot_submit's contract); the caller vouches for the
    // buffers and the region until the copy is finished.
    shared.one_shot_submit(|cmd| unsafe { shared.device.cmd_copy_buffer(cmd, src, dst, &[region]) })
}
