//! Variant keys: one point on each axis a kernel uses (float precision, memory kind, int8 mode,
//! int16 mode, local memory, cooperative matrix), their names, and the device features each one needs.

use crate::{FactChoice, Feature, FeatureSet, TensorFormat};
use std::fmt;

/// The float precision axis (storage / arithmetic).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum FloatMode {
    /// fp32 storage and arithmetic.
    Fp32,
    /// fp16 packed two per `uint` (`packHalf2x16`), fp32 arithmetic.
    Fp16p,
    /// fp16 packed storage, fp16 arithmetic.
    Fp16pa,
    /// native `float16_t` storage, fp32 arithmetic.
    Fp16s,
    /// native `float16_t` storage, fp16 arithmetic.
    Fp16sa,
    /// bfloat16 packed two per `uint`, fp32 arithmetic.
    Bf16p,
    /// bfloat16 in 16-bit storage (`uint16_t` holding the top half of an fp32), fp32 arithmetic.
    Bf16s,
}

impl FloatMode {
    /// Every float mode, in declaration order.
    pub const ALL: [FloatMode; 7] = [
        FloatMode::Fp32,
        FloatMode::Fp16p,
        FloatMode::Fp16pa,
        FloatMode::Fp16s,
        FloatMode::Fp16sa,
        FloatMode::Bf16p,
        FloatMode::Bf16s,
    ];

    /// The name used in variant names (`fp16sa`).
    pub const fn name(self) -> &'static str {
        match self {
            FloatMode::Fp32 => "fp32",
            FloatMode::Fp16p => "fp16p",
            FloatMode::Fp16pa => "fp16pa",
            FloatMode::Fp16s => "fp16s",
            FloatMode::Fp16sa => "fp16sa",
            FloatMode::Bf16p => "bf16p",
            FloatMode::Bf16s => "bf16s",
        }
    }

    /// Whether values are fp16 (any fp16 mode).
    pub const fn is_fp16(self) -> bool {
        matches!(
            self,
            FloatMode::Fp16p | FloatMode::Fp16pa | FloatMode::Fp16s | FloatMode::Fp16sa
        )
    }
    /// Whether values are bf16.
    pub const fn is_bf16(self) -> bool {
        matches!(self, FloatMode::Bf16p | FloatMode::Bf16s)
    }
    /// Storage packed into `uint`s (GLSL 4.20 pack/unpack built-ins).
    pub const fn is_packed(self) -> bool {
        matches!(
            self,
            FloatMode::Fp16p | FloatMode::Fp16pa | FloatMode::Bf16p
        )
    }
    /// Storage in native 16-bit types.
    pub const fn is_storage16(self) -> bool {
        matches!(
            self,
            FloatMode::Fp16s | FloatMode::Fp16sa | FloatMode::Bf16s
        )
    }
    /// fp16 arithmetic (`afp` is `float16_t`).
    pub const fn is_fp16_arithmetic(self) -> bool {
        matches!(self, FloatMode::Fp16pa | FloatMode::Fp16sa)
    }

    /// How tensors bound to this variant's `sfp…` buffers are laid out in memory. Packed and
    /// native 16-bit storage share one byte layout (element `i` in bytes `2i..2i+2`).
    pub const fn storage_format(self) -> TensorFormat {
        match self {
            FloatMode::Fp32 => TensorFormat::F32,
            FloatMode::Bf16p | FloatMode::Bf16s => TensorFormat::Bf16,
            _ => TensorFormat::F16,
        }
    }

    /// Features this precision needs from the device.
    pub const fn requires(self) -> FeatureSet {
        match self {
            FloatMode::Fp32 | FloatMode::Fp16p | FloatMode::Bf16p => FeatureSet::EMPTY,
            FloatMode::Fp16pa => FeatureSet::from_slice(&[Feature::ShaderFloat16]),
            FloatMode::Fp16s | FloatMode::Bf16s => {
                FeatureSet::from_slice(&[Feature::StorageBuffer16BitAccess])
            }
            FloatMode::Fp16sa => {
                FeatureSet::from_slice(&[Feature::StorageBuffer16BitAccess, Feature::ShaderFloat16])
            }
        }
    }
}

