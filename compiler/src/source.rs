//! Phase 2, load: the kernel text, inline or from a file, its `#include`s found and read (each one a
//! rebuild dependency), and the map from GLSL lines back to places in the Rust source.

use crate::ast::SourceSpec;
use crate::ctxt::Ctxt;
use crate::options::KernelOptions;
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
#[derive(Clone)]
pub struct Meta {
    /// Name glslang's messages give the main text.
    pub name: String,
    /// Directory `#include "…"` in the main text resolves against.
    pub dir: PathBuf,
    /// Rust location of the kernel text, for messages.
    pub origin: Origin,
    /// `define`, `include` and `vulkan_version`: what every variant is compiled with.
    pub options: KernelOptions,
}

/// The Rust-side origin of the kernel text, for messages.
#[derive(Clone)]
pub enum Origin {
    /// Inline literal: GLSL line `k` starts on line `lines[k - 1]` of `file`.
    Inline {
        /// The Rust file holding the literal.
        file: String,
        /// The Rust line each GLSL line starts on (never empty): a `\n` escape starts a GLSL
        /// line on the same Rust line, a line continuation moves on in Rust only.
        lines: Vec<usize>,
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
pub(crate) fn invoking_dir(span: Span) -> PathBuf {
    span.local_file()
        .and_then(|f| {
            let f = std::env::current_dir().map(|cwd| cwd.join(&f)).unwrap_or(f);
            f.parent().map(Path::to_path_buf)
        })
        .unwrap_or_else(manifest_dir)
}

/// The name glslang's messages give the inline text.
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
        Self::from_text_with(cx, text, name, dir, KernelOptions::default())
    }

    /// [`Source::from_text`] with the macro's `define`, `include` and `vulkan_version` settings.
    pub fn from_text_with(
        cx: &Ctxt,
        text: &str,
        name: &str,
        dir: &Path,
        options: KernelOptions,
    ) -> Option<Source> {
        let source = Source {
            text: text.to_string(),
            all_text: text.to_string(),
            meta: Meta {
                name: name.to_string(),
                dir: dir.to_path_buf(),
                origin: Origin::File {
                    path: PathBuf::from(name),
                },
                options,
            },
            files: Vec::new(),
            span: Span::call_site(),
        };
        source.finish_load(cx, None)
    }

