//! The compile deadline (issue 20), the last line of defence: a kernel whose variants are not
//! compiled by `VKPRISM_COMPILE_DEADLINE_SECS` is a located error naming them, returned at the
//! deadline. Its own test binary: the variable is process-wide.

use std::path::Path;
use std::time::{Duration, Instant};
use vkprism_compiler::{compile_kernel, compiles_in_flight, Ctxt, Source};

#[test]
fn a_compile_past_the_deadline_is_a_located_error_naming_the_variant() {
    // Under the expansion budget (2^16 doublings: 0.75 MiB) but longer than 0.1 s of glslang.
    let mut text =
        String::from("#version 450\nlayout (binding = 0) buffer b { float d[]; };\n#define M0 1\n");
    for i in 1..=16 {
        text.push_str(&format!("#define M{i} (M{}+M{})\n", i - 1, i - 1));
    }
    text.push_str("void main() { d[0] = float(M16 + M15); }\n");
    std::env::set_var("VKPRISM_COMPILE_DEADLINE_SECS", "0.1");
    let t = Instant::now();
    let cx = Ctxt::new();
    let model = Source::from_text(&cx, &text, "test.comp", Path::new("."))
        .and_then(|s| compile_kernel(&cx, &s, None));
    let took = t.elapsed();
    std::env::remove_var("VKPRISM_COMPILE_DEADLINE_SECS");
    assert!(model.is_none());
    let errs: Vec<String> = cx
        .check()
        .unwrap_err()
        .into_iter()
        .map(|e| e.to_string())
        .collect();
    eprintln!("{took:?}: {errs:#?}");
    assert_eq!(errs.len(), 1, "{errs:?}");
    assert!(
        errs[0].contains("test.comp:1:")
            && errs[0].contains("variant `fp32`")
            && errs[0].contains("deadline of 100ms")
            && errs[0].contains("VKPRISM_COMPILE_DEADLINE_SECS"),
        "{errs:?}"
    );
    assert!(took < Duration::from_secs(2), "returned after {took:?}");
    // The abandoned compile finishes in the background; the test process must not end under
    // it (glslang's teardown would crash the binary after the test passed).
    let wait = Instant::now();
    while compiles_in_flight() > 0 && wait.elapsed() < Duration::from_secs(120) {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(compiles_in_flight(), 0, "the abandoned compile still runs");
}
