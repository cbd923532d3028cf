//! A deterministic, time-boxed mutation run over `expand` (the macro's whole work): kernels made
//! from the repository's own kernels and hostile snippets (issue 20's among them: exponential
//! macros, huge identifiers, deep `#if` nesting, long lines), each of which must come back as
//! tokens that parse (a module, or its errors, each naming a `file:line`) without a panic, within
//! a time bound (over [`slow_limit`] is a failure, over 60 s a hang that ends the run), and
//! without a byte on the process's stdout. The coverage-guided run is `compiler/fuzz` (cargo-fuzz).
//!
//! CI runs it for 60 s. The long run (issue 9: at least 100,000 inputs) is the same test built in
//! release and run as shards in parallel by `scripts/fuzz.sh`; the binary needs no repository:
//! its seed files are embedded (`mutation/corpus.rs`, checked against the repository here).
//!
//! Environment (a value that doesn't parse is an error):
//! - `VKPRISM_MUTATION_SECS` (default 60): the time box;
//! - `VKPRISM_MUTATION_INPUTS` (default none): stop after this many inputs;
//! - `VKPRISM_MUTATION_SHARD=i/n` (default `0/1`): run inputs `i, i + n, i + 2n, ...` of the one
//!   sequence, so shards are disjoint and input `j` is the same in any shard layout;
//! - `VKPRISM_MUTATION_SEED`: another sequence;
//! - `VKPRISM_MUTATION_FAILURES` (default `<temp>/vkprism-mutation-failures`): where each
//!   failing input is written;
//! - `VKPRISM_MUTATION_SLOW_SECS` (default 5 in release, 30 in debug): an input slower than
//!   this is a failure;
//! - `VKPRISM_MUTATION_BLESS=1`: rewrite `mutation/corpus.rs` from the repository.
//!
//! Each run prints one line, `mutation: shard=i/n inputs=... compiled=... rejected=... ...`,
//! which `scripts/fuzz.sh` sums.

#[path = "mutation/corpus.rs"]
#[rustfmt::skip]
mod corpus;

use proc_macro2::{Literal, TokenStream};
use quote::quote;
use rand::rngs::StdRng;
use rand::{Rng as _, SeedableRng};
use std::io::{Read, Seek};
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// The longest one input may take before the run counts it as a hang and stops (a debug build on
/// a loaded machine compiling every variant).
const PER_INPUT: Duration = Duration::from_secs(60);

/// An input slower than this is a failure (`slow`): 5 s in a release build (issue 20: no input
/// of at most 1 MB keeps the compiler longer), 30 s in a debug build, which compiles a kernel's
/// dozens of variants several times slower. `VKPRISM_MUTATION_SLOW_SECS` overrides it.
fn slow_limit() -> Duration {
    let default = if cfg!(debug_assertions) { 30.0 } else { 5.0 };
    let secs = std::env::var("VKPRISM_MUTATION_SLOW_SECS")
        .ok()
        .map(|v| {
            v.trim()
                .parse::<f64>()
                .unwrap_or_else(|_| panic!("VKPRISM_MUTATION_SLOW_SECS={v:?}: expected seconds"))
        })
        .unwrap_or(default);
    Duration::from_secs_f64(secs)
}

/// Whether an error message names a place: `name:<line>` somewhere (for an inline kernel outside
/// rustc, the file is `<unspecified>`, still followed by the line).
fn located(message: &str) -> bool {
    message.match_indices(':').any(|(i, _)| {
        let rest = &message[i + 1..];
        let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
        digits > 0 && i > 0 && !message[..i].ends_with(' ')
    })
}

/// A fixed sequence for a fixed seed (the workspace's one generator, `rand`'s `StdRng`).
struct Rng(StdRng);

impl Rng {
    /// The generator of input `index` of the sequence `seed`: each input has its own, keyed by
    /// both, so any input can be made without the ones before it.
    fn for_input(seed: u64, index: u64) -> Rng {
        let mut key = [0u8; 32];
        key[..8].copy_from_slice(&seed.to_le_bytes());
        key[8..16].copy_from_slice(&index.to_le_bytes());
        Rng(StdRng::from_seed(key))
    }
    fn below(&mut self, n: usize) -> usize {
        self.0.gen_range(0..n.max(1))
    }
    fn pick<'a>(&mut self, xs: &'a [String]) -> &'a String {
        &xs[self.below(xs.len())]
    }
}