    /// Reads the source and its includes; errors are recorded in `cx` and yield `None`.
    pub(crate) fn load(cx: &Ctxt, spec: &SourceSpec, options: &KernelOptions) -> Option<Source> {
        let lit = spec.lit();
        let span = lit.span();
        let mut main = None;
        let source = match spec {
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
                            lines: rust_lines(&lit.token().to_string(), span.start().line),
                        },
                        options: options.clone(),
                    },
                    files: Vec::new(),
                    span,
                }
            }
            SourceSpec::Bytes(_) => {
                cx.error(
                    span,
                    "internal error: precompiled SPIR-V is not a text source",
                );
                return None;
            }
            SourceSpec::File(lit) => {
                let path = invoking_dir(span).join(lit.value());
                let text = match read_text(&path, MAX_KERNEL_BYTES) {
                    Ok(t) => t,
                    Err(ReadError::Io(e)) => {
                        cx.error(span, format!("cannot read kernel file `{}`: {e} (paths are relative to the invoking Rust file, as with include_str!)", path.display()));
                        return None;
                    }
                    Err(e) => {
                        cx.error(span, format!("kernel file {}", e.describe(&path)));
                        return None;
                    }
                };
                main = Some(std::fs::canonicalize(&path).unwrap_or_else(|_| path.clone()));
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
                        options: options.clone(),
                    },
                    files: vec![path],
                    span,
                }
            }
        };
        source.finish_load(cx, main)
    }

    /// Finds `#include "x"` lines, reads the files (depth first, each distinct file once),
    /// records them. `stack` holds the canonical paths of the files being scanned (the main
    /// file first, if any): an include of one of them is a cycle, reported once with its chain.
    fn scan_includes(
        &mut self,
        cx: &Ctxt,
        text: &str,
        dir: &Path,
        from: Option<&Path>,
        walk: &mut Walk,
    ) {
        for (i, line) in text.lines().enumerate() {
            let Some(target) = include_target(line) else {
                continue;
            };
            let at = match from {
                Some(f) => format!("{}:{}", f.display(), i + 1),
                None => self.locate(i as u32 + 1),
            };
            let (path, canonical, text) = match self.read_include(cx, target, &at, dir, walk) {
                IncludeStep::Skip => continue,
                IncludeStep::Stop => return,
                IncludeStep::Scan(path, canonical, text) => (path, canonical, text),
            };
            walk.sizes.insert(canonical.clone(), text.len());
            self.files.push(path.clone());
            self.all_text.push('\n');
            self.all_text.push_str(&text);
            let sub = path.parent().map(Path::to_path_buf).unwrap_or_default();
            walk.stack.push(canonical);
            self.scan_includes(cx, &text, &sub, Some(&path), walk);
            walk.stack.pop();
            if walk.too_many {
                return;
            }
        }
    }

    /// Resolves, checks and reads the file one `#include` line at `at` names: its text to
    /// scan, or `Skip` (an error reported, or a file scanned already) or `Stop` (a limit on the
    /// whole kernel reached, reported).
    fn read_include(
        &self,
        cx: &Ctxt,
        target: Include<'_>,
        at: &str,
        dir: &Path,
        walk: &mut Walk,
    ) -> IncludeStep {
        let (name, angle, shown) = match target {
            Include::Quoted(name) => (name, false, format!("\"{name}\"")),
            Include::Angle(name) => (name, true, format!("<{name}>")),
        };
        let search = &self.meta.options.include_dirs;
        let path = match resolve_include(name, angle, dir, search) {
            Some(p) => p,
            None if angle => {
                let why = not_in_search_dirs(search);
                cx.error(self.span, format!("{at}: #include <{name}>: {why}"));
                walk.ok = false;
                return IncludeStep::Skip;
            }
            // Not found: reading it says so, naming the path tried first.
            None => dir.join(name),
        };
        let canonical = std::fs::canonicalize(&path).unwrap_or_else(|_| path.clone());
        if !self.nesting_allowed(cx, &canonical, at, &shown, walk) {
            walk.ok = false;
            return IncludeStep::Skip;
        }
        let parent = walk.stack.last().cloned().unwrap_or_default();
        walk.edges
            .entry(parent)
            .or_default()
            .push(canonical.clone());
        if !walk.scanned.insert(canonical.clone()) {
            // Read and scanned already (a diamond): its includes are recorded.
            return IncludeStep::Skip;
        }
        if walk.scanned.len() > MAX_INCLUDE_FILES {
            if !walk.too_many {
                cx.error(self.span, format!("{at}: #include {shown}: more than {MAX_INCLUDE_FILES} distinct included files"));
            }
            walk.too_many = true;
            walk.ok = false;
            return IncludeStep::Stop;
        }
        match self.read_included_file(cx, &path, at, &shown) {
            Ok(text) => IncludeStep::Scan(path, canonical, text),
            Err(step) => {
                walk.ok = false;
                step
            }
        }
    }

    /// Whether including `canonical` keeps the includes acyclic and within
    /// [`MAX_INCLUDE_DEPTH`]; where not, the error is reported (a cycle once, with its chain).
    fn nesting_allowed(
        &self,
        cx: &Ctxt,
        canonical: &Path,
        at: &str,
        shown: &str,
        walk: &mut Walk,
    ) -> bool {
        if let Some(k) = walk.stack.iter().position(|p| p == canonical) {
            let mut chain: Vec<String> = walk.stack[k..]
                .iter()
                .map(|p| p.display().to_string())
                .collect();
            chain.push(canonical.display().to_string());
            if walk.cycles.insert(walk.stack[k..].to_vec()) {
                cx.error(self.span, format!("{}: #include {shown} makes a cycle: {}; guard the file with #ifndef/#define or remove the include", at, chain.join(" includes ")));
            }
            return false;
        }
        if walk.stack.len() > MAX_INCLUDE_DEPTH {
            cx.error(
                self.span,
                format!("{at}: #include {shown} nests includes more than {MAX_INCLUDE_DEPTH} deep"),
            );
            return false;
        }
        true
    }

    /// The text of the included file `path` within what the kernel's total leaves, with no NUL
    /// byte; or the error reported and the step it leaves (`Stop` past the total).
    fn read_included_file(
        &self,
        cx: &Ctxt,
        path: &Path,
        at: &str,
        shown: &str,
    ) -> Result<String, IncludeStep> {
        let budget = MAX_TOTAL_BYTES.saturating_sub(self.all_text.len());
        let text = match read_text(path, MAX_FILE_BYTES.min(budget)) {
            Ok(t) => t,
            Err(ReadError::TooLarge { limit }) if limit < MAX_FILE_BYTES => {
                cx.error(self.span, format!("{}: #include {shown}: {} brings the kernel text and its includes over {MAX_TOTAL_BYTES} bytes in total", at, path.display()));
                return Err(IncludeStep::Stop);
            }
            Err(e) => {
                cx.error(self.span, format!("{}: #include {shown} {}; `#include \"…\"` resolves relative to the including file, then in the `include` directories", at, e.describe(path)));
                return Err(IncludeStep::Skip);
            }
        };
        if let Some(l) = nul_line(&text) {
            cx.error(
                self.span,
                format!(
                    "{}:{l}: a NUL byte in included file (included at {})",
                    path.display(),
                    at
                ),
            );
            return Err(IncludeStep::Skip);
        }
        Ok(text)
    }

    /// Checks the main text (size, NUL bytes) and reads its includes; `main` is the canonical
    /// path of the main file, if any.
    fn finish_load(mut self, cx: &Ctxt, main: Option<PathBuf>) -> Option<Source> {
        if self.text.len() > MAX_KERNEL_BYTES {
            cx.error(self.span, format!("{}: the kernel text is {} bytes; vkprism accepts at most {MAX_KERNEL_BYTES} bytes (split it, or move shared code into an #include)", self.locate(1), self.text.len()));
            return None;
        }
        if let Some(l) = nul_line(&self.text) {
            cx.error(
                self.span,
                format!("{}: a NUL byte in the kernel text", self.locate(l)),
            );
            return None;
        }
        if let Some(e) = self.version_error() {
            cx.error(self.span, e);
            return None;
        }
        let main_text = self.text.clone();
        let dir = self.meta.dir.clone();
        let mut walk = Walk {
            ok: true,
            stack: main.iter().cloned().collect(),
            scanned: main.into_iter().collect(),
            ..Walk::default()
        };
        let root = walk.stack.first().cloned().unwrap_or_default();
        self.scan_includes(cx, &main_text, &dir, None, &mut walk);
        if walk.ok {
            // glslang follows every include each time: a file included twice at each of 20
            // levels is read once here but 2^20 times there.
            let (count, bytes) = walk.expanded(&root, &mut Default::default());
            if count > MAX_INCLUDE_EXPANSIONS || bytes > MAX_EXPANDED_BYTES {
                cx.error(self.span, format!("{}: the includes expand to {count} inclusions and {bytes} bytes (a file included twice counts twice); vkprism accepts at most {MAX_INCLUDE_EXPANSIONS} inclusions and {MAX_EXPANDED_BYTES} bytes", self.locate(1)));
                return None;
            }
        }
        // The `define` key's macros are the kernel's own names, and may use extended types.
        self.all_text.push('\n');
        self.all_text.push_str(&self.meta.options.define_lines());
        walk.ok.then_some(self)
    }

    /// Why the kernel's `#version` is not one a Vulkan compute shader compiles with, if it isn't.
    /// Checked before glslang sees it: for versions without compute built-ins (110 to 140, or a
    /// number glslang can't read) glslang prints its whole built-in table to the build's stdout.
    fn version_error(&self) -> Option<String> {
        let k = crate::compile::version_line(&self.text)?;
        let line = self.text.lines().nth(k)?;
        let rest = line
            .trim_start()
            .strip_prefix('#')?
            .trim_start()
            .strip_prefix("version")?;
        // A comment may follow.
        let rest = rest
            .split("//")
            .next()
            .unwrap_or("")
            .split("/*")
            .next()
            .unwrap_or("");
        let words: Vec<&str> = rest.split_whitespace().collect();
        let ok = match words.as_slice() {
            [v] | [v, "core"] => matches!(*v, "430" | "440" | "450" | "460"),
            [v, "es"] => matches!(*v, "310" | "320"),
            _ => false,
        };
        (!ok).then(|| {
            format!(
                "{}: `#version{}` is not a version for Vulkan compute shaders; use `#version 450` (or 430, 440, 460, `310 es`, `320 es`), or leave it out (vkprism adds `#version 450`)",
                self.locate(k as u32 + 1),
                rest.trim_end()
            )
        })
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
            Origin::Inline { file, lines } => {
                // A line past the text (a `#line` directive) is placed on the literal's last.
                let k = (glsl_line.max(1) as usize).min(lines.len());
                format!("{file}:{}", lines.get(k - 1).copied().unwrap_or(0))
            }
            Origin::File { path } => format!("{}:{glsl_line}", path.display()),
        }
    }
}

