//! A deterministic, time-boxed mutation run over `expand` (the macro's whole work): thousands of
//! kernels made from the repository's own kernels and hostile snippets, each of which must come
//! back as tokens (a module or errors) without a panic and within a time bound. The longer,
//! coverage-guided run is `compiler/fuzz` (cargo-fuzz).
//!
//! `VKPRISM_MUTATION_SECS` (default 30) bounds the run, `VKPRISM_MUTATION_CASES` (default
//! 100,000) the number of inputs; `VKPRISM_MUTATION_SEED` changes the sequence.

use proc_macro2::{Literal, TokenStream};
use quote::quote;
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// The longest one input may take (a debug build on a loaded machine compiling every variant).
const PER_INPUT: Duration = Duration::from_secs(60);

/// xorshift64*: a fixed sequence for a fixed seed.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
    fn pick<'a>(&mut self, xs: &'a [String]) -> &'a String {
        &xs[self.below(xs.len())]
    }
}

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

/// Every kernel in the repository: `.comp` files (their includes made absolute) and the inline
/// `r#"…"#` kernels of the Rust sources that hold a `main`.
fn seeds() -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![
        repo().join("shaders"),
        repo().join("tests"),
        repo().join("examples"),
        repo().join("compiler/tests"),
        repo().join("bench"),
    ];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for e in entries.flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
                continue;
            }
            let Ok(text) = std::fs::read_to_string(&p) else {
                continue;
            };
            match p.extension().and_then(|x| x.to_str()) {
                Some("comp") => {
                    let d = p.parent().unwrap().display().to_string();
                    out.push(text.replace("#include \"", &format!("#include \"{d}/")));
                }
                Some("rs") => {
                    for chunk in text.split("r#\"").skip(1) {
                        if let Some(k) = chunk.split("\"#").next() {
                            if k.contains("void main") {
                                out.push(k.to_string());
                            }
                        }
                    }
                }
                _ => {}
            }
        }
    }
    // The cargo-fuzz seed corpus (its first byte picks the macro's form).
    for e in std::fs::read_dir(repo().join("compiler/fuzz/corpus/expand"))
        .into_iter()
        .flatten()
        .flatten()
    {
        if let Ok(bytes) = std::fs::read(e.path()) {
            if let Some((_, text)) = bytes.split_first() {
                out.push(String::from_utf8_lossy(text).into_owned());
            }
        }
    }
    out.sort();
    out.dedup();
    out
}

/// Files the hostile includes name, in a directory of this run's own.
struct Files {
    dir: PathBuf,
}