/// The memory axis: storage buffers, or sampled + storage images.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum MemoryKind {
    /// Storage (and uniform) buffers.
    Buffer,
    /// Sampled and storage images.
    Image,
}

impl MemoryKind {
    /// `"buffer"` or `"image"`.
    pub const fn name(self) -> &'static str {
        match self {
            MemoryKind::Buffer => "buffer",
            MemoryKind::Image => "image",
        }
    }
}

/// The int8 axis, present only for kernels that use int8 types.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Int8Mode {
    /// four int8 packed per `uint`, 32-bit arithmetic.
    Int8p,
    /// native `int8_t` storage, 32-bit arithmetic.
    Int8s,
    /// native `int8_t` storage and 8-bit arithmetic.
    Int8a,
}

impl Int8Mode {
    /// Every int8 mode, in declaration order.
    pub const ALL: [Int8Mode; 3] = [Int8Mode::Int8p, Int8Mode::Int8s, Int8Mode::Int8a];

    /// The name used in variant names (`int8a`).
    pub const fn name(self) -> &'static str {
        match self {
            Int8Mode::Int8p => "int8p",
            Int8Mode::Int8s => "int8s",
            Int8Mode::Int8a => "int8a",
        }
    }

    /// Features this int8 mode needs from the device.
    pub const fn requires(self) -> FeatureSet {
        match self {
            Int8Mode::Int8p => FeatureSet::EMPTY,
            Int8Mode::Int8s => FeatureSet::from_slice(&[Feature::StorageBuffer8BitAccess]),
            Int8Mode::Int8a => {
                FeatureSet::from_slice(&[Feature::StorageBuffer8BitAccess, Feature::ShaderInt8])
            }
        }
    }
}

/// The int16 axis, present only for kernels that use int16 types (`sint16`, `i16buffer_*`, ...).
/// Every mode stores int16 values in the same bytes (tensors are `I16`).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Int16Mode {
    /// two int16 packed per `int` (element 0 in the low half), 32-bit arithmetic.
    Int16p,
    /// native `int16_t` storage, 32-bit arithmetic.
    Int16s,
    /// native `int16_t` storage and 16-bit arithmetic (`aint16` is `int16_t`).
    Int16a,
}

impl Int16Mode {
    /// Every int16 mode, in declaration order.
    pub const ALL: [Int16Mode; 3] = [Int16Mode::Int16p, Int16Mode::Int16s, Int16Mode::Int16a];

    /// The name used in variant names (`int16a`).
    pub const fn name(self) -> &'static str {
        match self {
            Int16Mode::Int16p => "int16p",
            Int16Mode::Int16s => "int16s",
            Int16Mode::Int16a => "int16a",
        }
    }

    /// Features this int16 mode needs from the device.
    pub const fn requires(self) -> FeatureSet {
        match self {
            Int16Mode::Int16p => FeatureSet::EMPTY,
            Int16Mode::Int16s => FeatureSet::from_slice(&[Feature::StorageBuffer16BitAccess]),
            Int16Mode::Int16a => {
                FeatureSet::from_slice(&[Feature::StorageBuffer16BitAccess, Feature::ShaderInt16])
            }
        }
    }
}

/// One variant of a kernel. Axes a kernel does not use are `None` (int8, local memory) or take
/// their neutral value (`Fp32`, `Buffer`).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct VariantKey {
    /// The float axis.
    pub float: FloatMode,
    /// The memory axis.
    pub memory: MemoryKind,
    /// The int8 axis, for kernels that use int8 types.
    pub int8: Option<Int8Mode>,
    /// The int16 axis, for kernels that use int16 types.
    pub int16: Option<Int16Mode>,
    /// Whether shared memory is used, for kernels with both versions.
    pub local_memory: Option<bool>,
    /// Cooperative matrices on (`_cm`) or off (`_nocm`); `None` for kernels that never test
    /// `NCNN_cooperative_matrix`. The matrix shapes a `_cm` variant needs are in its
    /// `VariantInfo::cooperative_matrices`.
    pub coopmat: Option<bool>,
    /// The values assumed for the device facts the kernel tests in `#if` (`_dot`, `_sg`,
    /// `_vendor4318`, ...): the runtime picks the variant whose values are the device's.
    pub facts: FactChoice,
}