/// The Rust line each GLSL line of a string literal starts on, from the literal's source text
/// (`token`, quotes and escapes as written) whose opening quote is on `first_line`.
fn rust_lines(token: &str, first_line: usize) -> Vec<usize> {
    let raw = token.starts_with('r');
    let body = token.split_once('"').map_or("", |(_, b)| b);
    let mut line = first_line;
    let mut lines = vec![line];
    let mut chars = body.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\n' => {
                line += 1;
                lines.push(line);
            }
            '\\' if !raw => match chars.next() {
                Some('n') => lines.push(line),
                // A line continuation: the newline and the next line's leading blanks are not
                // in the string.
                Some('\n') => {
                    line += 1;
                    while let Some(&w) = chars.peek().filter(|w| w.is_whitespace()) {
                        line += usize::from(w == '\n');
                        chars.next();
                    }
                }
                _ => {}
            },
            _ => {}
        }
    }
    lines
}

/// The file an `#include` line names.
#[derive(Debug, PartialEq, Eq)]
pub enum Include<'a> {
    /// `#include "name"`.
    Quoted(&'a str),
    /// `#include <name>`.
    Angle(&'a str),
}

/// The file named by an `#include "…"` or `#include <…>` line.
pub fn include_target(line: &str) -> Option<Include<'_>> {
    let rest = line
        .trim_start()
        .strip_prefix('#')?
        .trim_start()
        .strip_prefix("include")?
        .trim_start();
    if let Some(rest) = rest.strip_prefix('"') {
        return rest.split('"').next().map(Include::Quoted);
    }
    let rest = rest.strip_prefix('<')?;
    rest.split('>').next().map(Include::Angle)
}

