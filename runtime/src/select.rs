//! Choosing a variant at load time: options in the spirit of ncnn's, clamped to the device, and a
//! deterministic best-first rule (extended-glsl.md §6) whose choice and reasons are observable.

use std::fmt;
use vkprism_core::{
    ComparedIds, CoopMatShape, DeviceFeatures, FactMismatch, FeatureSet, FloatMode, Int16Mode,
    Int8Mode, KernelInfo, MemoryKind, VariantInfo, VariantKey,
};

/// Which variant kinds may be used. Defaults: everything on except bf16 and images. Build with
/// `Options::default()` or [`Options::fp32_only`] and the `with_*` setters
/// (`Options::default().with_fp16_arithmetic(false)`).
#[non_exhaustive]
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Options {
    /// fp16 packed in `uint`s, 32-bit arithmetic (`fp16p`, `fp16pa`).
    pub use_fp16_packed: bool,
    /// Native 16-bit storage (`fp16s`, `fp16sa`).
    pub use_fp16_storage: bool,
    /// fp16 arithmetic (`fp16pa`, `fp16sa`).
    pub use_fp16_arithmetic: bool,
    /// bf16 packed in `uint`s (`bf16p`).
    pub use_bf16_packed: bool,
    /// bf16 in 16-bit storage (`bf16s`).
    pub use_bf16_storage: bool,
    /// int8 packed in `uint`s (`int8p`).
    pub use_int8_packed: bool,
    /// Native 8-bit storage (`int8s`, `int8a`).
    pub use_int8_storage: bool,
    /// int8 arithmetic (`int8a`).
    pub use_int8_arithmetic: bool,
    /// int16 packed two per `int` (`int16p`).
    pub use_int16_packed: bool,
    /// Native 16-bit integer storage (`int16s`, `int16a`).
    pub use_int16_storage: bool,
    /// int16 arithmetic (`int16a`).
    pub use_int16_arithmetic: bool,
    /// Image variants (sampled + storage images instead of buffers).
    pub use_image_storage: bool,
    /// Variants that use shared (workgroup-local) memory.
    pub use_shader_local_memory: bool,
    /// Cooperative-matrix (`_cm`) variants where the device offers their shapes.
    pub use_cooperative_matrix: bool,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            use_fp16_packed: true,
            use_fp16_storage: true,
            use_fp16_arithmetic: true,
            use_bf16_packed: false,
            use_bf16_storage: false,
            use_int8_packed: true,
            use_int8_storage: true,
            use_int8_arithmetic: true,
            use_int16_packed: true,
            use_int16_storage: true,
            use_int16_arithmetic: true,
            use_image_storage: false,
            use_shader_local_memory: true,
            use_cooperative_matrix: true,
        }
    }
}

impl Options {
    /// These options with [`Options::use_fp16_packed`] set to `on`.
    pub fn with_fp16_packed(mut self, on: bool) -> Options {
        self.use_fp16_packed = on;
        self
    }

    /// These options with [`Options::use_fp16_storage`] set to `on`.
    pub fn with_fp16_storage(mut self, on: bool) -> Options {
        self.use_fp16_storage = on;
        self
    }

    /// These options with [`Options::use_fp16_arithmetic`] set to `on`.
    pub fn with_fp16_arithmetic(mut self, on: bool) -> Options {
        self.use_fp16_arithmetic = on;
        self
    }

    /// These options with [`Options::use_bf16_packed`] set to `on`.
    pub fn with_bf16_packed(mut self, on: bool) -> Options {
        self.use_bf16_packed = on;
        self
    }

    /// These options with [`Options::use_bf16_storage`] set to `on`.
    pub fn with_bf16_storage(mut self, on: bool) -> Options {
        self.use_bf16_storage = on;
        self
    }

    /// These options with [`Options::use_int8_packed`] set to `on`.
    pub fn with_int8_packed(mut self, on: bool) -> Options {
        self.use_int8_packed = on;
        self
    }

    /// These options with [`Options::use_int8_storage`] set to `on`.
    pub fn with_int8_storage(mut self, on: bool) -> Options {
        self.use_int8_storage = on;
        self
    }

    /// These options with [`Options::use_int8_arithmetic`] set to `on`.
    pub fn with_int8_arithmetic(mut self, on: bool) -> Options {
        self.use_int8_arithmetic = on;
        self
    }

    /// These options with [`Options::use_int16_packed`] set to `on`.
    pub fn with_int16_packed(mut self, on: bool) -> Options {
        self.use_int16_packed = on;
        self
    }

    /// These options with [`Options::use_int16_storage`] set to `on`.
    pub fn with_int16_storage(mut self, on: bool) -> Options {
        self.use_int16_storage = on;
        self
    }

    /// These options with [`Options::use_int16_arithmetic`] set to `on`.
    pub fn with_int16_arithmetic(mut self, on: bool) -> Options {
        self.use_int16_arithmetic = on;
        self
    }

