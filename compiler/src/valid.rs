//! Phase 3, validate: checks of the kernel text that need no compiler (after thiserror's
//! `valid.rs`). On the raw text: `ncnn_*` device facts and `NCNN_*` switches vkprism doesn't
//! define, `psc` without the declarations it reads. Per variant, on the names it compiles
//! (`expanded.rs`, phase 4b): extended functions and types that don't exist, constructors that
//! store the wrong bits in the variant's mode. Each would also fail in glslang (or silently be 0
//! in `#if`), but with a message about the preamble's macros rather than the kernel.

use crate::compile::Diagnostic;
use crate::ctxt::Ctxt;
use crate::diagnostics;
use crate::expanded::Use;
use crate::preamble;
use crate::scan::{self, Identifiers};
use crate::source::Source;
use crate::tested::TestedFacts;
use std::collections::BTreeSet;
use vkprism_core::{DeviceFact, VariantKey};

/// Records every lexical mistake in `source` that doesn't depend on the variant (the names
/// tested in `#if`, `psc`); `false` when there was one. `tested` is what the kernel tests in `#if`
/// (`TestedFacts::of` its text, names it defines itself left out).
pub fn check(cx: &Ctxt, source: &Source, idents: &Identifiers, tested: &TestedFacts) -> bool {
    // Names the kernel (or an include) defines itself are its own, whatever their prefix.
    let own = scan::defined_names(&source.all_text);
    let facts_ok = check_device_facts(cx, source, idents, &own);
    let conditionals_ok = check_facts_in_conditionals(cx, source, &own, tested);
    let switches_ok = check_switches(cx, source, idents, &own);
    let psc_ok = check_psc(cx, source, idents);
    facts_ok && conditionals_ok && switches_ok && psc_ok
}

/// The checks on the names each variant compiles (after the preprocessor: a name inside a branch
/// a variant doesn't compile is not that variant's): unknown extended functions and types, and
/// constructors that store the wrong bits in the variant's mode. One error per distinct message,
/// naming the variants that hit it unless it is all `emitted` of them. `false` when there was one.
pub fn check_variants(
    cx: &Ctxt,
    source: &Source,
    uses: &[(VariantKey, Vec<Use>)],
    emitted: usize,
) -> bool {
    let own = scan::defined_names(&source.all_text);
    let mut grouped: Vec<(Diagnostic, Vec<String>)> = Vec::new();
    for (key, uses) in uses {
        for d in variant_messages(key, uses, &own) {
            match grouped.iter_mut().find(|(x, _)| *x == d) {
                Some((_, names)) => names.push(key.name()),
                None => grouped.push((d, vec![key.name()])),
            }
        }
    }
    diagnostics::order(&mut grouped);
    for (d, names) in &grouped {
        let which = match names.len() {
            n if n == emitted => String::new(),
            1 => format!("in variant {}: ", names[0]),
            _ => format!("in variants {}: ", names.join(", ")),
        };
        cx.error(source.span, format!("{}: {which}{}", d.location, d.message));
    }
    grouped.is_empty()
}

/// The mistakes among the names one variant compiles, each at its first use.
fn variant_messages(key: &VariantKey, uses: &[Use], own: &BTreeSet<String>) -> Vec<Diagnostic> {
    let idents: Vec<(String, &str)> = uses
        .iter()
        .map(|u| (u.name.clone(), u.at.as_str()))
        .collect();
    let calls: Vec<(String, &str)> = uses
        .iter()
        .filter(|u| u.call)
        .map(|u| (u.name.clone(), u.at.as_str()))
        .collect();
    let mut out = Vec::new();
    let mut say = |at: &str, message: String| {
        out.push(Diagnostic {
            location: at.to_string(),
            message,
        })
    };
    let functions = scan::unknown_functions(&idents, own);
    for (name, at) in capped(&functions, "unknown extended GLSL functions", &mut say) {
        let hint = did_you_mean(&scan::near_misses(name));
        say(
            at,
            format!(
                "unknown extended GLSL function `{name}`; {hint}known: {}",
                scan::known_functions_summary()
            ),
        );
    }
    let types = scan::unknown_types(&idents, own);
    for (name, at) in capped(&types, "unknown extended types", &mut say) {
        let hint = did_you_mean(&scan::near_types(name));
        say(
            at,
            format!(
                "unknown extended GLSL type `{name}`; {hint}the types: {}",
                scan::EXTENDED_TYPES.join(", ")
            ),
        );
    }
    if let Some(at) = const_block(uses) {
        say(
            at,
            "`const` on a `buffer` or `uniform` block: GLSL has no constant blocks, and glslang crashes indexing a member of one, so the kernel is refused before it compiles; remove `const` (a read-only buffer is `readonly buffer`)".to_string(),
        );
    }
    let mut seen = BTreeSet::new();
    for (ty, at) in scan::packed_constructors(&calls, own, key.float) {
        let Some((_, _, held, instead)) = scan::PACKED_TYPES.iter().find(|(t, ..)| *t == ty) else {
            continue;
        };
        if seen.insert(ty.clone()) {
            say(
                at,
                format!(
                    "`{ty}(...)` converts values, so it stores the wrong bits where `{ty}` holds {held}; use {instead}"
                ),
            );
        }
    }
    out
}

