//! Image-backed tensors for the image variants: 1D/2D/3D, one or four channels, fp32 or fp16
//! texels (r32f / rgba32f / r16f / rgba16f as the contract says), kept in GENERAL layout so one
//! image can be sampled by one dispatch and stored by the next.

use crate::convert::{decode_f32, encode_f32};
use crate::device::{api_lock, vkerr, Shared};
use crate::tensor::{allocate_checked, create_buffer, free_buffer, free_memory, TensorError};
use crate::Context;
use ash::vk;
use gpu_allocator::vulkan::{Allocation, AllocationCreateDesc, AllocationScheme};
use gpu_allocator::MemoryLocation;
use std::sync::{Arc, Mutex};
use vkprism_core::{Feature, TensorFormat};

pub(crate) struct ImageInner {
    pub shared: Arc<Shared>,
    pub image: vk::Image,
    pub view: vk::ImageView,
    pub sampler: vk::Sampler,
    allocation: Mutex<Option<Allocation>>,
    pub dims: u8,
    pub extent: [u32; 3],
    pub channels: u32,
    pub format: TensorFormat,
}

impl Drop for ImageInner {
    fn drop(&mut self) {
        let s = &self.shared;
        if s.is_poisoned() {
            // The GPU may still use the image: leak it (see `Drop for Shared`).
            return;
        }
        let api = api_lock();
        // SAFETY: the image's own objects, destroyed once: command lists that used them hold a
        // clone of this inner value and wait for their work, so none is in use now. (A view or
        // sampler left null by a failed `Image::new` is a valid no-op to destroy.)
        unsafe {
            s.device.destroy_sampler(self.sampler, None);
            s.device.destroy_image_view(self.view, None);
        }
        if let Some(a) = self
            .allocation
            .get_mut()
            .unwrap_or_else(|e| e.into_inner())
            .take()
        {
            free_memory(s, a);
        }
        // SAFETY: as above; its memory was freed just before.
        unsafe { s.device.destroy_image(self.image, None) };
        drop(api);
    }
}

/// An image tensor. Cheap to clone; command lists keep clones of what they bind.
#[derive(Clone)]
pub struct Image {
    pub(crate) inner: Arc<ImageInner>,
}

impl std::fmt::Debug for Image {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Image")
            .field("dims", &self.inner.dims)
            .field("extent", &self.inner.extent)
            .field("channels", &self.inner.channels)
            .field("format", &self.inner.format)
            .finish()
    }
}

fn vk_format(format: TensorFormat, channels: u32) -> Option<vk::Format> {
    Some(match (format, channels) {
        (TensorFormat::F32, 1) => vk::Format::R32_SFLOAT,
        (TensorFormat::F32, 4) => vk::Format::R32G32B32A32_SFLOAT,
        (TensorFormat::F16, 1) => vk::Format::R16_SFLOAT,
        (TensorFormat::F16, 4) => vk::Format::R16G16B16A16_SFLOAT,
        _ => return None,
    })
}

/// The whole (single-level, single-layer) color subresource.
const COLOR_RANGE: vk::ImageSubresourceRange = vk::ImageSubresourceRange {
    aspect_mask: vk::ImageAspectFlags::COLOR,
    base_mip_level: 0,
    level_count: 1,
    base_array_layer: 0,
    layer_count: 1,
};

/// Every image's sampler: nearest texel, coordinates clamped to the edge.
fn nearest_clamped() -> vk::SamplerCreateInfo<'static> {
    vk::SamplerCreateInfo::default()
        .mag_filter(vk::Filter::NEAREST)
        .min_filter(vk::Filter::NEAREST)
        .address_mode_u(vk::SamplerAddressMode::CLAMP_TO_EDGE)
        .address_mode_v(vk::SamplerAddressMode::CLAMP_TO_EDGE)
        .address_mode_w(vk::SamplerAddressMode::CLAMP_TO_EDGE)
}