    /// These options with [`Options::use_image_storage`] set to `on`.
    pub fn with_image_storage(mut self, on: bool) -> Options {
        self.use_image_storage = on;
        self
    }

    /// These options with [`Options::use_shader_local_memory`] set to `on`.
    pub fn with_shader_local_memory(mut self, on: bool) -> Options {
        self.use_shader_local_memory = on;
        self
    }

    /// These options with [`Options::use_cooperative_matrix`] set to `on`.
    pub fn with_cooperative_matrix(mut self, on: bool) -> Options {
        self.use_cooperative_matrix = on;
        self
    }

    /// Only fp32 buffers, no int8 or int16 arithmetic or storage: the most portable.
    pub fn fp32_only() -> Self {
        Options {
            use_fp16_packed: false,
            use_fp16_storage: false,
            use_fp16_arithmetic: false,
            use_int8_storage: false,
            use_int8_arithmetic: false,
            use_int16_storage: false,
            use_int16_arithmetic: false,
            ..Options::default()
        }
    }

    /// These options with every switch the device can't honour turned off. What each switch
    /// needs is asked of the variant axes themselves (`vkprism_core`), so the policy and the
    /// variants' requirements can't drift apart.
    pub fn clamp_to(&self, dev: &DeviceFeatures) -> Options {
        let can = |needs: FeatureSet| dev.features.contains_all(needs);
        let image_fp32 = VariantKey {
            memory: MemoryKind::Image,
            ..VariantKey::new(FloatMode::Fp32)
        };
        let coopmat_fp32 = VariantKey {
            coopmat: Some(true),
            ..VariantKey::new(FloatMode::Fp32)
        };
        Options {
            use_fp16_storage: self.use_fp16_storage && can(FloatMode::Fp16s.requires()),
            use_fp16_arithmetic: self.use_fp16_arithmetic && can(FloatMode::Fp16pa.requires()),
            use_bf16_storage: self.use_bf16_storage && can(FloatMode::Bf16s.requires()),
            use_int8_storage: self.use_int8_storage && can(Int8Mode::Int8s.requires()),
            use_int8_arithmetic: self.use_int8_arithmetic && can(Int8Mode::Int8a.requires()),
            use_int16_storage: self.use_int16_storage && can(Int16Mode::Int16s.requires()),
            use_int16_arithmetic: self.use_int16_arithmetic && can(Int16Mode::Int16a.requires()),
            use_image_storage: self.use_image_storage && can(image_fp32.requires()),
            use_cooperative_matrix: self.use_cooperative_matrix && can(coopmat_fp32.requires()),
            ..*self
        }
    }

    /// Why these options forbid `key`, if they do.
    fn forbids(&self, key: &VariantKey) -> Option<Excluded> {
        let float_ok = match key.float {
            FloatMode::Fp32 => true,
            FloatMode::Fp16p => self.use_fp16_packed,
            FloatMode::Fp16pa => self.use_fp16_packed && self.use_fp16_arithmetic,
            FloatMode::Fp16s => self.use_fp16_storage,
            FloatMode::Fp16sa => self.use_fp16_storage && self.use_fp16_arithmetic,
            FloatMode::Bf16p => self.use_bf16_packed,
            FloatMode::Bf16s => self.use_bf16_storage,
        };
        if !float_ok {
            return Some(Excluded::Float(key.float));
        }
        let int8_ok = match key.int8 {
            None | Some(Int8Mode::Int8p) => key.int8.is_none() || self.use_int8_packed,
            Some(Int8Mode::Int8s) => self.use_int8_storage,
            Some(Int8Mode::Int8a) => self.use_int8_storage && self.use_int8_arithmetic,
        };
        if let (false, Some(int8)) = (int8_ok, key.int8) {
            return Some(Excluded::Int8(int8));
        }
        let int16_ok = match key.int16 {
            None => true,
            Some(Int16Mode::Int16p) => self.use_int16_packed,
            Some(Int16Mode::Int16s) => self.use_int16_storage,
            Some(Int16Mode::Int16a) => self.use_int16_storage && self.use_int16_arithmetic,
        };
        if let (false, Some(int16)) = (int16_ok, key.int16) {
            return Some(Excluded::Int16(int16));
        }
        if key.memory == MemoryKind::Image && !self.use_image_storage {
            return Some(Excluded::ImageStorage);
        }
        if key.local_memory == Some(true) && !self.use_shader_local_memory {
            return Some(Excluded::ShaderLocalMemory);
        }
        if key.coopmat == Some(true) && !self.use_cooperative_matrix {
            return Some(Excluded::CooperativeMatrix);
        }
        None
    }
}

