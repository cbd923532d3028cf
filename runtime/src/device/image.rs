//! Images: format queries, an image created with its memory, view and sampler and moved to
//! GENERAL layout in one call (or nothing is left behind), destroyed, and copied to and from
//! buffers by one-shot submissions.

use super::error::{vkerr, DeviceError};
use super::heap::free_memory;
use super::lock::api_lock;
use super::shared::Shared;
use ash::vk;
use gpu_allocator::vulkan::Allocation;

/// The whole (single-level, single-layer) color subresource.
pub(crate) const COLOR_RANGE: vk::ImageSubresourceRange = vk::ImageSubresourceRange {
    aspect_mask: vk::ImageAspectFlags::COLOR,
    base_mip_level: 0,
    level_count: 1,
    base_array_layer: 0,
    layer_count: 1,
};

/// What the device allows for images of `format`, `ty` and `usage` with optimal tiling
/// (`vkGetPhysicalDeviceImageFormatProperties`).
pub(crate) fn image_format_properties(
    shared: &Shared,
    format: vk::Format,
    ty: vk::ImageType,
    usage: vk::ImageUsageFlags,
) -> Result<vk::ImageFormatProperties, vk::Result> {
    let _api = api_lock();
    // SAFETY: a query on this instance's physical device with valid enum values.
    unsafe {
        shared.instance.get_physical_device_image_format_properties(
            shared.physical,
            format,
            ty,
            vk::ImageTiling::OPTIMAL,
            usage,
            vk::ImageCreateFlags::empty(),
        )
    }
}

/// An image with its bound memory, a view of the whole image and a sampler, as
/// [`create_image`] makes them; [`destroy_image`] destroys them.
pub(crate) struct ImageObjects {
    pub image: vk::Image,
    pub view: vk::ImageView,
    pub sampler: vk::Sampler,
    pub allocation: Allocation,
}

/// Makes the image `info` describes, with the memory `allocate` gives for it (called with its
/// requirements) bound to it, a view of `view_type` over the whole of it ([`COLOR_RANGE`]), and
/// a sampler made from `sampler`; then moves it from UNDEFINED to GENERAL, where it stays (one
/// image can be sampled by one dispatch and stored by the next). On an error nothing is left
/// behind: what was made is destroyed, or (on a poisoned context) leaked.
///
/// # Safety
/// `info` is a single-level, single-layer color image whose format, type, extent and usage the
/// device supports (checked against its limits and `vkGetPhysicalDeviceImageFormatProperties`),
/// and `view_type` fits its type.
pub(crate) unsafe fn create_image<E: From<DeviceError>>(
    shared: &Shared,
    info: &vk::ImageCreateInfo<'_>,
    view_type: vk::ImageViewType,
    sampler: &vk::SamplerCreateInfo<'_>,
    allocate: impl FnOnce(vk::MemoryRequirements) -> Result<Allocation, E>,
) -> Result<ImageObjects, E> {
    let device = &shared.device;
    let api = api_lock();
    // SAFETY: the caller checked the format's support and the extent's limits.
    let image = unsafe { device.create_image(info, None) }.map_err(vkerr("vkCreateImage"))?;
    // SAFETY: `image` is live.
    let requirements = unsafe { device.get_image_memory_requirements(image) };
    drop(api);
    let allocation = match allocate(requirements) {
        Ok(a) => a,
        Err(e) => {
            let _api = api_lock();
            // SAFETY: the image was just made and nothing uses it.
            unsafe { device.destroy_image(image, None) };
            return Err(e);
        }
    };
    let mut objects = ImageObjects {
        image,
        view: vk::ImageView::null(),
        sampler: vk::Sampler::null(),
        allocation,
    };
    // SAFETY: `objects` holds a fresh image of this device with unbound memory allocated for
    // its requirements; the caller's contract covers the view's type.
    match unsafe { finish_image(shared, &mut objects, info.format, view_type, sampler) } {
        Ok(()) => Ok(objects),
        Err(e) => {
            let ImageObjects {
                image,
                view,
                sampler,
                allocation,
            } = objects;
            // SAFETY: all of it was just made here; the only work that used the image (the
            // layout transition) was waited for, or timed out and poisoned the context, which
            // makes this leak instead.
            unsafe { destroy_image(shared, image, view, sampler, Some(allocation)) };
            Err(e.into())
        }
    }
}