impl VariantKey {
    /// A buffer variant of this float mode, with no other axes.
    pub const fn new(float: FloatMode) -> Self {
        VariantKey {
            float,
            memory: MemoryKind::Buffer,
            int8: None,
            int16: None,
            local_memory: None,
            coopmat: None,
            facts: FactChoice::NONE,
        }
    }

    /// Everything the device must offer to run this variant.
    pub const fn requires(&self) -> FeatureSet {
        let mut set = self.float.requires();
        if let Some(i) = self.int8 {
            set = set.union(i.requires());
        }
        if let Some(i) = self.int16 {
            set = set.union(i.requires());
        }
        if let MemoryKind::Image = self.memory {
            set = set.with(if self.float.is_fp16() {
                Feature::ImageFormatsFp16
            } else {
                Feature::ImageFormatsFp32
            });
        }
        if let Some(true) = self.coopmat {
            set = set.with(Feature::CooperativeMatrix);
            if self.float.is_fp16() {
                // fp16 matrices declare the Float16 capability whatever the storage mode.
                set = set.with(Feature::ShaderFloat16);
            } else if self.float.is_bf16() {
                // bfloat16 matrices: the BFloat16TypeKHR and BFloat16CooperativeMatrixKHR
                // capabilities.
                set = set
                    .with(Feature::ShaderBFloat16Type)
                    .with(Feature::ShaderBFloat16CooperativeMatrix);
            }
        }
        set
    }

    /// The variant's name: `float[_int8][_int16][_image][_lm|_nolm][_cm|_nocm][facts]`, e.g.
    /// `fp16sa`, `fp32_int8s_image`, `fp32_int16p`, `fp16s_lm_cm`, `fp32_int8a_dot`, the device
    /// facts as [`FactChoice::name_parts`] writes them.
    pub fn name(&self) -> String {
        let mut s = self.float.name().to_string();
        if let Some(i) = self.int8 {
            s.push('_');
            s.push_str(i.name());
        }
        if let Some(i) = self.int16 {
            s.push('_');
            s.push_str(i.name());
        }
        if self.memory == MemoryKind::Image {
            s.push_str("_image");
        }
        match self.local_memory {
            Some(true) => s.push_str("_lm"),
            Some(false) => s.push_str("_nolm"),
            None => {}
        }
        match self.coopmat {
            Some(true) => s.push_str("_cm"),
            Some(false) => s.push_str("_nocm"),
            None => {}
        }
        s.push_str(&self.facts.name_parts());
        s
    }

    /// Parses a name made by [`VariantKey::name`].
    pub fn parse(name: &str) -> Result<VariantKey, ParseVariantError> {
        let err = || ParseVariantError {
            name: name.to_string(),
        };
        let mut parts = name.split('_');
        let float = parts
            .next()
            .and_then(|p| FloatMode::ALL.into_iter().find(|f| f.name() == p));
        let mut key = VariantKey::new(float.ok_or_else(err)?);
        let mut stage = 0;
        for part in parts {
            let next_stage;
            if let Some(i) = Int8Mode::ALL.into_iter().find(|i| i.name() == part) {
                key.int8 = Some(i);
                next_stage = 1;
            } else if let Some(i) = Int16Mode::ALL.into_iter().find(|i| i.name() == part) {
                key.int16 = Some(i);
                next_stage = 2;
            } else if part == "image" {
                key.memory = MemoryKind::Image;
                next_stage = 3;
            } else if part == "lm" || part == "nolm" {
                key.local_memory = Some(part == "lm");
                next_stage = 4;
            } else if part == "cm" || part == "nocm" {
                key.coopmat = Some(part == "cm");
                next_stage = 5;
            } else if key.facts.parse_part(part) {
                // The device facts' parts, last; their order is checked below.
                next_stage = 6;
            } else {
                return Err(err());
            }
            if next_stage <= stage && next_stage != 6 {
                return Err(err());
            }
            stage = next_stage;
        }
        // Names are canonical: parts in order, each once.
        if key.name() == name {
            Ok(key)
        } else {
            Err(err())
        }
    }
}

impl std::str::FromStr for VariantKey {
    type Err = ParseVariantError;

    /// [`VariantKey::parse`].
    fn from_str(name: &str) -> Result<VariantKey, ParseVariantError> {
        VariantKey::parse(name)
    }
}