impl fmt::Display for Options {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let all = [
            ("fp16_packed", self.use_fp16_packed),
            ("fp16_storage", self.use_fp16_storage),
            ("fp16_arithmetic", self.use_fp16_arithmetic),
            ("bf16_packed", self.use_bf16_packed),
            ("bf16_storage", self.use_bf16_storage),
            ("int8_packed", self.use_int8_packed),
            ("int8_storage", self.use_int8_storage),
            ("int8_arithmetic", self.use_int8_arithmetic),
            ("int16_packed", self.use_int16_packed),
            ("int16_storage", self.use_int16_storage),
            ("int16_arithmetic", self.use_int16_arithmetic),
            ("image_storage", self.use_image_storage),
            ("shader_local_memory", self.use_shader_local_memory),
            ("cooperative_matrix", self.use_cooperative_matrix),
        ];
        let on: Vec<_> = all.iter().filter(|(_, b)| *b).map(|(n, _)| *n).collect();
        write!(
            f,
            "{}",
            if on.is_empty() {
                "(none)".to_string()
            } else {
                on.join(", ")
            }
        )
    }
}

/// Preference order, best last: storage precision (bf16s > bf16p > fp16s > fp16p > fp32),
/// cooperative matrices, fp16 arithmetic, int8 (a > s > p), int16 (a > s > p), images when
/// allowed, local memory when allowed.
fn rank(key: &VariantKey) -> (u8, u8, u8, u8, u8, u8, u8) {
    let storage = match key.float {
        FloatMode::Fp32 => 0,
        FloatMode::Fp16p | FloatMode::Fp16pa => 1,
        FloatMode::Fp16s | FloatMode::Fp16sa => 2,
        FloatMode::Bf16p => 3,
        FloatMode::Bf16s => 4,
    };
    let int8 = match key.int8 {
        None => 0,
        Some(Int8Mode::Int8p) => 1,
        Some(Int8Mode::Int8s) => 2,
        Some(Int8Mode::Int8a) => 3,
    };
    let int16 = match key.int16 {
        None => 0,
        Some(Int16Mode::Int16p) => 1,
        Some(Int16Mode::Int16s) => 2,
        Some(Int16Mode::Int16a) => 3,
    };
    (
        storage,
        (key.coopmat == Some(true)) as u8,
        key.float.is_fp16_arithmetic() as u8,
        int8,
        int16,
        (key.memory == MemoryKind::Image) as u8,
        (key.local_memory == Some(true)) as u8,
    )
}

/// The chosen variant and why.
#[non_exhaustive]
#[derive(Clone, Debug)]
pub struct Selection {
    /// The chosen variant.
    pub key: VariantKey,
    /// Index into the kernel's `VARIANTS`.
    pub index: usize,
    /// Every variant that was not eligible, with the reason.
    pub rejected: Vec<(VariantKey, Rejection)>,
    /// The eligible variants, best first.
    pub eligible: Vec<VariantKey>,
}

impl fmt::Display for Selection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} (best of {} eligible", self.key, self.eligible.len())?;
        if !self.rejected.is_empty() {
            let r: Vec<_> = self
                .rejected
                .iter()
                .map(|(k, why)| format!("{k}: {why}"))
                .collect();
            write!(f, "; rejected: {}", r.join("; "))?;
        }
        write!(f, ")")
    }
}

/// No variant fits. `Display` gives one line per variant: what it needs and what is missing.
#[non_exhaustive]
#[derive(Clone, thiserror::Error)]
#[error("kernel `{kernel}` has no variant this device can run with these options:{}", self.detail_lines())]
pub struct SelectError {
    /// The kernel's name.
    pub kernel: &'static str,
    /// Which failure: a name the kernel doesn't have, a variant this device can't run, or no
    /// variant left by the options and the device.
    pub kind: SelectFailure,
    /// Each variant considered and why it can't be used ([`SelectFailure::NoneFits`]: every
    /// variant; [`SelectFailure::DeviceLacks`]: the one asked for; empty for
    /// [`SelectFailure::NoSuchVariant`]).
    pub rejected: Vec<(VariantKey, Rejection)>,
    /// [`SelectFailure::NoSuchVariant`]: the variant asked for.
    pub requested: Option<VariantKey>,
    /// [`SelectFailure::NoSuchVariant`]: the kernel's variants (empty otherwise).
    pub available: Vec<VariantKey>,
}

impl SelectError {
    /// The lines after the headline, each starting with a newline.
    fn detail_lines(&self) -> String {
        if let Some(requested) = self.requested {
            let names: Vec<String> = self.available.iter().map(|k| k.name()).collect();
            return format!(
                "\n  no variant named `{}`; variants: {}",
                requested.name(),
                names.join(", ")
            );
        }
        if self.rejected.is_empty() {
            return "\n  (the kernel has no variants: it failed to compile)".into();
        }
        self.rejected
            .iter()
            .map(|(k, why)| format!("\n  {k}: {why}"))
            .collect()
    }
}

