//! Phase 4b, expand: each variant's text after the preprocessor, with only the variant's switches
//! defined (`compile::switches_text`): the extended names a variant really compiles, each located
//! at the user's `file:line`. A name inside an `#if` branch a variant doesn't compile is gone
//! from that variant's text, so the checks on these names (`valid::check_variants`) reject only
//! the variants that compile it.

use crate::compile;
use crate::scan;
use crate::source::{Meta, Source};
use crate::tested::TestedFacts;
use vkprism_core::VariantKey;

/// One identifier of a variant's preprocessed text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Use {
    /// The identifier.
    pub name: String,
    /// `file:line` where the user wrote it (for a macro's expansion: where the macro is used).
    pub at: String,
    /// Followed by `(`.
    pub call: bool,
}

/// The identifiers each variant of `keys` compiles. A variant the preprocessor rejects is left
/// out: its compile reports why.
pub fn variant_uses(
    source: &Source,
    keys: &[VariantKey],
    tested: &TestedFacts,
    deadline: std::time::Instant,
) -> Vec<(VariantKey, Vec<Use>)> {
    let jobs = keys
        .iter()
        .map(|k| (*k, compile::switches_text(source, k, tested)))
        .collect();
    compile::preprocess_all(&source.meta, jobs, deadline)
        .into_iter()
        .filter_map(|(key, text)| Some((key, located(&source.meta, &text?))))
        .collect()
}

/// The identifiers of glslang's preprocessor output, located through its `#line N` and
/// `#line N "file"` directives (it keeps one output line per input line between them).
fn located(meta: &Meta, text: &str) -> Vec<Use> {
    let mut out = Vec::new();
    let mut file: Option<String> = None;
    let mut line = 1u32;
    for l in text.lines() {
        let trimmed = l.trim_start();
        if let Some(directive) = trimmed.strip_prefix('#') {
            if let Some((n, f)) = line_directive(directive) {
                line = n;
                if let Some(f) = f {
                    file = (f != meta.name).then(|| f.to_string());
                }
                continue;
            }
            // `#version`, `#extension`, `#pragma`: nothing of the kernel's vocabulary.
            line += 1;
            continue;
        }
        let at = match &file {
            None => meta.locate(line),
            Some(f) => format!("{f}:{line}"),
        };
        let mut cursor = 0;
        for (name, _, call) in scan::tokens(l) {
            let end = word_end(l, &name, cursor);
            cursor = end;
            out.push(Use {
                call: call && !zero_argument(&l[end..]),
                name,
                at: at.clone(),
            });
        }
        line = line.saturating_add(1);
    }
    out
}

/// The end of the first whole-word `name` in `line` at or past `from` (`line.len()` if none).
fn word_end(line: &str, name: &str, from: usize) -> usize {
    let word = |b: u8| b.is_ascii_alphanumeric() || b == b'_';
    let bytes = line.as_bytes();
    let mut at = from;
    while let Some(k) = line.get(at..).and_then(|r| r.find(name)) {
        let start = at + k;
        let end = start + name.len();
        let before = start.checked_sub(1).map(|p| bytes[p]);
        if !before.is_some_and(word) && !bytes.get(end).copied().is_some_and(word) {
            return end;
        }
        at = end;
    }
    line.len()
}

/// Whether `rest` (the text after a called name) is `(0)`: a zero in any type is all zero bits,
/// so constructing a packed type from it is right in every mode.
fn zero_argument(rest: &str) -> bool {
    let Some(args) = rest.trim_start().strip_prefix('(') else {
        return false;
    };
    let Some((arg, _)) = args.split_once(')') else {
        return false;
    };
    let arg = arg.trim().trim_end_matches(['u', 'U', 'f', 'F']);
    !arg.is_empty() && arg.bytes().all(|b| b == b'0' || b == b'.') && arg.contains('0')
}

/// `line N` or `line N "file"` (after the `#`): the number of the next line, and the file.
fn line_directive(directive: &str) -> Option<(u32, Option<&str>)> {
    let rest = directive.trim_start().strip_prefix("line")?;
    let rest = rest.trim_start();
    let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
    let n = rest[..digits].parse().ok()?;
    let file = rest[digits..]
        .trim()
        .strip_prefix('"')
        .and_then(|f| f.strip_suffix('"'));
    Some((n, file))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::source::Origin;
    use std::path::PathBuf;

    #[test]
    fn output_lines_map_back_to_files_and_lines() {
        let meta = Meta {
            name: "k.comp".into(),
            dir: PathBuf::new(),
            origin: Origin::File {
                path: PathBuf::from("k.comp"),
            },
            options: Default::default(),
        };
        let text = "#version 450\n#extension GL_GOOGLE_include_directive : require\n#line 2\n\nfoo(1);\n#line 1 \"inc.h\"\n bar;\n#line 9 \"k.comp\"\n\nbaz (3); e(0.0) + 1e5 + e ( 0u);\n";
        let uses: Vec<(String, String, bool)> = located(&meta, text)
            .into_iter()
            .map(|u| (u.name, u.at, u.call))
            .collect();
        assert_eq!(
            uses,
            [
                ("foo".into(), "k.comp:3".into(), true),
                ("bar".into(), "inc.h:1".into(), false),
                ("baz".into(), "k.comp:10".into(), true),
                // A zero constructs the same bits in every type: not a conversion.
                ("e".into(), "k.comp:10".into(), false),
                ("e".into(), "k.comp:10".into(), false),
            ]
        );
    }
}
