//! Phase 5, compile: one GLSL text per variant (preamble spliced after `#version`, a `#line`
//! directive so messages keep the kernel's own line numbers), compiled to SPIR-V by shaderc,
//! variants in parallel.

use crate::preamble::preamble;
use crate::source::{Meta, Source};
use std::path::PathBuf;
use vkprism_core::VariantKey;

/// Constant ids vkprism gives the workgroup size when the kernel names none (ncnn's choice).
pub const LOCAL_SIZE_IDS: [u32; 3] = [233, 234, 235];
/// Workgroup x size when the kernel declares none: overridable at pipeline creation.
pub const DEFAULT_LOCAL_SIZE_X: u32 = 64;

/// One message from the GLSL compiler, located.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Diagnostic {
    /// `file:line` (Rust file for inline kernels), or empty when shaderc gave no line.
    pub location: String,
    /// glslang's text (`error: 'x' : undeclared identifier`).
    pub message: String,
}

/// The full GLSL text of one variant.
pub fn variant_text(source: &Source, key: &VariantKey, idents: &[(String, u32)]) -> String {
    let mut pre = preamble(key);
    pre.push_str(&local_size_layout(idents));
    let text = &source.text;
    let mut out = String::with_capacity(text.len() + pre.len() + 256);
    let version_line = text
        .lines()
        .position(|l| l.trim_start().starts_with("#version"));
    match version_line {
        Some(k) => {
            for l in text.lines().take(k + 1) {
                out.push_str(l);
                out.push('\n');
            }
            out.push_str(&pre);
            out.push_str(&format!("#line {}\n", k + 2));
            for l in text.lines().skip(k + 1) {
                out.push_str(l);
                out.push('\n');
            }
        }
        None => {
            out.push_str("#version 450\n");
            out.push_str(&pre);
            out.push_str("#line 1\n");
            out.push_str(text);
            out.push('\n');
        }
    }
    out
}

/// Keeps the workgroup size specializable: constant ids for it unless the kernel names its own.
/// This goes before the kernel's text, so `gl_WorkGroupSize` in the kernel is the specialized
/// value (declared after a use, glslang would fold the use to the unspecialized size); the
/// kernel's own `local_size_x = …` later still sets the defaults.
fn local_size_layout(idents: &[(String, u32)]) -> String {
    if idents
        .iter()
        .any(|(id, _)| id.starts_with("local_size_") && id.ends_with("_id"))
    {
        return String::new();
    }
    let [x, y, z] = LOCAL_SIZE_IDS;
    let default_x = if idents.iter().any(|(id, _)| id == "local_size_x") {
        String::new()
    } else {
        format!("local_size_x = {DEFAULT_LOCAL_SIZE_X}, ")
    };
    format!("layout ({default_x}local_size_x_id = {x}, local_size_y_id = {y}, local_size_z_id = {z}) in;\n")
}

/// One variant's SPIR-V, or the compiler's messages.
pub type Compiled = Result<Vec<u32>, Vec<Diagnostic>>;

/// Whether spirv-opt runs after glslang.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Optimization {
    /// glslang's output as is: what reflection reads (it keeps the names).
    None,
    /// spirv-opt's performance passes, which strip names: such output is shipped, never
    /// reflected.
    Performance,
}

