//! Loading a kernel (variant selection, shader module, descriptor-set and pipeline layouts) and
//! its compute pipelines, cached per (specialization values, workgroup size); and the
//! `VkPipelineCache`, saved to and loaded from disk with a header check.

use crate::context::{vkerr, Context, Shared};
use crate::kernel::{Kernel, SpecConstants};
use crate::select::{force_variant, select_variant, Options, SelectError, Selection};
use ash::vk;
use std::collections::HashMap;
use std::marker::PhantomData;
use std::path::Path;
use std::sync::{Arc, Mutex};
use vkprism_core::{BindingKind, VariantInfo};

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(transparent)]
    Select(#[from] SelectError),
    #[error("workgroup size {size:?} exceeds the device's limits (maxComputeWorkGroupSize {max:?}, maxComputeWorkGroupInvocations {invocations})")]
    WorkgroupTooLarge {
        size: [u32; 3],
        max: [u32; 3],
        invocations: u32,
    },
    #[error("subgroup size {size} can't be required: {why}")]
    SubgroupSize { size: u32, why: String },
    #[error("workgroup size {0:?} has a zero dimension")]
    WorkgroupZero([u32; 3]),
    #[error("kernel `{kernel}` declares {size} bytes of push constants; the device allows {limit} (maxPushConstantsSize)")]
    PushConstantsTooLarge {
        kernel: &'static str,
        size: u32,
        limit: u32,
    },
    #[error("kernel `{kernel}` variant `{variant}`: the SPIR-V is malformed ({why})")]
    BadSpirv {
        kernel: &'static str,
        variant: String,
        why: &'static str,
    },
    #[error("pipeline cache rejected: {0}")]
    CacheRejected(String),
    #[error("pipeline cache file: {0}")]
    CacheIo(#[from] std::io::Error),
    #[error(transparent)]
    Context(#[from] crate::context::Error),
}

/// How to load one kernel (see [`Context::load_with_options`]).
#[derive(Clone, Debug, Default)]
pub struct LoadOptions {
    /// Variant options for this kernel (clamped to the device); `None`: the context's.
    pub options: Option<Options>,
    /// Use exactly this variant (a [`vkprism_core::VariantKey::name`], e.g. `"fp16s"`), failing
    /// if the device can't run it; options are then ignored. For tests and comparisons.
    pub variant: Option<String>,
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
        let d = &self.shared.device;
        unsafe {
            for (_, p) in self
                .pipelines
                .get_mut()
                .unwrap_or_else(|e| e.into_inner())
                .drain()
            {
                d.destroy_pipeline(p, None);
            }
            d.destroy_pipeline_layout(self.layout, None);
            d.destroy_descriptor_set_layout(self.set_layout, None);
            d.destroy_shader_module(self.module, None);
        }
    }
}

pub(crate) fn descriptor_type(kind: BindingKind) -> vk::DescriptorType {
    match kind {
        BindingKind::StorageBuffer => vk::DescriptorType::STORAGE_BUFFER,
        BindingKind::UniformBuffer => vk::DescriptorType::UNIFORM_BUFFER,
        BindingKind::SampledImage => vk::DescriptorType::COMBINED_IMAGE_SAMPLER,
        BindingKind::StorageImage => vk::DescriptorType::STORAGE_IMAGE,
    }
}

impl Context {
    /// Loads `K` with the context's options: the best variant the device can run.
    pub fn load<K: Kernel>(&self) -> Result<Arc<LoadedKernel<K>>, Error> {
        self.load_with::<K>(&self.shared.options)
    }

    /// Loads `K` with per-kernel options (clamped to the device).
    pub fn load_with<K: Kernel>(&self, options: &Options) -> Result<Arc<LoadedKernel<K>>, Error> {
        let opts = options.clamp_to(&self.shared.features);
        let selection = select_variant(K::INFO, &opts, &self.shared.features)?;
        self.load_selection::<K>(selection)
    }

    /// Loads one named variant of `K` (e.g. to test every variant); errors if the device can't
    /// run it.
    pub fn load_variant<K: Kernel>(&self, name: &str) -> Result<Arc<LoadedKernel<K>>, Error> {
        let selection = force_variant(K::INFO, name, &self.shared.features)?;
        self.load_selection::<K>(selection)
    }

    /// Loads `K` as `options` say: a forced variant, per-kernel options, or the context's.
    pub fn load_with_options<K: Kernel>(
        &self,
        options: &LoadOptions,
    ) -> Result<Arc<LoadedKernel<K>>, Error> {
        match (&options.variant, &options.options) {
            (Some(name), _) => self.load_variant::<K>(name),
            (None, Some(o)) => self.load_with::<K>(o),
            (None, None) => self.load::<K>(),
        }
    }

    fn load_selection<K: Kernel>(
        &self,
        selection: Selection,
    ) -> Result<Arc<LoadedKernel<K>>, Error> {
        let shared = &self.shared;
        let info = K::INFO;
        let variant = &info.variants[selection.index];
        // The driver trusts the words it is given: check the little that makes them SPIR-V.
        let bad = |why| Error::BadSpirv {
            kernel: info.name,
            variant: variant.key.name(),
            why,
        };
        if variant.spirv.len() < 5 {
            return Err(bad("shorter than the 5-word header"));
        }
        if variant.spirv[0] != SPIRV_MAGIC {
            return Err(bad(
                "no SPIR-V magic number (or words of the wrong endianness)",
            ));
        }
        let push_size = push_range(info);
        if push_size > shared.features.limits.max_push_constants_size {
            return Err(Error::PushConstantsTooLarge {
                kernel: info.name,
                size: push_size,
                limit: shared.features.limits.max_push_constants_size,
            });
        }
        let d = &shared.device;
        let module = unsafe {
            d.create_shader_module(
                &vk::ShaderModuleCreateInfo::default().code(variant.spirv),
                None,
            )
        }
        .map_err(vkerr("vkCreateShaderModule"))?;
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
        let set_layout = match unsafe {
            d.create_descriptor_set_layout(
                &vk::DescriptorSetLayoutCreateInfo::default().bindings(&bindings),
                None,
            )
        } {
            Ok(l) => l,
            Err(e) => {
                unsafe { d.destroy_shader_module(module, None) };
                return Err(vkerr("vkCreateDescriptorSetLayout")(e).into());
            }
        };
        let ranges = [vk::PushConstantRange {
            stage_flags: vk::ShaderStageFlags::COMPUTE,
            offset: 0,
            size: push_size,
        }];
        let layouts = [set_layout];
        let mut li = vk::PipelineLayoutCreateInfo::default().set_layouts(&layouts);
        if push_size > 0 {
            li = li.push_constant_ranges(&ranges);
        }
        let layout = match unsafe { d.create_pipeline_layout(&li, None) } {
            Ok(l) => l,
            Err(e) => {
                unsafe {
                    d.destroy_descriptor_set_layout(set_layout, None);
                    d.destroy_shader_module(module, None);
                }
                return Err(vkerr("vkCreatePipelineLayout")(e).into());
            }
        };
        Ok(Arc::new(LoadedKernel {
            dispatch_base: !uses_builtin(variant.spirv, BUILTIN_NUM_WORKGROUPS),
            shared: shared.clone(),
            variant,
            selection,
            module,
            set_layout,
            layout,
            pipelines: Mutex::new(HashMap::new()),
            _kernel: PhantomData,
        }))
    }

    /// Loads a pipeline cache saved by [`Context::save_pipeline_cache`]. A file from another
    /// device or driver, or a damaged one, is rejected with the reason and nothing changes.
    pub fn load_pipeline_cache(&self, path: &Path) -> Result<(), Error> {
        let file = std::fs::read(path)?;
        self.check_cache_header(&file)?;
        let data = self.check_cache_trailer(&file)?;
        let d = &self.shared.device;
        let loaded = unsafe {
            d.create_pipeline_cache(
                &vk::PipelineCacheCreateInfo::default().initial_data(data),
                None,
            )
        }
        .map_err(vkerr("vkCreatePipelineCache"))?;
        let r = {
            let _cache = CACHE_LOCK.lock().unwrap_or_else(|e| e.into_inner());
            unsafe { d.merge_pipeline_caches(self.shared.pipeline_cache, &[loaded]) }
                .map_err(vkerr("vkMergePipelineCaches"))
        };
        unsafe { d.destroy_pipeline_cache(loaded, None) };
        r?;
        Ok(())
    }

    /// Writes the pipeline cache to `path` (atomically: a temporary file, then a rename).
    pub fn save_pipeline_cache(&self, path: &Path) -> Result<(), Error> {
        let _cache = CACHE_LOCK.lock().unwrap_or_else(|e| e.into_inner());
        let data = unsafe {
            self.shared
                .device
                .get_pipeline_cache_data(self.shared.pipeline_cache)
        }
        .map_err(vkerr("vkGetPipelineCacheData"))?;
        let mut file = data.clone();
        file.extend_from_slice(&self.cache_trailer(&data));
        let tmp = path.with_extension("tmp");
        std::fs::write(&tmp, &file)?;
        std::fs::rename(&tmp, path)?;
        Ok(())
    }

    /// What vkprism appends to the driver's cache data: a magic, the driver version (the
    /// Vulkan header lacks it) and the data's length and FNV-1a hash, so a truncated or damaged
    /// file is caught here rather than handed to the driver.
    fn cache_trailer(&self, data: &[u8]) -> [u8; TRAILER_LEN] {
        let mut t = [0u8; TRAILER_LEN];
        t[..8].copy_from_slice(TRAILER_MAGIC);
        t[8..12].copy_from_slice(&1u32.to_le_bytes());
        t[12..16].copy_from_slice(&self.shared.properties.driver_version.to_le_bytes());
        t[16..24].copy_from_slice(&(data.len() as u64).to_le_bytes());
        t[24..32].copy_from_slice(&fnv1a(data).to_le_bytes());
        t
    }

    /// Checks the trailer written by [`Context::save_pipeline_cache`] and returns the driver's
    /// data without it.
    fn check_cache_trailer<'d>(&self, file: &'d [u8]) -> Result<&'d [u8], Error> {
        let reject = |m: String| Err(Error::CacheRejected(m));
        if file.len() < 32 + TRAILER_LEN {
            return reject("truncated: no vkprism trailer after the driver's data".into());
        }
        let (data, t) = file.split_at(file.len() - TRAILER_LEN);
        let word = |i: usize| u32::from_le_bytes([t[i], t[i + 1], t[i + 2], t[i + 3]]);
        let dword = |i: usize| u64::from_le_bytes(t[i..i + 8].try_into().unwrap_or([0; 8]));
        if &t[..8] != TRAILER_MAGIC || word(8) != 1 {
            return reject(
                "not written by save_pipeline_cache, or truncated (no vkprism trailer)".into(),
            );
        }
        let driver = self.shared.properties.driver_version;
        if word(12) != driver {
            return reject(format!(
                "made by driver version {:#x}, this is {driver:#x}",
                word(12)
            ));
        }
        if dword(16) != data.len() as u64 {
            return reject(format!(
                "corrupted: {} bytes of data where the trailer says {}",
                data.len(),
                dword(16)
            ));
        }
        if dword(24) != fnv1a(data) {
            return reject("corrupted: the data's checksum does not match".into());
        }
        Ok(data)
    }

    /// The header Vulkan puts at the start of cache data (`VkPipelineCacheHeaderVersionOne`).
    fn check_cache_header(&self, data: &[u8]) -> Result<(), Error> {
        if data.len() < 32 {
            return Err(Error::CacheRejected(format!(
                "{} bytes is shorter than the 32-byte header",
                data.len()
            )));
        }
        let word = |i: usize| u32::from_le_bytes([data[i], data[i + 1], data[i + 2], data[i + 3]]);
        let (len, version, vendor, device) = (word(0), word(4), word(8), word(12));
        let p = &self.shared.properties;
        if len < 32 || version != 1 {
            return Err(Error::CacheRejected(format!(
                "bad header (length {len}, version {version})"
            )));
        }
        if vendor != p.vendor_id || device != p.device_id {
            return Err(Error::CacheRejected(format!(
                "made for vendor {vendor:#x} device {device:#x}, this is vendor {:#x} device {:#x}",
                p.vendor_id, p.device_id
            )));
        }
        if data[16..32] != p.pipeline_cache_uuid {
            return Err(Error::CacheRejected(
                "made by another driver version (pipelineCacheUUID differs)".into(),
            ));
        }
        Ok(())
    }
}