/// Where `const` qualifies a `buffer` or `uniform` declaration (only qualifiers and `layout`
/// arguments between them), if it does: glslang 16 dereferences a null constant when a member of
/// such a block is indexed (`const buffer b { vec4 d[]; }; ... d[0]`), a segmentation fault that
/// would take rustc down with it.
fn const_block(uses: &[Use]) -> Option<&str> {
    const BETWEEN: &[&str] = &[
        "layout",
        "binding",
        "set",
        "std140",
        "std430",
        "scalar",
        "packed",
        "shared",
        "row_major",
        "column_major",
        "constant_id",
        "push_constant",
        "offset",
        "align",
        "readonly",
        "writeonly",
        "coherent",
        "volatile",
        "restrict",
        "highp",
        "mediump",
        "lowp",
        "precise",
        "invariant",
        "const",
    ];
    for (i, u) in uses.iter().enumerate() {
        if u.name != "const" {
            continue;
        }
        let next = uses[i + 1..]
            .iter()
            .find(|n| !BETWEEN.contains(&n.name.as_str()));
        if next.is_some_and(|n| n.name == "buffer" || n.name == "uniform") {
            return Some(&u.at);
        }
    }
    None
}

/// The first [`SHOWN`] of `names`, with one message saying how many more there are: past a
/// screenful more names say nothing new, and a generated kernel may have thousands.
fn capped<'a, 'b>(
    names: &'a [(String, &'b str)],
    what: &str,
    say: &mut impl FnMut(&str, String),
) -> &'a [(String, &'b str)] {
    if names.len() > SHOWN {
        say(
            names[0].1,
            format!("{} more {what} not listed", names.len() - SHOWN),
        );
    }
    &names[..names.len().min(SHOWN)]
}

/// "did you mean `x`? " for the near misses of a name (empty when there are none).
fn did_you_mean<S: std::fmt::Display>(near: &[S]) -> String {
    let quoted: Vec<String> = near.iter().map(|n| format!("`{n}`")).collect();
    match quoted.len() {
        0 => String::new(),
        1 => format!("did you mean {}? ", quoted[0]),
        _ => format!("did you mean one of {}? ", quoted.join(", ")),
    }
}

/// An `NCNN_*` name the preamble doesn't define (a misspelt switch, or one of an ncnn option
/// vkprism has no variants for) would silently be 0 in `#if`.
fn check_switches(
    cx: &Ctxt,
    source: &Source,
    idents: &Identifiers,
    own: &BTreeSet<String>,
) -> bool {
    let known = preamble::switch_names();
    let mut seen = BTreeSet::new();
    let unknown: Vec<(String, u32)> = idents
        .all
        .iter()
        .filter(|(name, _)| {
            name.starts_with("NCNN_")
                && !known.contains(&name.as_str())
                && !own.contains(name)
                && seen.insert(name.as_str())
        })
        .cloned()
        .collect();
    // Capped like the other unknown names: each one shown is looked up in the main text.
    for (name, _) in shown(cx, source, &unknown, "unknown `NCNN_*` switches") {
        let at = first_use(source, &idents.main, name);
        cx.error(
            source.span,
            format!(
                "{at}: vkprism defines no switch `{name}` (it would silently be 0 in `#if`); the switches, 1 or 0 in each variant: {}",
                known.join(", ")
            ),
        );
    }
    unknown.is_empty()
}