/// The file `#include` of `name` in a file of `dir` reads: `#include "…"` (`angle` false) the
/// file in `dir` if there is one, else the first of the `search` directories holding it;
/// `#include <…>` the first of the `search` directories holding it. The source phase and the
/// compile phase's include expansion both resolve through this.
pub(crate) fn resolve_include(
    name: &str,
    angle: bool,
    dir: &Path,
    search: &[PathBuf],
) -> Option<PathBuf> {
    let beside = (!angle).then(|| dir.join(name));
    beside
        .into_iter()
        .chain(search.iter().map(|d| d.join(name)))
        .find(|p| p.exists())
}

/// Why an `#include <…>` found nothing.
pub(crate) fn not_in_search_dirs(search: &[PathBuf]) -> String {
    if search.is_empty() {
        "`#include <…>` searches the `include` directories, and the macro has none: add `include: [\"dir\"]` (relative to the crate's root), or write `#include \"…\"` (relative to the including file)".to_string()
    } else {
        let dirs: Vec<String> = search.iter().map(|d| d.display().to_string()).collect();
        format!(
            "not found in the `include` directories ({})",
            dirs.join(", ")
        )
    }
}

/// The most bytes of kernel text (inline or `path:`) accepted.
pub const MAX_KERNEL_BYTES: usize = 1 << 20;
/// The most bytes of one included file.
pub const MAX_FILE_BYTES: usize = 1 << 20;
/// The most bytes of the kernel text and all its includes together.
pub const MAX_TOTAL_BYTES: usize = 4 << 20;
/// The most distinct included files.
pub const MAX_INCLUDE_FILES: usize = 256;
/// The most inclusions once every `#include` is expanded as often as it appears.
pub const MAX_INCLUDE_EXPANSIONS: u64 = 4096;
/// The most bytes of text once every `#include` is expanded as often as it appears.
pub const MAX_EXPANDED_BYTES: u64 = 16 << 20;
/// The deepest nesting of includes.
pub const MAX_INCLUDE_DEPTH: usize = 32;

/// What [`Source::read_include`] leaves the scan of a file to do next.
enum IncludeStep {
    /// Go on with the next line (the include was reported, or its file scanned already).
    Skip,
    /// End the whole scan (a limit on the kernel's includes was reached and reported).
    Stop,
    /// Scan this file (its path, canonical path and text).
    Scan(PathBuf, PathBuf, String),
}

