//! Phase 5, the includes glslang reads: one resolver with the source phase's bounds, used by the
//! expansion that splices them into each variant's text before glslang sees it.
//!
//! The source phase read and bounded every `#include` it could see; the expansion may still meet
//! one it could not (spelled across a line continuation), so every read goes through here: the
//! same limits on nesting, inclusions, bytes per file and bytes in all, regular files only, no
//! NUL byte (it would end glslang's C string).

use crate::source::{self, Include, Meta};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};

/// The inclusions and bytes one variant's compilation has read so far.
#[derive(Default)]
pub struct IncludeBudget {
    inclusions: AtomicU64,
    bytes: AtomicU64,
}

/// One included file, read.
pub struct Resolved {
    /// The path, as messages name it.
    pub name: String,
    /// Its text.
    pub content: String,
}

impl IncludeBudget {
    /// Reads the file that `#include "name"` (`#include <name>` with `angle`) names in `from`
    /// (the main text's name, or an included file's path), `depth` levels deep, found as
    /// `source::resolve_include` finds it (beside the including file, then the `include`
    /// directories); `Err` says why not.
    pub fn resolve(
        &self,
        main: &Meta,
        name: &str,
        angle: bool,
        from: &str,
        depth: usize,
    ) -> Result<Resolved, String> {
        let n = self.inclusions.fetch_add(1, Ordering::Relaxed);
        if depth > source::MAX_INCLUDE_DEPTH || n >= source::MAX_INCLUDE_EXPANSIONS {
            return Err(format!(
                "#include \"{name}\": more than {} levels or {} inclusions",
                source::MAX_INCLUDE_DEPTH,
                source::MAX_INCLUDE_EXPANSIONS
            ));
        }
        let base = if from == source::INLINE_NAME || from == main.name {
            main.dir.clone()
        } else {
            PathBuf::from(from)
                .parent()
                .map(|p| p.to_path_buf())
                .unwrap_or_else(|| main.dir.clone())
        };
        let search = &main.options.include_dirs;
        let path = match source::resolve_include(name, angle, &base, search) {
            Some(p) => p,
            None if angle => {
                return Err(format!(
                    "#include <{name}>: {}",
                    source::not_in_search_dirs(search)
                ))
            }
            // Not found: read_text says so, naming the path.
            None => base.join(name),
        };
        let content = source::read_text(&path, source::MAX_FILE_BYTES)
            .map_err(|e| format!("#include \"{name}\" {}", e.describe(&path)))?;
        if content.contains('\0') {
            return Err(format!(
                "#include \"{name}\": a NUL byte in {}",
                path.display()
            ));
        }
        let total = self
            .bytes
            .fetch_add(content.len() as u64, Ordering::Relaxed)
            .saturating_add(content.len() as u64);
        if total > source::MAX_EXPANDED_BYTES {
            return Err(format!(
                "#include \"{name}\": the includes expand to more than {} bytes",
                source::MAX_EXPANDED_BYTES
            ));
        }
        Ok(Resolved {
            name: path.display().to_string(),
            content,
        })
    }
}

/// `text` (named `name` in messages and resolution) with every `#include` line replaced by
/// the file's text, recursively, between `#line` directives that keep each file's own line
/// numbers (they need `GL_GOOGLE_cpp_style_line_directive`). An `#include` this can't see
/// (across a line continuation) is left to the compiler, which must then refuse it.
pub fn expand(
    budget: &IncludeBudget,
    main: &Meta,
    text: &str,
    name: &str,
    depth: usize,
) -> Result<String, String> {
    let mut out = String::with_capacity(text.len());
    // The number the preprocessor gives the current line (`#line` directives included).
    let mut number: u64 = 1;
    for line in text.lines() {
        let target = match source::include_target(line) {
            None => None,
            Some(Include::Angle(target)) => Some((target, true)),
            Some(Include::Quoted(target)) => Some((target, false)),
        };
        match target {
            None => {
                out.push_str(line);
                out.push('\n');
            }
            Some((target, angle)) => {
                let file = budget
                    .resolve(main, target, angle, name, depth + 1)
                    .map_err(|e| format!("{name}:{number}: {e}"))?;
                let body = expand(budget, main, &file.content, &file.name, depth + 1)?;
                out.push_str(&format!("#line 1 {}\n", quoted(&file.name)));
                out.push_str(&body);
                out.push_str(&format!(
                    "#line {} {}\n",
                    number.saturating_add(1),
                    quoted(name)
                ));
            }
        }
        number = line_directive(line).unwrap_or(number.saturating_add(1));
    }
    Ok(out)
}

/// The number a `#line N` directive gives the next line.
fn line_directive(line: &str) -> Option<u64> {
    let rest = line
        .trim_start()
        .strip_prefix('#')?
        .trim_start()
        .strip_prefix("line")?;
    rest.split_whitespace().next()?.parse().ok()
}

/// A file name as a `#line` directive's string (glslang reads no escapes in it).
pub(crate) fn quoted(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "'"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::source::Origin;

    fn meta(dir: &std::path::Path) -> Meta {
        Meta {
            name: "main.comp".into(),
            dir: dir.to_path_buf(),
            origin: Origin::File {
                path: "main.comp".into(),
            },
            options: Default::default(),
        }
    }

    #[test]
    fn includes_are_spliced_between_line_directives() {
        let dir = std::env::temp_dir().join(format!("vkprism-includes-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("inc.glsl"), "float f;\n").unwrap();
        let inc = dir.join("inc.glsl").display().to_string();
        let text = "#version 450\n#line 7\n#include \"inc.glsl\"\nvoid main() {}\n";
        let out = expand(&IncludeBudget::default(), &meta(&dir), text, "main.comp", 0).unwrap();
        assert_eq!(
            out,
            format!("#version 450\n#line 7\n#line 1 \"{inc}\"\nfloat f;\n#line 8 \"main.comp\"\nvoid main() {{}}\n")
        );
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_self_include_stops_at_the_bounds() {
        let dir =
            std::env::temp_dir().join(format!("vkprism-includes-self-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("self.glsl"), "#include \"self.glsl\"\n".repeat(3)).unwrap();
        let budget = IncludeBudget::default();
        let err = expand(
            &budget,
            &meta(&dir),
            "#include \"self.glsl\"\n",
            "main.comp",
            0,
        )
        .unwrap_err();
        assert!(
            err.contains("levels or") && err.contains("self.glsl:1"),
            "{err}"
        );
        assert!(budget.inclusions.load(Ordering::Relaxed) <= 64);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_line_directive_past_u64_does_not_overflow() {
        let text = "#line 18446744073709551615\nx\n#include \"missing.glsl\"\n";
        let err = expand(
            &IncludeBudget::default(),
            &meta(std::path::Path::new("/nonexistent")),
            text,
            "main.comp",
            0,
        )
        .unwrap_err();
        assert!(err.starts_with("main.comp:18446744073709551615: "), "{err}");
    }

    #[test]
    fn a_device_is_not_read() {
        let err = expand(
            &IncludeBudget::default(),
            &meta(std::path::Path::new("/")),
            "\n#include \"/dev/zero\"\n",
            "main.comp",
            0,
        )
        .unwrap_err();
        assert!(
            err.starts_with("main.comp:2: ") && err.contains("not a regular file"),
            "{err}"
        );
    }
}
