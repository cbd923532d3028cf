//! Loading a kernel (variant selection, shader module, descriptor-set and pipeline layouts) and
//! its compute pipelines, cached per (specialization values, workgroup size, subgroup size).
//! The on-disk `VkPipelineCache` is `cache.rs`.

use crate::device::{create_compute_pipeline, create_layouts, destroy_kernel, Shared};
use crate::kernel::{Kernel, SpecConstants};
use crate::select::{force_variant, select_variant, Options, SelectError, Selection};
use ash::vk;
use std::collections::HashMap;
use std::marker::PhantomData;
use std::sync::{Arc, Mutex};
use vkprism_core::{
    BindingKind, Feature, KernelInfo, ParseVariantError, TensorFormat, VariantInfo, VariantKey,
};

/// Errors loading a kernel, making a pipeline, or reading and writing the pipeline cache.
#[non_exhaustive]
#[derive(thiserror::Error)]
pub enum PipelineError {
    /// No variant fits (or the forced one can't run).
    #[error(transparent)]
    Select(#[from] SelectError),
    /// A workgroup size over `maxComputeWorkGroupSize` or `maxComputeWorkGroupInvocations`.
    #[error("workgroup size {size:?} exceeds the device's limits (maxComputeWorkGroupSize {max:?}, maxComputeWorkGroupInvocations {invocations})")]
    WorkgroupTooLarge {
        /// The size asked for.
        size: [u32; 3],
        /// `maxComputeWorkGroupSize`.
        max: [u32; 3],
        /// `maxComputeWorkGroupInvocations`.
        invocations: u32,
    },
    /// A required subgroup size the device can't give.
    #[error("subgroup size {size} can't be required: {why}")]
    SubgroupSize {
        /// The size asked for.
        size: u32,
        /// What the device lacks or allows.
        why: String,
    },
    /// The kernel's shared memory, with these specialization constants and workgroup size,
    /// is over `maxComputeSharedMemorySize` (a driver may take such a pipeline and fail when
    /// it runs).
    #[error("kernel `{kernel}` variant `{variant}` declares {bytes} bytes of shared memory with these specialization constants; the device allows {limit} (maxComputeSharedMemorySize)")]
    SharedMemoryTooLarge {
        /// The kernel's name.
        kernel: &'static str,
        /// The variant's name.
        variant: String,
        /// Bytes of its Workgroup variables, unpadded (a lower bound of what it needs).
        bytes: u64,
        /// `maxComputeSharedMemorySize`.
        limit: u32,
    },
    /// A workgroup size with a zero dimension.
    #[error("workgroup size {0:?} has a zero dimension")]
    WorkgroupZero([u32; 3]),
    /// The kernel's push constants exceed `maxPushConstantsSize`.
    #[error("kernel `{kernel}` declares {size} bytes of push constants; the device allows {limit} (maxPushConstantsSize)")]
    PushConstantsTooLarge {
        /// The kernel's name.
        kernel: &'static str,
        /// Bytes of its push-constant range.
        size: u32,
        /// `maxPushConstantsSize`.
        limit: u32,
    },
    /// The variant's words are not SPIR-V.
    #[error("kernel `{kernel}` variant `{variant}`: the SPIR-V is malformed ({why})")]
    BadSpirv {
        /// The kernel's name.
        kernel: &'static str,
        /// The variant's name.
        variant: String,
        /// What is wrong.
        why: &'static str,
    },
    /// Specialization entries that name one constant id twice (a hand-written
    /// [`SpecConstants`] impl, or an id that is also the workgroup size's).
    #[error("kernel `{kernel}`: specialization constant id {id} is given more than once (ids 233/234/235 are the workgroup size's unless the kernel names its own)")]
    DuplicateSpecId {
        /// The kernel's name.
        kernel: &'static str,
        /// The repeated id.
        id: u32,
    },
    /// The kernel's push-constant declaration disagrees with its SPIR-V.
    #[error("kernel `{kernel}` variant `{variant}`: {why}")]
    PushConstantsMismatch {
        /// The kernel's name.
        kernel: &'static str,
        /// The variant's name.
        variant: String,
        /// What disagrees.
        why: String,
    },
    /// A binding name the loaded variant does not have ([`LoadedKernel::format_of`]).
    #[error("kernel `{kernel}` variant `{variant}` has no binding named `{name}`; its bindings: {}", .available.join(", "))]
    NoSuchBinding {
        /// The kernel's name.
        kernel: &'static str,
        /// The variant's name.
        variant: String,
        /// The name asked for.
        name: String,
        /// The variant's binding names.
        available: Vec<&'static str>,
    },
    /// A pipeline cache file from another device or driver, or damaged.
    #[error("pipeline cache rejected: {0}")]
    CacheRejected(String),
    /// Reading or writing the pipeline cache file.
    #[error("pipeline cache file: {0}")]
    CacheIo(#[from] std::io::Error),
    /// A device error.
    #[error(transparent)]
    Device(#[from] crate::device::DeviceError),
}

/// How to load one kernel (see [`crate::Context::load_with`]); the default loads as
/// [`crate::Context::load`] does. Build one with [`LoadOptions::variant`],
/// [`LoadOptions::variant_named`] or [`LoadOptions::options`] (or `default()` and the setters).
#[non_exhaustive]
#[derive(Clone, Debug, Default)]
pub struct LoadOptions {
    /// Variant options for this kernel (clamped to the device); `None`: the context's.
    pub options: Option<Options>,
    /// Use exactly this variant (e.g. `fp16s`), failing if the kernel has none such or the
    /// device can't run it; options are then ignored. For tests and comparisons.
    pub variant: Option<VariantKey>,
}

impl LoadOptions {
    /// Load exactly the variant `key` (e.g. to test every variant: `v.key` of each of
    /// `K::INFO.variants`).
    pub fn variant(key: VariantKey) -> LoadOptions {
        LoadOptions {
            variant: Some(key),
            options: None,
        }
    }

    /// Load exactly the variant named `name` (a [`VariantKey::name`], e.g. `"fp16s"`): the
    /// name parsed, then as [`LoadOptions::variant`]. A string that is no variant name is a
    /// [`ParseVariantError`] here (a name the kernel lacks fails when it is loaded).
    pub fn variant_named(name: &str) -> Result<LoadOptions, ParseVariantError> {
        Ok(LoadOptions::variant(VariantKey::parse(name)?))
    }

    /// Load with these per-kernel options instead of the context's.
    pub fn options(options: Options) -> LoadOptions {
        LoadOptions {
            options: Some(options),
            variant: None,
        }
    }

    /// These load options, forcing the variant `key`.
    pub fn with_variant(mut self, key: VariantKey) -> LoadOptions {
        self.variant = Some(key);
        self
    }

    /// These load options, with per-kernel `options` instead of the context's.
    pub fn with_options(mut self, options: Options) -> LoadOptions {
        self.options = Some(options);
        self
    }
}

/// (specialization entries, workgroup size, required subgroup size or 0).
type PipelineKey = (Vec<(u32, u32)>, [u32; 3], u32);

/// A kernel with its variant chosen and its shader module made. Pipelines come from it.
pub struct LoadedKernel<K: Kernel> {
    pub(crate) shared: Arc<Shared>,
    pub(crate) variant: &'static VariantInfo,
    selection: Selection,
    module: vk::ShaderModule,
    pub(crate) set_layout: vk::DescriptorSetLayout,
    pub(crate) layout: vk::PipelineLayout,
    /// Bytes of the push-constant range (the block's size rounded up to 4; 0: none), computed
    /// once here and checked against every dispatch's push constants.
    pub(crate) push_range: u32,
    pipelines: Mutex<HashMap<PipelineKey, vk::Pipeline>>,
    _kernel: PhantomData<fn() -> K>,
}

impl<K: Kernel> Drop for LoadedKernel<K> {
    fn drop(&mut self) {
        if self.shared.is_poisoned() {
            // A pipeline may be bound by work the GPU did not finish: leak (see `Shared`).
            return;
        }
        let pipelines = self.pipelines.get_mut().unwrap_or_else(|e| e.into_inner());
        let pipelines = pipelines.drain().map(|(_, p)| p);
        // SAFETY: these objects are this kernel's alone; every command list that bound one of
        // its pipelines holds an Arc of this kernel and waits for its work before dropping it,
        // so none is in use now.
        unsafe {
            destroy_kernel(
                &self.shared,
                pipelines,
                self.layout,
                self.set_layout,
                self.module,
            )
        }
    }
}

/// The descriptor type of a binding kind.
pub(crate) fn descriptor_type(kind: BindingKind) -> vk::DescriptorType {
    match kind {
        BindingKind::StorageBuffer => vk::DescriptorType::STORAGE_BUFFER,
        BindingKind::UniformBuffer => vk::DescriptorType::UNIFORM_BUFFER,
        BindingKind::SampledImage => vk::DescriptorType::COMBINED_IMAGE_SAMPLER,
        BindingKind::StorageImage => vk::DescriptorType::STORAGE_IMAGE,
    }
}

/// Bytes of the kernel's push-constant range: the block's size rounded up to 4, as Vulkan
/// requires of a range (and as the generated `PushConstants` struct is padded).
pub(crate) fn push_range(info: &KernelInfo) -> u32 {
    info.push_constants
        .map(|p| p.size.div_ceil(4) * 4)
        .unwrap_or(0)
}

/// The descriptor-set layout's bindings of `variant` (set 0, one descriptor per binding).
fn layout_bindings(variant: &VariantInfo) -> Vec<vk::DescriptorSetLayoutBinding<'static>> {
    variant
        .bindings
        .iter()
        .map(|b| {
            vk::DescriptorSetLayoutBinding::default()
                .binding(b.binding)
                .descriptor_type(descriptor_type(b.kind))
                .descriptor_count(1)
                .stage_flags(vk::ShaderStageFlags::COMPUTE)
        })
        .collect()
}

impl<K: Kernel> LoadedKernel<K> {
    /// Chooses `K`'s variant as `load` says (else by `context_options`), and makes its module
    /// and layouts.
    pub(crate) fn load(
        shared: &Arc<Shared>,
        context_options: &Options,
        load: &LoadOptions,
    ) -> Result<Arc<Self>, PipelineError> {
        shared.check_usable()?;
        let features = &shared.features;
        let selection = match (&load.variant, &load.options) {
            (Some(key), _) => force_variant(K::INFO, key, features)?,
            (None, options) => {
                let options = options.as_ref().unwrap_or(context_options);
                select_variant(K::INFO, &options.clamp_to(features), features)?
            }
        };
        let variant = &K::INFO.variants[selection.index];
        crate::spirv::check_spirv(K::INFO, variant)?;
        let push_range = push_range(K::INFO);
        let limit = features.limits.max_push_constants_size;
        if push_range > limit {
            return Err(PipelineError::PushConstantsTooLarge {
                kernel: K::INFO.name,
                size: push_range,
                limit,
            });
        }
        let bindings = layout_bindings(variant);
        // SAFETY: the words passed `check_spirv`, and the driver checks the rest (with the
        // validation layer in tests); the objects are owned by the returned kernel, which
        // destroys them (on drop) before its `shared` goes.
        let (module, set_layout, layout) =
            unsafe { create_layouts(shared, variant.spirv, &bindings, push_range)? };
        Ok(Arc::new(LoadedKernel {
            shared: shared.clone(),
            variant,
            selection,
            module,
            set_layout,
            layout,
            push_range,
            pipelines: Mutex::new(HashMap::new()),
            _kernel: PhantomData,
        }))
    }

    /// The kernel's metadata.
    pub fn info(&self) -> &'static vkprism_core::KernelInfo {
        K::INFO
    }

    /// The variant in use.
    pub fn variant(&self) -> &'static VariantInfo {
        self.variant
    }
    /// The tensor (or image texel) format of the binding named `name` (its block or variable
    /// name in the GLSL, e.g. `"a_blob"`) in the loaded variant: the format to make its tensor
    /// in. A name the variant lacks is [`PipelineError::NoSuchBinding`], listing its bindings.
    pub fn format_of(&self, name: &str) -> Result<TensorFormat, PipelineError> {
        self.variant
            .format_of(name)
            .ok_or_else(|| PipelineError::NoSuchBinding {
                kernel: K::INFO.name,
                variant: self.variant.key.name(),
                name: name.to_string(),
                available: self.variant.bindings.iter().map(|b| b.name).collect(),
            })
    }
    /// Which variant was chosen and why.
    pub fn selection(&self) -> &Selection {
        &self.selection
    }

