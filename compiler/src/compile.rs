//! Phase 5, compile: one GLSL text per variant (preamble spliced after `#version`, a `#line`
//! directive so messages keep the kernel's own line numbers), compiled to SPIR-V by glslang
//! (`toolchain.rs`), variants in parallel.

use crate::preamble::preamble;
use crate::source::{Meta, Source};
use crate::tested::TestedFacts;
use glslang::GlslProfile;
use vkprism_core::VariantKey;

/// Constant ids vkprism gives the workgroup size when the kernel names none (ncnn's choice).
pub const LOCAL_SIZE_IDS: [u32; 3] = [233, 234, 235];
/// Workgroup x size when the kernel declares none: overridable at pipeline creation.
pub const DEFAULT_LOCAL_SIZE_X: u32 = 64;

/// One message from the GLSL compiler, located.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Diagnostic {
    /// `file:line` (Rust file for inline kernels), or empty when glslang gave no line.
    pub location: String,
    /// glslang's text (`error: 'x' : undeclared identifier`).
    pub message: String,
}

/// The full GLSL text of one variant; `tested` is what the kernel tests in `#if`
/// (`TestedFacts::of` its text).
pub fn variant_text(
    source: &Source,
    key: &VariantKey,
    idents: &[(String, u32)],
    tested: &TestedFacts,
) -> String {
    let mut pre = preamble(key);
    // The `define` key's macros: after the preamble (which they can't change: their names are
    // checked), before the kernel, which sees them.
    pre.push_str(&source.meta.options.define_lines());
    pre.push_str(&local_size_layout(idents));
    let mut own = crate::scan::defined_names(&source.all_text);
    pre.push_str(&tested.defines(&key.facts));
    // A fact tested in `#if` is a macro in every variant, not also a specialization constant.
    own.extend(tested.names().map(String::from));
    pre.push_str(&crate::preamble::device_fact_constants(idents, &own));
    splice(source, &pre)
}

/// What the per-variant checks preprocess: the kernel with only the variant's switches defined
/// (`NCNN_fp16_storage`, ...), its device facts and the `define` key's macros, none of the extended vocabulary, so
/// the extended names a variant compiles survive the preprocessor and the branches it doesn't
/// compile are gone.
pub fn switches_text(source: &Source, key: &VariantKey, tested: &TestedFacts) -> String {
    let mut pre = crate::preamble::switches(key);
    pre.push_str(&tested.defines(&key.facts));
    pre.push_str(&source.meta.options.define_lines());
    splice(source, &pre)
}

/// The file name glslang's messages give the text vkprism writes before the kernel (the
/// preamble, the `define` key's macros): such a message is placed at the kernel's first line
/// and says what it is about (`toolchain::parse_messages`).
pub const PREAMBLE_NAME: &str = "vkprism-preamble";

/// `pre` spliced after the kernel's `#version` line (or after `#version 450`) under the name
/// [`PREAMBLE_NAME`], then a `#line` directive so messages keep the kernel's own name and line
/// numbers.
fn splice(source: &Source, pre: &str) -> String {
    let text = &source.text;
    let mut out = String::with_capacity(text.len() + pre.len() + 256);
    let name = crate::includes::quoted(&source.meta.name);
    match version_line(text) {
        Some(k) => {
            for l in text.lines().take(k + 1) {
                out.push_str(l);
                out.push('\n');
            }
            out.push_str(&format!("#line 1 \"{PREAMBLE_NAME}\"\n"));
            out.push_str(pre);
            out.push_str(&format!("#line {} {name}\n", k + 2));
            for l in text.lines().skip(k + 1) {
                out.push_str(l);
                out.push('\n');
            }
        }
        None => {
            out.push_str("#version 450\n");
            out.push_str(&format!("#line 1 \"{PREAMBLE_NAME}\"\n"));
            out.push_str(pre);
            out.push_str(&format!("#line 1 {name}\n"));
            out.push_str(text);
            out.push('\n');
        }
    }
    out
}

/// The 0-based line of the `#version` directive: the first line that starts (after blanks) with
/// `#` and `version` outside a `/* */` comment.
pub(crate) fn version_line(text: &str) -> Option<usize> {
    let mut in_comment = false;
    for (k, line) in text.lines().enumerate() {
        let mut rest = line;
        if !in_comment {
            let t = rest.trim_start();
            if let Some(after) = t.strip_prefix('#') {
                if after.trim_start().starts_with("version") {
                    return Some(k);
                }
            }
        }
        // Track whether the line ends inside a block comment.
        loop {
            if in_comment {
                match rest.find("*/") {
                    Some(e) => {
                        rest = &rest[e + 2..];
                        in_comment = false;
                    }
                    None => break,
                }
            } else {
                let block = rest.find("/*");
                let line_comment = rest.find("//");
                match (block, line_comment) {
                    (Some(b), Some(l)) if l < b => break,
                    (Some(b), _) => {
                        rest = &rest[b + 2..];
                        in_comment = true;
                    }
                    _ => break,
                }
            }
        }
    }
    None
}