/// Where `name` is first used: its line in the main text, else "an included file" (lines of the
/// concatenated text mean nothing past the main text).
/// The first [`SHOWN`] of `names`, with one error saying how many more there are: past a
/// screenful more names say nothing new, and a generated kernel may have thousands (each looked
/// up in the main text by [`first_use`]).
fn shown<'a>(
    cx: &Ctxt,
    source: &Source,
    names: &'a [(String, u32)],
    what: &str,
) -> &'a [(String, u32)] {
    if names.len() > SHOWN {
        cx.error(
            source.span,
            format!(
                "{}: {} more {what} not listed",
                source.locate(1),
                names.len() - SHOWN
            ),
        );
    }
    &names[..names.len().min(SHOWN)]
}

/// How many names of one kind are reported.
const SHOWN: usize = 20;

fn first_use(source: &Source, main: &[(String, u32)], name: &str) -> String {
    match main.iter().find(|(n, _)| n == name) {
        Some((_, main_line)) => source.locate(*main_line),
        None => "an included file".to_string(),
    }
}

/// ncnn's `ncnn_*` macros describe the device; the ones vkprism can't know per variant would
/// silently be 0 in `#if`.
fn check_device_facts(
    cx: &Ctxt,
    source: &Source,
    idents: &Identifiers,
    own: &BTreeSet<String>,
) -> bool {
    let unknown = scan::unknown_device_facts(&idents.all, own);
    for (name, _) in shown(cx, source, &unknown, "device facts") {
        let at = first_use(source, &idents.main, name);
        cx.error(
            source.span,
            format!(
                "{at}: `{name}` is a fact about the device the pipeline runs on, which vkprism can't know when it compiles the kernel (it would silently be 0 in `#if`); vkprism defines {} per variant, makes variant axes of {} (in `#if` or anywhere) and in `#if` of the specialization constants below but `ncnn_subgroupSize` and `ncnn_deviceID`, and declares as specialization constants the runtime sets from the device: {}. Test the variant's own switches (`NCNN_fp16_storage`, `NCNN_cooperative_matrix`, ...), or read the value at run time (`gl_SubgroupSize`, a specialization constant)",
                scan::KNOWN_DEVICE_FACTS.map(|n| format!("`{n}`")).join(", "),
                axis_fact_names(),
                fact_names()
            ),
        );
    }
    unknown.is_empty()
}

/// The device facts that are only ever variant axes (no specialization constant), for a message.
fn axis_fact_names() -> String {
    let names: Vec<&str> = std::iter::once("ncnn_VK_KHR_shader_integer_dot_product")
        .chain(
            vkprism_core::Feature::ALL
                .into_iter()
                .map(DeviceFact::Supports)
                .filter(|f| !DeviceFact::ALL.contains(f))
                .map(|f| f.glsl_name())
                .filter(|n| !n.is_empty()),
        )
        .collect();
    names.join(", ")
}

/// The device facts vkprism declares as specialization constants, for a message.
fn fact_names() -> String {
    let names: Vec<&str> = DeviceFact::ALL.iter().map(|f| f.glsl_name()).collect();
    names.join(", ")
}

/// Device facts in `#if` are variant axes (`tested.rs`), but two can't be: `ncnn_subgroupSize`
/// (a pipeline's subgroup size is chosen when it is created) and `ncnn_deviceID` (no bounded set
/// of values), which stay specialization constants the preprocessor can't see; and a numeric
/// fact must be compared with a number, one variant per value.
fn check_facts_in_conditionals(
    cx: &Ctxt,
    source: &Source,
    own: &BTreeSet<String>,
    tested: &TestedFacts,
) -> bool {
    let main_lines = source.text.lines().count() as u32;
    let at = |line: u32| {
        if line <= main_lines {
            source.locate(line)
        } else {
            "an included file".to_string()
        }
    };
    let mut seen = BTreeSet::new();
    let mut ok = true;
    for (name, line) in scan::conditional_identifiers(&source.all_text) {
        let spec_constant_only = DeviceFact::from_glsl_name(&name).is_some()
            && vkprism_core::preprocessor_fact(&name).is_none();
        if !spec_constant_only || own.contains(&name) || !seen.insert(name.clone()) {
            continue;
        }
        ok = false;
        cx.error(
            source.span,
            format!(
                "{}: `{name}` is a specialization constant the runtime sets from the device when it creates the pipeline, so the preprocessor can't see it (in `#if` it would silently be 0); test it in an expression instead: `if ({name} == 32) {{ ... }}` (the driver folds the branch away)",
                at(line)
            ),
        );
    }
    for (name, line) in &tested.uncompared {
        ok = false;
        cx.error(
            source.span,
            format!(
                "{}: `{name}` in `#if` is compared with a number (`{name} == 4318`): vkprism compiles one variant per value a kernel compares it with and one for every other device",
                at(*line)
            ),
        );
    }
    ok
}

