//! Phase 3, validate: checks of the kernel text that need no compiler (after thiserror's `valid.rs`): extended
//! functions that don't exist, and `psc` without the push-constant block it reads. Both would
//! also fail in glslang, but with a message about the preamble's macros rather than the kernel.

use crate::ctxt::Ctxt;
use crate::scan::{self, Identifiers};
use crate::source::Source;

/// Records every lexical mistake in `source`; `false` when there was one.
pub fn check(cx: &Ctxt, source: &Source, idents: &Identifiers) -> bool {
    let functions_ok = check_extended_functions(cx, source, idents);
    let psc_ok = check_psc(cx, source, &idents.all);
    functions_ok && psc_ok
}

/// Every name with an extended-function prefix must be a function vkprism defines.
fn check_extended_functions(cx: &Ctxt, source: &Source, idents: &Identifiers) -> bool {
    let unknown = scan::unknown_functions(&idents.all);
    for (name, _) in &unknown {
        // Lines of the concatenated text mean nothing past the main text: a name the main text
        // never uses is reported as coming from an include.
        let at = match idents.main.iter().find(|(n, _)| n == name) {
            Some((_, main_line)) => source.locate(*main_line),
            None => "an included file".to_string(),
        };
        cx.error(
            source.span,
            format!(
                "{at}: unknown extended GLSL function `{name}`; known: {}",
                scan::known_functions_summary()
            ),
        );
    }
    unknown.is_empty()
}

/// `psc(x)` expands to `p.x`: the push-constant block must be named `p`.
fn check_psc(cx: &Ctxt, source: &Source, idents: &[(String, u32)]) -> bool {
    let Some(line) = scan::psc_line(idents) else {
        return true;
    };
    let problem = match push_instance_name(&source.all_text) {
        Some(name) if name == "p" => return true,
        Some(name) => format!("the push-constant block is named `{name}`"),
        None => "the kernel declares no push-constant block".to_string(),
    };
    cx.error(
        source.span,
        format!(
            "{}: psc() reads the push constant of the same name from a block named `p`, but {problem}; declare `layout (push_constant) uniform parameter {{ ... }} p;`",
            source.locate(line),
        ),
    );
    false
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
