//! Time linear in the input (issue 20): kernels of one shape at 10 KB and at 1 MB (the kernel
//! size cap) compile or are refused in time proportional to their size. Each check is a ratio,
//! time(1 MB) / median time(10 KB), against 100 (the size ratio) × 3 slack, so it holds on any
//! machine; the absolute figures are printed (`--nocapture`).

use std::path::Path;
use std::time::{Duration, Instant};
use vkprism_compiler::{compile_kernel, Ctxt, Source};

const SMALL: usize = 10_000;
/// Under the 1 MiB kernel cap.
const LARGE: usize = 1_000_000;
const SLACK: f64 = 3.0;

/// The time to compile (or refuse) `text`, and its error count.
fn time(text: &str) -> (Duration, usize) {
    let t = Instant::now();
    let cx = Ctxt::new();
    let _ = Source::from_text(&cx, text, "test.comp", Path::new("."))
        .and_then(|s| compile_kernel(&cx, &s, None));
    let errors = cx.check().err().map_or(0, |e| e.into_iter().count());
    (t.elapsed(), errors)
}

/// Kernel `head`, then `unit(k)` for k = 0, 1, … up to `size` bytes, then `tail`.
fn kernel(size: usize, head: &str, unit: &dyn Fn(usize) -> String, tail: &str) -> String {
    let mut text = String::from(head);
    let mut k = 0;
    while text.len() + tail.len() < size {
        let u = unit(k);
        if text.len() + u.len() + tail.len() > size {
            break;
        }
        text.push_str(&u);
        k += 1;
    }
    text.push_str(tail);
    text
}

/// One measure at a time: tests run on parallel threads, and a ratio of times taken under
/// different loads would mean nothing.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Checks time(LARGE) / median(time(SMALL)) ≤ 100 × SLACK for the kernels `make(size)`.
fn linear(shape: &str, make: impl Fn(usize) -> String) {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let small = make(SMALL);
    let large = make(LARGE);
    assert!(large.len() <= 1 << 20, "{shape}: {} bytes", large.len());
    let mut smalls: Vec<Duration> = (0..5).map(|_| time(&small).0).collect();
    smalls.sort();
    let median = smalls[2];
    let (big, errors) = time(&large);
    let ratio = big.as_secs_f64() / median.as_secs_f64().max(1e-6);
    let allowed = (large.len() as f64 / small.len() as f64) * SLACK;
    eprintln!(
        "linear_time: {shape}: {} bytes in {median:.2?} (median of 5), {} bytes in {big:.2?} ({errors} errors): ratio {ratio:.1}, allowed {allowed:.0}",
        small.len(),
        large.len()
    );
    assert!(
        ratio <= allowed,
        "{shape}: {big:?} for {} bytes against {median:?} for {}: ratio {ratio:.1} > {allowed:.0}",
        large.len(),
        small.len()
    );
}

const HEAD: &str = "#version 450\nlayout (binding = 0) buffer b { float d[]; };\n";

#[test]
fn one_long_identifier() {
    linear("one long identifier", |size| {
        let n = size.saturating_sub(HEAD.len() + 40);
        format!("{HEAD}void main() {{ float {} = 1.0; }}\n", "a".repeat(n))
    });
}

#[test]
fn one_long_unknown_type() {
    // An undeclared type in a declaration: the message names it and looks for near misses.
    linear("one long unknown type", |size| {
        let n = size.saturating_sub(HEAD.len() + 40);
        format!(
            "{HEAD}void main() {{ {} x = 1.0; }}\n",
            "sfpvec".repeat(n / 6)
        )
    });
}

#[test]
fn one_long_unknown_extended_function() {
    // A reserved prefix: the message looks for the nearest known extended functions.
    linear("one long unknown extended function", |size| {
        let n = size.saturating_sub(HEAD.len() + 40);
        format!(
            "{HEAD}void main() {{ d[0] = buffer_{}(d, 0); }}\n",
            "ld".repeat(n / 2)
        )
    });
}

#[test]
fn many_identifiers() {
    linear("many identifiers", |size| {
        kernel(
            size,
            &format!("{HEAD}void main() {{\n"),
            &|k| format!("float v{k} = 1.0;\n"),
            "}\n",
        )
    });
}

#[test]
fn many_undeclared_identifiers() {
    linear("many undeclared identifiers", |size| {
        kernel(
            size,
            &format!("{HEAD}void main() {{\n"),
            &|k| format!("d[0] = u{k};\n"),
            "}\n",
        )
    });
}

#[test]
fn comments() {
    linear("comments", |size| {
        kernel(
            size,
            HEAD,
            &|k| {
                format!("// a comment {k} with buffer_ld4 and sfpvec4 in it\n/* a block {k}\n comment */\n")
            },
            "void main() {}\n",
        )
    });
}

#[test]
fn string_like_tokens() {
    linear("string-like tokens", |size| {
        kernel(
            size,
            &format!("{HEAD}#if 0\n"),
            &|k| format!("\"a string {k} // /* with\" 'c' \"#include\"\n"),
            "#endif\nvoid main() {}\n",
        )
    });
}

#[test]
fn if_nesting() {
    // Nested blocks 50 deep (glslang's limit is 64), one after another.
    linear("#if nesting", |size| {
        let block = format!("{}{}", "#if VKP_X > 0\n".repeat(50), "#endif\n".repeat(50));
        kernel(
            size,
            &format!("{HEAD}#define VKP_X 1\n"),
            &|_| block.clone(),
            "void main() {}\n",
        )
    });
}

#[test]
fn deep_if_nesting() {
    // One block nested as deep as the size allows (glslang refuses past 64: the error must come
    // as fast).
    linear("deep #if nesting", |size| {
        let levels = size.saturating_sub(HEAD.len() + 20) / 23;
        format!(
            "{HEAD}{}{}void main() {{}}\n",
            "#ifdef VKP_DEEP\n".repeat(levels),
            "#endif\n".repeat(levels)
        )
    });
}

#[test]
fn long_lines() {
    linear("one long line", |size| {
        kernel(
            size,
            &format!("{HEAD}void main() {{ "),
            &|k| format!("d[{k}] = 1.0; "),
            "}\n",
        )
    });
}

#[test]
fn many_small_defines() {
    linear("many small #defines", |size| {
        kernel(
            size,
            HEAD,
            &|k| format!("#define D{k} ({k} + 1)\n"),
            "void main() { d[0] = float(D0); }\n",
        )
    });
}

#[test]
fn many_defines_used() {
    linear("many #defines, each used", |size| {
        kernel(
            size,
            &format!("{HEAD}#define F(x) ((x) + 1)\nvoid main() {{\n"),
            &|k| format!("d[{k}] = float(F(F({k})));\n"),
            "}\n",
        )
    });
}
