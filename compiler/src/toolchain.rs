//! Phase 5's one GLSL compiler: glslang (16.6, built from source by the `glslang` crate, linked
//! in-process) for every variant, and its preprocessor for the per-variant checks.
//!
//! glslang reads no file: each variant's text gets its includes spliced in first
//! (`includes::expand`, with the source phase's bounds), between `#line N "file"` directives
//! that keep every message at its file's own line. An `#include` the expansion could not see
//! (spelled across a line continuation) reaches glslang without `GL_GOOGLE_include_directive`,
//! which refuses it.
//!
//! The `glslang` crate covers parsing, linking and SPIR-V generation; it has no preprocess-only
//! entry point (its `parse` preprocesses and parses in one call, dropping the preprocessed text on
//! an error), so [`preprocess`] calls `glslang-sys` directly: the only `unsafe` of this crate.

use crate::compile::{Compiled, Diagnostic};
use crate::options::VulkanVersion;
use crate::source::Meta;
use glslang::{
    CompilerOptions, GlslProfile, ShaderInput, ShaderMessage, ShaderSource, ShaderStage,
    SourceLanguage, SpirvVersion, Target,
};

/// The messages glslang is asked for: Vulkan's GLSL rules, SPIR-V's rules (as glslangValidator
/// `-V` asks), and every error rather than the first of a statement's cascade (glslang stops at
/// the first undeclared name without it, and a kernel's other mistakes would wait for the next
/// build).
fn messages() -> ShaderMessage {
    ShaderMessage::DEFAULT
        | ShaderMessage::VULKAN_RULES
        | ShaderMessage::SPV_RULES
        | ShaderMessage::CASCADING_ERRORS
}

/// Compiles one variant's full text (preamble spliced, includes not yet) to SPIR-V.
pub fn compile(source: &Meta, text: &str, version: (i32, GlslProfile)) -> Compiled {
    let text = prepare(source, text)?;
    let compiler = glslang::Compiler::acquire()
        .ok_or_else(|| vec![unlocated("glslang could not be initialized".into())])?;
    let prepared = text;
    let text = ShaderSource::from(prepared.clone());
    let options = compiler_options(source.options.vulkan_version, version);
    let input = ShaderInput::new(
        &text,
        ShaderStage::Compute,
        &options,
        None::<&[(&str, Option<&str>)]>,
        None,
    )
    .map_err(|e| vec![unlocated(format!("glslang refused the options: {e}"))])?;
    let shader = compiler
        .create_shader(input)
        .map_err(|e| parse_messages(source, &log_of(e), &prepared))?;
    shader
        .compile()
        .map_err(|e| parse_messages(source, &log_of(e), &prepared))
}

/// glslang's preprocessor output for one variant's text, or `None` where the preprocessor
/// rejects it (the variant's compile reports why).
pub fn preprocess(source: &Meta, text: &str, version: (i32, GlslProfile)) -> Option<String> {
    let text = prepare(source, text).ok()?;
    if !line_directives_plain(&text) {
        return None;
    }
    glslang::Compiler::acquire()?;
    raw::preprocess(&text, source.options.vulkan_version, version)
}

/// Whether every `#line` directive of `text` is `#line N` or `#line N "file"` with `N` a number
/// glslang keeps. After one it can't evaluate (`#line 429496729#line 1`), glslang's
/// preprocessor (which its compile runs too) keeps the line count by writing a newline per line
/// it skipped: half a billion of them, seconds per variant, from a 40-byte directive. The budget
/// phase refuses such a kernel (`budget::check`); [`preprocess`] checks again.
pub(crate) fn line_directives_plain(text: &str) -> bool {
    text.lines().all(|l| {
        let Some(rest) = l.trim_start().strip_prefix('#') else {
            return true;
        };
        let Some(rest) = rest.trim_start().strip_prefix("line") else {
            return true;
        };
        let rest = rest.trim();
        let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
        let after = rest[digits..].trim_start();
        (1..=10).contains(&digits)
            && rest[..digits]
                .parse::<u64>()
                .is_ok_and(|n| n <= u64::from(u32::MAX))
            && (after.is_empty()
                || after.starts_with("//")
                || (after.starts_with('"') && after[1..].contains('"')))
    })
}

/// `text` with its includes spliced in and the `#line "file"` form enabled; a NUL byte (which
/// would end glslang's C string early) or an include error is located.
fn prepare(source: &Meta, text: &str) -> Result<String, Vec<Diagnostic>> {
    if text.contains('\0') {
        return Err(vec![unlocated("a NUL byte in the kernel text".into())]);
    }
    let budget = crate::includes::IncludeBudget::default();
    let expanded = crate::includes::expand(&budget, source, text, &source.name, 0)
        .map_err(|e| vec![located(source, &e)])?;
    Ok(with_line_directive(&expanded))
}

