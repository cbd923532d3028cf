//! Loading a kernel (variant selection, shader module, descriptor-set and pipeline layouts) and
//! its compute pipelines, cached per (specialization values, workgroup size, subgroup size).
//! The on-disk `VkPipelineCache` is `cache.rs`.

use crate::cache::CACHE_LOCK;
use crate::device::{api_lock, vkerr, Shared};
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
    /// The shader never reads `gl_NumWorkGroups`, so a dispatch too large for
    /// `maxComputeWorkGroupCount` can be split with `vkCmdDispatchBase` and behave as one
    /// (`gl_WorkGroupID` and `gl_GlobalInvocationID` include the base); its pipelines are made
    /// with `DISPATCH_BASE`.
    pub(crate) dispatch_base: bool,
    pipelines: Mutex<HashMap<PipelineKey, vk::Pipeline>>,
    _kernel: PhantomData<fn() -> K>,
}

impl<K: Kernel> Drop for LoadedKernel<K> {
    fn drop(&mut self) {
        if self.shared.is_poisoned() {
            // A pipeline may be bound by work the GPU did not finish: leak (see `Shared`).
            return;
        }
        let d = &self.shared.device;
        let _api = api_lock();
        let pipelines = self.pipelines.get_mut().unwrap_or_else(|e| e.into_inner());
        // SAFETY: these objects are this kernel's alone; every command list that bound one of
        // its pipelines holds an Arc of this kernel and waits for its work before dropping it,
        // so none is in use now.
        unsafe {
            for (_, p) in pipelines.drain() {
                d.destroy_pipeline(p, None);
            }
            d.destroy_pipeline_layout(self.layout, None);
            d.destroy_descriptor_set_layout(self.set_layout, None);
            d.destroy_shader_module(self.module, None);
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
fn push_range(info: &KernelInfo) -> u32 {
    info.push_constants
        .map(|p| p.size.div_ceil(4) * 4)
        .unwrap_or(0)
}

/// The driver trusts the words it is given: check what makes them a compute module vkprism can
/// use, cheaply (one pass over the words): the header (magic, a SPIR-V version up to 1.6, an id
/// bound), well-formed instructions (no zero length, none running past the end), an
/// `OpEntryPoint GLCompute "main"`, `reads_num_workgroups` set where the module decorates
/// `NumWorkgroups`, and a push-constant block exactly where the kernel declares push constants
/// (its last member starting inside the declared range). Not a full `spirv-val`: the [`Kernel`] contract covers
/// the rest.
fn check_spirv(info: &KernelInfo, variant: &VariantInfo) -> Result<(), PipelineError> {
    let bad = |why| PipelineError::BadSpirv {
        kernel: info.name,
        variant: variant.key.name(),
        why,
    };
    check_header(variant.spirv).map_err(bad)?;
    let facts = scan_module(variant.spirv).map_err(bad)?;
    if !facts.entry {
        return Err(bad("no OpEntryPoint GLCompute named \"main\""));
    }
    if facts.num_workgroups && !variant.reads_num_workgroups {
        // A split dispatch would show the shader the wrong gl_NumWorkGroups.
        return Err(bad(
            "it reads gl_NumWorkGroups (BuiltIn NumWorkgroups) but the variant says it does not",
        ));
    }
    check_push_block(&facts, push_range(info)).map_err(|why| PipelineError::PushConstantsMismatch {
        kernel: info.name,
        variant: variant.key.name(),
        why,
    })
}

/// The 5-word header: magic, a version from 1.0 to 1.6, a plausible id bound, schema 0.
fn check_header(w: &[u32]) -> Result<(), &'static str> {
    if w.len() < 5 {
        return Err("shorter than the 5-word header");
    }
    if w[0] != SPIRV_MAGIC {
        return Err("no SPIR-V magic number (or words of the wrong endianness)");
    }
    let (major, minor) = ((w[1] >> 16) & 0xff, (w[1] >> 8) & 0xff);
    if major != 1 || minor > 6 || w[1] & 0xff00_00ff != 0 {
        return Err("not a SPIR-V version from 1.0 to 1.6");
    }
    let bound = w[3];
    if bound == 0 || bound > 1 << 22 || w[4] != 0 {
        return Err("an id bound of 0 or over 4194304, or a nonzero schema word");
    }
    Ok(())
}

/// What [`check_spirv`] needs to know of a module, from one pass over its instructions.
#[derive(Default)]
struct ModuleFacts {
    /// An `OpEntryPoint GLCompute "main"`.
    entry: bool,
    /// Something is decorated `BuiltIn NumWorkgroups`.
    num_workgroups: bool,
    /// (pointer id, pointee) of push-constant pointer types.
    pointers: Vec<(u32, u32)>,
    /// Pointer types of push-constant variables.
    push_vars: Vec<u32>,
    /// (struct id, member offset) of every member offset decoration.
    offsets: Vec<(u32, u32)>,
}

/// Walks the instructions after the header (`w` passed [`check_header`]).
fn scan_module(w: &[u32]) -> Result<ModuleFacts, &'static str> {
    const OP_ENTRY_POINT: u32 = 15;
    const OP_DECORATE: u32 = 71;
    const OP_MEMBER_DECORATE: u32 = 72;
    const DECORATION_BUILTIN: u32 = 11;
    const BUILTIN_NUM_WORKGROUPS: u32 = 24;
    const OP_VARIABLE: u32 = 59;
    const OP_TYPE_POINTER: u32 = 32;
    const EXECUTION_MODEL_GLCOMPUTE: u32 = 5;
    const STORAGE_CLASS_PUSH_CONSTANT: u32 = 9;
    const DECORATION_OFFSET: u32 = 35;
    let mut facts = ModuleFacts::default();
    for ins in instructions(w) {
        let (op, ins) = ins?;
        let count = ins.len();
        match op {
            // "main\0" packed little-endian: 'm' 'a' 'i' 'n', then a NUL word.
            OP_ENTRY_POINT
                if count >= 4
                    && ins[1] == EXECUTION_MODEL_GLCOMPUTE
                    && ins[3..].starts_with(&[0x6e69_616d, 0]) =>
            {
                facts.entry = true;
            }
            OP_TYPE_POINTER if count == 4 && ins[2] == STORAGE_CLASS_PUSH_CONSTANT => {
                facts.pointers.push((ins[1], ins[3]))
            }
            OP_VARIABLE if count >= 4 && ins[3] == STORAGE_CLASS_PUSH_CONSTANT => {
                facts.push_vars.push(ins[1])
            }
            OP_MEMBER_DECORATE if count >= 5 && ins[3] == DECORATION_OFFSET => {
                facts.offsets.push((ins[1], ins[4]))
            }
            OP_DECORATE
                if count >= 4
                    && ins[2] == DECORATION_BUILTIN
                    && ins[3] == BUILTIN_NUM_WORKGROUPS =>
            {
                facts.num_workgroups = true
            }
            OP_MEMBER_DECORATE
                if count >= 5
                    && ins[3] == DECORATION_BUILTIN
                    && ins[4] == BUILTIN_NUM_WORKGROUPS =>
            {
                facts.num_workgroups = true
            }
            _ => {}
        }
    }
    Ok(facts)
}

/// The instructions after a module's 5-word header: each opcode with the whole instruction
/// (its first word included), or an error at the first of length 0 or running past the end
/// (and nothing after it).
pub(crate) fn instructions(
    w: &[u32],
) -> impl Iterator<Item = Result<(u32, &[u32]), &'static str>> + '_ {
    let mut i = 5;
    std::iter::from_fn(move || {
        let first = *w.get(i)?;
        let count = (first >> 16) as usize;
        if count == 0 || i + count > w.len() {
            i = w.len();
            return Some(Err("an instruction of length 0 or running past the end"));
        }
        let ins = &w[i..i + count];
        i += count;
        Some(Ok((first & 0xffff, ins)))
    })
}

/// A push-constant block exactly where the kernel declares `range` bytes of push constants, its
/// last member starting inside them.
fn check_push_block(facts: &ModuleFacts, range: u32) -> Result<(), String> {
    let block = facts
        .pointers
        .iter()
        .find(|(ptr, _)| facts.push_vars.contains(ptr))
        .map(|(_, pointee)| *pointee);
    match (block, range) {
        (None, 0) => Ok(()),
        (Some(_), 0) => Err(
            "the SPIR-V has a push-constant block, but the kernel declares no push constants".into(),
        ),
        (None, r) => Err(format!(
            "the kernel declares {r} bytes of push constants, but the SPIR-V has no push-constant block"
        )),
        (Some(block), r) => {
            let last = facts
                .offsets
                .iter()
                .filter(|(s, _)| *s == block)
                .map(|(_, o)| *o)
                .max()
                .unwrap_or(0);
            if last >= r {
                return Err(format!(
                    "the kernel declares {r} bytes of push constants, but the SPIR-V's block has a member at byte {last}"
                ));
            }
            Ok(())
        }
    }
}

/// The shader module, descriptor-set layout (set 0, one descriptor per binding) and pipeline
/// layout (with a push-constant range of `push_range` bytes, if any) of `variant`. On an error,
/// what was made is destroyed.
///
/// # Safety
/// `variant.spirv` passed [`check_spirv`]; the caller destroys the objects before `shared`'s
/// device goes.
unsafe fn create_layouts(
    shared: &Shared,
    variant: &VariantInfo,
    push_range: u32,
) -> Result<
    (
        vk::ShaderModule,
        vk::DescriptorSetLayout,
        vk::PipelineLayout,
    ),
    PipelineError,
> {
    let d = &shared.device;
    let _api = api_lock();
    let code = vk::ShaderModuleCreateInfo::default().code(variant.spirv);
    // SAFETY: the words start with a SPIR-V header (the caller's contract).
    let module =
        unsafe { d.create_shader_module(&code, None) }.map_err(vkerr("vkCreateShaderModule"))?;
    let bindings: Vec<_> = variant
        .bindings
        .iter()
        .map(|b| {
            vk::DescriptorSetLayoutBinding::default()
                .binding(b.binding)
                .descriptor_type(descriptor_type(b.kind))
                .descriptor_count(1)
                .stage_flags(vk::ShaderStageFlags::COMPUTE)
        })
        .collect();
    let set_info = vk::DescriptorSetLayoutCreateInfo::default().bindings(&bindings);
    // SAFETY: a plain creation; `bindings` lives until the call returns.
    let set_layout = match unsafe { d.create_descriptor_set_layout(&set_info, None) } {
        Ok(l) => l,
        Err(e) => {
            // SAFETY: the module was just made and nothing uses it.
            unsafe { d.destroy_shader_module(module, None) };
            return Err(vkerr("vkCreateDescriptorSetLayout")(e).into());
        }
    };
    let ranges = [vk::PushConstantRange {
        stage_flags: vk::ShaderStageFlags::COMPUTE,
        offset: 0,
        size: push_range,
    }];
    let layouts = [set_layout];
    let mut info = vk::PipelineLayoutCreateInfo::default().set_layouts(&layouts);
    if push_range > 0 {
        info = info.push_constant_ranges(&ranges);
    }
    // SAFETY: a plain creation; `layouts` and `ranges` live until the call returns.
    match unsafe { d.create_pipeline_layout(&info, None) } {
        Ok(layout) => Ok((module, set_layout, layout)),
        Err(e) => {
            // SAFETY: both were just made and nothing uses them.
            unsafe {
                d.destroy_descriptor_set_layout(set_layout, None);
                d.destroy_shader_module(module, None);
            }
            Err(vkerr("vkCreatePipelineLayout")(e).into())
        }
    }
}

const SPIRV_MAGIC: u32 = 0x0723_0203;
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
        check_spirv(K::INFO, variant)?;
        let push_range = push_range(K::INFO);
        let limit = features.limits.max_push_constants_size;
        if push_range > limit {
            return Err(PipelineError::PushConstantsTooLarge {
                kernel: K::INFO.name,
                size: push_range,
                limit,
            });
        }
        // SAFETY: the words passed `check_spirv`, and the driver checks the rest (with the
        // validation layer in tests); the objects are owned by the returned kernel.
        let (module, set_layout, layout) = unsafe { create_layouts(shared, variant, push_range)? };
        Ok(Arc::new(LoadedKernel {
            dispatch_base: !variant.reads_num_workgroups,
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
                // goes into the kernel's cache, which destroys it with the kernel.
                let p = unsafe { self.create_pipeline(&key.0, desc.subgroup_size)? };
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
    /// limit (no check where the module's sizes can't be evaluated: see `shared_memory`).
    fn check_shared_memory(&self, entries: &[(u32, u32)]) -> Result<(), PipelineError> {
        let limit = self.shared.features.limits.max_compute_shared_memory_size;
        match crate::shared_memory::workgroup_bytes(self.variant.spirv, entries) {
            Some(bytes) if bytes > u64::from(limit) => Err(PipelineError::SharedMemoryTooLarge {
                kernel: K::INFO.name,
                variant: self.variant.key.name(),
                bytes,
                limit,
            }),
            _ => Ok(()),
        }
    }

    /// `vkCreateComputePipelines` with these (sorted) specialization entries, 4 bytes each.
    ///
    /// # Safety
    /// The caller destroys the pipeline before the kernel's layout and module go.
    unsafe fn create_pipeline(
        &self,
        entries: &[(u32, u32)],
        subgroup_size: Option<u32>,
    ) -> Result<vk::Pipeline, PipelineError> {
        let map: Vec<vk::SpecializationMapEntry> = entries
            .iter()
            .enumerate()
            .map(|(i, (id, _))| vk::SpecializationMapEntry {
                constant_id: *id,
                offset: i as u32 * 4,
                size: 4,
            })
            .collect();
        let data: Vec<u8> = entries.iter().flat_map(|(_, v)| v.to_le_bytes()).collect();
        let spec_info = vk::SpecializationInfo::default()
            .map_entries(&map)
            .data(&data);
        let mut required = vk::PipelineShaderStageRequiredSubgroupSizeCreateInfo::default()
            .required_subgroup_size(subgroup_size.unwrap_or(0));
        let mut stage = vk::PipelineShaderStageCreateInfo::default()
            .stage(vk::ShaderStageFlags::COMPUTE)
            .module(self.module)
            .name(c"main")
            .specialization_info(&spec_info);
        if subgroup_size.is_some() {
            stage = stage.push_next(&mut required);
        }
        let mut flags = if self.dispatch_base {
            vk::PipelineCreateFlags::DISPATCH_BASE
        } else {
            vk::PipelineCreateFlags::empty()
        };
        if self.shared.pipeline_statistics {
            flags |= vk::PipelineCreateFlags::CAPTURE_STATISTICS_KHR;
        }
        let info = vk::ComputePipelineCreateInfo::default()
            .flags(flags)
            .stage(stage)
            .layout(self.layout);
        // The API lock before any other lock (see `api_lock`).
        let _api = api_lock();
        let _cache = CACHE_LOCK.lock().unwrap_or_else(|e| e.into_inner());
        // SAFETY: everything `info` points to lives until the call returns; the pipeline cache
        // is externally synchronized by CACHE_LOCK; the subgroup size was checked against the
        // device by `check_desc`.
        let pipelines = unsafe {
            self.shared
                .device
                .create_compute_pipelines(self.shared.pipeline_cache, &[info], None)
        }
        .map_err(|(_, e)| vkerr("vkCreateComputePipelines")(e))?;
        Ok(pipelines[0])
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
    /// Whether a dispatch over more workgroups than `maxComputeWorkGroupCount` is split into
    /// several (the shader does not read `gl_NumWorkGroups`); otherwise it is an error.
    pub fn splits_large_dispatches(&self) -> bool {
        self.kernel.dispatch_base
    }

    /// The workgroup size the pipeline was made with.
    pub fn local_size(&self) -> [u32; 3] {
        self.local_size
    }

    /// The loaded kernel this pipeline belongs to.
    pub fn kernel(&self) -> &Arc<LoadedKernel<K>> {
        &self.kernel
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spirv_checks_refuse_what_is_not_a_compute_module() {
        use vkprism_core::{FloatMode, VariantKey};
        fn check(words: &'static [u32], push: Option<u32>) -> Result<(), PipelineError> {
            let variants: &'static [VariantInfo] = Box::leak(Box::new([VariantInfo {
                key: VariantKey::new(FloatMode::Fp32),
                spirv: words,
                bindings: &[],
                cooperative_matrices: &[],
                device_facts: &[],
                reads_num_workgroups: false,
                vulkan_version: vkprism_core::api_version(1, 1),
                capabilities_require: vkprism_core::FeatureSet::EMPTY,
                tested_facts: &[],
            }]));
            let info = KernelInfo {
                name: "k",
                variants,
                push_constants: push.map(|size| vkprism_core::PushConstantInfo { size }),
                spec_constants: &[],
                local_size: [vkprism_core::LocalSizeDim {
                    default: 1,
                    spec_id: None,
                }; 3],
            };
            check_spirv(&info, &variants[0])
        }
        fn leak(w: Vec<u32>) -> &'static [u32] {
            Box::leak(w.into_boxed_slice())
        }
        let header = vec![SPIRV_MAGIC, 0x0001_0300, 0, 100, 0];
        // OpEntryPoint GLCompute %1 "main" (count 5: opcode word, model, id, "main", NUL).
        let entry = [(5 << 16) | 15, 5, 1, 0x6e69_616d, 0];
        let why = |r: Result<(), PipelineError>| match r {
            Err(PipelineError::BadSpirv { why, .. }) => why,
            other => panic!("{other:?}"),
        };
        let mut ok = header.clone();
        ok.extend(entry);
        assert!(check(leak(ok.clone()), None).is_ok());
        assert!(why(check(leak(header.clone()), None)).contains("OpEntryPoint"));
        let mut v = ok.clone();
        v[1] = 0x0002_0000;
        assert!(why(check(leak(v), None)).contains("version"));
        let mut v = ok.clone();
        v[3] = 0;
        assert!(why(check(leak(v), None)).contains("bound"));
        let mut v = ok.clone();
        v.push(9 << 16);
        assert!(why(check(leak(v), None)).contains("past the end"));
        let mut v = ok.clone();
        v[5] = (5 << 16) | 15;
        v[8] = 0x6e69_616e; // "nain"
        assert!(why(check(leak(v), None)).contains("OpEntryPoint"));
        // Reads gl_NumWorkGroups without saying so.
        let mut v = ok.clone();
        v.extend([(4 << 16) | 71, 7, 11, 24]);
        assert!(why(check(leak(v), None)).contains("gl_NumWorkGroups"));
        // Push constants declared but no block in the module.
        assert!(matches!(
            check(leak(ok), Some(16)),
            Err(PipelineError::PushConstantsMismatch { .. })
        ));
    }
}

debug_as_display!(PipelineError);
