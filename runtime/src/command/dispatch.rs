//! One dispatch, in two steps: [`CommandList::plan`] checks everything against the loaded
//! variant and the device and returns a [`Plan`]; the `unsafe` [`CommandList::record`] writes
//! the descriptors and records the commands the plan describes, trusting it.

use super::{CommandError, CommandList, ResId};
use crate::device::{record_dispatch, DispatchCommands};
use crate::kernel::{Bindings, Kernel, Resource};
use crate::pipeline::{descriptor_type, LoadedKernel, Pipeline};
use crate::{Image, Tensor};
use ash::vk;
use std::any::Any;
use std::sync::Arc;
use vkprism_core::{BindingInfo, BindingKind, KernelInfo, TensorFormat, VariantInfo};

/// A dispatch checked by [`CommandList::plan`]: every binding of the variant with the resource
/// given for it, the workgroup grid, and the push-constant bytes.
pub(super) struct Plan<'r> {
    /// The variant's bindings, in order.
    bindings: &'static [BindingInfo],
    /// The (checked) resource for each of `bindings`: all `Some` once planned.
    resources: Vec<Option<Resource<'r>>>,
    /// Workgroups per dimension, each within `maxComputeWorkGroupCount`.
    groups: [u32; 3],
    /// Exactly the kernel's push-constant range (trailing padding of the block cut off).
    push: &'r [u8],
}