/// glslang's target for a kernel's `vulkan_version`: the Vulkan version and the SPIR-V version it
/// takes.
fn target(vulkan: VulkanVersion) -> (glslang::VulkanVersion, SpirvVersion) {
    match vulkan {
        VulkanVersion::V1_1 => (glslang::VulkanVersion::Vulkan1_1, SpirvVersion::SPIRV1_3),
        VulkanVersion::V1_2 => (glslang::VulkanVersion::Vulkan1_2, SpirvVersion::SPIRV1_5),
        VulkanVersion::V1_3 => (glslang::VulkanVersion::Vulkan1_3, SpirvVersion::SPIRV1_6),
    }
}

fn compiler_options(vulkan: VulkanVersion, forced: (i32, GlslProfile)) -> CompilerOptions {
    let (version, spirv_version) = target(vulkan);
    CompilerOptions {
        source_language: SourceLanguage::GLSL,
        target: Target::Vulkan {
            version,
            spirv_version,
        },
        // glslang takes the version from the text as its preprocessor sees it, which can differ
        // from the line the source phase checked (a `//` comment continued by a backslash hides
        // `#version`); a version without compute built-ins makes it print its whole built-in
        // table. The version is forced to the checked one, so it never sees another.
        version_profile: Some(forced),
        messages: messages(),
    }
}