/// Why a variant can't be used: the device can't run it, it was compiled for another device's
/// facts, or the options exclude it. `Display` says it in words.
#[non_exhaustive]
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Rejection {
    /// Compiled for a newer Vulkan than the device offers (API version numbers, as
    /// [`vkprism_core::api_version`] encodes them).
    VulkanVersion {
        /// The variant's `vulkan_version`.
        compiled: u32,
        /// The device's API version.
        device: u32,
    },
    /// Needs features the device lacks.
    MissingFeatures {
        /// Everything the variant needs.
        needs: FeatureSet,
        /// What of it the device lacks.
        missing: FeatureSet,
    },
    /// Multiplies cooperative-matrix shapes the device does not offer.
    MissingMatrixShapes {
        /// The shapes it needs that the device lacks.
        lacking: Vec<CoopMatShape>,
        /// The shapes the device offers.
        offered: Vec<CoopMatShape>,
    },
    /// Runnable, but compiled for the device facts of another device (`#if` on device facts).
    OtherDeviceFacts(FactMismatch),
    /// The options exclude it.
    Excluded(Excluded),
}

impl Rejection {
    /// Whether the device can't run the variant (the options and device facts aside).
    pub fn is_unrunnable(&self) -> bool {
        matches!(
            self,
            Rejection::VulkanVersion { .. }
                | Rejection::MissingFeatures { .. }
                | Rejection::MissingMatrixShapes { .. }
        )
    }
}

impl fmt::Display for Rejection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let list = |shapes: &[CoopMatShape]| {
            shapes
                .iter()
                .map(|s| s.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        };
        match self {
            Rejection::VulkanVersion { compiled, device } => write!(
                f,
                "compiled for Vulkan {} (`vulkan_version`); the device offers Vulkan {}",
                vkprism_core::api_version_name(*compiled),
                vkprism_core::api_version_name(*device)
            ),
            Rejection::MissingFeatures { needs, missing } => {
                write!(f, "needs {needs}; device lacks {missing}")
            }
            Rejection::MissingMatrixShapes { lacking, offered } => write!(
                f,
                "needs cooperative matrices {}; device offers {}",
                list(lacking),
                if offered.is_empty() {
                    "none".to_string()
                } else {
                    list(offered)
                }
            ),
            Rejection::OtherDeviceFacts(why) => write!(f, "{why}"),
            Rejection::Excluded(what) => write!(f, "{what}"),
        }
    }
}

/// What of a variant the [`Options`] exclude. `Display`: `options exclude …`.
#[non_exhaustive]
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum Excluded {
    /// Its float mode.
    Float(FloatMode),
    /// Its int8 mode.
    Int8(Int8Mode),
    /// Its int16 mode.
    Int16(Int16Mode),
    /// Image storage ([`Options::use_image_storage`]).
    ImageStorage,
    /// Shared local memory ([`Options::use_shader_local_memory`]).
    ShaderLocalMemory,
    /// Cooperative matrices ([`Options::use_cooperative_matrix`]).
    CooperativeMatrix,
}

impl fmt::Display for Excluded {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("options exclude ")?;
        match self {
            Excluded::Float(m) => f.write_str(m.name()),
            Excluded::Int8(m) => f.write_str(m.name()),
            Excluded::Int16(m) => f.write_str(m.name()),
            Excluded::ImageStorage => f.write_str("image storage"),
            Excluded::ShaderLocalMemory => f.write_str("shader local memory"),
            Excluded::CooperativeMatrix => f.write_str("cooperative matrices"),
        }
    }
}

/// What kind of [`SelectError`] it is, for callers that act on it (a test that skips variants
/// the device lacks must still fail on a misspelled name).
#[non_exhaustive]
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum SelectFailure {
    /// `LoadOptions::variant` named no variant of the kernel.
    NoSuchVariant,
    /// The named variant needs what this device lacks (a feature or a cooperative-matrix shape).
    DeviceLacks,
    /// No variant is both allowed by the options and runnable on the device.
    NoneFits,
}

/// Why `device` can't run `v` (a feature it lacks, a cooperative-matrix shape it doesn't
/// offer), or `None` when it can. Options are not considered.
pub fn unrunnable_reason(v: &VariantInfo, device: &DeviceFeatures) -> Option<Rejection> {
    // Patch numbers aside: a 1.3.250 device runs what was compiled for 1.3.
    let minor_of = |v: u32| v >> 12;
    if minor_of(v.vulkan_version) > minor_of(device.api_version) {
        return Some(Rejection::VulkanVersion {
            compiled: v.vulkan_version,
            device: device.api_version,
        });
    }
    let missing = v.requires().difference(device.features);
    if !missing.is_empty() {
        return Some(Rejection::MissingFeatures {
            needs: v.requires(),
            missing,
        });
    }
    lacking_coopmat(v, device)
}

debug_as_display!(SelectError);