impl CommandList {
    /// Checks a dispatch of `global` invocations against the pipeline's variant and the
    /// device, touching nothing.
    pub(super) fn plan<'a, 'r, B: Bindings<'a>>(
        &self,
        pipeline: &Pipeline<B::Kernel>,
        bindings: &B,
        push: &'r <B::Kernel as Kernel>::PushConstants,
        global: [u32; 3],
    ) -> Result<Plan<'r>, CommandError>
    where
        'a: 'r,
    {
        let info = <B::Kernel as Kernel>::INFO;
        let kernel = &pipeline.kernel;
        if !Arc::ptr_eq(&kernel.shared, &self.shared) {
            return Err(CommandError::ForeignResource);
        }
        let variant = kernel.variant;
        if B::MEMORY != variant.key.memory {
            return Err(CommandError::MemoryKindMismatch {
                kernel: info.name,
                variant: variant.key.name(),
                given: B::MEMORY,
                wanted: variant.key.memory,
            });
        }
        if global.contains(&0) {
            return Err(CommandError::ZeroSize(global));
        }
        let push = push_bytes(info, kernel, push)?;
        let groups = self.grid(info, pipeline.local_size, global)?;
        if self.query_pool.is_some()
            && self.query_capacity > 0
            && self.names.len() as u32 >= self.query_capacity
        {
            return Err(CommandError::TimestampsFull(self.query_capacity));
        }
        let resources = self.bind(info, variant, bindings)?;
        Ok(Plan {
            bindings: variant.bindings,
            resources,
            groups,
            push,
        })
    }

    /// The workgroup grid for `global`, refused (never truncated) where a dimension needs more
    /// workgroups than `maxComputeWorkGroupCount`. One `vkCmdDispatch` is the whole grid: a
    /// grid over the limit can't be cut into `vkCmdDispatchBase` pieces either, since their
    /// base plus count must stay within the same limit.
    fn grid(
        &self,
        info: &KernelInfo,
        local: [u32; 3],
        global: [u32; 3],
    ) -> Result<[u32; 3], CommandError> {
        let limit = self.shared.features.limits.max_compute_work_group_count;
        let groups = [0, 1, 2].map(|i| global[i].div_ceil(local[i]));
        match (0..3).find(|&i| groups[i] > limit[i]) {
            Some(dim) => Err(CommandError::TooManyGroups {
                kernel: info.name,
                dim,
                global,
                groups: groups[dim],
                limit: limit[dim],
            }),
            None => Ok(groups),
        }
    }

    /// Finds the resource given for every binding of `variant` (one pass over the given
    /// resources; the first given for a binding number wins) and checks each, in binding order.
    /// The one allocation of a plan: a slot per binding.
    fn bind<'a, B: Bindings<'a>>(
        &self,
        info: &KernelInfo,
        variant: &'static VariantInfo,
        bindings: &B,
    ) -> Result<Vec<Option<Resource<'a>>>, CommandError> {
        let mut given: Vec<Option<Resource<'a>>> = vec![None; variant.bindings.len()];
        for (number, resource) in bindings.resources() {
            if let Some(i) = variant.bindings.iter().position(|b| b.binding == number) {
                given[i].get_or_insert(resource);
            }
        }
        for (b, resource) in variant.bindings.iter().zip(&given) {
            let Some(resource) = resource else {
                return Err(CommandError::MissingBinding {
                    kernel: info.name,
                    variant: variant.key.name(),
                    binding: b.binding,
                    name: b.name,
                });
            };
            self.check_binding(info, variant, b, *resource)?;
        }
        Ok(given)
    }

    /// Checks one resource against its binding: same device, kind, format, size, dimensions.
    fn check_binding(
        &self,
        info: &KernelInfo,
        variant: &VariantInfo,
        b: &BindingInfo,
        resource: Resource<'_>,
    ) -> Result<(), CommandError> {
        match (b.kind, resource) {
            (BindingKind::StorageBuffer | BindingKind::UniformBuffer, Resource::Buffer(t)) => {
                self.check_buffer_binding(info, variant, b, t)
            }
            (BindingKind::SampledImage | BindingKind::StorageImage, Resource::Image(im)) => {
                self.check_image_binding(info, variant, b, im)
            }
            (kind, resource) => Err(CommandError::KindMismatch {
                kernel: info.name,
                binding: b.binding,
                name: b.name,
                kind,
                given: match resource {
                    Resource::Buffer(_) => "buffer",
                    Resource::Image(_) => "image",
                },
            }),
        }
    }

    /// A buffer (or view) bound to a buffer binding: this device's, the binding's format, its
    /// offset aligned as the binding's kind needs, its size within the kind's range.
    fn check_buffer_binding(
        &self,
        info: &KernelInfo,
        variant: &VariantInfo,
        b: &BindingInfo,
        t: &Tensor,
    ) -> Result<(), CommandError> {
        if !Arc::ptr_eq(&t.inner.shared, &self.shared) {
            return Err(CommandError::ForeignResource);
        }
        if b.format != TensorFormat::Raw && t.format() != b.format {
            return Err(format_mismatch(info, variant, b, t.format()));
        }
        let limits = &self.shared.properties.limits;
        let (alignment, limit_name) = if b.kind == BindingKind::UniformBuffer {
            let a = limits.min_uniform_buffer_offset_alignment;
            (a, "minUniformBufferOffsetAlignment")
        } else {
            let a = limits.min_storage_buffer_offset_alignment;
            (a, "minStorageBufferOffsetAlignment")
        };
        if !t.offset.is_multiple_of(alignment.max(1)) {
            return Err(CommandError::MisalignedView {
                kernel: info.name,
                binding: b.binding,
                name: b.name,
                offset: t.offset,
                limit_name,
                alignment,
            });
        }
        // A buffer over maxUniformBufferRange was made without uniform usage: a view of it
        // can't be bound as a uniform buffer, however small.
        let uniform_limit = self.shared.features.limits.max_uniform_buffer_range;
        if b.kind == BindingKind::UniformBuffer && t.inner.size > uniform_limit {
            return Err(CommandError::RangeTooLarge {
                kernel: info.name,
                binding: b.binding,
                name: b.name,
                size: t.inner.size,
                limit_name: "maxUniformBufferRange (of the view's whole buffer)",
                limit: uniform_limit,
            });
        }
        self.check_buffer_size(info, b, t.size_bytes())
    }

    /// An image bound to an image binding: this device's, the binding's format and dimensions.
    fn check_image_binding(
        &self,
        info: &KernelInfo,
        variant: &VariantInfo,
        b: &BindingInfo,
        im: &Image,
    ) -> Result<(), CommandError> {
        if !Arc::ptr_eq(&im.inner.shared, &self.shared) {
            return Err(CommandError::ForeignResource);
        }
        if im.format() != b.format {
            return Err(format_mismatch(info, variant, b, im.format()));
        }
        if b.dims != 0 && im.dims() != b.dims {
            return Err(CommandError::ImageDims {
                kernel: info.name,
                binding: b.binding,
                name: b.name,
                want: b.dims,
                got: im.dims(),
            });
        }
        Ok(())
    }

    /// A buffer of `size` bytes must hold whole elements and fit the binding's range limit.
    fn check_buffer_size(
        &self,
        info: &KernelInfo,
        b: &BindingInfo,
        size: u64,
    ) -> Result<(), CommandError> {
        let stride = b.element.stride as u64;
        if stride > 0 && !size.is_multiple_of(stride) {
            return Err(CommandError::PartialElement {
                kernel: info.name,
                binding: b.binding,
                name: b.name,
                elem: b.element.stride,
                size,
            });
        }
        let limits = &self.shared.features.limits;
        let (limit, limit_name) = if b.kind == BindingKind::UniformBuffer {
            (limits.max_uniform_buffer_range, "maxUniformBufferRange")
        } else {
            (limits.max_storage_buffer_range, "maxStorageBufferRange")
        };
        if size > limit {
            return Err(CommandError::RangeTooLarge {
                kernel: info.name,
                binding: b.binding,
                name: b.name,
                size,
                limit_name,
                limit,
            });
        }
        Ok(())
    }

    /// Records `plan` for `pipeline`: a descriptor set, a barrier when this dispatch depends on
    /// an earlier one, the dispatch, and a timestamp when timing per dispatch.
    ///
    /// # Safety
    /// `plan` was returned by [`CommandList::plan`] for this `pipeline` on this list, with no
    /// dispatch recorded in between: the trust it carries (same device, resources matching
    /// the layout, push constants covering the range, group counts within limits) is
    /// what makes these commands valid.
    pub(super) unsafe fn record<K: Kernel>(
        &mut self,
        pipeline: &Pipeline<K>,
        plan: Plan<'_>,
    ) -> Result<(), CommandError> {
        let kernel = &pipeline.kernel;
        let set = self.allocate_set(kernel.set_layout)?;
        let infos = descriptor_infos(&plan);
        let descriptor_writes = descriptor_writes(set, &infos);
        let id = |(_, r): (&BindingInfo, Resource<'_>)| ResId::of(r);
        let writes = |(b, _): &(&BindingInfo, Resource<'_>)| b.access.writes();
        let used: Vec<ResId> = plan.bound().map(id).collect();
        let written: Vec<ResId> = plan.bound().filter(writes).map(id).collect();
        let barrier = self.needs_barrier(&used, &written);
        // A timestamp per dispatch when timing per dispatch (`plan` checked there is room).
        let timestamp = match (self.query_pool, self.query_capacity > 0) {
            (Some(qp), true) => Some((qp, self.names.len() as u32 + 1)),
            _ => None,
        };
        let commands = DispatchCommands {
            writes: &descriptor_writes,
            barrier,
            pipeline: pipeline.pipeline,
            layout: kernel.layout,
            set,
            push: plan.push,
            groups: plan.groups,
            timestamp,
        };
        // SAFETY: the list is recording (every `CommandList` is until `finish`) and only
        // `&mut self` records into it; `set` is fresh from this list's pool with the kernel's
        // set layout, and `plan` pairs exactly that layout's bindings with live resources of
        // this device; the pipeline, its layout and the set are alive (the list keeps the
        // kernel) and compatible (made from the kernel's layouts); the push bytes are exactly
        // the layout's range; group counts fit the limits (checked by `plan`); the
        // timestamp's query fits the list's pool (checked by `plan`). That is the plan's trust,
        // the caller's contract.
        unsafe { record_dispatch(&self.shared, self.cmd, &commands) };
        self.note_accesses(barrier, &used, &written);
        for (_, resource) in plan.bound() {
            match resource {
                Resource::Buffer(t) => self.keep_tensor(t),
                Resource::Image(i) => self.keep.push(i.inner.clone()),
            }
        }
        self.keep.push(kernel.clone() as Arc<dyn Any + Send + Sync>);
        self.names.push(K::INFO.name);
        Ok(())
    }
}

/// `b` of `variant` given a resource of format `got`.
fn format_mismatch(
    info: &KernelInfo,
    variant: &VariantInfo,
    b: &BindingInfo,
    got: TensorFormat,
) -> CommandError {
    CommandError::FormatMismatch {
        kernel: info.name,
        variant: variant.key.name(),
        binding: b.binding,
        name: b.name,
        expected: b.format,
        got,
    }
}

/// What each of the plan's descriptors points at, with its binding.
fn descriptor_infos(plan: &Plan<'_>) -> Vec<(&'static BindingInfo, DescriptorInfo)> {
    plan.bound()
        .map(|(b, resource)| (b, DescriptorInfo::new(b, resource)))
        .collect()
}

/// The writes pointing `set`'s descriptors at `infos` (whole buffers; images in GENERAL).
fn descriptor_writes<'a>(
    set: vk::DescriptorSet,
    infos: &'a [(&'static BindingInfo, DescriptorInfo)],
) -> Vec<vk::WriteDescriptorSet<'a>> {
    infos
        .iter()
        .map(|(b, info)| {
            let write = vk::WriteDescriptorSet::default()
                .dst_set(set)
                .dst_binding(b.binding)
                .descriptor_type(descriptor_type(b.kind));
            match info {
                DescriptorInfo::Buffer(i) => write.buffer_info(i),
                DescriptorInfo::Image(i) => write.image_info(i),
            }
        })
        .collect()
}