/// Checks an image request against the device: the Vulkan format, image type and view type.
fn check_request(
    shared: &Shared,
    dims: u8,
    extent: [u32; 3],
    channels: u32,
    format: TensorFormat,
) -> Result<(vk::Format, vk::ImageType, vk::ImageViewType), TensorError> {
    let bad = || TensorError::BadShape(extent.iter().map(|e| *e as usize).collect());
    let vkf = vk_format(format, channels).ok_or(TensorError::WrongFormat {
        have: format,
        want: "F32 or F16 with 1 or 4 channels",
    })?;
    let needed = if format == TensorFormat::F16 {
        Feature::ImageFormatsFp16
    } else {
        Feature::ImageFormatsFp32
    };
    if !shared.features.supports(needed) {
        return Err(TensorError::WrongFormat {
            have: format,
            want: "an image format this device can sample and store",
        });
    }
    let l = &shared.features.limits;
    let (ty, view_ty, max) = match dims {
        1 => (
            vk::ImageType::TYPE_1D,
            vk::ImageViewType::TYPE_1D,
            l.max_image_dimension_1d,
        ),
        2 => (
            vk::ImageType::TYPE_2D,
            vk::ImageViewType::TYPE_2D,
            l.max_image_dimension_2d,
        ),
        3 => (
            vk::ImageType::TYPE_3D,
            vk::ImageViewType::TYPE_3D,
            l.max_image_dimension_3d,
        ),
        _ => return Err(bad()),
    };
    if extent.contains(&0) || extent[dims as usize..].iter().any(|e| *e != 1) {
        return Err(bad());
    }
    if let Some(e) = extent.iter().find(|e| **e > max) {
        return Err(TensorError::TooLarge {
            size: *e as u64,
            limit_name: "maxImageDimension",
            limit: max as u64,
        });
    }
    check_resource_limits(shared, vkf, ty, extent, channels, format)?;
    Ok((vkf, ty, view_ty))
}

/// The usage of every image.
const IMAGE_USAGE: vk::ImageUsageFlags = vk::ImageUsageFlags::from_raw(
    vk::ImageUsageFlags::SAMPLED.as_raw()
        | vk::ImageUsageFlags::STORAGE.as_raw()
        | vk::ImageUsageFlags::TRANSFER_SRC.as_raw()
        | vk::ImageUsageFlags::TRANSFER_DST.as_raw(),
);

/// Checks the image against what the device allows for this format, type and usage
/// (`vkGetPhysicalDeviceImageFormatProperties`: `maxExtent` and `maxResourceSize`) before
/// anything is created: the driver (and the validation layer) would otherwise see the request.
fn check_resource_limits(
    shared: &Shared,
    format: vk::Format,
    ty: vk::ImageType,
    extent: [u32; 3],
    channels: u32,
    tensor_format: TensorFormat,
) -> Result<(), TensorError> {
    let props = {
        let _api = api_lock();
        // SAFETY: a query on this instance's physical device with valid enum values.
        unsafe {
            shared.instance.get_physical_device_image_format_properties(
                shared.physical,
                format,
                ty,
                vk::ImageTiling::OPTIMAL,
                IMAGE_USAGE,
                vk::ImageCreateFlags::empty(),
            )
        }
    };
    let props = props.map_err(|_| TensorError::WrongFormat {
        have: tensor_format,
        want: "an image format this device supports for sampling, storage and transfers",
    })?;
    let max = [
        props.max_extent.width,
        props.max_extent.height,
        props.max_extent.depth,
    ];
    if let Some(i) = (0..3).find(|i| extent[*i] > max[*i]) {
        return Err(TensorError::TooLarge {
            size: extent[i] as u64,
            limit_name: "maxExtent (vkGetPhysicalDeviceImageFormatProperties)",
            limit: max[i] as u64,
        });
    }
    let bytes = extent.iter().map(|e| *e as u64).product::<u64>()
        * channels as u64
        * tensor_format.size() as u64;
    if bytes > props.max_resource_size {
        return Err(TensorError::TooLarge {
            size: bytes,
            limit_name: "maxResourceSize (vkGetPhysicalDeviceImageFormatProperties)",
            limit: props.max_resource_size,
        });
    }
    let limit = shared.features.limits.max_memory_allocation_size;
    if bytes > limit {
        return Err(TensorError::TooLarge {
            size: bytes,
            limit_name: "maxMemoryAllocationSize",
            limit,
        });
    }
    Ok(())
}

