//! Image-backed tensors for the image variants: 1D/2D/3D, one or four channels, fp32 or fp16
//! texels (r32f / rgba32f / r16f / rgba16f as the contract says), kept in GENERAL layout so one
//! image can be sampled by one dispatch and stored by the next.

use crate::convert::{decode_f32, encode_f32};
use crate::device::{
    copy_buffer_to_image, copy_image_to_buffer, create_image, destroy_image, free_buffer,
    image_format_properties, ImageObjects, Shared,
};
use crate::tensor::{allocate_checked, create_buffer, TensorError};
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
        let a = self
            .allocation
            .get_mut()
            .unwrap_or_else(|e| e.into_inner())
            .take();
        // SAFETY: the image's own objects, made together by `create_image` and destroyed once:
        // command lists that used them hold a clone of this inner value and wait for their
        // work, so none is in use now (and on a poisoned context they are leaked).
        unsafe { destroy_image(&self.shared, self.image, self.view, self.sampler, a) };
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
    let props = image_format_properties(shared, format, ty, IMAGE_USAGE);
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

/// An optimal-tiling image usable for sampling, storage and transfers, with device-local
/// memory, a view and a sampler, in GENERAL layout. On an error nothing is left behind.
fn create_objects(
    shared: &Shared,
    ty: vk::ImageType,
    format: vk::Format,
    view_type: vk::ImageViewType,
    extent: [u32; 3],
) -> Result<ImageObjects, TensorError> {
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
    let allocate = |requirements| {
        allocate_checked(
            shared,
            &AllocationCreateDesc {
                name: "vkprism image",
                requirements,
                location: MemoryLocation::GpuOnly,
                linear: false,
                allocation_scheme: AllocationScheme::GpuAllocatorManaged,
            },
        )
    };
    // SAFETY: `check_request` checked the format's support and the extent's limits, and chose
    // the view type for the image type.
    unsafe { create_image(shared, &info, view_type, &nearest_clamped(), allocate) }
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
        let objects = create_objects(shared, ty, vk_format, view_type, extent)?;
        Ok(Image {
            inner: Arc::new(ImageInner {
                shared: shared.clone(),
                image: objects.image,
                view: objects.view,
                sampler: objects.sampler,
                allocation: Mutex::new(Some(objects.allocation)),
                dims,
                extent,
                channels,
                format,
            }),
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
        // SAFETY: the staging buffer holds the image's bytes and outlives the wait; the image
        // is live (`self`) and in GENERAL layout.
        let r = unsafe { copy_buffer_to_image(shared, staging, self.inner.image, region) };
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
        // SAFETY: the staging buffer is large enough for every texel, outlives the wait and is
        // read only after it; the image is live (`self`) and in GENERAL layout.
        let r = unsafe { copy_image_to_buffer(shared, self.inner.image, staging, region) };
        let out = alloc
            .mapped_slice()
            .and_then(|s| decode_f32(self.inner.format, &s[..size as usize]));
        free_buffer(shared, staging, Some(alloc));
        r?;
        out.ok_or_else(|| TensorError::Allocation("readback memory is not mapped".into()))
    }
}
