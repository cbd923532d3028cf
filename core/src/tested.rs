//! Device facts a kernel tests in the preprocessor (`#if ncnn_subgroup_basic`,
//! `#if ncnn_driverID == 13`). ncnn compiles on the device, so its `#if` sees them; vkprism
//! compiles before it knows the device, so each fact tested there becomes a variant axis: the
//! macro compiles the values the tests tell apart, and the runtime picks the variant whose values
//! are the device's.
//!
//! Boolean facts are grouped in families, one axis each: a family's variant `_dot` has every
//! tested fact of the family defined 1 and is the device's only where it has them all; `_nodot`
//! has them all 0, and is the one for every other device. A device that has some of a family's
//! facts but not all gets the variant written for none of them: correct (code written for a
//! device without a feature runs on one with it), not always the fastest. Numeric facts
//! (`ncnn_vendorID`, `ncnn_driverID`) get one variant per value the kernel compares them with and
//! one for every other value.

use crate::{DeviceFact, DeviceFeatures, Feature};
use std::fmt;

/// The family of a boolean device fact: each family a kernel tests is one variant axis.
#[non_exhaustive]
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum FactFamily {
    /// Integer dot products (`ncnn_VK_KHR_shader_integer_dot_product`,
    /// `ncnn_shaderIntegerDotProduct`, `ncnn_integerDotProduct…Accelerated`): `_dot` / `_nodot`.
    Dot,
    /// Subgroup operations (`ncnn_subgroup_basic`, …, `ncnn_shaderSubgroupExtendedTypes`):
    /// `_sg` / `_nosg`.
    Subgroup,
    /// Every other feature (`ncnn_shaderInt16`, `ncnn_shaderInt64`, …): `_feat` / `_nofeat`.
    Features,
}

impl FactFamily {
    /// Every family, in the order of the variant name's parts.
    pub const ALL: [FactFamily; 3] = [FactFamily::Dot, FactFamily::Subgroup, FactFamily::Features];

    /// The variant name's part for "every tested fact of the family present" (`dot`); absent is
    /// `no` + this.
    pub const fn name(self) -> &'static str {
        match self {
            FactFamily::Dot => "dot",
            FactFamily::Subgroup => "sg",
            FactFamily::Features => "feat",
        }
    }

    /// The family `feature` belongs to.
    pub fn of(feature: Feature) -> FactFamily {
        match feature {
            Feature::IntegerDotProduct
            | Feature::IntegerDotProduct4x8BitPackedSignedAccelerated
            | Feature::IntegerDotProduct16BitSignedAccelerated => FactFamily::Dot,
            Feature::ShaderSubgroupExtendedTypes => FactFamily::Subgroup,
            f if Feature::SUBGROUP_OPERATIONS.contains(&f) => FactFamily::Subgroup,
            _ => FactFamily::Features,
        }
    }
}

/// The value a variant assumes for a numeric device fact compared in `#if`.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum IdChoice {
    /// The fact equals this value (a value the kernel compares it with).
    Is(u32),
    /// The fact is none of the values the kernel compares it with.
    Other,
}

/// The values one variant was compiled with for the device facts its kernel tests in `#if`;
/// `None` for what the kernel doesn't test.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct FactChoice {
    /// Integer dot products: every tested fact present (`_dot`) or all absent (`_nodot`).
    pub dot: Option<bool>,
    /// Subgroup operations (`_sg` / `_nosg`).
    pub subgroup: Option<bool>,
    /// Other features (`_feat` / `_nofeat`).
    pub features: Option<bool>,
    /// `ncnn_vendorID` (`_vendor4318` / `_vendorother`).
    pub vendor: Option<IdChoice>,
    /// `ncnn_driverID` (`_driver13` / `_driverother`).
    pub driver: Option<IdChoice>,
}

impl FactChoice {
    /// No fact tested.
    pub const NONE: FactChoice = FactChoice {
        dot: None,
        subgroup: None,
        features: None,
        vendor: None,
        driver: None,
    };

    /// The value for `family`.
    pub const fn family(&self, family: FactFamily) -> Option<bool> {
        match family {
            FactFamily::Dot => self.dot,
            FactFamily::Subgroup => self.subgroup,
            FactFamily::Features => self.features,
        }
    }

    /// Sets the value for `family`.
    pub fn set_family(&mut self, family: FactFamily, value: Option<bool>) {
        match family {
            FactFamily::Dot => self.dot = value,
            FactFamily::Subgroup => self.subgroup = value,
            FactFamily::Features => self.features = value,
        }
    }

    /// The variant name's parts (`_dot_driver13`), in a fixed order.
    pub fn name_parts(&self) -> String {
        let mut s = String::new();
        for family in FactFamily::ALL {
            if let Some(on) = self.family(family) {
                s.push_str(if on { "_" } else { "_no" });
                s.push_str(family.name());
            }
        }
        for (word, id) in [("vendor", self.vendor), ("driver", self.driver)] {
            match id {
                Some(IdChoice::Is(v)) => s.push_str(&format!("_{word}{v}")),
                Some(IdChoice::Other) => s.push_str(&format!("_{word}other")),
                None => {}
            }
        }
        s
    }

