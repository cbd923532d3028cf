//! Phases 3–5, device facts tested in `#if` (`vkprism_core::FactChoice` has the model): which
//! facts a kernel tests and the values it compares numeric ones with, the fact choices that make
//! its variant axes, and the `#define`s that give a variant its choice's values.

use crate::scan;
use std::collections::BTreeSet;
use std::fmt::Write;
use vkprism_core::{preprocessor_fact, DeviceFact, FactChoice, FactFamily, Feature, IdChoice};

/// The device facts one kernel tests in the preprocessor.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TestedFacts {
    /// Each fact once, in the order first seen: boolean facts, `VendorId`, `DriverId`.
    pub facts: Vec<DeviceFact>,
    /// The values `ncnn_vendorID` is compared with, sorted.
    pub vendors: Vec<u32>,
    /// The values `ncnn_driverID` is compared with, sorted.
    pub drivers: Vec<u32>,
    /// Numeric facts in `#if` not compared with a number: `(name, line)`.
    pub uncompared: Vec<(String, u32)>,
}

impl TestedFacts {
    /// The facts `text` (a kernel with its includes) tests: every preprocessor fact on a
    /// conditional line, and every one without a specialization constant used anywhere (only a
    /// `#define` can give it a value). Names the kernel defines itself (`own`) are its own.
    pub fn of(text: &str, own: &BTreeSet<String>) -> TestedFacts {
        let mut tested = TestedFacts::default();
        for (code, line) in scan::conditional_lines(text) {
            for (name, _) in scan::identifiers(code) {
                let Some(fact) = fact(&name, own) else {
                    continue;
                };
                tested.add(fact);
                let values = match fact {
                    DeviceFact::VendorId => &mut tested.vendors,
                    DeviceFact::DriverId => &mut tested.drivers,
                    _ => continue,
                };
                let compared = compared_values(code, &name);
                if compared.is_empty() {
                    tested.uncompared.push((name, line));
                }
                values.extend(compared);
            }
        }
        for (name, _) in scan::identifiers(text) {
            if let Some(fact @ DeviceFact::Supports(f)) = fact(&name, own) {
                if !DeviceFact::ALL.contains(&DeviceFact::Supports(f)) {
                    tested.add(fact);
                }
            }
        }
        for values in [&mut tested.vendors, &mut tested.drivers] {
            values.sort_unstable();
            values.dedup();
        }
        tested
    }

    fn add(&mut self, fact: DeviceFact) {
        if !self.facts.contains(&fact) {
            self.facts.push(fact);
        }
    }

    /// The macro names of the tested facts (so they are not also declared as specialization
    /// constants).
    pub fn names(&self) -> impl Iterator<Item = &'static str> + '_ {
        self.facts.iter().flat_map(|f| macro_names(*f))
    }

    /// Every choice of values the variants take: each family tested on and off, each numeric
    /// fact at each compared value and at any other; `[NONE]` when nothing is tested.
    pub fn choices(&self) -> Vec<FactChoice> {
        let mut out = vec![FactChoice::NONE];
        for family in FactFamily::ALL {
            if self.tests_family(family) {
                out = out
                    .into_iter()
                    .flat_map(|c| {
                        [true, false].map(|on| {
                            let mut c = c;
                            c.set_family(family, Some(on));
                            c
                        })
                    })
                    .collect();
            }
        }
        let ids: [(DeviceFact, &[u32]); 2] = [
            (DeviceFact::VendorId, &self.vendors),
            (DeviceFact::DriverId, &self.drivers),
        ];
        for (fact, values) in ids {
            if !self.facts.contains(&fact) {
                continue;
            }
            let options: Vec<IdChoice> = values
                .iter()
                .map(|v| IdChoice::Is(*v))
                .chain([IdChoice::Other])
                .collect();
            out = out
                .into_iter()
                .flat_map(|c| {
                    options.iter().map(move |id| {
                        let mut c = c;
                        match fact {
                            DeviceFact::VendorId => c.vendor = Some(*id),
                            _ => c.driver = Some(*id),
                        }
                        c
                    })
                })
                .collect();
        }
        out
    }

    fn tests_family(&self, family: FactFamily) -> bool {
        self.facts
            .iter()
            .any(|f| matches!(f, DeviceFact::Supports(x) if FactFamily::of(*x) == family))
    }

    /// The `#define` of each tested fact for a variant compiled with `choice`.
    pub fn defines(&self, choice: &FactChoice) -> String {
        let mut s = String::new();
        for fact in &self.facts {
            let value = match fact {
                DeviceFact::Supports(f) => {
                    u32::from(choice.family(FactFamily::of(*f)) == Some(true))
                }
                DeviceFact::VendorId => id_value(choice.vendor, &self.vendors),
                DeviceFact::DriverId => id_value(choice.driver, &self.drivers),
                DeviceFact::SubgroupSize | DeviceFact::DeviceId => continue,
            };
            for name in macro_names(*fact) {
                let _ = writeln!(s, "#define {name} {value}");
            }
        }
        s
    }
}

/// The names ncnn gives `fact` in GLSL: the integer dot product is both the extension
/// (`ncnn_VK_KHR_shader_integer_dot_product`) and the feature (`ncnn_shaderIntegerDotProduct`).
fn macro_names(fact: DeviceFact) -> Vec<&'static str> {
    match fact {
        DeviceFact::Supports(Feature::IntegerDotProduct) => vec![
            "ncnn_VK_KHR_shader_integer_dot_product",
            "ncnn_shaderIntegerDotProduct",
        ],
        f => vec![f.glsl_name()],
    }
}