/// Binds the memory, makes the view and the sampler (filling them in as they are made), and
/// moves the image to GENERAL layout.
///
/// # Safety
/// `objects.image` is a fresh image of this device, `objects.allocation` unbound memory for it,
/// `format` its format and `view_type` a view type that fits it.
unsafe fn finish_image(
    shared: &Shared,
    objects: &mut ImageObjects,
    format: vk::Format,
    view_type: vk::ImageViewType,
    sampler: &vk::SamplerCreateInfo<'_>,
) -> Result<(), DeviceError> {
    let device = &shared.device;
    let image = objects.image;
    let api = api_lock();
    let a = &objects.allocation;
    // SAFETY: the memory was allocated for this image's requirements and is unbound.
    unsafe { device.bind_image_memory(image, a.memory(), a.offset()) }
        .map_err(vkerr("vkBindImageMemory"))?;
    let view_info = vk::ImageViewCreateInfo::default()
        .image(image)
        .view_type(view_type)
        .format(format)
        .subresource_range(COLOR_RANGE);
    // SAFETY: a view of the live, bound image, with its format and a compatible type.
    objects.view = unsafe { device.create_image_view(&view_info, None) }
        .map_err(vkerr("vkCreateImageView"))?;
    // SAFETY: a plain creation on the live device.
    objects.sampler =
        unsafe { device.create_sampler(sampler, None) }.map_err(vkerr("vkCreateSampler"))?;
    drop(api);
    let barrier = vk::ImageMemoryBarrier::default()
        .old_layout(vk::ImageLayout::UNDEFINED)
        .new_layout(vk::ImageLayout::GENERAL)
        .src_queue_family_index(vk::QUEUE_FAMILY_IGNORED)
        .dst_queue_family_index(vk::QUEUE_FAMILY_IGNORED)
        .image(image)
        .subresource_range(COLOR_RANGE)
        .dst_access_mask(vk::AccessFlags::MEMORY_READ | vk::AccessFlags::MEMORY_WRITE);
    // SAFETY: `cmd` is recording (one_shot's contract); the image is live and bound, and no
    // other work uses it yet.
    shared.one_shot(|cmd| unsafe {
        shared.device.cmd_pipeline_barrier(
            cmd,
            vk::PipelineStageFlags::TOP_OF_PIPE,
            vk::PipelineStageFlags::ALL_COMMANDS,
            vk::DependencyFlags::empty(),
            &[],
            &[],
            &[barrier],
        )
    })
}

/// Destroys an image's sampler and view, frees its memory (if any) and destroys the image;
/// leaks them all when the context is poisoned (the GPU may still use them, see
/// `Drop for Shared`). A view or sampler left null is a valid no-op to destroy.
///
/// # Safety
/// The objects were made together by [`create_image`] and are destroyed once, and no GPU work
/// uses them any more.
pub(crate) unsafe fn destroy_image(
    shared: &Shared,
    image: vk::Image,
    view: vk::ImageView,
    sampler: vk::Sampler,
    allocation: Option<Allocation>,
) {
    if shared.is_poisoned() {
        return;
    }
    let d = &shared.device;
    let api = api_lock();
    // SAFETY: the caller's contract.
    unsafe {
        d.destroy_sampler(sampler, None);
        d.destroy_image_view(view, None);
    }
    if let Some(a) = allocation {
        free_memory(shared, a);
    }
    // SAFETY: as above; its memory was freed just before.
    unsafe { d.destroy_image(image, None) };
    drop(api);
}

/// Copies `region` from `buffer` into `image` (in GENERAL layout) in a one-shot submission, and
/// waits for it.
///
/// # Safety
/// `buffer` and `image` are live objects of this device that stay alive until this returns,
/// the image is in GENERAL layout, and the region lies inside both.
pub(crate) unsafe fn copy_buffer_to_image(
    shared: &Shared,
    buffer: vk::Buffer,
    image: vk::Image,
    region: vk::BufferImageCopy,
) -> Result<(), DeviceError> {
    // SAFETY: `cmd` is recording (one_shot's contract); the caller vouches for the buffer, the
    // image and the region, and they outlive the wait.
    shared.one_shot(|cmd| unsafe {
        shared.device.cmd_copy_buffer_to_image(
            cmd,
            buffer,
            image,
            vk::ImageLayout::GENERAL,
            &[region],
        )
    })
}

/// Copies `region` from `image` (in GENERAL layout) into `buffer` in a one-shot submission,
/// and waits for it.
///
/// # Safety
/// As [`copy_buffer_to_image`]; the host does not touch `buffer`'s memory until this returns.
pub(crate) unsafe fn copy_image_to_buffer(
    shared: &Shared,
    image: vk::Image,
    buffer: vk::Buffer,
    region: vk::BufferImageCopy,
) -> Result<(), DeviceError> {
    // SAFETY: `cmd` is recording (one_shot's contract); the caller vouches for the image, the
    // buffer and the region, and they outlive the wait.
    shared.one_shot(|cmd| unsafe {
        shared.device.cmd_copy_image_to_buffer(
            cmd,
            image,
            vk::ImageLayout::GENERAL,
            buffer,
            &[region],
        )
    })
}