    /// A pipeline with these specialization constants and workgroup size (`None`: the kernel's
    /// default). Pipelines are cached: asking again is cheap.
    pub fn pipeline(
        self: &Arc<Self>,
        spec: &K::SpecConstants,
        local_size: Option<[u32; 3]>,
    ) -> Result<Pipeline<K>, PipelineError> {
        self.pipeline_with(
            spec,
            &PipelineDesc {
                local_size,
                subgroup_size: None,
            },
        )
    }

    /// A pipeline with everything device-specific chosen at creation: workgroup size and, where
    /// the device has `subgroupSizeControl`, a required subgroup size.
    pub fn pipeline_with(
        self: &Arc<Self>,
        spec: &K::SpecConstants,
        desc: &PipelineDesc,
    ) -> Result<Pipeline<K>, PipelineError> {
        let local = desc
            .local_size
            .unwrap_or(K::INFO.local_size.map(|d| d.default));
        self.check_desc(desc, local)?;
        let mut entries = spec.entries();
        for (d, dim) in K::INFO.local_size.iter().enumerate() {
            if let Some(id) = dim.spec_id {
                entries.push((id, local[d]));
            }
        }
        // The device facts the variant reads, from the device (the compiler reserved their ids).
        for fact in self.variant.device_facts {
            let value = self.shared.device_fact(*fact, desc.subgroup_size);
            entries.push((fact.spec_id(), value));
        }
        entries.sort();
        if let Some(w) = entries.windows(2).find(|w| w[0].0 == w[1].0) {
            return Err(PipelineError::DuplicateSpecId {
                kernel: K::INFO.name,
                id: w[0].0,
            });
        }
        let subgroup = desc.subgroup_size.unwrap_or(0);
        let key = (entries, local, subgroup);
        let mut cache = self.pipelines.lock().unwrap_or_else(|e| e.into_inner());
        let pipeline = match cache.get(&key) {
            Some(p) => *p,
            None => {
                self.check_shared_memory(&key.0)?;
                self.shared.check_usable()?;
                // SAFETY: the module and layout are this kernel's and alive; the new pipeline
                // goes into the kernel's cache, which destroys it with the kernel, before the
                // layout and module; the subgroup size was checked by `check_desc`.
                let p = unsafe {
                    create_compute_pipeline(
                        &self.shared,
                        self.module,
                        self.layout,
                        &key.0,
                        desc.subgroup_size,
                    )?
                };
                cache.insert(key, p);
                p
            }
        };
        Ok(Pipeline {
            kernel: self.clone(),
            pipeline,
            local_size: local,
        })
    }