/// The info log of a glslang error (the parse or link log; other errors say what they are).
fn log_of(error: glslang::error::GlslangError) -> String {
    use glslang::error::GlslangError as E;
    match error {
        E::PreprocessError(log) | E::ParseError(log) | E::LinkError(log) | E::MapIoError(log) => {
            log.log
        }
        other => format!("ERROR: {other}"),
    }
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

/// glslang's info log (`ERROR: file:line: text`, `WARNING: …`, continuation lines) as located
/// diagnostics. The main text is string `0` until a `#line N "name"` names it; a message on the
/// text vkprism generated (`compile::PREAMBLE_NAME`, or a `<parsed string N>` glslang names
/// itself) is placed at the kernel's first line and quotes the generated line (`text`: what
/// glslang compiled).
fn parse_messages(source: &Meta, log: &str, text: &str) -> Vec<Diagnostic> {
    let mut out: Vec<Diagnostic> = Vec::new();
    for line in log.lines() {
        let line = line.trim_end();
        let (severity, rest) = match line
            .strip_prefix("ERROR: ")
            .map(|r| ("error", r))
            .or_else(|| line.strip_prefix("WARNING: ").map(|r| ("warning", r)))
        {
            Some(found) => found,
            // glslang continues a message on following lines ("Possible extensions include").
            None => {
                let more = line.trim_start_matches(|c: char| c == '<' || c.is_whitespace());
                if let (Some(prev), false) = (out.last_mut(), more.is_empty()) {
                    prev.message.push(' ');
                    prev.message.push_str(more);
                }
                continue;
            }
        };
        if rest.contains("compilation errors") || rest.contains("compilation terminated") {
            continue;
        }
        let diagnostic = match crate::compile::split_location(rest) {
            Some((file, lno, message))
                if file == crate::compile::PREAMBLE_NAME || file.starts_with("<parsed string") =>
            {
                Diagnostic {
                    location: source.locate(1),
                    message: format!(
                        "{severity}: {message} (in the text vkprism writes before the kernel{})",
                        generated_line(source, text, file, lno)
                    ),
                }
            }
            Some((file, lno, message)) if !file.contains(' ') => Diagnostic {
                location: if file == "0" || file == source.name {
                    source.locate(lno)
                } else {
                    format!("{file}:{lno}")
                },
                message: format!("{severity}: {message}"),
            },
            // No line: the entry point, `#version`, linking. Placed at the kernel's first line
            // by the caller.
            _ => unlocated(format!("{severity}: {rest}")),
        };
        out.push(diagnostic);
    }
    if out.is_empty() {
        out.push(unlocated(format!("glslang failed: {}", log.trim())));
    }
    out
}

/// What a message on generated text is about: the line of the preamble quoted, and for a
/// `define` key's macro, that key.
fn generated_line(source: &Meta, text: &str, file: &str, lno: u32) -> String {
    if file != crate::compile::PREAMBLE_NAME {
        return String::new();
    }
    let start = format!("#line 1 \"{}\"", crate::compile::PREAMBLE_NAME);
    let line = text
        .lines()
        .skip_while(|l| l.trim() != start)
        .nth(lno as usize)
        .map(str::trim);
    let Some(line) = line else {
        return String::new();
    };
    let defined = line
        .strip_prefix("#define")
        .and_then(|r| r.split_whitespace().next());
    let shown: String = line.chars().take(120).collect();
    let more = if shown.len() < line.len() { "…" } else { "" };
    match defined {
        Some(name) if source.options.defines.iter().any(|(n, _)| n == name) => {
            format!(": the `define` key's `{name}`, `{shown}{more}`")
        }
        _ => format!(", line {lno}: `{shown}{more}`"),
    }
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

/// glslang's preprocess-only entry point, through its C interface.
mod raw {
    use crate::options::VulkanVersion;
    use glslang::GlslProfile;
    use glslang_sys as sys;
    use std::ffi::{CStr, CString};

    /// Owns a `glslang_shader_t` (deleted on drop, so no early return leaks it).
    struct Shader(*mut sys::glslang_shader_t);

    impl Drop for Shader {
        fn drop(&mut self) {
            // SAFETY: `self.0` came from `glslang_shader_create`, is non-null, and is deleted
            // once, here.
            unsafe { sys::glslang_shader_delete(self.0) }
        }
    }

    /// The preprocessed text of `text` for `vulkan` with the `forced` version, or `None` where
    /// glslang's preprocessor fails. The caller has initialized glslang
    /// (`glslang::Compiler::acquire`).
    pub(super) fn preprocess(
        text: &str,
        vulkan: VulkanVersion,
        forced: (i32, GlslProfile),
    ) -> Option<String> {
        let code = CString::new(text).ok()?;
        let input = input(&code, vulkan, forced);
        // SAFETY: `input` points at `code` and at the crate's `'static` default limits, both
        // alive until the shader is deleted at the end of this function; glslang copies nothing
        // it keeps past `glslang_shader_delete`.
        let shader = Shader(unsafe { sys::glslang_shader_create(&input) });
        if shader.0.is_null() {
            return None;
        }
        // SAFETY: `shader.0` is a live shader created from `input`, which is still alive.
        if unsafe { sys::glslang_shader_preprocess(shader.0, &input) } == 0 {
            return None;
        }
        // SAFETY: after a successful preprocess the shader holds its output as a NUL-terminated
        // string owned by the shader, copied out here before the shader is deleted.
        let out = unsafe { CStr::from_ptr(sys::glslang_shader_get_preprocessed_code(shader.0)) };
        Some(out.to_string_lossy().into_owned())
    }

    /// The C interface's input for a compute shader of `code`, as the crate's path compiles it
    /// (the same target, forced version and messages), with no include callbacks (the text's
    /// includes are already spliced in).
    fn input(
        code: &CStr,
        vulkan: VulkanVersion,
        forced: (i32, GlslProfile),
    ) -> sys::glslang_input_t {
        let (version, spirv_version) = super::target(vulkan);
        let client_version = match version {
            glslang::VulkanVersion::Vulkan1_1 => sys::glslang_target_client_version_t::Vulkan1_1,
            glslang::VulkanVersion::Vulkan1_2 => sys::glslang_target_client_version_t::Vulkan1_2,
            _ => sys::glslang_target_client_version_t::Vulkan1_3,
        };
        sys::glslang_input_t {
            language: sys::glslang_source_t::GLSL,
            stage: sys::glslang_stage_t::Compute,
            client: sys::glslang_client_t::Vulkan,
            client_version,
            target_language: sys::glslang_target_language_t::SPIRV,
            target_language_version: spirv_version,
            code: code.as_ptr(),
            default_version: forced.0,
            default_profile: forced.1,
            force_default_version_and_profile: 1,
            forward_compatible: 0,
            messages: sys::glslang_messages_t(super::messages().bits()),
            resource: limits(),
            callbacks: sys::glsl_include_callbacks_t {
                include_system: None,
                include_local: None,
                free_include_result: None,
            },
            callbacks_ctx: std::ptr::null_mut(),
        }
    }

    /// glslang's default resource limits, as the crate defines them.
    fn limits() -> *const sys::glslang_resource_t {
        static LIMITS: glslang::limits::ResourceLimits = glslang::limits::DEFAULT_LIMITS;
        // `ResourceLimits` is `#[repr(transparent)]` over `glslang_resource_t`, so a pointer to
        // one is a pointer to the other.
        std::ptr::from_ref(&LIMITS).cast()
    }
}

#[cfg(test)]
mod tests {
    use super::parse_messages;
    use crate::source::{Meta, Origin};

    fn meta() -> Meta {
        Meta {
            name: "<inline>".into(),
            dir: Default::default(),
            origin: Origin::Inline {
                file: "src/lib.rs".into(),
                lines: vec![10, 11, 12],
            },
            options: crate::options::KernelOptions {
                defines: vec![("N".into(), "4 4".into())],
                ..Default::default()
            },
        }
    }

    #[test]
    fn messages_on_generated_text_are_placed_at_the_kernel_and_explained() {
        let text = "#version 450\n#extension GL_GOOGLE_cpp_style_line_directive : require\n#line 1 \"vkprism-preamble\"\n#define afp float\n#define N 4 4\n#line 2 \"<inline>\"\nvoid main() {}\n";
        let log = "ERROR: vkprism-preamble:2: '' : bad\nERROR: <parsed string 1>:2: '' : name too long\nERROR: <inline>:3: 'x' : undeclared identifier\n";
        let d = parse_messages(&meta(), log, text);
        let shown: Vec<(&str, &str)> = d
            .iter()
            .map(|d| (d.location.as_str(), d.message.as_str()))
            .collect();
        assert_eq!(
            shown,
            [
                ("src/lib.rs:10", "error: '' : bad (in the text vkprism writes before the kernel: the `define` key's `N`, `#define N 4 4`)"),
                ("src/lib.rs:10", "error: '' : name too long (in the text vkprism writes before the kernel)"),
                ("src/lib.rs:12", "error: 'x' : undeclared identifier"),
            ]
        );
    }
}