/// `psc(x)` expands to `(x == 0 ? p.x : x)`: the push-constant block must be named `p` and
/// hold a member `x`, and `x` must be a specialization constant. Without them glslang reports
/// the expansion (`cannot convert from ' temp float' ...`), not what is missing.
fn check_psc(cx: &Ctxt, source: &Source, idents: &Identifiers) -> bool {
    let Some(line) = scan::psc_line(&idents.all) else {
        return true;
    };
    let problem = match push_instance_name(&source.all_text) {
        Some(name) if name == "p" => None,
        Some(name) => Some(format!("the push-constant block is named `{name}`")),
        None => Some("the kernel declares no push-constant block".to_string()),
    };
    if let Some(problem) = problem {
        cx.error(
            source.span,
            format!(
                "{}: psc() reads the push constant of the same name from a block named `p`, but {problem}; declare `layout (push_constant) uniform parameter {{ ... }} p;`",
                source.locate(line),
            ),
        );
        return false;
    }
    let members = push_member_names(&source.all_text);
    let specs = spec_constant_names(&source.all_text);
    let mut ok = true;
    let mut seen = BTreeSet::new();
    for (name, line) in scan::psc_arguments(&source.all_text) {
        if !seen.insert(name.clone()) {
            continue;
        }
        let mut missing = Vec::new();
        if !specs.contains(&name) {
            missing.push(format!(
                "the specialization constant `layout (constant_id = K) const int {name} = 0;`"
            ));
        }
        if !members.contains(&name) {
            missing.push(format!("a member `{name}` in the push-constant block `p`"));
        }
        if missing.is_empty() {
            continue;
        }
        ok = false;
        let at = match idents.main.iter().find(|(n, l)| *n == name && *l == line) {
            Some(_) => source.locate(line),
            None => first_use(source, &idents.main, &name),
        };
        cx.error(
            source.span,
            format!(
                "{at}: `psc({name})` is the specialization constant `{name}` when it is set non-zero, else the push constant `p.{name}`; declare {}",
                missing.join(" and ")
            ),
        );
    }
    ok
}

/// The identifiers inside the `push_constant` block's braces (its members, and their types).
fn push_member_names(text: &str) -> BTreeSet<String> {
    let Some(at) = text.find("push_constant") else {
        return BTreeSet::new();
    };
    let rest = &text[at..];
    let (Some(open), Some(close)) = (rest.find('{'), rest.find('}')) else {
        return BTreeSet::new();
    };
    if close < open {
        return BTreeSet::new();
    }
    scan::identifiers(&rest[open + 1..close])
        .into_iter()
        .map(|(n, _)| n)
        .collect()
}

/// The names declared `layout (constant_id = K) const TYPE NAME`.
fn spec_constant_names(text: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut rest = text;
    while let Some(at) = rest.find("constant_id") {
        let stmt = &rest[at..];
        let end = stmt.find(';').unwrap_or(stmt.len());
        let ids = scan::identifiers(&stmt[..end]);
        if let Some(k) = ids.iter().position(|(n, _)| n == "const") {
            if let Some((name, _)) = ids.get(k + 2) {
                out.insert(name.clone());
            }
        }
        rest = &stmt[end..];
    }
    out
}

/// The instance name of the `push_constant` block, read lexically (reflection can't help: without
/// `p` the kernel doesn't compile).
fn push_instance_name(text: &str) -> Option<String> {
    let at = text.find("push_constant")?;
    let rest = &text[at..];
    let close = rest.find('}')?;
    let after = rest[close + 1..].trim_start();
    let name: String = after
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
        .collect();
    Some(name)
}
