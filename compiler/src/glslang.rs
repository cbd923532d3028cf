//! Cooperative-matrix variants (`_cm`) compiled by an external glslang 13.1 or newer.
//!
//! The shaderc linked into the macro bundles Debian bookworm's glslang 12, which rejects
//! `GL_KHR_cooperative_matrix` ("extension not supported"). Rather than building shaderc from
//! source (~10 minutes on 2 cores) for every user, the few `_cm` variants go through a
//! `glslangValidator` process: `VKPRISM_GLSLANG` names it (`scripts/setup.sh` installs glslang
//! 13.1.1 from PyPI under `.tools/` and `.cargo/config.toml` points there), else one on `PATH`
//! that is new enough. Everything else about the variant (preamble, `#line` mapping, reflection)
//! is the same as for shaderc's variants.

use crate::compile::Diagnostic;
use crate::source::Meta;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicU32, Ordering};

/// The variable that names the glslang binary for cooperative-matrix variants.
pub const ENV: &str = "VKPRISM_GLSLANG";
/// The oldest glslang that accepts `GL_KHR_cooperative_matrix`.
const MIN_VERSION: (u32, u32) = (13, 1);
/// The name the main text has in glslang's messages (the process runs in its own directory).
const MAIN_NAME: &str = "kernel.comp";

/// Compiles one variant's full text to SPIR-V with the external glslang.
pub fn compile(source: &Meta, text: &str) -> Result<Vec<u32>, Vec<Diagnostic>> {
    let glslang = locate().map_err(|m| vec![unlocated(m)])?;
    let dir = ScratchDir::new()
        .map_err(|e| vec![unlocated(format!("cannot make a scratch directory: {e}"))])?;
    // glslang gets the text with its includes already read, within the source phase's bounds:
    // it reads no file itself (and refuses an `#include` left in the text).
    let budget = crate::includes::IncludeBudget::default();
    let expanded = crate::includes::expand(&budget, source, text, &source.name, 0)
        .map_err(|e| vec![located(source, &e)])?;
    std::fs::write(dir.0.join(MAIN_NAME), with_line_directive(&expanded)).map_err(|e| {
        vec![unlocated(format!(
            "cannot write the kernel for glslang: {e}"
        ))]
    })?;
    let out = Command::new(&glslang)
        .current_dir(&dir.0)
        .args([
            "-V",
            "--target-env",
            source.options.vulkan_version.glslang_target_env(),
            "-S",
            "comp",
            "-o",
            "out.spv",
            MAIN_NAME,
        ])
        .output()
        .map_err(|e| vec![unlocated(format!("cannot run {}: {e}", glslang.display()))])?;
    if !out.status.success() {
        let log = String::from_utf8_lossy(&out.stdout).into_owned()
            + &String::from_utf8_lossy(&out.stderr);
        return Err(parse_messages(source, &log));
    }
    let bytes = std::fs::read(dir.0.join("out.spv"))
        .map_err(|e| vec![unlocated(format!("glslang wrote no SPIR-V: {e}"))])?;
    Ok(bytes
        .chunks_exact(4)
        .map(|w| u32::from_le_bytes([w[0], w[1], w[2], w[3]]))
        .collect())
}

/// The `#line N "file"` directives around spliced includes need
/// `GL_GOOGLE_cpp_style_line_directive`; it goes right after `#version`, before the preamble's
/// extensions.
fn with_line_directive(text: &str) -> String {
    let directive = "#extension GL_GOOGLE_cpp_style_line_directive : require\n";
    // After the `#version` line, wherever it is (comments may come first).
    let end_of_version = crate::compile::version_line(text)
        .and_then(|k| text.match_indices('\n').nth(k).map(|(i, _)| i));
    match end_of_version {
        Some(end) => format!("{}{directive}{}", &text[..=end], &text[end + 1..]),
        None => format!("{directive}{text}"),
    }
}

/// The glslang binary to run, or why there is none.
fn locate() -> Result<PathBuf, String> {
    let help = format!(
        "cooperative-matrix (`_cm`) variants need glslang {}.{} or newer, and the shaderc linked \
         into the macro bundles an older one: run scripts/setup.sh (it installs glslang 13.1.1 \
         under .tools/), or set {ENV} to a glslangValidator >= {}.{}, or leave the `_cm` variants \
         out with `variants: [...]`",
        MIN_VERSION.0, MIN_VERSION.1, MIN_VERSION.0, MIN_VERSION.1
    );
    let candidate = match std::env::var_os(ENV) {
        Some(p) => PathBuf::from(p),
        None => PathBuf::from("glslangValidator"),
    };
    match version(&candidate) {
        Some(v) if v >= MIN_VERSION => Ok(candidate),
        Some((major, minor)) => Err(format!(
            "{} is glslang {major}.{minor}; {help}",
            candidate.display()
        )),
        None => Err(format!("no glslang at `{}`; {help}", candidate.display())),
    }
}