    /// Reads one name part made by [`name_parts`](Self::name_parts) into `self`; `false` when
    /// `part` is not one.
    pub fn parse_part(&mut self, part: &str) -> bool {
        for family in FactFamily::ALL {
            if part == family.name() || part.strip_prefix("no") == Some(family.name()) {
                self.set_family(family, Some(part == family.name()));
                return true;
            }
        }
        for (word, slot) in [("vendor", &mut self.vendor), ("driver", &mut self.driver)] {
            if let Some(rest) = part.strip_prefix(word) {
                *slot = match rest {
                    "other" => Some(IdChoice::Other),
                    n if !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()) => {
                        match n.parse() {
                            Ok(v) => Some(IdChoice::Is(v)),
                            Err(_) => return false,
                        }
                    }
                    _ => return false,
                };
                return true;
            }
        }
        false
    }

    /// Why this choice is not the one for `device`, or `None` when it is. `tested` lists the
    /// facts the kernel tests in `#if` (`VariantInfo::tested_facts`); `compared` the values
    /// its variants compare `ncnn_vendorID` and `ncnn_driverID` with (`_vendorother` is the
    /// device's when its vendor is none of them).
    pub fn mismatch(
        &self,
        tested: &[DeviceFact],
        compared: &ComparedIds,
        device: &DeviceFeatures,
    ) -> Option<FactMismatch> {
        for family in FactFamily::ALL {
            let Some(assumed) = self.family(family) else {
                continue;
            };
            let facts: Vec<Feature> = tested
                .iter()
                .filter_map(|f| match f {
                    DeviceFact::Supports(feature) if FactFamily::of(*feature) == family => {
                        Some(*feature)
                    }
                    _ => None,
                })
                .collect();
            let has_all = facts.iter().all(|f| device.features.contains(*f));
            if has_all != assumed {
                return Some(if assumed {
                    FactMismatch::CompiledWith(facts)
                } else {
                    FactMismatch::CompiledWithout(facts)
                });
            }
        }
        let ids = [
            (
                IdFact::Vendor,
                self.vendor,
                device.vendor_id,
                &compared.vendors,
            ),
            (
                IdFact::Driver,
                self.driver,
                device.driver_id,
                &compared.drivers,
            ),
        ];
        for (fact, choice, device, values) in ids {
            let fits = match choice {
                None => true,
                Some(IdChoice::Is(v)) => v == device,
                Some(IdChoice::Other) => !values.contains(&device),
            };
            if !fits {
                return Some(FactMismatch::Id {
                    fact,
                    compiled: choice.unwrap_or(IdChoice::Other),
                    device,
                });
            }
        }
        None
    }
}

impl fmt::Display for FactChoice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name_parts())
    }
}

/// Why a variant's [`FactChoice`] is not the device's ([`FactChoice::mismatch`]); `Display`
/// says it in words.
#[non_exhaustive]
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FactMismatch {
    /// Compiled for a device with all of these features; the device lacks one.
    CompiledWith(Vec<Feature>),
    /// Compiled for a device without these features (one of them, when several); the device
    /// has them all.
    CompiledWithout(Vec<Feature>),
    /// Compiled for another value of a numeric fact.
    Id {
        /// Which fact.
        fact: IdFact,
        /// The value compiled for: one the kernel compares with, or any other.
        compiled: IdChoice,
        /// The device's value.
        device: u32,
    },
}

/// A numeric device fact a kernel compares in `#if`.
#[non_exhaustive]
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum IdFact {
    /// `ncnn_vendorID`.
    Vendor,
    /// `ncnn_driverID`.
    Driver,
}

impl IdFact {
    /// Its Vulkan name: `vendorID`, `driverID`.
    pub const fn vulkan_name(self) -> &'static str {
        match self {
            IdFact::Vendor => "vendorID",
            IdFact::Driver => "driverID",
        }
    }
}

impl fmt::Display for FactMismatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names = |facts: &[Feature]| {
            facts
                .iter()
                .map(|f| f.vulkan_name())
                .collect::<Vec<_>>()
                .join(", ")
        };
        match self {
            FactMismatch::CompiledWith(facts) => {
                write!(f, "compiled for a device with {}", names(facts))
            }
            FactMismatch::CompiledWithout(facts) if facts.len() == 1 => {
                write!(f, "compiled for a device without {}", names(facts))
            }
            FactMismatch::CompiledWithout(facts) => {
                write!(f, "compiled for a device without one of {}", names(facts))
            }
            FactMismatch::Id {
                fact,
                compiled: IdChoice::Is(v),
                device,
            } => write!(
                f,
                "compiled for {} {v}, the device's is {device}",
                fact.vulkan_name()
            ),
            FactMismatch::Id {
                fact,
                compiled: IdChoice::Other,
                device,
            } => write!(
                f,
                "compiled for a {} other than the device's ({device})",
                fact.vulkan_name()
            ),
        }
    }
}

/// The values a kernel's variants compare numeric device facts with (`ncnn_vendorID == 4318`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ComparedIds {
    /// Values of `ncnn_vendorID`.
    pub vendors: Vec<u32>,
    /// Values of `ncnn_driverID`.
    pub drivers: Vec<u32>,
}