impl Files {
    fn new() -> Files {
        let dir = std::env::temp_dir().join(format!("vkprism-mutation-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let w = |n: &str, t: &str| std::fs::write(dir.join(n), t).unwrap();
        w(
            "self.glsl",
            "#include \"self.glsl\"\n#include \"self.glsl\"\n#include \"self.glsl\"\n",
        );
        w("angle.glsl", "#include <angle.glsl>\nsfpvec4 f;\n");
        w("nul.glsl", "float g() { return 1.0; }\0\n");
        w("a.glsl", "#include \"b.glsl\"\n");
        w("b.glsl", "#include \"a.glsl\"\n");
        w(
            "ok.glsl",
            "#ifndef OK\n#define OK\nafp twice(afp x) { return x + x; }\n#endif\n",
        );
        w(
            "axes.glsl",
            "layout (binding = 3) buffer extra { sfpvec4 e[]; };\n",
        );
        w("bad.glsl", "this is not glsl (\n");
        for k in 0..12 {
            let next = format!("#include \"d{}.glsl\"\n", k + 1);
            w(&format!("d{k}.glsl"), &format!("{next}{next}"));
        }
        w("d12.glsl", "");
        Files { dir }
    }
}

impl Drop for Files {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Snippets a hostile user (or a typo) puts into a kernel.
fn snippets(files: &Path) -> Vec<String> {
    let f = files.display();
    let mut v: Vec<String> = [
        "\0", "/*", "*/", "//", "\"", "#", "#version 450\n", "/* #version 450 */\n",
        "/*\n#version 450\n*/\n", "#version 110\n", "#version abc\n", "#version 4294967295\n",
        "#line 4294967295\n", "#line 0\n", "#line -1\n", "#include <x.glsl>\n",
        "#include \"/dev/zero\"\n", "#include \"/\"\n", "#include \"\"\n", "#include\n",
        "#define buffer_ld4(a, b) 0\n", "#error boom\n", "#pragma once\n", "#if 0\n", "#endif\n",
        "\\\n", "layout (push_constant) uniform parameter { float a[1073741824]; } p;\n",
        "layout (push_constant) uniform parameter { float a[4294967295]; } p;\n",
        "layout (push_constant) uniform parameter { int _pad0; vec4 v; } p;\n",
        "layout (push_constant) uniform parameter { mat4 m; } p;\n",
        "layout (push_constant) uniform parameter { afp x; } p;\n",
        "layout (push_constant) uniform parameter { sfpvec2 x; } p;\n",
        "layout (push_constant) uniform parameter { int n; } q;\n",
        "layout (binding = 0) uniform a { float u; };\nlayout (binding = 1) buffer a { float d[]; };\n",
        "layout (binding = 7) buffer self { float s[]; };\n",
        "layout (binding = 2) buffer type { float t[]; };\n",
        "layout (binding = 4294967295) buffer big { float x[]; };\n",
        "layout (set = 3, binding = 0) buffer s3 { float y[]; };\n",
        "layout (binding = 5) uniform sampler2D tex;\n", "layout (binding = 6, rgba16f) uniform image2D img;\n",
        "layout (constant_id = 0) const int n = 0;\n", "layout (constant_id = 4294967295) const int m = 1;\n",
        "layout (local_size_x = 0) in;\n", "layout (local_size_x = 4294967295) in;\n",
        "layout (local_size_x_id = 233) in;\n", "shared float sh[1073741824];\n",
        "psc(n)", "buffer_ld4(", "buffer_unknown4(a, 0)", "image2d_ld9(x)", "sfp2lfp(", "lfp2afp(vec4(1))",
        "i8buffer_ld4(", "afpvec4(1)", "sfpvec8", "lfpvec4 lf = lfpvec4(1);\n", "NCNN_fp16_storage",
        "coopmat<float16_t, gl_ScopeSubgroup, 16, 16, gl_MatrixUseA> cm;\n", "#extension GL_KHR_cooperative_matrix : require\n",
        "void main() {}\n", "void main()", "}", "{", ";", "((((((((((", "))))))))))", "é", "\u{feff}", "\r\n", "\t",
        "__pad0", "r#type", "gl_GlobalInvocationID.x", "1e99999", "0x", "9999999999999999999999",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    for name in [
        "self.glsl",
        "angle.glsl",
        "nul.glsl",
        "a.glsl",
        "ok.glsl",
        "axes.glsl",
        "bad.glsl",
        "d0.glsl",
        "missing.glsl",
    ] {
        v.push(format!("#include \"{f}/{name}\"\n"));
        v.push(format!("#include <{f}/{name}>\n"));
    }
    v.push(format!("{}\n", "buffer_x ".repeat(2000)));
    v.push("a".repeat(70_000));
    v
}

/// One mutation of `text`, at char boundaries.
fn mutate(rng: &mut Rng, text: &str, snippets: &[String], seeds: &[String]) -> String {
    let mut s = text.to_string();
    for _ in 0..1 + rng.below(4) {
        let cuts: Vec<usize> = s.char_indices().map(|(i, _)| i).chain([s.len()]).collect();
        let a = cuts[rng.below(cuts.len())];
        let b = cuts[rng.below(cuts.len())];
        let (lo, hi) = (a.min(b), a.max(b).min(a.min(b) + 400));
        let hi = cuts
            .iter()
            .copied()
            .filter(|&c| c <= hi)
            .max()
            .unwrap_or(lo)
            .max(lo);
        match rng.below(8) {
            0..=2 => s.insert_str(a, rng.pick(snippets)),
            3 => s.replace_range(lo..hi, ""),
            4 => {
                let piece = s[lo..hi].to_string();
                s.insert_str(hi, &piece);
            }
            5 => {
                // A line-level splice from another kernel.
                let other = rng.pick(seeds);
                let lines: Vec<&str> = other.lines().collect();
                let k = rng.below(lines.len());
                let piece: String = lines[k..(k + 1 + rng.below(8)).min(lines.len())].join("\n");
                s.insert_str(a, &format!("\n{piece}\n"));
            }
            6 => {
                // Swap two lines.
                let mut lines: Vec<&str> = s.lines().collect();
                if lines.len() > 1 {
                    let (i, j) = (rng.below(lines.len()), rng.below(lines.len()));
                    lines.swap(i, j);
                    s = lines.join("\n");
                }
            }
            _ => {
                // Replace an identifier-ish run with a snippet.
                s.replace_range(lo..hi, rng.pick(snippets));
            }
        }
    }
    s
}

/// A gentle mutation: the kernel as it is, or with one declaration (a block, a binding, an
/// include) after its `#version` line, so most inputs get past glslang to reflection, the model
/// and codegen.
fn gentle(rng: &mut Rng, text: &str, snippets: &[String]) -> String {
    let declarations: Vec<String> = snippets
        .iter()
        .filter(|s| s.starts_with("layout") || s.starts_with("#include") || s.starts_with("shared"))
        .cloned()
        .collect();
    if rng.below(4) == 0 || declarations.is_empty() {
        return text.to_string();
    }
    let at = text
        .find("#version")
        .and_then(|v| text[v..].find('\n').map(|e| v + e + 1))
        .unwrap_or(0);
    let mut s = text.to_string();
    s.insert_str(at, rng.pick(&declarations));
    s
}

/// The macro input for one kernel text.
fn input(form: usize, text: &str, dir: &Path) -> TokenStream {
    let lit = Literal::string(text);
    // `path:` kernels are written to a file (its includes resolve beside it).
    let file = dir.join("kernel.comp");
    let path = Literal::string(&file.display().to_string());
    if matches!(form, 4 | 5) {
        std::fs::write(&file, text).unwrap();
    }
    // Mostly one variant: compiling is most of the time, and every phase runs for one.
    match form {
        0 => quote!(pub mod k, src: #lit,),
        1 => quote!(pub mod k, src: #lit, variants: [fp32, fp16s, fp16p], optimize: true),
        2 | 3 => quote!(pub mod k, src: #lit, variants: [fp16sa, bf16s]),
        4 | 5 => quote!(pub mod k, path: #path, variants: [fp32]),
        _ => quote!(pub mod k, src: #lit, variants: [fp32]),
    }
}

/// Checks what `expand` gave back: items that parse, and no struct with two fields of one name.
fn check_output(out: &TokenStream) -> Result<bool, String> {
    let file: syn::File =
        syn::parse2(out.clone()).map_err(|e| format!("output does not parse: {e}"))?;
    fn walk(items: &[syn::Item]) -> Result<(), String> {
        for item in items {
            match item {
                syn::Item::Mod(m) => {
                    if let Some((_, items)) = &m.content {
                        walk(items)?;
                    }
                }
                syn::Item::Struct(s) => {
                    let mut seen = std::collections::BTreeSet::new();
                    for f in &s.fields {
                        if let Some(id) = &f.ident {
                            if !seen.insert(id.to_string()) {
                                return Err(format!("struct {} has two fields `{id}`", s.ident));
                            }
                        }
                    }
                }
                _ => {}
            }
        }
        Ok(())
    }
    walk(&file.items)?;
    // Rejected kernels come back with their errors as `compile_error!`s.
    Ok(!out.to_string().contains("compile_error"))
}

#[test]
fn hostile_kernels_never_panic_or_hang() {
    let env = |k: &str, d: u64| {
        std::env::var(k)
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(d)
    };
    let budget = Duration::from_secs(env("VKPRISM_MUTATION_SECS", 30));
    let max_cases = env("VKPRISM_MUTATION_CASES", 100_000);
    let mut rng = Rng(env("VKPRISM_MUTATION_SEED", 0x9e37_79b9_7f4a_7c15) | 1);
    let files = Files::new();
    let seeds = seeds();
    assert!(
        seeds.len() >= 20,
        "only {} kernels found in the repository",
        seeds.len()
    );
    let snippets = snippets(&files.dir);

    // One worker runs the inputs: a hang shows as a missed deadline here.
    // (TokenStream is not Send: the worker makes the tokens.)
    let (to_worker, inputs) = mpsc::channel::<(usize, String)>();
    let (results, from_worker) = mpsc::channel::<Result<Result<bool, String>, String>>();
    let dir = files.dir.clone();
    std::thread::spawn(move || {
        for (form, text) in inputs {
            let r = std::panic::catch_unwind(|| {
                check_output(&vkprism_compiler::expand(input(form, &text, &dir)))
            })
            .map_err(|p| {
                p.downcast_ref::<String>()
                    .cloned()
                    .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
                    .unwrap_or_default()
            });
            if results.send(r).is_err() {
                return;
            }
        }
    });

    let start = Instant::now();
    let (mut cases, mut accepted, mut slowest) = (0u64, 0u64, Duration::ZERO);
    while start.elapsed() < budget && cases < max_cases {
        let text = match rng.below(20) {
            0 => rng.pick(snippets.as_slice()).clone(),
            1 => {
                let mut t = String::new();
                for _ in 0..1 + rng.below(12) {
                    t.push_str(rng.pick(snippets.as_slice()));
                }
                t
            }
            2..=7 => {
                let seed = rng.pick(seeds.as_slice()).clone();
                gentle(&mut rng, &seed, &snippets)
            }
            _ => {
                let seed = rng.pick(seeds.as_slice()).clone();
                mutate(&mut rng, &seed, &snippets, &seeds)
            }
        };
        let form = rng.below(30);
        let t0 = Instant::now();
        to_worker.send((form, text.clone())).unwrap();
        match from_worker.recv_timeout(PER_INPUT) {
            Ok(Ok(Ok(compiled))) => accepted += u64::from(compiled),
            Ok(Ok(Err(bad))) => panic!("case {cases}: {bad}\ninput: {text:?}"),
            Ok(Err(panic)) => panic!("case {cases}: expand panicked: {panic}\ninput: {text:?}"),
            Err(_) => panic!("case {cases}: expand took over {PER_INPUT:?}\ninput: {text:?}"),
        }
        slowest = slowest.max(t0.elapsed());
        cases += 1;
    }
    eprintln!(
        "mutation run: {cases} inputs ({accepted} compiled, {} rejected) from {} kernels and {} snippets in {:.1?}, slowest {slowest:.1?}",
        cases - accepted,
        seeds.len(),
        snippets.len(),
        start.elapsed()
    );
    assert!(cases >= 100, "only {cases} inputs in {budget:?}");
}