impl fmt::Display for VariantKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name())
    }
}

/// A string that names no variant.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParseVariantError {
    /// The string given.
    pub name: String,
}

impl fmt::Display for ParseVariantError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "`{}` is not a variant name (form: float[_int8][_int16][_image][_lm|_nolm][_cm|_nocm][_dot|_nodot][_sg|_nosg][_feat|_nofeat][_vendorN|_vendorother][_driverN|_driverother])",
            self.name
        )
    }
}

impl std::error::Error for ParseVariantError {}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::IdChoice;

    #[test]
    fn names_round_trip() {
        for f in FloatMode::ALL {
            for m in [MemoryKind::Buffer, MemoryKind::Image] {
                for i in [None, Some(Int8Mode::Int8p), Some(Int8Mode::Int8a)] {
                    for i16 in [None, Some(Int16Mode::Int16p), Some(Int16Mode::Int16s)] {
                        for lm in [None, Some(true), Some(false)] {
                            for cm in [None, Some(true), Some(false)] {
                                let k = VariantKey {
                                    float: f,
                                    memory: m,
                                    int8: i,
                                    int16: i16,
                                    local_memory: lm,
                                    coopmat: cm,
                                    facts: FactChoice {
                                        dot: cm,
                                        driver: lm.map(|l| {
                                            if l {
                                                IdChoice::Is(13)
                                            } else {
                                                IdChoice::Other
                                            }
                                        }),
                                        ..FactChoice::NONE
                                    },
                                };
                                assert_eq!(VariantKey::parse(&k.name()), Ok(k), "{}", k.name());
                            }
                        }
                    }
                }
            }
        }
        assert!(VariantKey::parse("fp17").is_err());
        assert!(
            VariantKey::parse("fp32_image_int8s").is_err(),
            "axes out of order"
        );
        assert!(VariantKey::parse("fp32_lm_lm").is_err());
        assert!(
            VariantKey::parse("fp32_int16p_int8s").is_err(),
            "axes out of order"
        );
        assert!(
            VariantKey::parse("fp16s_cm_lm").is_err(),
            "axes out of order"
        );
        assert!(
            VariantKey::parse("fp16s_sg_dot").is_err(),
            "facts out of order"
        );
        assert!(VariantKey::parse("fp16s_dot_dot").is_err(), "a part twice");
        assert!(
            VariantKey::parse("fp16s_dot_cm").is_err(),
            "facts before an axis"
        );
        assert!(
            VariantKey::parse("fp32_vendor007").is_err(),
            "not canonical"
        );
    }

    #[test]
    fn requirements() {
        let k = VariantKey {
            float: FloatMode::Fp16sa,
            memory: MemoryKind::Image,
            int8: Some(Int8Mode::Int8a),
            int16: Some(Int16Mode::Int16a),
            local_memory: None,
            coopmat: Some(true),
            facts: FactChoice::NONE,
        };
        let r = k.requires();
        for f in [
            Feature::StorageBuffer16BitAccess,
            Feature::ShaderFloat16,
            Feature::StorageBuffer8BitAccess,
            Feature::ShaderInt8,
            Feature::ShaderInt16,
            Feature::ImageFormatsFp16,
            Feature::CooperativeMatrix,
        ] {
            assert!(r.contains(f), "{f}");
        }
        assert!(VariantKey::new(FloatMode::Fp16p).requires().is_empty());
        // bf16 matrices need bfloat16 matrix support and no fp16 at all.
        let bf16_cm = VariantKey {
            coopmat: Some(true),
            ..VariantKey::new(FloatMode::Bf16s)
        }
        .requires();
        for f in [
            Feature::StorageBuffer16BitAccess,
            Feature::CooperativeMatrix,
            Feature::ShaderBFloat16Type,
            Feature::ShaderBFloat16CooperativeMatrix,
        ] {
            assert!(bf16_cm.contains(f), "{f}");
        }
        assert!(!bf16_cm.contains(Feature::ShaderFloat16));
        let int16s = VariantKey {
            int16: Some(Int16Mode::Int16s),
            ..VariantKey::new(FloatMode::Fp32)
        };
        assert_eq!(
            int16s.requires(),
            FeatureSet::from_slice(&[Feature::StorageBuffer16BitAccess])
        );
    }
}