impl ComparedIds {
    /// The values the choices of `choices` name.
    pub fn of<'a>(choices: impl IntoIterator<Item = &'a FactChoice>) -> ComparedIds {
        let mut out = ComparedIds::default();
        for c in choices {
            if let Some(IdChoice::Is(v)) = c.vendor {
                out.vendors.push(v);
            }
            if let Some(IdChoice::Is(v)) = c.driver {
                out.drivers.push(v);
            }
        }
        out
    }
}

/// The device fact `name` names where a kernel may test it in `#if`: ncnn's feature booleans
/// (`ncnn_shaderInt16`), extensions and properties vkprism can tell per device
/// (`ncnn_VK_KHR_shader_integer_dot_product`, `ncnn_subgroup_basic`,
/// `ncnn_integerDotProduct4x8BitPackedSignedAccelerated`), `ncnn_vendorID` and `ncnn_driverID`.
/// `ncnn_subgroupSize` and `ncnn_deviceID` are not: a pipeline's subgroup size is chosen when it
/// is created, and a device id per variant would not be a bounded set.
pub fn preprocessor_fact(name: &str) -> Option<DeviceFact> {
    if name == "ncnn_VK_KHR_shader_integer_dot_product" {
        return Some(DeviceFact::Supports(Feature::IntegerDotProduct));
    }
    let named = |fact: &DeviceFact| !name.is_empty() && fact.glsl_name() == name;
    let fact = [DeviceFact::VendorId, DeviceFact::DriverId]
        .into_iter()
        .chain(Feature::ALL.into_iter().map(DeviceFact::Supports))
        .find(named)?;
    Some(fact)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        let c = FactChoice {
            dot: Some(true),
            subgroup: Some(false),
            features: None,
            vendor: Some(IdChoice::Is(4318)),
            driver: Some(IdChoice::Other),
        };
        assert_eq!(c.name_parts(), "_dot_nosg_vendor4318_driverother");
        let mut back = FactChoice::NONE;
        for part in c.name_parts().split('_').skip(1) {
            assert!(back.parse_part(part), "{part}");
        }
        assert_eq!(back, c);
        for bad in ["vendor", "driver99999999999", "nocm"] {
            assert!(!FactChoice::default().parse_part(bad), "{bad}");
        }
    }

    #[test]
    fn a_family_matches_only_a_device_with_all_its_tested_facts() {
        let tested = [
            DeviceFact::Supports(Feature::IntegerDotProduct),
            DeviceFact::Supports(Feature::IntegerDotProduct4x8BitPackedSignedAccelerated),
            DeviceFact::VendorId,
        ];
        let mut device = DeviceFeatures {
            vendor_id: 0x10de,
            ..Default::default()
        };
        device.features.insert(Feature::IntegerDotProduct);
        let dot = FactChoice {
            dot: Some(true),
            ..FactChoice::NONE
        };
        let nodot = FactChoice {
            dot: Some(false),
            ..FactChoice::NONE
        };
        let ids = ComparedIds::default();
        let why = dot.mismatch(&tested, &ids, &device).unwrap().to_string();
        assert!(
            why.contains("integerDotProduct4x8BitPackedSignedAccelerated"),
            "{why}"
        );
        assert_eq!(nodot.mismatch(&tested, &ids, &device), None);
        device
            .features
            .insert(Feature::IntegerDotProduct4x8BitPackedSignedAccelerated);
        assert_eq!(dot.mismatch(&tested, &ids, &device), None);
        assert!(nodot.mismatch(&tested, &ids, &device).is_some());
        // Vendor: the compared value, or any other.
        let ids = ComparedIds {
            vendors: vec![4318],
            drivers: vec![],
        };
        let nvidia = FactChoice {
            vendor: Some(IdChoice::Is(4318)),
            ..FactChoice::NONE
        };
        let other = FactChoice {
            vendor: Some(IdChoice::Other),
            ..FactChoice::NONE
        };
        assert_eq!(nvidia.mismatch(&tested, &ids, &device), None);
        assert!(other.mismatch(&tested, &ids, &device).is_some());
        device.vendor_id = 0x1002;
        assert!(nvidia.mismatch(&tested, &ids, &device).is_some());
        assert_eq!(other.mismatch(&tested, &ids, &device), None);
    }

    #[test]
    fn preprocessor_facts() {
        assert_eq!(
            preprocessor_fact("ncnn_subgroup_arithmetic"),
            Some(DeviceFact::Supports(Feature::SubgroupArithmetic))
        );
        assert_eq!(
            preprocessor_fact("ncnn_shaderInt16"),
            Some(DeviceFact::Supports(Feature::ShaderInt16))
        );
        assert_eq!(
            preprocessor_fact("ncnn_driverID"),
            Some(DeviceFact::DriverId)
        );
        assert_eq!(preprocessor_fact("ncnn_subgroupSize"), None);
        assert_eq!(preprocessor_fact("ncnn_deviceID"), None);
        assert_eq!(preprocessor_fact("ncnn_unknown"), None);
    }
}