/// The state of one walk over the includes.
#[derive(Default)]
struct Walk {
    ok: bool,
    /// Canonical paths of the files being scanned, outermost first.
    stack: Vec<PathBuf>,
    /// Canonical paths of every file read (each is scanned once).
    scanned: std::collections::BTreeSet<PathBuf>,
    /// Cycles reported (their files from the first one included).
    cycles: std::collections::BTreeSet<Vec<PathBuf>>,
    /// The file-count error was reported.
    too_many: bool,
    /// Per file (the inline text: an empty path), the files its `#include`s name, in order.
    edges: std::collections::BTreeMap<PathBuf, Vec<PathBuf>>,
    /// Per file read, its length in bytes.
    sizes: std::collections::BTreeMap<PathBuf, usize>,
}

impl Walk {
    /// `(inclusions, bytes)` of `file` with every include expanded each time it appears.
    fn expanded(
        &self,
        file: &PathBuf,
        memo: &mut std::collections::BTreeMap<PathBuf, (u64, u64)>,
    ) -> (u64, u64) {
        if let Some(&r) = memo.get(file) {
            return r;
        }
        let mut r = (0u64, 0u64);
        for child in self.edges.get(file).into_iter().flatten() {
            let (n, b) = self.expanded(child, memo);
            let own = self.sizes.get(child).copied().unwrap_or(0) as u64;
            r = (
                r.0.saturating_add(n).saturating_add(1),
                r.1.saturating_add(b).saturating_add(own),
            );
        }
        memo.insert(file.clone(), r);
        r
    }
}

/// Why a kernel or include file could not be read.
#[derive(Debug)]
pub(crate) enum ReadError {
    Io(std::io::Error),
    NotAFile,
    TooLarge { limit: usize },
    NotUtf8,
}

impl ReadError {
    pub(crate) fn describe(&self, path: &Path) -> String {
        let p = path.display();
        match self {
            ReadError::Io(e) if e.kind() == std::io::ErrorKind::NotFound => {
                format!("not found: {p} ({e})")
            }
            ReadError::Io(e) => format!("cannot be read: {p} ({e})"),
            ReadError::NotAFile => format!("is not a regular file: {p}"),
            ReadError::TooLarge { limit } => {
                format!("is too large: {p} is over {limit} bytes, the most vkprism reads")
            }
            ReadError::NotUtf8 => format!("is not UTF-8 text: {p}"),
        }
    }
}

/// Reads a regular file of at most `limit` bytes as UTF-8 (never a device, a FIFO or a
/// directory, and never more than `limit + 1` bytes of anything).
pub(crate) fn read_text(path: &Path, limit: usize) -> Result<String, ReadError> {
    String::from_utf8(read_bytes(path, limit)?).map_err(|_| ReadError::NotUtf8)
}

/// Reads a regular file of at most `limit` bytes (never a device, a FIFO or a directory, and
/// never more than `limit + 1` bytes of anything).
pub(crate) fn read_bytes(path: &Path, limit: usize) -> Result<Vec<u8>, ReadError> {
    use std::io::Read;
    let meta = std::fs::metadata(path).map_err(ReadError::Io)?;
    if !meta.is_file() {
        return Err(ReadError::NotAFile);
    }
    if meta.len() > limit as u64 {
        return Err(ReadError::TooLarge { limit });
    }
    let file = std::fs::File::open(path).map_err(ReadError::Io)?;
    let mut bytes = Vec::new();
    file.take(limit as u64 + 1)
        .read_to_end(&mut bytes)
        .map_err(ReadError::Io)?;
    if bytes.len() > limit {
        return Err(ReadError::TooLarge { limit });
    }
    Ok(bytes)
}

/// The 1-based line of the first NUL byte in `text`, if any.
pub(crate) fn nul_line(text: &str) -> Option<u32> {
    let at = text.find('\0')?;
    Some(text[..at].bytes().filter(|&b| b == b'\n').count() as u32 + 1)
}

#[cfg(test)]
mod tests {
    use super::rust_lines;

    #[test]
    fn escaped_newlines_stay_on_the_literals_line() {
        assert_eq!(rust_lines(r#""a\nb\0\n""#, 3), [3, 3, 3]);
    }

    #[test]
    fn raw_literal_lines_follow_the_source() {
        assert_eq!(rust_lines("r#\"a\nb\n\"#", 10), [10, 11, 12]);
    }

    #[test]
    fn continuations_and_escaped_backslashes() {
        // `a\` + newline + `   b\n` + newline + `c\\n`: GLSL line 1 `ab` (from Rust line 1),
        // line 2 empty (after the `\n` escape on Rust line 2), line 3 `c\n` (a backslash and an
        // `n`: no line break).
        assert_eq!(rust_lines("\"a\\\n   b\\n\nc\\\\n\"", 1), [1, 2, 3]);
    }
}