/// The run's settings, from the environment.
struct Config {
    budget: Duration,
    max_inputs: Option<u64>,
    shard: u64,
    shards: u64,
    seed: u64,
    failures: PathBuf,
}

impl Config {
    fn from_env() -> Config {
        let number = |name: &str| -> Option<u64> {
            let v = std::env::var(name).ok()?;
            Some(
                v.trim()
                    .parse()
                    .unwrap_or_else(|_| panic!("{name}={v:?}: expected a whole number")),
            )
        };
        let (shard, shards) = match std::env::var("VKPRISM_MUTATION_SHARD") {
            Err(_) => (0, 1),
            Ok(v) => v
                .split_once('/')
                .and_then(|(i, n)| Some((i.trim().parse().ok()?, n.trim().parse().ok()?)))
                .filter(|&(i, n): &(u64, u64)| i < n)
                .unwrap_or_else(|| {
                    panic!("VKPRISM_MUTATION_SHARD={v:?}: expected i/n with 0 <= i < n, e.g. 3/16")
                }),
        };
        Config {
            budget: Duration::from_secs(number("VKPRISM_MUTATION_SECS").unwrap_or(60)),
            max_inputs: number("VKPRISM_MUTATION_INPUTS"),
            shard,
            shards,
            seed: number("VKPRISM_MUTATION_SEED").unwrap_or(0x9e37_79b9_7f4a_7c15),
            failures: std::env::var_os("VKPRISM_MUTATION_FAILURES")
                .map(PathBuf::from)
                .unwrap_or_else(|| std::env::temp_dir().join("vkprism-mutation-failures")),
        }
    }
}

/// The repository's root, where this test was built.
fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// Where the seed files are: the directories walked, and the file kinds taken.
const SEED_DIRS: [&str; 5] = ["shaders", "tests", "examples", "compiler/tests", "bench"];
const FUZZ_SEEDS: &str = "compiler/fuzz/corpus/expand";

/// Whether a file is a seed (or a file seeds include): `.comp` and `.glsl` files, and Rust
/// files holding an inline kernel.
fn is_seed_file(path: &Path, text: &str) -> bool {
    match path.extension().and_then(|x| x.to_str()) {
        Some("comp" | "glsl") => true,
        Some("rs") => !inline_kernels(text).is_empty(),
        _ => false,
    }
}

/// The inline `r#"…"#` kernels of a Rust file (those holding a `main`).
fn inline_kernels(text: &str) -> Vec<&str> {
    text.split("r#\"")
        .skip(1)
        .filter_map(|chunk| chunk.split("\"#").next())
        .filter(|k| k.contains("void main"))
        .collect()
}

/// What `mutation/corpus.rs` must hold for the repository at `repo`.
fn corpus_listing(repo: &Path) -> String {
    let mut files = Vec::new();
    let mut stack: Vec<PathBuf> = SEED_DIRS.iter().map(|d| repo.join(d)).collect();
    while let Some(dir) = stack.pop() {
        for e in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            let p = e.path();
            let rel = p.strip_prefix(repo).unwrap().to_string_lossy().into_owned();
            if p.is_dir() {
                if !rel.ends_with("target") && rel != "compiler/tests/mutation" {
                    stack.push(p);
                }
            } else if std::fs::read_to_string(&p).is_ok_and(|t| is_seed_file(&p, &t)) {
                files.push(rel);
            }
        }
    }
    files.sort();
    let mut fuzz: Vec<String> = std::fs::read_dir(repo.join(FUZZ_SEEDS))
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    fuzz.sort();
    let mut out = String::from(
        "//! Generated by `VKPRISM_MUTATION_BLESS=1 cargo test -p vkprism-compiler --test mutation`:\n\
         //! the files the mutation run seeds from, embedded so that its binary runs anywhere.\n\n\
         /// Kernel and include files, by path from the repository's root.\n\
         pub const FILES: &[(&str, &str)] = &[\n",
    );
    for f in &files {
        out.push_str(&format!("    (\"{f}\", include_str!(\"../../../{f}\")),\n"));
    }
    out.push_str(
        "];\n\n/// The cargo-fuzz seeds (the first byte picks the macro's form).\n\
         pub const FUZZ: &[(&str, &[u8])] = &[\n",
    );
    for f in &fuzz {
        out.push_str(&format!(
            "    (\"{f}\", include_bytes!(\"../../../{FUZZ_SEEDS}/{f}\")),\n"
        ));
    }
    out.push_str("];\n");
    out
}