    /// Checks a pipeline's subgroup and workgroup sizes against the device.
    fn check_desc(&self, desc: &PipelineDesc, local: [u32; 3]) -> Result<(), PipelineError> {
        let features = &self.shared.features;
        let l = &features.limits;
        if let Some(size) = desc.subgroup_size {
            let why = if !features.supports(Feature::SubgroupSizeControl) {
                Some("the device lacks subgroupSizeControl".to_string())
            } else if !size.is_power_of_two()
                || size < l.min_subgroup_size
                || size > l.max_subgroup_size
            {
                Some(format!(
                    "the device allows powers of two from {} to {}",
                    l.min_subgroup_size, l.max_subgroup_size
                ))
            } else {
                None
            };
            if let Some(why) = why {
                return Err(PipelineError::SubgroupSize { size, why });
            }
        }
        if local.contains(&0) {
            return Err(PipelineError::WorkgroupZero(local));
        }
        let invocations = local.iter().map(|x| *x as u64).product::<u64>();
        if local
            .iter()
            .zip(l.max_compute_work_group_size)
            .any(|(a, b)| *a > b)
            || invocations > l.max_compute_work_group_invocations as u64
        {
            return Err(PipelineError::WorkgroupTooLarge {
                size: local,
                max: l.max_compute_work_group_size,
                invocations: l.max_compute_work_group_invocations,
            });
        }
        Ok(())
    }