/// Picks the best variant of `info` that `options` allow and `device` supports, among those
/// compiled for the device facts the kernel tests in `#if` (`FactChoice`): the device's own.
pub fn select_variant(
    info: &KernelInfo,
    options: &Options,
    device: &DeviceFeatures,
) -> Result<Selection, SelectError> {
    let mut eligible = Vec::new();
    let mut rejected = Vec::new();
    let compared = ComparedIds::of(info.variants.iter().map(|v| &v.key.facts));
    for (i, v) in info.variants.iter().enumerate() {
        if let Some(why) = unrunnable_reason(v, device) {
            rejected.push((v.key, why));
        } else if let Some(why) = v.key.facts.mismatch(v.tested_facts, &compared, device) {
            // Runnable (a forced variant may be), but compiled for another device's facts.
            rejected.push((v.key, Rejection::OtherDeviceFacts(why)));
        } else if let Some(why) = options.forbids(&v.key) {
            rejected.push((v.key, Rejection::Excluded(why)));
        } else {
            eligible.push((i, v.key));
        }
    }
    // Stable and total: ties (none expected) keep declaration order.
    eligible.sort_by_key(|(i, k)| (std::cmp::Reverse(rank(k)), *i));
    match eligible.first() {
        Some(&(index, key)) => Ok(Selection {
            key,
            index,
            rejected,
            eligible: eligible.iter().map(|(_, k)| *k).collect(),
        }),
        None => Err(SelectError {
            kernel: info.name,
            kind: SelectFailure::NoneFits,
            rejected,
            requested: None,
            available: Vec::new(),
        }),
    }
}

/// Why `device` can't run the cooperative-matrix shapes `v` multiplies, if it can't.
fn lacking_coopmat(v: &VariantInfo, device: &DeviceFeatures) -> Option<Rejection> {
    let lacking: Vec<CoopMatShape> = v
        .cooperative_matrices
        .iter()
        .filter(|s| !device.cooperative_matrices.contains(s))
        .copied()
        .collect();
    if lacking.is_empty() {
        return None;
    }
    Some(Rejection::MissingMatrixShapes {
        lacking,
        offered: device.cooperative_matrices.iter().collect(),
    })
}