/// Bytes of the kernel's push-constant range: the block's size rounded up to 4, as Vulkan
/// requires of a range (and as the generated `PushConstants` struct is padded).
pub(crate) fn push_range(info: &vkprism_core::KernelInfo) -> u32 {
    info.push_constants
        .map(|p| p.size.div_ceil(4) * 4)
        .unwrap_or(0)
}

/// `vkMergePipelineCaches` needs its destination cache externally synchronized, also against
/// pipeline creation that uses it: both (and reading the cache out) take this lock.
static CACHE_LOCK: Mutex<()> = Mutex::new(());

const SPIRV_MAGIC: u32 = 0x0723_0203;
const BUILTIN_NUM_WORKGROUPS: u32 = 24;

/// Whether the module decorates anything with `BuiltIn builtin`: a walk over the instruction
/// stream (each instruction's first word holds its length and opcode). A malformed stream
/// answers `true`, the cautious answer.
fn uses_builtin(spirv: &[u32], builtin: u32) -> bool {
    const OP_DECORATE: u32 = 71;
    const OP_MEMBER_DECORATE: u32 = 72;
    const DECORATION_BUILTIN: u32 = 11;
    let mut i = 5;
    while i < spirv.len() {
        let (count, op) = ((spirv[i] >> 16) as usize, spirv[i] & 0xffff);
        if count == 0 || i + count > spirv.len() {
            return true;
        }
        let w = &spirv[i..i + count];
        match op {
            OP_DECORATE if count >= 4 && w[2] == DECORATION_BUILTIN && w[3] == builtin => {
                return true
            }
            OP_MEMBER_DECORATE if count >= 5 && w[3] == DECORATION_BUILTIN && w[4] == builtin => {
                return true
            }
            _ => {}
        }
        i += count;
    }
    false
}
const TRAILER_MAGIC: &[u8; 8] = b"VKPRISMC";
const TRAILER_LEN: usize = 32;