/// Checks the embedded corpus against the repository (or rewrites it with
/// `VKPRISM_MUTATION_BLESS=1`); `false` where the repository is not there (a copied binary).
fn check_corpus() -> bool {
    let repo = repo();
    if !repo.join(FUZZ_SEEDS).is_dir() {
        return false;
    }
    let listing = corpus_listing(&repo);
    let path = repo.join("compiler/tests/mutation/corpus.rs");
    if std::env::var("VKPRISM_MUTATION_BLESS").as_deref() == Ok("1") {
        std::fs::write(&path, &listing).unwrap();
    } else {
        assert!(
            std::fs::read_to_string(&path).is_ok_and(|t| t == listing),
            "{} is stale: rerun with VKPRISM_MUTATION_BLESS=1",
            path.display()
        );
    }
    true
}

/// The seed kernels: every `.comp` file and inline kernel, their includes pointing at the
/// embedded files written under `root`, and the cargo-fuzz seeds.
fn seeds(root: &Path) -> Vec<String> {
    let mut out = Vec::new();
    for (rel, text) in corpus::FILES {
        let dir = root.join(rel);
        let dir = dir.parent().unwrap().display();
        // Relative includes resolve in the written copy (absolute ones, like "/dev/zero", stay).
        let absolute = |k: &str| {
            k.replace("#include \"", &format!("#include \"{dir}/"))
                .replace(&format!("#include \"{dir}//"), "#include \"/")
        };
        if rel.ends_with(".comp") {
            out.push(absolute(text));
        } else if rel.ends_with(".rs") {
            out.extend(inline_kernels(text).into_iter().map(absolute));
        }
    }
    for (_, bytes) in corpus::FUZZ {
        if let Some((_, text)) = bytes.split_first() {
            out.push(String::from_utf8_lossy(text).into_owned());
        }
    }
    out.sort();
    out.dedup();
    out
}

/// Files the hostile includes name and the embedded seed files, in a directory of this
/// process's own.
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
        for (rel, text) in corpus::FILES {
            let path = dir.join("repo").join(rel);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        }
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
        "#line 4294967295\n", "#line 18446744073709551615\n", "#line 0\n", "#line -1\n", "#include <x.glsl>\n",
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
    // Issue 20: inputs that made the compiler run away or go superlinear.
    v.extend(runaway_snippets());
    v
}

