//! Phase 2, load: the kernel text, inline or from a file, its `#include`s found and read (each one a
//! rebuild dependency), and the map from GLSL lines back to places in the Rust source.

use crate::ast::SourceSpec;
use crate::ctxt::Ctxt;
use proc_macro2::Span;
use std::path::{Path, PathBuf};

/// The kernel text and where it came from.
pub struct Source {
    /// The main text, as written.
    pub(crate) text: String,
    /// What the compile threads need (everything but the span, which is not `Sync`).
    pub(crate) meta: Meta,
    /// Every file read (the main file, if any, and every include): rebuild dependencies.
    pub(crate) files: Vec<PathBuf>,
    /// The main text followed by every included file's text (for the lexical scan).
    pub(crate) all_text: String,
    /// Where errors about the kernel are reported: the `src:` or `path:` literal.
    pub(crate) span: Span,
}

/// Where the kernel text came from: what the compile threads need (everything but the span,
/// which is not `Sync`).
pub struct Meta {
    /// Name shaderc uses for the main text in messages.
    pub name: String,
    /// Directory `#include "…"` in the main text resolves against.
    pub dir: PathBuf,
    /// Rust location of the kernel text, for messages.
    pub origin: Origin,
}

/// The Rust-side origin of the kernel text, for messages.
pub enum Origin {
    /// Inline literal: GLSL line 1 is on `line` of `file`.
    Inline {
        /// The Rust file holding the literal.
        file: String,
        /// The line of the literal's opening quote.
        line: usize,
    },
    /// A file named by `path:`.
    File {
        /// The kernel file.
        path: PathBuf,
    },
}

/// The directory of the Rust file holding `span`: `path:` and the `#include`s of inline kernels
/// resolve against it, as `include_str!` does. rustc reports the file relative to its working
/// directory (the workspace root under cargo), so it is joined to that. Without a file (the
/// compiler used outside a macro) it is `CARGO_MANIFEST_DIR`.
fn invoking_dir(span: Span) -> PathBuf {
    span.local_file()
        .and_then(|f| {
            let f = std::env::current_dir().map(|cwd| cwd.join(&f)).unwrap_or(f);
            f.parent().map(Path::to_path_buf)
        })
        .unwrap_or_else(manifest_dir)
}

/// The name shaderc gives the inline text in its messages.
pub const INLINE_NAME: &str = "<inline>";

fn manifest_dir() -> PathBuf {
    std::env::var_os("CARGO_MANIFEST_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("."))
}

impl Source {
    /// A source from plain text (for `build.rs`, a CLI, or tests): includes resolve against `dir`,
    /// messages name `name`.
    pub fn from_text(cx: &Ctxt, text: &str, name: &str, dir: &Path) -> Option<Source> {
        let mut source = Source {
            text: text.to_string(),
            all_text: text.to_string(),
            meta: Meta {
                name: name.to_string(),
                dir: dir.to_path_buf(),
                origin: Origin::File {
                    path: PathBuf::from(name),
                },
            },
            files: Vec::new(),
            span: Span::call_site(),
        };
        let mut ok = true;
        source.scan_includes(cx, text, dir, None, &mut ok, 0);
        ok.then_some(source)
    }

    /// Reads the source and its includes; errors are recorded in `cx` and yield `None`.
    pub(crate) fn load(cx: &Ctxt, spec: &SourceSpec) -> Option<Source> {
        let lit = spec.lit();
        let span = lit.span();
        let mut source = match spec {
            SourceSpec::Inline(lit) => {
                let dir = invoking_dir(span);
                let text = lit.value();
                Source {
                    all_text: text.clone(),
                    text,
                    meta: Meta {
                        name: INLINE_NAME.to_string(),
                        dir,
                        origin: Origin::Inline {
                            file: span.file(),
                            line: span.start().line,
                        },
                    },
                    files: Vec::new(),
                    span,
                }
            }
            SourceSpec::File(lit) => {
                let path = invoking_dir(span).join(lit.value());
                let text = match std::fs::read_to_string(&path) {
                    Ok(t) => t,
                    Err(e) => {
                        cx.error(span, format!("cannot read kernel file `{}`: {e} (paths are relative to the invoking Rust file, as with include_str!)", path.display()));
                        return None;
                    }
                };
                Source {
                    all_text: text.clone(),
                    text,
                    meta: Meta {
                        name: path.display().to_string(),
                        dir: path
                            .parent()
                            .map(Path::to_path_buf)
                            .unwrap_or_else(manifest_dir),
                        origin: Origin::File { path: path.clone() },
                    },
                    files: vec![path],
                    span,
                }
            }
        };
        let main_text = source.text.clone();
        let dir = source.meta.dir.clone();
        let mut ok = true;
        source.scan_includes(cx, &main_text, &dir, None, &mut ok, 0);
        ok.then_some(source)
    }

    /// Finds `#include "x"` lines, reads the files (recursively), records them.
    fn scan_includes(
        &mut self,
        cx: &Ctxt,
        text: &str,
        dir: &Path,
        from: Option<&Path>,
        ok: &mut bool,
        depth: usize,
    ) {
        if depth > 16 {
            cx.error(self.span, "#include nested more than 16 deep (a cycle?)");
            *ok = false;
            return;
        }
        for (i, line) in text.lines().enumerate() {
            let Some(name) = include_target(line) else {
                continue;
            };
            let path = dir.join(name);
            match std::fs::read_to_string(&path) {
                Ok(t) => {
                    if !self.files.contains(&path) {
                        self.files.push(path.clone());
                        self.all_text.push('\n');
                        self.all_text.push_str(&t);
                    }
                    let sub = path.parent().map(Path::to_path_buf).unwrap_or_default();
                    self.scan_includes(cx, &t, &sub, Some(&path), ok, depth + 1);
                }
                Err(e) => {
                    let at = match from {
                        Some(f) => format!("{}:{}", f.display(), i + 1),
                        None => self.locate(i as u32 + 1),
                    };
                    cx.error(self.span, format!("{at}: #include \"{name}\" not found: {} ({e}); includes resolve relative to the including file", path.display()));
                    *ok = false;
                }
            }
        }
    }

    /// `file:line` in the Rust or kernel source for line `glsl_line` of the main text.
    pub(crate) fn locate(&self, glsl_line: u32) -> String {
        self.meta.locate(glsl_line)
    }
}

impl Meta {
    /// `file:line` in the Rust or kernel source for line `glsl_line` of the main text.
    pub fn locate(&self, glsl_line: u32) -> String {
        match &self.origin {
            Origin::Inline { file, line } => format!("{file}:{}", line + glsl_line as usize - 1),
            Origin::File { path } => format!("{}:{glsl_line}", path.display()),
        }
    }
}

/// The file named by an `#include "…"` line.
pub fn include_target(line: &str) -> Option<&str> {
    let rest = line
        .trim_start()
        .strip_prefix('#')?
        .trim_start()
        .strip_prefix("include")?;
    let rest = rest.trim_start().strip_prefix('"')?;
    rest.split('"').next()
}