/// An optimal-tiling image usable for sampling, storage and transfers, and device-local memory
/// for it (not yet bound). On an error nothing is left behind.
fn create_image(
    shared: &Shared,
    ty: vk::ImageType,
    format: vk::Format,
    extent: [u32; 3],
) -> Result<(vk::Image, Allocation), TensorError> {
    let device = &shared.device;
    let info = vk::ImageCreateInfo::default()
        .image_type(ty)
        .format(format)
        .extent(vk::Extent3D {
            width: extent[0],
            height: extent[1],
            depth: extent[2],
        })
        .mip_levels(1)
        .array_layers(1)
        .samples(vk::SampleCountFlags::TYPE_1)
        .tiling(vk::ImageTiling::OPTIMAL)
        .usage(IMAGE_USAGE)
        .initial_layout(vk::ImageLayout::UNDEFINED);
    shared.check_usable()?;
    let api = api_lock();
    // SAFETY: `check_request` checked the format's support and the extent's limits.
    let image = unsafe { device.create_image(&info, None) }.map_err(vkerr("vkCreateImage"))?;
    // SAFETY: `image` is live.
    let requirements = unsafe { device.get_image_memory_requirements(image) };
    drop(api);
    let allocation = allocate_checked(
        shared,
        &AllocationCreateDesc {
            name: "vkprism image",
            requirements,
            location: MemoryLocation::GpuOnly,
            linear: false,
            allocation_scheme: AllocationScheme::GpuAllocatorManaged,
        },
    );
    match allocation {
        Ok(a) => Ok((image, a)),
        Err(e) => {
            let _api = api_lock();
            // SAFETY: the image was just made and nothing uses it.
            unsafe { device.destroy_image(image, None) };
            Err(e)
        }
    }
}

/// Moves a new image from UNDEFINED to GENERAL, where it stays (one image can be sampled by
/// one dispatch and stored by the next).
fn to_general_layout(shared: &Shared, image: vk::Image) -> Result<(), TensorError> {
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
    })?;
    Ok(())
}

impl Image {
    /// An image of `extent` (unused trailing dimensions 1) with `channels` (1 or 4) texel
    /// channels of `format` (F32 or F16).
    pub fn new(
        ctx: &Context,
        dims: u8,
        extent: [u32; 3],
        channels: u32,
        format: TensorFormat,
    ) -> Result<Image, TensorError> {
        let shared = &ctx.shared;
        let (vk_format, ty, view_type) = check_request(shared, dims, extent, channels, format)?;
        let (image, allocation) = create_image(shared, ty, vk_format, extent)?;
        // From here the inner value owns everything: a failure below drops it and cleans up.
        let mut inner = ImageInner {
            shared: shared.clone(),
            image,
            view: vk::ImageView::null(),
            sampler: vk::Sampler::null(),
            allocation: Mutex::new(None),
            dims,
            extent,
            channels,
            format,
        };
        let device = &shared.device;
        let api = api_lock();
        // SAFETY: the memory was allocated for this image's requirements and is unbound.
        unsafe { device.bind_image_memory(image, allocation.memory(), allocation.offset()) }
            .map_err(vkerr("vkBindImageMemory"))?;
        *inner
            .allocation
            .get_mut()
            .unwrap_or_else(|e| e.into_inner()) = Some(allocation);
        let view_info = vk::ImageViewCreateInfo::default()
            .image(image)
            .view_type(view_type)
            .format(vk_format)
            .subresource_range(COLOR_RANGE);
        // SAFETY: a view of the live, bound image, with its format and a compatible type.
        inner.view = unsafe { device.create_image_view(&view_info, None) }
            .map_err(vkerr("vkCreateImageView"))?;
        // SAFETY: a plain creation on the live device.
        inner.sampler = unsafe { device.create_sampler(&nearest_clamped(), None) }
            .map_err(vkerr("vkCreateSampler"))?;
        drop(api);
        to_general_layout(shared, image)?;
        Ok(Image {
            inner: Arc::new(inner),
        })
    }