impl<'r> Plan<'r> {
    /// Every binding with its resource, in binding order.
    fn bound(&self) -> impl Iterator<Item = (&'static BindingInfo, Resource<'r>)> + '_ {
        // After `plan`, every slot is `Some`: flattening drops nothing, so the pairs line up.
        self.bindings
            .iter()
            .zip(self.resources.iter().flatten().copied())
    }
}

/// What one descriptor points at (one-element arrays: what `vk::WriteDescriptorSet` takes).
enum DescriptorInfo {
    Buffer([vk::DescriptorBufferInfo; 1]),
    Image([vk::DescriptorImageInfo; 1]),
}

impl DescriptorInfo {
    /// The whole buffer (a view's range of it: its bytes, padded to 4 where the buffer has
    /// room), or the image's view (with its sampler for a sampled binding) in GENERAL layout.
    fn new(b: &BindingInfo, resource: Resource<'_>) -> DescriptorInfo {
        match resource {
            Resource::Buffer(t) => DescriptorInfo::Buffer([vk::DescriptorBufferInfo {
                buffer: t.inner.buffer,
                offset: t.offset,
                range: if t.is_view() {
                    let buffer_size = t.inner.size.div_ceil(4) * 4;
                    (t.size.div_ceil(4) * 4).min(buffer_size - t.offset)
                } else {
                    vk::WHOLE_SIZE
                },
            }]),
            Resource::Image(im) => DescriptorInfo::Image([vk::DescriptorImageInfo {
                sampler: if b.kind == BindingKind::SampledImage {
                    im.inner.sampler
                } else {
                    vk::Sampler::null()
                },
                image_view: im.inner.view,
                image_layout: vk::ImageLayout::GENERAL,
            }]),
        }
    }
}

/// The push-constant bytes to record: the kernel's range, which the value must cover (any
/// bytes beyond it are the block's trailing padding).
fn push_bytes<'r, T: bytemuck::Pod, K: Kernel>(
    info: &KernelInfo,
    kernel: &LoadedKernel<K>,
    push: &'r T,
) -> Result<&'r [u8], CommandError> {
    let range = kernel.push_range;
    let bytes = bytemuck::bytes_of(push);
    if bytes.len() < range as usize {
        return Err(CommandError::PushConstantsSize {
            kernel: info.name,
            given: bytes.len(),
            range,
        });
    }
    Ok(&bytes[..range as usize])
}