/// FNV-1a, 64-bit: a checksum against damage, not against tampering.
fn fnv1a(data: &[u8]) -> u64 {
    data.iter().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ *b as u64).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

impl<K: Kernel> LoadedKernel<K> {
    /// The kernel's metadata.
    pub fn info(&self) -> &'static vkprism_core::KernelInfo {
        K::INFO
    }

    /// The variant in use.
    pub fn variant(&self) -> &'static VariantInfo {
        self.variant
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
    ) -> Result<Pipeline<K>, Error> {
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
    ) -> Result<Pipeline<K>, Error> {
        let info = K::INFO;
        let local = desc.local_size.unwrap_or([
            info.local_size[0].default,
            info.local_size[1].default,
            info.local_size[2].default,
        ]);
        let l = &self.shared.features.limits;
        if let Some(size) = desc.subgroup_size {
            let why = if !self
                .shared
                .features
                .supports(vkprism_core::Feature::SubgroupSizeControl)
            {
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
                return Err(Error::SubgroupSize { size, why });
            }
        }
        if local.contains(&0) {
            return Err(Error::WorkgroupZero(local));
        }
        if local
            .iter()
            .zip(l.max_compute_work_group_size)
            .any(|(a, b)| *a > b)
            || local.iter().map(|x| *x as u64).product::<u64>()
                > l.max_compute_work_group_invocations as u64
        {
            return Err(Error::WorkgroupTooLarge {
                size: local,
                max: l.max_compute_work_group_size,
                invocations: l.max_compute_work_group_invocations,
            });
        }
        let mut entries = spec.entries();
        for (d, dim) in info.local_size.iter().enumerate() {
            if let Some(id) = dim.spec_id {
                entries.push((id, local[d]));
            }
        }
        entries.sort();
        let key = (entries.clone(), local, desc.subgroup_size.unwrap_or(0));
        let mut cache = self.pipelines.lock().unwrap_or_else(|e| e.into_inner());
        let pipeline = match cache.get(&key) {
            Some(p) => *p,
            None => {
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
                    .required_subgroup_size(desc.subgroup_size.unwrap_or(0));
                let mut stage = vk::PipelineShaderStageCreateInfo::default()
                    .stage(vk::ShaderStageFlags::COMPUTE)
                    .module(self.module)
                    .name(c"main")
                    .specialization_info(&spec_info);
                if desc.subgroup_size.is_some() {
                    stage = stage.push_next(&mut required);
                }
                let flags = if self.dispatch_base {
                    vk::PipelineCreateFlags::DISPATCH_BASE
                } else {
                    vk::PipelineCreateFlags::empty()
                };
                let ci = vk::ComputePipelineCreateInfo::default()
                    .flags(flags)
                    .stage(stage)
                    .layout(self.layout);
                let _cache = CACHE_LOCK.lock().unwrap_or_else(|e| e.into_inner());
                let p = unsafe {
                    self.shared.device.create_compute_pipelines(
                        self.shared.pipeline_cache,
                        &[ci],
                        None,
                    )
                }
                .map_err(|(_, e)| vkerr("vkCreateComputePipelines")(e))?[0];
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
}

/// What is chosen per device when a pipeline is created.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct PipelineDesc {
    /// Workgroup size; `None`: the kernel's default.
    pub local_size: Option<[u32; 3]>,
    /// Required subgroup size (needs `subgroupSizeControl`); `None`: the driver's choice.
    pub subgroup_size: Option<u32>,
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

    pub fn local_size(&self) -> [u32; 3] {
        self.local_size
    }
    pub fn kernel(&self) -> &Arc<LoadedKernel<K>> {
        &self.kernel
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtin_scan_finds_decorations_and_distrusts_malformed_streams() {
        let header = [SPIRV_MAGIC, 0x0001_0300, 0, 100, 0];
        let decorate = |target: u32, builtin: u32| [(4 << 16) | 71, target, 11, builtin];
        let mut words = header.to_vec();
        words.extend(decorate(7, 28)); // GlobalInvocationId
        assert!(!uses_builtin(&words, BUILTIN_NUM_WORKGROUPS));
        words.extend([(5 << 16) | 72, 9, 0, 11, BUILTIN_NUM_WORKGROUPS]); // on a block member
        assert!(uses_builtin(&words, BUILTIN_NUM_WORKGROUPS));
        let mut words = header.to_vec();
        words.extend(decorate(7, BUILTIN_NUM_WORKGROUPS));
        assert!(uses_builtin(&words, BUILTIN_NUM_WORKGROUPS));
        // A zero-length or overrunning instruction: cautious answer.
        let mut bad = header.to_vec();
        bad.push(0);
        assert!(uses_builtin(&bad, BUILTIN_NUM_WORKGROUPS));
        let mut bad = header.to_vec();
        bad.push(9 << 16);
        assert!(uses_builtin(&bad, BUILTIN_NUM_WORKGROUPS));
        assert!(!uses_builtin(&header, BUILTIN_NUM_WORKGROUPS));
    }

    #[test]
    fn checksum_is_fnv1a() {
        assert_eq!(fnv1a(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a(b"a"), 0xaf63_dc4c_8601_ec8c);
    }
}