    /// The variant's shared memory with these specialization entries, against the device's
    /// limit (no check where the module's sizes can't be evaluated: see `spirv::workgroup_bytes`).
    fn check_shared_memory(&self, entries: &[(u32, u32)]) -> Result<(), PipelineError> {
        let limit = self.shared.features.limits.max_compute_shared_memory_size;
        match crate::spirv::workgroup_bytes(self.variant.spirv, entries) {
            Some(bytes) if bytes > u64::from(limit) => Err(PipelineError::SharedMemoryTooLarge {
                kernel: K::INFO.name,
                variant: self.variant.key.name(),
                bytes,
                limit,
            }),
            _ => Ok(()),
        }
    }
}

/// What is chosen per device when a pipeline is created.
#[non_exhaustive]
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct PipelineDesc {
    /// Workgroup size; `None`: the kernel's default.
    pub local_size: Option<[u32; 3]>,
    /// Required subgroup size (needs `subgroupSizeControl`); `None`: the driver's choice.
    pub subgroup_size: Option<u32>,
}

impl PipelineDesc {
    /// The kernel's default workgroup size, the driver's subgroup size.
    pub fn new() -> PipelineDesc {
        PipelineDesc::default()
    }

    /// This description with workgroup size `local_size`.
    pub fn with_local_size(mut self, local_size: [u32; 3]) -> PipelineDesc {
        self.local_size = Some(local_size);
        self
    }

    /// This description with required subgroup size `size`.
    pub fn with_subgroup_size(mut self, size: u32) -> PipelineDesc {
        self.subgroup_size = Some(size);
        self
    }
}

/// A compute pipeline of kernel `K`. Holds its kernel alive.
pub struct Pipeline<K: Kernel> {
    pub(crate) kernel: Arc<LoadedKernel<K>>,
    pub(crate) pipeline: vk::Pipeline,
    pub(crate) local_size: [u32; 3],
}

impl<K: Kernel> Clone for Pipeline<K> {
    fn clone(&self) -> Self {
        Pipeline {
            kernel: self.kernel.clone(),
            pipeline: self.pipeline,
            local_size: self.local_size,
        }
    }
}

impl<K: Kernel> Pipeline<K> {
    /// The workgroup size the pipeline was made with.
    pub fn local_size(&self) -> [u32; 3] {
        self.local_size
    }

    /// The loaded kernel this pipeline belongs to.
    pub fn kernel(&self) -> &Arc<LoadedKernel<K>> {
        &self.kernel
    }
}

debug_as_display!(PipelineError);
