//! Compile-time behaviour of `compute_shader!`: every `tests/ui/<phase>/<case>.rs` but `pass/`
//! must fail with exactly the `.stderr` beside it; `pass/` cases must build and run.
//! Regenerate expectations with `TRYBUILD=overwrite cargo test --test ui` and review the diff.

#[test]
fn ui() {
    let t = trybuild::TestCases::new();
    for phase in [
        "parse", "source", "variants", "scan", "glsl", "model", "bindings",
    ] {
        t.compile_fail(format!("tests/ui/{phase}/*.rs"));
    }
    t.pass("tests/ui/pass/*.rs");
}