/// Exponential macros (object-like and function-like), a huge identifier, deep `#if` nesting and
/// long lines (issue 20).
fn runaway_snippets() -> Vec<String> {
    let mut doubling = String::from("#define VKPF_M0 (1)\n");
    for i in 1..=40 {
        doubling.push_str(&format!(
            "#define VKPF_M{i} (VKPF_M{}+VKPF_M{})\n",
            i - 1,
            i - 1
        ));
    }
    let mut nested =
        String::from("#define VKPF_D(x) x x\n#define VKPF_Q(x) VKPF_D(VKPF_D(VKPF_D(x)))\n");
    nested.push_str(&format!("{}1{}\n", "VKPF_Q(".repeat(12), ")".repeat(12)));
    vec![
        format!("{doubling}float vkpf_x = float(VKPF_M40);\n"),
        format!("{doubling}VKPF_M24\n"),
        nested,
        "b".repeat(300_000),
        format!("float {} = 1.0;\n", "c".repeat(300_000)),
        format!("{}{}", "#if 1\n".repeat(100), "#endif\n".repeat(100)),
        format!("{}{}", "#ifdef X\n".repeat(5000), "#endif\n".repeat(5000)),
        format!("{}\n", "x = 1.0; ".repeat(30_000)),
        format!("{}\n", "((".repeat(20_000)),
        format!("#define VKPF_L {}\n", "1 + ".repeat(50_000)),
    ]
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

/// Declarations a kernel can take without becoming wrong: inputs that get through every phase
/// with something changed (glslang, reflection, the model and codegen see new names and ids).
const BENIGN: [&str; 9] = [
    "// a comment\n",
    "/* a block\n   comment */\n",
    "#define VKPRISM_FUZZ 1\n",
    "const int fuzz_unused = 3;\n",
    "float fuzz_helper(float x) { return x * 2.0; }\n",
    "layout (binding = 9) buffer fuzz_extra { float fuzz_e[]; };\n",
    "layout (constant_id = 17) const int fuzz_k = 2;\n",
    "shared float fuzz_sh[16];\n",
    "\n\n\n",
];

/// A gentle mutation: the kernel as it is, or with one declaration (benign half of the time,
/// else a block, a binding or an include from the snippets) after its `#version` line, so that
/// many inputs get past glslang to reflection, the model and codegen.
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
    let declaration = if rng.below(2) == 0 {
        BENIGN[rng.below(BENIGN.len())]
    } else {
        rng.pick(&declarations).as_str()
    };
    let mut s = text.to_string();
    s.insert_str(at, declaration);
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
        1 => quote!(pub mod k, src: #lit, variants: [fp32, fp16s, fp16p]),
        2 | 3 => quote!(pub mod k, src: #lit, variants: [fp16sa, bf16s]),
        4 | 5 => quote!(pub mod k, path: #path, variants: [fp32]),
        _ => quote!(pub mod k, src: #lit, variants: [fp32]),
    }
}

/// Checks what `expand` gave back: items that parse, no struct with two fields of one name, and
/// every error at a `file:line` (`Err` with `unlocated: ` and the message otherwise).
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
                syn::Item::Macro(m) if m.mac.path.is_ident("compile_error") => {
                    let message: syn::LitStr = m
                        .mac
                        .parse_body()
                        .map_err(|e| format!("compile_error! without a string: {e}"))?;
                    if !located(&message.value()) {
                        return Err(format!("unlocated: {}", message.value()));
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

/// Input `index` of the sequence: the macro's form and the kernel text.
fn make_input(seed: u64, index: u64, seeds: &[String], snippets: &[String]) -> (usize, String) {
    let mut rng = Rng::for_input(seed, index);
    let text = match rng.below(20) {
        0 => rng.pick(snippets).clone(),
        1 => {
            let mut t = String::new();
            for _ in 0..1 + rng.below(12) {
                t.push_str(rng.pick(snippets));
            }
            t
        }
        2..=7 => {
            let seed = rng.pick(seeds).clone();
            gentle(&mut rng, &seed, snippets)
        }
        _ => {
            let seed = rng.pick(seeds).clone();
            mutate(&mut rng, &seed, snippets, seeds)
        }
    };
    (rng.below(30), text)
}

/// The process's stdout (fd 1) while it is redirected to a file: saved here so that the main
/// thread can put it back if the worker hangs with it redirected.
static SAVED_STDOUT: AtomicI32 = AtomicI32::new(-1);

/// Sends what the process writes to its stdout (glslang's C++ code writes there, bypassing
/// Rust) into `sink` until [`restore_stdout`].
fn redirect_stdout(sink: &std::fs::File) {
    // SAFETY: fflush(NULL) flushes every C stream; dup and dup2 take descriptors this process
    // owns (1, and `sink`, open for the call's duration).
    unsafe {
        libc::fflush(std::ptr::null_mut());
        let saved = libc::dup(1);
        assert!(saved >= 0, "cannot save stdout");
        SAVED_STDOUT.store(saved, Ordering::SeqCst);
        libc::dup2(sink.as_raw_fd(), 1);
    }
}

/// Puts stdout back (a no-op when it isn't redirected).
fn restore_stdout() {
    let saved = SAVED_STDOUT.swap(-1, Ordering::SeqCst);
    if saved >= 0 {
        // SAFETY: `saved` is the descriptor `redirect_stdout` duplicated from fd 1; it is
        // closed once, by whoever took it out of SAVED_STDOUT.
        unsafe {
            libc::fflush(std::ptr::null_mut());
            libc::dup2(saved, 1);
            libc::close(saved);
        }
    }
}

/// Shows the stdout check is not blind: a C `printf` while stdout is redirected lands in the
/// sink (and not on the real stdout).
fn check_stdout_capture(dir: &Path) {
    let path = dir.join("capture-check");
    let sink = std::fs::File::create(&path).unwrap();
    redirect_stdout(&sink);
    // SAFETY: a NUL-terminated format string with no conversions.
    unsafe { libc::printf(c"capture check\n".as_ptr()) };
    restore_stdout();
    assert_eq!(std::fs::read(&path).unwrap(), b"capture check\n");
}

/// `stdout` without the test harness's own line (libtest's "test … has been running for over 60
/// seconds", written from its thread while the worker had stdout redirected).
fn without_test_harness_lines(stdout: &[u8]) -> String {
    String::from_utf8_lossy(stdout)
        .split_inclusive('\n')
        .filter(|l| !(l.starts_with("test ") && l.contains(" has been running for over ")))
        .collect()
}

/// What one input did.
enum Outcome {
    /// Tokens that parse: compiled (`true`) or rejected with errors.
    Ok(bool),
    /// Tokens that don't parse, or a struct with two fields of one name.
    BadOutput(String),
    /// An error without a `file:line`.
    Unlocated(String),
    /// `expand` panicked.
    Panicked(String),
}

/// One input's outcome and what it wrote to stdout.
struct Report {
    outcome: Outcome,
    stdout: Vec<u8>,
}

/// Runs inputs from `inputs` on its own thread (a hang shows as a missed deadline in the caller;
/// TokenStream is not Send, so the worker makes the tokens), reporting each.
fn spawn_worker(
    dir: PathBuf,
    inputs: mpsc::Receiver<(usize, String)>,
    reports: mpsc::Sender<Report>,
) {
    std::thread::spawn(move || {
        let mut sink = std::fs::OpenOptions::new()
            .create(true)
            .read(true)
            .append(true)
            .open(dir.join("stdout"))
            .unwrap();
        sink.set_len(0).unwrap();
        for (form, text) in inputs {
            redirect_stdout(&sink);
            let r = std::panic::catch_unwind(|| {
                check_output(&vkprism_compiler::expand(input(form, &text, &dir)))
            });
            restore_stdout();
            let outcome = match r {
                Ok(Ok(compiled)) => Outcome::Ok(compiled),
                Ok(Err(bad)) => match bad.strip_prefix("unlocated: ") {
                    Some(message) => Outcome::Unlocated(message.to_string()),
                    None => Outcome::BadOutput(bad),
                },
                Err(p) => Outcome::Panicked(
                    p.downcast_ref::<String>()
                        .cloned()
                        .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
                        .unwrap_or_default(),
                ),
            };
            let mut stdout = Vec::new();
            sink.rewind().unwrap();
            sink.read_to_end(&mut stdout).unwrap();
            sink.set_len(0).unwrap();
            if reports.send(Report { outcome, stdout }).is_err() {
                return;
            }
        }
    });
}

/// The figures of one run.
#[derive(Default)]
struct Tally {
    inputs: u64,
    compiled: u64,
    panics: u64,
    hangs: u64,
    bad_outputs: u64,
    /// Inputs over [`slow_limit`].
    slow: u64,
    /// Inputs with an error that names no place.
    unlocated: u64,
    stdout_inputs: u64,
    stdout_bytes: u64,
    slowest: (Duration, u64),
    /// The first failures: (input index, what happened, where the input was written).
    failures: Vec<String>,
}

impl Tally {
    /// Records a failing input and writes it to `dir` (the form, then the text).
    fn fail(&mut self, dir: &Path, index: u64, kind: &str, what: &str, form: usize, text: &str) {
        let path = dir.join(format!("input-{index}-{kind}.txt"));
        let _ = std::fs::create_dir_all(dir);
        let _ = std::fs::write(&path, format!("form {form}\n{text}"));
        if self.failures.len() < 10 {
            let what: String = what.chars().take(500).collect();
            self.failures.push(format!(
                "input {index}: {kind}: {what} ({})",
                path.display()
            ));
        }
    }
}

#[test]
fn hostile_kernels_never_panic_or_hang() {
    let config = Config::from_env();
    let checked = check_corpus();
    let files = Files::new();
    let seeds = seeds(&files.dir.join("repo"));
    assert!(seeds.len() >= 20, "only {} seed kernels", seeds.len());
    let snippets = snippets(&files.dir);
    check_stdout_capture(&files.dir);

    let (to_worker, inputs) = mpsc::channel::<(usize, String)>();
    let (reports, from_worker) = mpsc::channel::<Report>();
    spawn_worker(files.dir.clone(), inputs, reports);

    let slow = slow_limit();
    let start = Instant::now();
    let mut tally = Tally::default();
    let last_input = std::env::var_os("VKPRISM_MUTATION_LAST").map(std::path::PathBuf::from);
    let mut index = config.shard;
    while start.elapsed() < config.budget && config.max_inputs.is_none_or(|m| tally.inputs < m) {
        let (form, text) = make_input(config.seed, index, &seeds, &snippets);
        // A crash inside the GLSL compiler (C++) ends the process before any report: the input
        // it was given is left in this file.
        if let Some(path) = &last_input {
            let _ = std::fs::write(path, format!("index {index} form {form}\n{text}"));
        }
        let t0 = Instant::now();
        to_worker.send((form, text.clone())).unwrap();
        let report = match from_worker.recv_timeout(PER_INPUT) {
            Ok(report) => report,
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                restore_stdout();
                panic!("the worker thread died outside any input (see its panic above)");
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {
                // The worker is stuck (perhaps with stdout redirected): nothing more can run.
                restore_stdout();
                tally.hangs += 1;
                let what = format!("expand took over {PER_INPUT:?}");
                tally.fail(&config.failures, index, "hang", &what, form, &text);
                tally.inputs += 1;
                break;
            }
        };
        let took = t0.elapsed();
        if took > tally.slowest.0 {
            tally.slowest = (took, index);
        }
        if took > slow {
            tally.slow += 1;
            let what = format!("took {took:.2?}, over {slow:?}");
            tally.fail(&config.failures, index, "slow", &what, form, &text);
        }
        match report.outcome {
            Outcome::Ok(compiled) => tally.compiled += u64::from(compiled),
            Outcome::Unlocated(message) => {
                tally.unlocated += 1;
                tally.fail(&config.failures, index, "unlocated", &message, form, &text);
            }
            Outcome::BadOutput(bad) => {
                tally.bad_outputs += 1;
                tally.fail(&config.failures, index, "bad-output", &bad, form, &text);
            }
            Outcome::Panicked(p) => {
                tally.panics += 1;
                tally.fail(&config.failures, index, "panic", &p, form, &text);
            }
        }
        let report_stdout = without_test_harness_lines(&report.stdout);
        if !report_stdout.is_empty() {
            tally.stdout_inputs += 1;
            tally.stdout_bytes += report_stdout.len() as u64;
            let what = report_stdout;
            tally.fail(&config.failures, index, "stdout", &what, form, &text);
        }
        tally.inputs += 1;
        index += config.shards;
    }
    let secs = start.elapsed().as_secs_f64();
    eprintln!(
        "mutation: shard={}/{} inputs={} compiled={} rejected={} secs={secs:.1} inputs_per_s={:.1} slowest_s={:.2} slowest_input={} panics={} hangs={} slow={} unlocated={} bad_outputs={} stdout_inputs={} stdout_bytes={} seeds={} snippets={} corpus={} corpus_checked={checked}",
        config.shard,
        config.shards,
        tally.inputs,
        tally.compiled,
        tally.inputs - tally.compiled - tally.panics - tally.hangs - tally.bad_outputs - tally.unlocated,
        tally.inputs as f64 / secs.max(1e-9),
        tally.slowest.0.as_secs_f64(),
        tally.slowest.1,
        tally.panics,
        tally.hangs,
        tally.slow,
        tally.unlocated,
        tally.bad_outputs,
        tally.stdout_inputs,
        tally.stdout_bytes,
        seeds.len(),
        snippets.len(),
        seeds.len() + snippets.len(),
    );
    assert!(
        tally.failures.is_empty(),
        "failing inputs:\n{}",
        tally.failures.join("\n")
    );
    let wanted = config.max_inputs.unwrap_or(u64::MAX).min(100);
    assert!(
        tally.inputs >= wanted,
        "only {} inputs in {:?}",
        tally.inputs,
        config.budget
    );
}