/// The version glslang compiles `text` (a variant's full text) as: its `#version` line when that
/// is one the source phase accepts, else 450.
fn forced_version(text: &str) -> (i32, GlslProfile) {
    let words: Vec<&str> = version_line(text)
        .and_then(|k| text.lines().nth(k))
        .and_then(|l| l.trim_start().strip_prefix('#'))
        .and_then(|l| l.trim_start().strip_prefix("version"))
        .map(|r| {
            r.split("//")
                .next()
                .unwrap_or("")
                .split_whitespace()
                .collect()
        })
        .unwrap_or_default();
    match words.as_slice() {
        [v, "es"] if matches!(*v, "310" | "320") => (v.parse().unwrap_or(310), GlslProfile::ES),
        // The profile as written: a different one is a warning in glslang's messages.
        [v, "core"] if matches!(*v, "430" | "440" | "450" | "460") => {
            (v.parse().unwrap_or(450), GlslProfile::Core)
        }
        [v] if matches!(*v, "430" | "440" | "450" | "460") => {
            (v.parse().unwrap_or(450), GlslProfile::None)
        }
        _ => (450, GlslProfile::None),
    }
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

/// The default of [`time_limit`], in seconds.
pub const DEFAULT_DEADLINE_SECS: u64 = 60;

/// How long one kernel's variants may take to preprocess and compile, together:
/// `VKPRISM_COMPILE_DEADLINE_SECS` (seconds, fractions allowed; default
/// [`DEFAULT_DEADLINE_SECS`]). The last line of defence behind the bounds on the input (sizes,
/// includes, the macro-expansion budget): a variant that has not finished by then is an error
/// naming it, and the macro returns rather than holding rustc.
pub fn time_limit() -> std::time::Duration {
    std::env::var("VKPRISM_COMPILE_DEADLINE_SECS")
        .ok()
        .and_then(|v| v.trim().parse::<f64>().ok())
        .filter(|s| s.is_finite() && *s > 0.0)
        .map(|s| std::time::Duration::from_secs_f64(s.min(1e9)))
        .unwrap_or(std::time::Duration::from_secs(DEFAULT_DEADLINE_SECS))
}

/// Jobs of [`run_jobs`] being worked on now, in this process: past a deadline, the ones left to
/// finish in the background.
static IN_FLIGHT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// How many GLSL compiles are running now in this process, including those a deadline left
/// running in the background: a process that ends while one runs may crash in glslang's
/// teardown, so a program that hit a deadline and then exits can wait for this to reach 0.
pub fn compiles_in_flight() -> usize {
    IN_FLIGHT.load(std::sync::atomic::Ordering::SeqCst)
}

/// Runs `work` on every `(key, text)` job over the machine's cores until `deadline`; results in
/// key order, `late(key)` for a job not done by then.
///
/// glslang is C++ that can't be interrupted, so a job past the deadline can't be stopped: its
/// thread is detached and left to finish in the background (the process, rustc for the macro,
/// ends without waiting for it; no job starts after the deadline). Each job catches its own
/// panic (`work` turns it into its result).
fn run_jobs<T: Send + 'static>(
    source: &Meta,
    jobs: Vec<(VariantKey, String)>,
    deadline: std::time::Instant,
    work: fn(&Meta, &str) -> T,
    late: impl Fn(VariantKey) -> T,
) -> Vec<(VariantKey, T)> {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::{mpsc, Arc, Mutex};
    let threads = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
        .min(jobs.len().max(1));
    let keys: Vec<VariantKey> = jobs.iter().map(|(k, _)| *k).collect();
    let queue = Arc::new(Mutex::new(std::collections::VecDeque::from(jobs)));
    let stop = Arc::new(AtomicBool::new(false));
    let meta = Arc::new(source.clone());
    let (send, receive) = mpsc::channel::<(VariantKey, T)>();
    for _ in 0..threads {
        let (queue, stop, meta, send) = (queue.clone(), stop.clone(), meta.clone(), send.clone());
        let spawned = std::thread::Builder::new()
            .name("vkprism-glslang".into())
            .stack_size(16 << 20)
            .spawn(move || loop {
                if stop.load(Ordering::SeqCst) {
                    return;
                }
                IN_FLIGHT.fetch_add(1, Ordering::SeqCst);
                let job = queue.lock().ok().and_then(|mut q| q.pop_front());
                let Some((key, text)) = job else {
                    IN_FLIGHT.fetch_sub(1, Ordering::SeqCst);
                    return;
                };
                let result = work(&meta, &text);
                IN_FLIGHT.fetch_sub(1, Ordering::SeqCst);
                if send.send((key, result)).is_err() {
                    return;
                }
            });
        // A thread that can't start leaves its share to the others (or to `late`).
        drop(spawned);
    }
    drop(send);
    let mut results: Vec<(VariantKey, T)> = Vec::with_capacity(keys.len());
    while results.len() < keys.len() {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        match receive.recv_timeout(left) {
            Ok(r) => results.push(r),
            // Past the deadline, or every thread gone (none could start).
            Err(_) => break,
        }
    }
    stop.store(true, Ordering::SeqCst);
    for k in keys {
        if !results.iter().any(|(r, _)| *r == k) {
            results.push((k, late(k)));
        }
    }
    results.sort_by_key(|(k, _)| *k);
    results
}