    /// Texels × channels.
    pub fn len(&self) -> usize {
        self.inner
            .extent
            .iter()
            .map(|e| *e as usize)
            .product::<usize>()
            * self.inner.channels as usize
    }
    /// Whether it holds no values (never: extents have no zero).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// The texel format (F32 or F16).
    pub fn format(&self) -> TensorFormat {
        self.inner.format
    }
    /// Width, height, depth (unused dimensions 1).
    pub fn extent(&self) -> [u32; 3] {
        self.inner.extent
    }
    /// 1, 2 or 3.
    pub fn dims(&self) -> u8 {
        self.inner.dims
    }
    /// Channels per texel (1 or 4).
    pub fn channels(&self) -> u32 {
        self.inner.channels
    }

    fn region(&self) -> vk::BufferImageCopy {
        let e = self.inner.extent;
        vk::BufferImageCopy::default()
            .image_subresource(vk::ImageSubresourceLayers {
                aspect_mask: vk::ImageAspectFlags::COLOR,
                mip_level: 0,
                base_array_layer: 0,
                layer_count: 1,
            })
            .image_extent(vk::Extent3D {
                width: e[0],
                height: e[1],
                depth: e[2],
            })
    }

    /// Writes `data`, x fastest then y then z, channels interleaved (fp16 rounds to nearest even).
    pub fn upload_f32(&self, data: &[f32]) -> Result<(), TensorError> {
        if data.len() != self.len() {
            return Err(TensorError::LengthMismatch {
                got: data.len(),
                want: self.len(),
            });
        }
        // Images are F32 or F16 (checked at creation), both of which hold floats.
        let bytes = encode_f32(self.inner.format, data).unwrap_or_default();
        let shared = &self.inner.shared;
        let (staging, mut alloc) = create_buffer(
            shared,
            bytes.len() as u64,
            vk::BufferUsageFlags::TRANSFER_SRC,
            MemoryLocation::CpuToGpu,
            "vkprism image staging",
        )?;
        if let Some(s) = alloc.mapped_slice_mut() {
            s[..bytes.len()].copy_from_slice(&bytes);
        }
        let region = self.region();
        // SAFETY: `cmd` is recording (one_shot's contract); the staging buffer holds the image's
        // bytes and outlives the wait; the image is live and in GENERAL layout.
        let r = shared.one_shot(|cmd| unsafe {
            shared.device.cmd_copy_buffer_to_image(
                cmd,
                staging,
                self.inner.image,
                vk::ImageLayout::GENERAL,
                &[region],
            )
        });
        free_buffer(shared, staging, Some(alloc));
        Ok(r?)
    }

    /// Reads the texels as `f32`, in the order `upload_f32` takes.
    pub fn download_f32(&self) -> Result<Vec<f32>, TensorError> {
        let texel = if self.inner.format == TensorFormat::F16 {
            2
        } else {
            4
        };
        let size = (self.len() * texel) as u64;
        let shared = &self.inner.shared;
        let (staging, alloc) = create_buffer(
            shared,
            size,
            vk::BufferUsageFlags::TRANSFER_DST,
            MemoryLocation::GpuToCpu,
            "vkprism image readback",
        )?;
        let region = self.region();
        // SAFETY: `cmd` is recording (one_shot's contract); the staging buffer is large enough
        // for every texel and outlives the wait; the image is live and in GENERAL layout.
        let r = shared.one_shot(|cmd| unsafe {
            shared.device.cmd_copy_image_to_buffer(
                cmd,
                self.inner.image,
                vk::ImageLayout::GENERAL,
                staging,
                &[region],
            )
        });
        let out = alloc
            .mapped_slice()
            .and_then(|s| decode_f32(self.inner.format, &s[..size as usize]));
        free_buffer(shared, staging, Some(alloc));
        r?;
        out.ok_or_else(|| TensorError::Allocation("readback memory is not mapped".into()))
    }
}