/// Like [`select_variant`], restricted to one variant (forcing a variant, e.g. in tests).
pub fn force_variant(
    info: &KernelInfo,
    key: &VariantKey,
    device: &DeviceFeatures,
) -> Result<Selection, SelectError> {
    let Some(index) = info.variants.iter().position(|v| v.key == *key) else {
        return Err(SelectError {
            kernel: info.name,
            kind: SelectFailure::NoSuchVariant,
            rejected: Vec::new(),
            requested: Some(*key),
            available: info.variants.iter().map(|v| v.key).collect(),
        });
    };
    let v = &info.variants[index];
    if let Some(why) = unrunnable_reason(v, device) {
        return Err(SelectError {
            kernel: info.name,
            kind: SelectFailure::DeviceLacks,
            rejected: vec![(v.key, why)],
            requested: None,
            available: Vec::new(),
        });
    }
    Ok(Selection {
        key: v.key,
        index,
        rejected: Vec::new(),
        eligible: vec![v.key],
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use vkprism_core::{CoopMatShape, Feature, LocalSizeDim, ScalarKind};

    /// A kernel with every float × memory variant, and one with int8 × local memory, made by hand.
    fn info(keys: Vec<VariantKey>) -> &'static KernelInfo {
        let variants: Vec<VariantInfo> = keys
            .into_iter()
            .map(|key| VariantInfo {
                key,
                reads_num_workgroups: false,
                spirv: &[],
                bindings: &[],
                cooperative_matrices: match key.coopmat {
                    Some(true) if key.float.is_bf16() => &BF16_16X16X16,
                    Some(true) => &F16_16X16X16,
                    _ => &[],
                },
                vulkan_version: vkprism_core::api_version(1, 1),
                device_facts: &[],
                capabilities_require: FeatureSet::EMPTY,
                tested_facts: &[],
            })
            .collect();
        Box::leak(Box::new(KernelInfo {
            name: "test",
            variants: Box::leak(variants.into_boxed_slice()),
            push_constants: None,
            spec_constants: &[],
            local_size: [
                LocalSizeDim {
                    default: 64,
                    spec_id: Some(233),
                },
                LocalSizeDim {
                    default: 1,
                    spec_id: Some(234),
                },
                LocalSizeDim {
                    default: 1,
                    spec_id: Some(235),
                },
            ],
        }))
    }

    fn float_kernel() -> &'static KernelInfo {
        let mut keys = Vec::new();
        for memory in [MemoryKind::Buffer, MemoryKind::Image] {
            for float in FloatMode::ALL {
                if !(memory == MemoryKind::Image && float.is_bf16()) {
                    keys.push(VariantKey {
                        memory,
                        ..VariantKey::new(float)
                    });
                }
            }
        }
        info(keys)
    }

    fn dev(fs: &[Feature]) -> DeviceFeatures {
        DeviceFeatures::new(FeatureSet::from_slice(fs))
    }

    /// The shape the hand-made `_cm` variants multiply: 16×16×16 fp16 into fp32.
    const F16_16X16X16: [CoopMatShape; 1] = [CoopMatShape {
        m: 16,
        n: 16,
        k: 16,
        a: ScalarKind::F16,
        b: ScalarKind::F16,
        c: ScalarKind::F32,
        result: ScalarKind::F32,
    }];

    /// The shape the hand-made bf16 `_cm` variants multiply: 16×16×16 bf16 into fp32.
    const BF16_16X16X16: [CoopMatShape; 1] = [CoopMatShape {
        a: ScalarKind::Bf16,
        b: ScalarKind::Bf16,
        ..F16_16X16X16[0]
    }];

    /// fp32 and fp16s, each with and without cooperative matrices where the axis allows.
    fn coopmat_kernel() -> &'static KernelInfo {
        let key = |float, coopmat| VariantKey {
            coopmat: Some(coopmat),
            ..VariantKey::new(float)
        };
        info(vec![
            key(FloatMode::Fp32, false),
            key(FloatMode::Fp16s, false),
            key(FloatMode::Fp16s, true),
            key(FloatMode::Fp16sa, false),
        ])
    }

    #[test]
    fn cooperative_matrix_variant_needs_feature_shapes_and_option() {
        let k = coopmat_kernel();
        let mut d = DeviceFeatures::new(FeatureSet::all());
        // The feature alone is not enough: the device must offer the variant's shape.
        assert_eq!(pick(k, &Options::default(), &d), "fp16sa_nocm");
        let s = select_variant(k, &Options::default(), &d)
            .unwrap()
            .to_string();
        assert!(
            s.contains("fp16s_cm: needs cooperative matrices 16x16x16 F16*F16+F32->F32; device offers none"),
            "{s}"
        );
        // A different shape does not do either.
        d.cooperative_matrices.push(CoopMatShape {
            k: 8,
            ..F16_16X16X16[0]
        });
        assert_eq!(pick(k, &Options::default(), &d), "fp16sa_nocm");
        d.cooperative_matrices.push(F16_16X16X16[0]);
        // Cooperative matrices outrank fp16 arithmetic at the same storage precision.
        assert_eq!(pick(k, &Options::default(), &d), "fp16s_cm");
        let off = Options {
            use_cooperative_matrix: false,
            ..Options::default()
        };
        assert_eq!(pick(k, &off, &d), "fp16sa_nocm");
        // Without the feature the shape list is irrelevant.
        let d = DeviceFeatures {
            features: FeatureSet::all().without(Feature::CooperativeMatrix),
            ..d
        };
        assert_eq!(pick(k, &Options::default(), &d), "fp16sa_nocm");
        assert!(force_variant(k, &"fp16s_cm".parse().unwrap(), &d).is_err());
    }

    #[test]
    fn bf16_matrices_need_the_bf16_shapes_and_feature_and_the_bf16_option() {
        let key = |float, coopmat| VariantKey {
            coopmat: Some(coopmat),
            ..VariantKey::new(float)
        };
        let k = info(vec![
            key(FloatMode::Fp32, false),
            key(FloatMode::Fp16s, false),
            key(FloatMode::Fp16s, true),
            key(FloatMode::Bf16s, false),
            key(FloatMode::Bf16s, true),
        ]);
        let bf16 = Options {
            use_bf16_storage: true,
            ..Options::default()
        };
        let mut d = DeviceFeatures::new(FeatureSet::all());
        d.cooperative_matrices.push(F16_16X16X16[0]);
        // fp16 shapes don't run bf16 matrices.
        assert_eq!(pick(k, &bf16, &d), "bf16s_nocm");
        let s = select_variant(k, &bf16, &d).unwrap().to_string();
        assert!(
            s.contains("bf16s_cm: needs cooperative matrices 16x16x16 Bf16*Bf16+F32->F32"),
            "{s}"
        );
        d.cooperative_matrices.push(BF16_16X16X16[0]);
        assert_eq!(pick(k, &bf16, &d), "bf16s_cm");
        // bf16 stays opt-in: by default the fp16 matrices.
        assert_eq!(pick(k, &Options::default(), &d), "fp16s_cm");
        // The shapes without the feature that enables them are not enough.
        let d = DeviceFeatures {
            features: FeatureSet::all().without(Feature::ShaderBFloat16CooperativeMatrix),
            ..d
        };
        assert_eq!(pick(k, &bf16, &d), "bf16s_nocm");
        let s = select_variant(k, &bf16, &d).unwrap().to_string();
        assert!(s.contains("shaderBFloat16CooperativeMatrix"), "{s}");
        assert!(force_variant(k, &"bf16s_cm".parse().unwrap(), &d).is_err());
    }

    #[test]
    fn a_variant_compiled_for_a_newer_vulkan_is_unrunnable_naming_both_versions() {
        let v = VariantInfo {
            vulkan_version: vkprism_core::api_version(1, 3),
            ..info(vec![VariantKey::new(FloatMode::Fp32)]).variants[0]
        };
        let mut d = DeviceFeatures::new(FeatureSet::all());
        d.api_version = vkprism_core::api_version(1, 2) | 250; // patch numbers don't count
        let why = unrunnable_reason(&v, &d).expect("a 1.2 device can't run a 1.3 variant");
        assert_eq!(
            why,
            Rejection::VulkanVersion {
                compiled: v.vulkan_version,
                device: d.api_version
            }
        );
        let why = why.to_string();
        assert!(
            why.contains("compiled for Vulkan 1.3") && why.contains("the device offers Vulkan 1.2"),
            "{why}"
        );
        d.api_version = vkprism_core::api_version(1, 3) | 250;
        assert_eq!(unrunnable_reason(&v, &d), None);
    }

    fn pick(info: &KernelInfo, o: &Options, d: &DeviceFeatures) -> String {
        select_variant(info, o, d)
            .map(|s| s.key.name())
            .unwrap_or_else(|e| e.to_string())
    }

    #[test]
    fn best_variant_follows_device_and_options() {
        let k = float_kernel();
        let all = DeviceFeatures::new(FeatureSet::all());
        let o = Options::default();
        assert_eq!(pick(k, &o, &all), "fp16sa");
        assert_eq!(
            pick(k, &o, &dev(&[Feature::StorageBuffer16BitAccess])),
            "fp16s"
        );
        assert_eq!(pick(k, &o, &dev(&[Feature::ShaderFloat16])), "fp16pa");
        assert_eq!(pick(k, &o, &dev(&[])), "fp16p");
        assert_eq!(
            pick(
                k,
                &Options {
                    use_fp16_arithmetic: false,
                    ..o
                },
                &all
            ),
            "fp16s"
        );
        assert_eq!(pick(k, &Options::fp32_only(), &all), "fp32");
        assert_eq!(
            pick(
                k,
                &Options {
                    use_fp16_packed: false,
                    ..Options::fp32_only()
                },
                &dev(&[])
            ),
            "fp32"
        );
        // bf16 only when asked: storage before packed.
        assert_eq!(
            pick(
                k,
                &Options {
                    use_bf16_packed: true,
                    ..o
                },
                &all
            ),
            "bf16p"
        );
        assert_eq!(
            pick(
                k,
                &Options {
                    use_bf16_packed: true,
                    use_bf16_storage: true,
                    ..o
                },
                &all
            ),
            "bf16s"
        );
        assert_eq!(
            pick(
                k,
                &Options {
                    use_bf16_storage: true,
                    ..o
                },
                &dev(&[])
            ),
            "fp16p",
            "bf16s needs 16-bit storage"
        );
        // Images when allowed and the formats are usable.
        assert_eq!(
            pick(
                k,
                &Options {
                    use_image_storage: true,
                    ..o
                },
                &all
            ),
            "fp16sa_image"
        );
        assert_eq!(
            pick(
                k,
                &Options {
                    use_image_storage: true,
                    ..o
                },
                &dev(&[
                    Feature::StorageBuffer16BitAccess,
                    Feature::ShaderFloat16,
                    Feature::ImageFormatsFp32
                ])
            ),
            "fp16sa"
        );
        // Deterministic.
        for _ in 0..10 {
            assert_eq!(pick(k, &o, &all), "fp16sa");
        }
    }

    #[test]
    fn int8_and_local_memory_preferences() {
        let mut keys = Vec::new();
        for i in Int8Mode::ALL {
            for lm in [true, false] {
                keys.push(VariantKey {
                    int8: Some(i),
                    local_memory: Some(lm),
                    ..VariantKey::new(FloatMode::Fp32)
                });
            }
        }
        let k = info(keys);
        let all = DeviceFeatures::new(FeatureSet::all());
        let o = Options::default();
        assert_eq!(pick(k, &o, &all), "fp32_int8a_lm");
        assert_eq!(
            pick(k, &o, &dev(&[Feature::StorageBuffer8BitAccess])),
            "fp32_int8s_lm"
        );
        assert_eq!(
            pick(
                k,
                &Options {
                    use_shader_local_memory: false,
                    ..o
                },
                &dev(&[])
            ),
            "fp32_int8p_nolm"
        );
        let e = select_variant(
            k,
            &Options {
                use_int8_packed: false,
                ..o
            },
            &dev(&[]),
        )
        .unwrap_err();
        assert_eq!(e.rejected.len(), 6, "{e}");
        assert!(e
            .rejected
            .iter()
            .any(|(_, why)| *why == Rejection::Excluded(Excluded::Int8(Int8Mode::Int8p))));
        assert!(e.to_string().contains("fp32_int8a_lm: needs storageBuffer8BitAccess, shaderInt8; device lacks storageBuffer8BitAccess, shaderInt8"), "{e}");
    }

    #[test]
    fn int16_preferences() {
        let keys = Int16Mode::ALL
            .iter()
            .map(|i| VariantKey {
                int16: Some(*i),
                ..VariantKey::new(FloatMode::Fp32)
            })
            .collect();
        let k = info(keys);
        let o = Options::default();
        let all = DeviceFeatures::new(FeatureSet::all());
        assert_eq!(pick(k, &o, &all), "fp32_int16a");
        assert_eq!(
            pick(k, &o, &dev(&[Feature::StorageBuffer16BitAccess])),
            "fp32_int16s"
        );
        assert_eq!(pick(k, &o, &dev(&[])), "fp32_int16p");
        let no_arithmetic = Options {
            use_int16_arithmetic: false,
            ..o
        };
        assert_eq!(pick(k, &no_arithmetic, &all), "fp32_int16s");
        let packed_only = Options {
            use_int16_storage: false,
            ..o
        };
        assert_eq!(pick(k, &packed_only, &all), "fp32_int16p");
        let c = o.clamp_to(&dev(&[Feature::ShaderInt16]));
        assert!(c.use_int16_packed && !c.use_int16_storage && !c.use_int16_arithmetic);
        let e = select_variant(
            k,
            &Options {
                use_int16_packed: false,
                ..o
            },
            &dev(&[]),
        )
        .unwrap_err();
        assert!(
            e.to_string()
                .contains("fp32_int16p: options exclude int16p"),
            "{e}"
        );
    }

    #[test]
    fn setters_set_their_switch() {
        let o = Options::fp32_only()
            .with_fp16_storage(true)
            .with_image_storage(true)
            .with_cooperative_matrix(false);
        assert_eq!(
            o,
            Options {
                use_fp16_storage: true,
                use_image_storage: true,
                use_cooperative_matrix: false,
                ..Options::fp32_only()
            }
        );
    }

    #[test]
    fn clamping_clears_what_the_device_lacks() {
        let c = Options::default().clamp_to(&dev(&[Feature::ShaderFloat16]));
        assert!(
            !c.use_fp16_storage
                && c.use_fp16_arithmetic
                && c.use_fp16_packed
                && !c.use_int8_storage
        );
        let s = select_variant(float_kernel(), &Options::default(), &dev(&[])).unwrap();
        assert!(
            s.to_string().contains("rejected")
                && s.rejected.iter().any(|(k, _)| k.name() == "fp16sa")
        );
    }

    #[test]
    fn the_variant_compiled_for_the_devices_facts_is_chosen_and_a_capability_is_required() {
        use vkprism_core::{DeviceFact, FactChoice, IdChoice};
        static TESTED: [DeviceFact; 2] = [
            DeviceFact::Supports(Feature::IntegerDotProduct),
            DeviceFact::VendorId,
        ];
        let variant = |dot: bool, vendor: IdChoice| VariantInfo {
            key: VariantKey {
                facts: FactChoice {
                    dot: Some(dot),
                    vendor: Some(vendor),
                    ..FactChoice::NONE
                },
                ..VariantKey::new(FloatMode::Fp32)
            },
            reads_num_workgroups: false,
            spirv: &[],
            bindings: &[],
            cooperative_matrices: &[],
            vulkan_version: vkprism_core::api_version(1, 1),
            device_facts: &[],
            // The `_dot` module declares the dot-product capability.
            capabilities_require: if dot {
                FeatureSet::from_slice(&[Feature::IntegerDotProduct])
            } else {
                FeatureSet::EMPTY
            },
            tested_facts: &TESTED,
        };
        let variants: &'static [VariantInfo] = Box::leak(Box::new([
            variant(true, IdChoice::Is(4318)),
            variant(true, IdChoice::Other),
            variant(false, IdChoice::Is(4318)),
            variant(false, IdChoice::Other),
        ]));
        let k: &'static KernelInfo = Box::leak(Box::new(KernelInfo {
            name: "facts",
            variants,
            push_constants: None,
            spec_constants: &[],
            local_size: [vkprism_core::LocalSizeDim {
                default: 1,
                spec_id: None,
            }; 3],
        }));
        let o = Options::default();
        let mut d = DeviceFeatures::new(FeatureSet::from_slice(&[Feature::IntegerDotProduct]));
        d.vendor_id = 4318;
        assert_eq!(pick(k, &o, &d), "fp32_dot_vendor4318");
        d.vendor_id = 0x1002;
        assert_eq!(pick(k, &o, &d), "fp32_dot_vendorother");
        d.features = FeatureSet::EMPTY;
        let s = select_variant(k, &o, &d).unwrap();
        assert_eq!(s.key.name(), "fp32_nodot_vendorother");
        let why = s.to_string();
        assert!(
            why.contains("device lacks shaderIntegerDotProduct"),
            "{why}"
        );
        // Forced, a variant for other facts runs where the device can run it.
        assert!(force_variant(k, &"fp32_nodot_vendor4318".parse().unwrap(), &d).is_ok());
        let e = force_variant(k, &"fp32_dot_vendorother".parse().unwrap(), &d).unwrap_err();
        assert_eq!(e.kind, SelectFailure::DeviceLacks);
    }
}