/// Compiles every `(key, text)` pair, spreading them over the machine's cores, until `deadline`
/// (a variant not compiled by then is an error naming it); results in key order.
pub fn compile_all(
    source: &Meta,
    jobs: Vec<(VariantKey, String)>,
    deadline: std::time::Instant,
) -> Vec<(VariantKey, Compiled)> {
    fn work(source: &Meta, text: &str) -> Compiled {
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            crate::toolchain::compile(source, text, forced_version(text))
        }))
        .unwrap_or_else(|panic| Err(vec![panicked(source, &*panic)]));
        r.map_err(|d| locate_all(source, d))
    }
    run_jobs(source, jobs, deadline, work, |key| {
        Err(vec![Diagnostic {
            location: source.locate(1),
            message: format!(
                "error: variant `{}` did not finish compiling within the deadline of {:.0?} (VKPRISM_COMPILE_DEADLINE_SECS): the GLSL compiler is stuck on this kernel, most likely on its macros or its size; vkprism stopped waiting (the compile thread finishes in the background)",
                key.name(),
                time_limit(),
            ),
        }])
    })
}

/// A panic in the GLSL compiler as an error (the kernel reached a bug in glslang or vkprism).
fn panicked(source: &Meta, panic: &(dyn std::any::Any + Send)) -> Diagnostic {
    let what = panic
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "(no message)".into());
    Diagnostic {
        location: source.locate(1),
        message: format!("internal error: the GLSL compiler panicked on this kernel: {what}"),
    }
}

/// Messages without a line (glslang's "Missing entry point", `#version` errors) are placed at the
/// kernel's first line: every error names a place.
fn locate_all(source: &Meta, mut diagnostics: Vec<Diagnostic>) -> Vec<Diagnostic> {
    for d in &mut diagnostics {
        if d.location.is_empty() {
            d.location = source.locate(1);
        }
    }
    diagnostics
}

/// glslang's preprocessor output for each `(key, text)`, or `None` for a text it rejects or
/// one not preprocessed by `deadline` (its compile reports why). A panic in glslang is a `None`
/// too.
pub fn preprocess_all(
    source: &Meta,
    jobs: Vec<(VariantKey, String)>,
    deadline: std::time::Instant,
) -> Vec<(VariantKey, Option<String>)> {
    fn work(source: &Meta, text: &str) -> Option<String> {
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            crate::toolchain::preprocess(source, text, forced_version(text))
        }))
        .ok()
        .flatten()
    }
    run_jobs(source, jobs, deadline, work, |_| None)
}

/// `file:12: error: text` -> (file, 12, "error: text").
pub(crate) fn split_location(line: &str) -> Option<(&str, u32, &str)> {
    // The file name may contain ':' (unlikely), so find ":<digits>: " from the left.
    let bytes = line.as_bytes();
    let mut i = 0;
    while let Some(off) = line[i..].find(':') {
        let c = i + off;
        // `#line 4294967295` makes glslang count on to -1: a sign is allowed, and a line outside
        // 1..=u32::MAX is clamped into it.
        let start = c + 1 + usize::from(bytes.get(c + 1) == Some(&b'-'));
        let digits_end = bytes[start..]
            .iter()
            .position(|b| !b.is_ascii_digit())
            .map(|p| start + p)?;
        if digits_end > start && bytes.get(digits_end) == Some(&b':') {
            let n: i128 = line[c + 1..digits_end].parse().unwrap_or(i128::MAX);
            let n = n.clamp(1, u32::MAX as i128) as u32;
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
        assert_eq!(
            split_location("<inline>:-1: error: past the end"),
            Some(("<inline>", 1, "error: past the end"))
        );
        assert_eq!(
            split_location("<inline>:99999999999999999999: error: far"),
            Some(("<inline>", u32::MAX, "error: far"))
        );
    }

    #[test]
    fn version_in_a_comment_is_not_the_version() {
        use super::version_line;
        assert_eq!(
            version_line("/*\n#version 450\n*/\n#version 460\n"),
            Some(3)
        );
        assert_eq!(version_line("/* a */ int x;\n#version 450"), Some(1));
        assert_eq!(version_line("// /*\n#version 450"), Some(1));
        assert_eq!(version_line("/* #version 450 */\nvoid main() {}"), None);
    }
}
