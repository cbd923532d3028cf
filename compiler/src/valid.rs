//! Phase 3, validate: checks of the kernel text that need no compiler (after thiserror's `valid.rs`): extended
//! functions that don't exist, and `psc` without the push-constant block it reads. Both would
//! also fail in glslang, but with a message about the preamble's macros rather than the kernel.

use crate::ctxt::Ctxt;
use crate::preamble;
use crate::scan::{self, Identifiers};
use crate::source::Source;
use std::collections::BTreeSet;

/// Records every lexical mistake in `source`; `false` when there was one.
pub fn check(cx: &Ctxt, source: &Source, idents: &Identifiers) -> bool {
    // Names the kernel (or an include) defines itself are its own, whatever their prefix.
    let own = scan::defined_names(&source.all_text);
    let functions_ok = check_extended_functions(cx, source, idents, &own);
    let facts_ok = check_device_facts(cx, source, idents, &own);
    let switches_ok = check_switches(cx, source, idents, &own);
    let types_ok = check_types(cx, source, idents, &own);
    let constructors_ok = check_packed_constructors(cx, source, &own);
    let psc_ok = check_psc(cx, source, idents);
    functions_ok && facts_ok && switches_ok && types_ok && constructors_ok && psc_ok
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

/// A name shaped like an extended type that doesn't exist (`sfpvec3`): glslang would report a
/// syntax error without naming it.
fn check_types(cx: &Ctxt, source: &Source, idents: &Identifiers, own: &BTreeSet<String>) -> bool {
    let unknown = scan::unknown_types(&idents.all, own);
    for (name, _) in shown(cx, source, &unknown, "unknown extended types") {
        let at = first_use(source, &idents.main, name);
        let hint = did_you_mean(&scan::near_types(name));
        cx.error(
            source.span,
            format!(
                "{at}: unknown extended GLSL type `{name}`; {hint}the types: {}",
                scan::EXTENDED_TYPES.join(", ")
            ),
        );
    }
    unknown.is_empty()
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

/// Every name with an extended-function prefix must be a function vkprism defines.
fn check_extended_functions(
    cx: &Ctxt,
    source: &Source,
    idents: &Identifiers,
    own: &BTreeSet<String>,
) -> bool {
    let unknown = scan::unknown_functions(&idents.all, own);
    for (name, _) in shown(cx, source, &unknown, "unknown extended GLSL functions") {
        let at = first_use(source, &idents.main, name);
        let hint = did_you_mean(&scan::near_misses(name));
        cx.error(
            source.span,
            format!(
                "{at}: unknown extended GLSL function `{name}`; {hint}known: {}",
                scan::known_functions_summary()
            ),
        );
    }
    unknown.is_empty()
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
                "{at}: `{name}` is a fact about the device the pipeline runs on, which vkprism can't know when it compiles the kernel (it would silently be 0 in `#if`); vkprism defines {} per variant. Test the variant's own switches (`NCNN_fp16_storage`, `NCNN_cooperative_matrix`, ...), or read the value at run time (`gl_SubgroupSize`, a specialization constant)",
                scan::KNOWN_DEVICE_FACTS.map(|n| format!("`{n}`")).join(" and ")
            ),
        );
    }
    unknown.is_empty()
}

/// `lfpvec4(v)` converts where a mode packs: in fp16p, fp16pa, fp16s and bf16p it turns four
/// values into a `uvec2` of their integer parts, silently. The same holds for the storage types.
fn check_packed_constructors(cx: &Ctxt, source: &Source, own: &BTreeSet<String>) -> bool {
    let calls = scan::calls(&source.all_text);
    let found = scan::packed_constructors(&calls, own);
    let mut seen = BTreeSet::new();
    for (ty, _) in &found {
        if !seen.insert(ty.clone()) {
            continue;
        }
        let main_calls = scan::calls(&source.text);
        let at = first_use(source, &main_calls, ty);
        let Some((_, modes, instead)) = scan::PACKED_TYPES.iter().find(|(t, _, _)| t == ty) else {
            continue;
        };
        cx.error(
            source.span,
            format!(
                "{at}: `{ty}(...)` converts values, so it stores the wrong bits in the variants where `{ty}` holds packed or raw 16-bit values: {modes}; use {instead}"
            ),
        );
    }
    found.is_empty()
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