/// The fact `name` names where a kernel tests it in `#if`, unless the kernel defines it.
fn fact(name: &str, own: &BTreeSet<String>) -> Option<DeviceFact> {
    if own.contains(name) {
        return None;
    }
    match preprocessor_fact(name)? {
        // `ncnn_cooperativeMatrix` is the `_cm` axis's business in `#if`
        // (`ncnn_VK_KHR_cooperative_matrix`); as a constant it stays one.
        DeviceFact::Supports(Feature::CooperativeMatrix) => None,
        f => Some(f),
    }
}

/// The value a numeric fact's macro gets: the chosen one, or for "any other" one that none of
/// the compared values is (the smallest not among them).
fn id_value(choice: Option<IdChoice>, compared: &[u32]) -> u32 {
    match choice {
        Some(IdChoice::Is(v)) => v,
        _ => (0..).find(|v| !compared.contains(v)).unwrap_or(u32::MAX),
    }
}

/// The integer literals `name` is compared with (`==`, `!=`) in `code`, on either side.
fn compared_values(code: &str, name: &str) -> Vec<u32> {
    let tokens = literal_tokens(code);
    let is_comparison = |t: Option<&String>| t.is_some_and(|t| t == "==" || t == "!=");
    let mut out = Vec::new();
    for (i, t) in tokens.iter().enumerate() {
        if t != name {
            continue;
        }
        if is_comparison(tokens.get(i + 1)) {
            out.extend(tokens.get(i + 2).and_then(|v| parse_literal(v)));
        }
        if i >= 2 && is_comparison(tokens.get(i - 1)) {
            out.extend(parse_literal(&tokens[i - 2]));
        }
    }
    out
}

/// `code` as identifiers, numbers and operators (whitespace dropped).
fn literal_tokens(code: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut chars = code.chars().peekable();
    while let Some(c) = chars.next() {
        if c.is_whitespace() {
            continue;
        }
        let mut t = c.to_string();
        if c.is_ascii_alphanumeric() || c == '_' {
            while let Some(&n) = chars.peek() {
                if !(n.is_ascii_alphanumeric() || n == '_') {
                    break;
                }
                t.push(n);
                chars.next();
            }
        } else if let Some(&n) = chars.peek() {
            if matches!((c, n), ('=', '=') | ('!', '=') | ('&', '&') | ('|', '|')) {
                t.push(n);
                chars.next();
            }
        }
        out.push(t);
    }
    out
}

/// A decimal or `0x` literal, with an optional `u` suffix.
fn parse_literal(t: &str) -> Option<u32> {
    let t = t.strip_suffix(['u', 'U']).unwrap_or(t);
    match t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
        Some(hex) => u32::from_str_radix(hex, 16).ok(),
        None => t.parse().ok(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn of(text: &str) -> TestedFacts {
        TestedFacts::of(text, &scan::defined_names(text))
    }

    #[test]
    fn facts_and_compared_values_are_found() {
        let t = of("#if ncnn_VK_KHR_shader_integer_dot_product && ncnn_integerDotProduct4x8BitPackedSignedAccelerated\n#endif\n\
                    #if ncnn_driverID == 13\n#elif 0x10de == ncnn_vendorID || ncnn_vendorID != 4318u\n#endif\n\
                    int x = ncnn_subgroupSize;\n");
        assert_eq!(
            t.facts,
            vec![
                DeviceFact::Supports(Feature::IntegerDotProduct),
                DeviceFact::Supports(Feature::IntegerDotProduct4x8BitPackedSignedAccelerated),
                DeviceFact::DriverId,
                DeviceFact::VendorId,
            ]
        );
        assert_eq!(t.drivers, vec![13]);
        assert_eq!(t.vendors, vec![4318]);
        assert!(t.uncompared.is_empty());
        // dot ×2, driver (13, other) ×2, vendor (4318, other) ×2.
        let choices = t.choices();
        assert_eq!(choices.len(), 8);
        let names: Vec<String> = choices.iter().map(|c| c.name_parts()).collect();
        assert!(
            names.contains(&"_dot_vendor4318_driverother".to_string()),
            "{names:?}"
        );
        let other = choices
            .iter()
            .find(|c| c.name_parts() == "_nodot_vendorother_driver13")
            .unwrap();
        assert_eq!(
            t.defines(other),
            "#define ncnn_VK_KHR_shader_integer_dot_product 0\n\
             #define ncnn_shaderIntegerDotProduct 0\n\
             #define ncnn_integerDotProduct4x8BitPackedSignedAccelerated 0\n\
             #define ncnn_driverID 13\n#define ncnn_vendorID 0\n"
        );
    }

    #[test]
    fn own_names_uncompared_ids_and_nothing_tested() {
        let t = of("#define ncnn_subgroup_basic 1\n#if ncnn_subgroup_basic\n#endif\n");
        assert!(t.facts.is_empty());
        assert_eq!(t.choices(), vec![FactChoice::NONE]);
        let t = of("#if ncnn_vendorID\n#endif\n");
        assert_eq!(t.uncompared, vec![("ncnn_vendorID".to_string(), 1)]);
        // A preprocessor-only fact used outside `#if` is defined too.
        let t = of("bool b = ncnn_subgroup_basic != 0;\n");
        assert_eq!(t.facts, vec![DeviceFact::Supports(Feature::SubgroupBasic)]);
        assert_eq!(t.choices().len(), 2);
    }
}