/// `(major, minor)` from `glslangValidator --version` ("Glslang Version: 11:13.1.1").
fn version(glslang: &Path) -> Option<(u32, u32)> {
    let out = Command::new(glslang).arg("--version").output().ok()?;
    let text = String::from_utf8_lossy(&out.stdout);
    let line = text.lines().find(|l| l.starts_with("Glslang Version:"))?;
    let semver = line.rsplit(':').next()?.trim();
    let mut parts = semver.split('.').map(|p| p.parse::<u32>().ok());
    Some((parts.next()??, parts.next()??))
}

/// glslangValidator's `ERROR: file:line: message` lines as located diagnostics.
fn parse_messages(source: &Meta, log: &str) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    for line in log.lines() {
        let Some(rest) = line.strip_prefix("ERROR: ") else {
            continue;
        };
        match crate::compile::split_location(rest) {
            Some((file, lno, message)) => out.push(Diagnostic {
                location: if file == MAIN_NAME || file == source.name {
                    source.locate(lno)
                } else {
                    format!("{file}:{lno}")
                },
                message: format!("error: {message}"),
            }),
            None if rest.contains("compilation errors")
                || rest.contains("compilation terminated") => {}
            None => out.push(unlocated(rest.to_string())),
        }
    }
    if out.is_empty() {
        out.push(unlocated(format!("glslang failed: {}", log.trim())));
    }
    out
}

/// An include error (`file:line: text`, the file being the main text's name or an included
/// file's path) as a diagnostic located like glslang's own.
fn located(source: &Meta, error: &str) -> Diagnostic {
    match crate::compile::split_location(error) {
        Some((file, lno, message)) => Diagnostic {
            location: if file == source.name {
                source.locate(lno)
            } else {
                format!("{file}:{lno}")
            },
            message: format!("error: {message}"),
        },
        None => unlocated(error.to_string()),
    }
}

fn unlocated(message: String) -> Diagnostic {
    Diagnostic {
        location: String::new(),
        message,
    }
}

/// A directory of its own for one glslang run, removed when dropped.
struct ScratchDir(PathBuf);

impl ScratchDir {
    fn new() -> std::io::Result<ScratchDir> {
        static NEXT: AtomicU32 = AtomicU32::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!("vkprism-glslang-{}-{n}", std::process::id()));
        std::fs::create_dir_all(&dir)?;
        Ok(ScratchDir(dir))
    }
}

impl Drop for ScratchDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_directive_extension_follows_version() {
        assert_eq!(
            with_line_directive("#version 450\nvoid main() {}"),
            "#version 450\n#extension GL_GOOGLE_cpp_style_line_directive : require\nvoid main() {}"
        );
        assert_eq!(
            with_line_directive("/* c */\n#version 450\nvoid main() {}"),
            "/* c */\n#version 450\n#extension GL_GOOGLE_cpp_style_line_directive : require\nvoid main() {}"
        );
    }

    #[test]
    fn includes_are_inlined_between_line_directives() {
        let dir = std::env::temp_dir().join(format!("vkprism-inline-{}", std::process::id()));
        let search = dir.join("search");
        std::fs::create_dir_all(&search).unwrap();
        std::fs::write(dir.join("near.glsl"), "float near_v;\n").unwrap();
        std::fs::write(search.join("far.glsl"), "#include \"near2.glsl\"\n").unwrap();
        std::fs::write(search.join("near2.glsl"), "float far_v;\n").unwrap();
        let meta = Meta {
            name: "k".into(),
            dir: dir.clone(),
            origin: crate::source::Origin::File { path: "k".into() },
            options: crate::options::KernelOptions {
                include_dirs: vec![search.clone()],
                ..Default::default()
            },
        };
        let text =
            "#version 450\n#line 7\n#include \"near.glsl\"\n#include <far.glsl>\nvoid main() {}\n";
        let budget = crate::includes::IncludeBudget::default();
        let out = crate::includes::expand(&budget, &meta, text, &meta.name, 0).unwrap();
        let near = dir.join("near.glsl").display().to_string();
        let far = search.join("far.glsl").display().to_string();
        let near2 = search.join("near2.glsl").display().to_string();
        assert_eq!(
            out,
            format!("#version 450\n#line 7\n#line 1 \"{near}\"\nfloat near_v;\n#line 8 \"k\"\n#line 1 \"{far}\"\n#line 1 \"{near2}\"\nfloat far_v;\n#line 2 \"{far}\"\n#line 9 \"k\"\nvoid main() {{}}\n")
        );
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn missing_glslang_is_a_clear_error() {
        assert!(version(Path::new("/nonexistent/glslangValidator")).is_none());
    }
}