/// Compiles every `(key, text)` pair, spreading them over the machine's cores; results in key
/// order.
pub fn compile_all(
    source: &Meta,
    jobs: Vec<(VariantKey, String)>,
    optimization: Optimization,
) -> Vec<(VariantKey, Compiled)> {
    let threads = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
        .min(jobs.len().max(1));
    let chunks: Vec<Vec<(VariantKey, String)>> = {
        let mut c: Vec<Vec<_>> = (0..threads).map(|_| Vec::new()).collect();
        for (i, j) in jobs.into_iter().enumerate() {
            c[i % threads].push(j);
        }
        c
    };
    let mut results: Vec<_> = std::thread::scope(|s| {
        let handles: Vec<_> = chunks
            .into_iter()
            .map(|chunk| {
                s.spawn(move || {
                    let compiler = shaderc::Compiler::new();
                    chunk
                        .into_iter()
                        .map(|(key, text)| {
                            let r = match &compiler {
                                // glslang 12 (shaderc's) rejects GL_KHR_cooperative_matrix.
                                _ if key.coopmat == Some(true) => {
                                    crate::glslang::compile(source, &text)
                                }
                                Ok(c) => compile_one(c, source, &text, optimization),
                                Err(e) => Err(vec![Diagnostic {
                                    location: String::new(),
                                    message: format!("cannot start shaderc: {e}"),
                                }]),
                            };
                            (key, r)
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap_or_default())
            .collect()
    });
    results.sort_by_key(|(k, _)| *k);
    results
}

fn compile_one(
    compiler: &shaderc::Compiler,
    source: &Meta,
    text: &str,
    optimization: Optimization,
) -> Compiled {
    let Some(mut options) = shaderc::CompileOptions::new().ok() else {
        return Err(vec![Diagnostic {
            location: String::new(),
            message: "cannot create shaderc options".into(),
        }]);
    };
    options.set_target_env(
        shaderc::TargetEnv::Vulkan,
        shaderc::EnvVersion::Vulkan1_1 as u32,
    );
    options.set_source_language(shaderc::SourceLanguage::GLSL);
    // By default no spirv-opt pass: it strips the names reflection reads, and drivers optimize
    // at pipeline creation anyway (ncnn ships glslang's output unoptimized too).
    options.set_optimization_level(match optimization {
        Optimization::None => shaderc::OptimizationLevel::Zero,
        Optimization::Performance => shaderc::OptimizationLevel::Performance,
    });
    let main_dir = source.dir.clone();
    options.set_include_callback(move |name, _ty, from, _depth| {
        let base = if from == crate::source::INLINE_NAME {
            main_dir.clone()
        } else {
            PathBuf::from(from)
                .parent()
                .map(|p| p.to_path_buf())
                .unwrap_or_else(|| main_dir.clone())
        };
        let path = base.join(name);
        std::fs::read_to_string(&path)
            .map(|content| shaderc::ResolvedInclude {
                resolved_name: path.display().to_string(),
                content,
            })
            .map_err(|e| format!("#include \"{name}\" not found: {} ({e})", path.display()))
    });
    match compiler.compile_into_spirv(
        text,
        shaderc::ShaderKind::Compute,
        &source.name,
        "main",
        Some(&options),
    ) {
        Ok(artifact) => Ok(artifact.as_binary().to_vec()),
        Err(shaderc::Error::CompilationError(_, msg)) => Err(parse_messages(source, &msg)),
        Err(e) => Err(vec![Diagnostic {
            location: String::new(),
            message: e.to_string(),
        }]),
    }
}

/// Turns glslang's `name:line: error: text` lines into located diagnostics.
fn parse_messages(source: &Meta, msg: &str) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    for line in msg.lines() {
        let line = line.trim();
        if line.is_empty() || line.ends_with("generated.") {
            continue;
        }
        match split_location(line) {
            Some((file, lno, rest)) => {
                let location = if file == source.name {
                    source.locate(lno)
                } else {
                    format!("{file}:{lno}")
                };
                out.push(Diagnostic {
                    location,
                    message: rest.to_string(),
                });
            }
            // glslang continues a message on following lines ("Possible extensions include: ...").
            None => match out.last_mut() {
                Some(prev) => {
                    prev.message.push(' ');
                    prev.message
                        .push_str(line.trim_start_matches(|c: char| c == '<' || c.is_whitespace()));
                }
                None => out.push(Diagnostic {
                    location: String::new(),
                    message: line.to_string(),
                }),
            },
        }
    }
    if out.is_empty() {
        out.push(Diagnostic {
            location: String::new(),
            message: msg.trim().to_string(),
        });
    }
    out
}

/// `file:12: error: text` -> (file, 12, "error: text").
pub(crate) fn split_location(line: &str) -> Option<(&str, u32, &str)> {
    // The file name may contain ':' (unlikely), so find ":<digits>: " from the left.
    let bytes = line.as_bytes();
    let mut i = 0;
    while let Some(off) = line[i..].find(':') {
        let c = i + off;
        let digits_end = bytes[c + 1..]
            .iter()
            .position(|b| !b.is_ascii_digit())
            .map(|p| c + 1 + p)?;
        if digits_end > c + 1 && bytes.get(digits_end) == Some(&b':') {
            let n = line[c + 1..digits_end].parse().ok()?;
            return Some((&line[..c], n, line[digits_end + 1..].trim()));
        }
        i = c + 1;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::split_location;

    #[test]
    fn locations() {
        assert_eq!(
            split_location("<inline>:12: error: 'x' : undeclared"),
            Some(("<inline>", 12, "error: 'x' : undeclared"))
        );
        assert_eq!(
            split_location("/a/b.glsl:3: error: y"),
            Some(("/a/b.glsl", 3, "error: y"))
        );
        assert_eq!(split_location("error: no line"), None);
    }
}
