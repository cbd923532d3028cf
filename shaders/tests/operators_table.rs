//! The operator table in `shaders/OPERATORS.md`: every operation of [`Ops`], the kernels it
//! records and their variants, generated here from each kernel's `VARIANT_NAMES` and reflected
//! `KernelInfo`, so a new variant changes the table and a stale file fails. The operation →
//! kernels mapping is written once, below, and checked against the operation layer's sources
//! (every public recording method has a row, every kernel it loads is named). Needs no GPU.
//!
//! `VKPRISM_BLESS=1 cargo test -p vkprism-shaders --test operators_table` rewrites the table.
//!
//! [`Ops`]: vkprism_shaders::Ops

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use vkprism::{Kernel, KernelInfo};
use vkprism_shaders as k;

/// The markers around the generated text in `OPERATORS.md`.
const BEGIN: &str = "<!-- operators -->";
const END: &str = "<!-- /operators -->";

/// One kernel an operation may record, and when it does (empty: always).
struct KernelUse {
    info: &'static KernelInfo,
    names: &'static [&'static str],
    when: &'static str,
}

/// One row: an operation (an `Ops` method), or a kernel with none (`op` empty).
struct Row {
    op: &'static str,
    kernels: Vec<KernelUse>,
}

/// `kernel!(module)` or `kernel!(module, "when")`: a [`KernelUse`] of the generated module.
macro_rules! kernel {
    ($m:ident) => {
        kernel!($m, "")
    };
    ($m:ident, $when:expr) => {
        KernelUse {
            info: <k::$m::Kernel as Kernel>::INFO,
            names: k::$m::VARIANT_NAMES,
            when: $when,
        }
    };
}

/// `row!(op: kernel, kernel, ...)`, each kernel `module` or `(module, "when")`.
macro_rules! row {
    ($op:literal: $($k:tt),+) => {
        Row { op: $op, kernels: vec![$(row!(@k $k)),+] }
    };
    (@k ($m:ident, $when:expr)) => { kernel!($m, $when) };
    (@k $m:ident) => { kernel!($m) };
}

/// The operation layer: each operation and the kernels it records.
fn operations() -> Vec<Row> {
    vec![
        row!("gemm": (gemm_cm2, "F16, rows multiples of 8, VK_NV_cooperative_matrix2"),
             (gemm_cm2_split, "the same, split K"), gemm, (gemm_split, "split K"),
             (gemm_split_reduce, "split K's sum")),
        row!("gemm_rms_norm": (gemm_cm2_split, "split K on VK_NV_cooperative_matrix2"),
             (gemm_split_reduce_rms, "its sum, writing the rows normalized too"),
             (gemm, "otherwise, as `gemm`"), (norm4, "then the norm")),
        row!("gemm_int8": gemm_int8),
        row!("gemm_glu": (gemm_cm2_glu, "on VK_NV_cooperative_matrix2 where the device lists its tiles"),
             (gemm, "otherwise, into scratch"), (glu, "the gate over the scratch")),
        row!("gemm_rope_qkv": (gemm_cm2_rope, "where `gemm` takes gemm_cm2 unsplit, interleaved pairs, dim a multiple of 8"),
             (gemm, "otherwise, into scratch"), (rope_qkv4, "then the placement"), (rope_qkv, "or its pair form")),
        row!("conv2d": conv2d_nhwc, (conv2d_nhwc_split, "split K"),
             (gemm_split_reduce, "split K's sum"),
             (gemm, "1×1, stride 1, no padding, without cooperative matrices"),
             (gemm_split, "the same, split K")),
        row!("unary": (unary, "length a multiple of 4"), (unary_scalar, "otherwise")),
        row!("binary": (binary_bcast4, "innermost dimension a multiple of 4"),
             (binary_bcast, "otherwise")),
        row!("reduce": (reduce, "sum, mean, max, min"), (argmax, "argmax"),
             (argmax_parts, "then, for a few rows of at least 65536 values taken in parts")),
        row!("sample": (sample, "no top-k or top-p cut"),
             (sample_parts, "then, for a few rows of at least 65536 values taken in parts"),
             (sample_top, "a top-k or top-p cut")),
        row!("gemm_int8_weights": (quantize_rows, "the activations, per row"), gemm_int8_dequant),
        row!("softmax": (softmax4, "rows a multiple of 4"), (softmax, "otherwise")),
        row!("layer_norm": (norm4, "rows a multiple of 4"), (norm, "otherwise")),
        row!("rms_norm": (norm4, "rows a multiple of 4"), (norm, "otherwise")),
        row!("group_norm": norm),
        row!("attention": (attention_cm2, "fp16 prompts of 1024 query rows or more on VK_NV_cooperative_matrix2 where the device lists its tiles and its shared memory holds the staged K and V"),
             (attention_cm, "fp16 where the matrices fit otherwise"),
             (attention_decode, "decode over up to 64 chunks of keys (16,384 at head dimension 64; any number without grouped-query heads), head dimension a multiple of 8 from 32 to 256"),
             (attention_grouped, "decode over caches past the decode kernel's 64 chunks, or of 1024 keys or more at a head dimension that is no multiple of 8, 4 or more query heads a key/value head"),
             (attention4, "head dimension a multiple of 4"), (attention, "otherwise"),
             (attention_combine, "keys split over workgroups")),
        row!("attention_at": (attention_decode, "decode over up to 64 chunks of keys (16,384 at head dimension 64; any number without grouped-query heads), head dimension a multiple of 8 from 32 to 256"),
             (attention_grouped, "decode over caches past the decode kernel's 64 chunks, or of 1024 keys or more at a head dimension that is no multiple of 8, 4 or more query heads a key/value head"),
             (attention4, "head dimension a multiple of 4"),
             (attention, "otherwise"), (attention_combine, "keys split over workgroups")),
        row!("permute": (transpose_tiled, "a swap of the last two dimensions"),
             (strided_copy, "otherwise")),
        row!("transpose": transpose_tiled),
        row!("slice": strided_copy),
        row!("concat": (strided_copy, "one per input")),
        row!("pad": pad_copy),
        row!("embedding": embedding),
        row!("cast": (cast_to_f32, "fp16/bf16 → fp32"), (cast_from_f32, "fp32 → fp16/bf16"),
             (cast_to_f16, "bf16 → fp16"), (cast_from_f16, "fp16 → bf16")),
        row!("quantize": (quantize, "one scale"), (quantize_channels, "a scale per channel")),
        row!("dequantize": (dequantize, "one scale"),
             (dequantize_channels4, "a scale per channel, quads sharing it"),
             (dequantize_channels, "a scale per channel otherwise")),
        row!("gemv": (gemv, "rows of whole 16-byte chunks"), (gemv_scalar, "otherwise")),
        row!("gemv_rope_qkv": (gemv, "rows of whole 16-byte chunks"), (gemv_scalar, "otherwise")),
        row!("gemv_int8": (gemv_int8, "rows of whole 16-byte chunks"),
             (gemv_int8_scalar, "otherwise")),
        row!("gemv_int8_rope_qkv": (gemv_int8, "rows of whole 16-byte chunks"),
             (gemv_int8_scalar, "otherwise")),
        row!("rope": rope),
        row!("rope_qkv": (rope_qkv4, "heads of whole quads of pairs (dim a multiple of 8)"),
             (rope_qkv, "otherwise")),
        row!("rope_qkv_normed": (rope_qkv_norm4, "heads of whole quads of pairs (dim a multiple of 8)"),
             (rope_qkv_norm, "otherwise")),
        row!("glu": glu),
        row!("max_pool2d": (pool2d4, "channels a multiple of 4"), (pool2d, "otherwise")),
        row!("avg_pool2d": (pool2d4, "channels a multiple of 4"), (pool2d, "otherwise")),
        row!("global_avg_pool": (global_avg_pool4, "channels a multiple of 4"),
             (global_avg_pool, "otherwise")),
        row!("conv2d_depthwise": conv2d_dw_nhwc),
    ]
}

/// The kernels no operation records: loaded directly (`ctx.load::<k::gemm_image::Kernel>()`).
fn direct_kernels() -> Vec<Row> {
    vec![
        row!("": (activation, "relu, leaky relu, sigmoid, tanh, hardswish on vec4s")),
        row!("": (binary_op, "same-shape binary ops on vec4s")),
        row!("": (conv2d, "direct CHW convolution")),
        row!("": (gemm_image, "B through the sampled-image path")),
    ]
}

/// `{a,b}` for several values, the value alone for one.
fn braces(values: &[&str]) -> String {
    match values {
        [one] => one.to_string(),
        _ => format!("{{{}}}", values.join(",")),
    }
}

/// Pushes `value` unless present (first-appearance order).
fn push_new<T: PartialEq>(list: &mut Vec<T>, value: T) {
    if !list.contains(&value) {
        list.push(value);
    }
}

/// `pairs` with equal values merged, their keys together, in first-appearance order.
fn merged<K, V: PartialEq>(pairs: impl IntoIterator<Item = (K, V)>) -> Vec<(Vec<K>, V)> {
    let mut out: Vec<(Vec<K>, V)> = Vec::new();
    for (key, value) in pairs {
        match out.iter_mut().find(|(_, v)| *v == value) {
            Some((keys, _)) => keys.push(key),
            None => out.push((vec![key], value)),
        }
    }
    out
}

/// `heads` (as `{a,b}`) followed by each of the compact forms of `rests`.
fn headed(heads: &[&str], rests: &[Vec<&str>]) -> Vec<String> {
    let head = braces(heads);
    if rests.iter().all(|r| r.is_empty()) {
        return vec![head];
    }
    let tails = by_prefix(rests).into_iter();
    tails.map(|t| format!("{head}_{t}")).collect()
}

/// Part lists (names split at `_`) written compactly, brace-expansion style: grouped by their
/// first part, first parts with the same remainders written together (`{nolm,lm}_nocm`).
fn by_prefix(names: &[Vec<&str>]) -> Vec<String> {
    let mut firsts: Vec<&str> = Vec::new();
    for n in names {
        push_new(&mut firsts, n[0]);
    }
    let rests = firsts.into_iter().map(|first| {
        let rest = names.iter().filter(|n| n[0] == first);
        (first, rest.map(|n| n[1..].to_vec()).collect::<Vec<_>>())
    });
    let groups = merged(rests);
    groups
        .iter()
        .flat_map(|(fs, rest)| headed(fs, rest))
        .collect()
}

/// A kernel's variant names written compactly: the suffixes after the float mode that come in
/// the same float modes together, each such group as [`by_prefix`] writes it
/// (`{fp32,fp16s}_{sg,nosg}`). Together the strings expand to exactly the names.
fn variants_text(names: &[&str]) -> Vec<String> {
    let split: Vec<(&str, Vec<&str>)> = names
        .iter()
        .map(|n| {
            let mut parts = n.split('_');
            (parts.next().unwrap_or(""), parts.collect())
        })
        .collect();
    let mut suffixes: Vec<&Vec<&str>> = Vec::new();
    for (_, s) in &split {
        push_new(&mut suffixes, s);
    }
    let floats_of = |suffix: &Vec<&str>| -> Vec<&str> {
        let with = split.iter().filter(|(_, s)| s == suffix);
        with.map(|(f, _)| *f).collect()
    };
    let groups = merged(suffixes.into_iter().map(|s| (s.clone(), floats_of(s))));
    groups
        .iter()
        .flat_map(|(ss, floats)| headed(floats, ss))
        .collect()
}

/// The names a compact string stands for (`{a,b}_c` → `a_c`, `b_c`).
fn expand(text: &str) -> Vec<String> {
    let mut names = vec![String::new()];
    for segment in text.split('_') {
        let values: Vec<&str> = match segment.strip_prefix('{') {
            Some(inner) => inner.trim_end_matches('}').split(',').collect(),
            None => vec![segment],
        };
        names = names
            .iter()
            .flat_map(|n| {
                values.iter().map(move |v| {
                    if n.is_empty() {
                        v.to_string()
                    } else {
                        format!("{n}_{v}")
                    }
                })
            })
            .collect();
    }
    names
}

/// The distinct cooperative-matrix shapes a kernel's variants multiply with.
fn matrix_shapes(info: &KernelInfo) -> Vec<String> {
    let mut shapes = Vec::new();
    for v in info.variants {
        for s in v.cooperative_matrices {
            push_new(&mut shapes, s.to_string());
        }
    }
    shapes
}

/// One kernel's line in a row: its name, when it is used, its variants.
fn kernel_line(k: &KernelUse) -> String {
    let when = if k.when.is_empty() {
        String::new()
    } else {
        format!(" ({})", k.when)
    };
    let variants: Vec<String> = variants_text(k.names)
        .iter()
        .map(|t| format!("`{t}`"))
        .collect();
    format!(
        "`{}`{when}: {} ({})",
        k.info.name,
        variants.join(", "),
        k.names.len()
    )
}

/// A row's cooperative-matrix cell: the shapes its kernels multiply with, each line naming
/// the kernels that share them.
fn matrices_cell(kernels: &[KernelUse]) -> String {
    let shapes = kernels
        .iter()
        .map(|k| (format!("`{}`", k.info.name), matrix_shapes(k.info)));
    let lines: Vec<String> = merged(shapes.filter(|(_, s)| !s.is_empty()))
        .iter()
        .map(|(names, s)| format!("{}: {}", names.join(", "), s.join(", ")))
        .collect();
    if lines.is_empty() {
        "—".into()
    } else {
        lines.join("<br>")
    }
}

/// A Markdown table of `rows`, its first column headed `first` (left out where empty).
fn table(first: &str, rows: &[Row]) -> String {
    let mut out = String::new();
    let lead = |cell: &str| {
        if first.is_empty() {
            String::new()
        } else {
            format!("| {cell} ")
        }
    };
    out += &format!(
        "{}| Kernels (when): variants (count) | Cooperative matrices |\n",
        lead(first)
    );
    out += &format!("{}|---|---|\n", if first.is_empty() { "" } else { "|---" });
    for row in rows {
        let kernels: Vec<String> = row.kernels.iter().map(kernel_line).collect();
        let op = format!("`Ops::{}`", row.op);
        out += &format!(
            "{}| {} | {} |\n",
            lead(&op),
            kernels.join("<br>"),
            matrices_cell(&row.kernels)
        );
    }
    out
}

/// The generated text between the markers.
fn generated() -> String {
    format!(
        "\n{}\nKernels no operation records (loaded directly):\n\n{}\n",
        table("Operation", &operations()),
        table("", &direct_kernels())
    )
}

/// The file the table lives in.
fn operators_md() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("OPERATORS.md")
}

/// The file's text with the part between the markers replaced by `body`; `None` without them.
fn with_body(text: &str, body: &str) -> Option<String> {
    let start = text.find(BEGIN)? + BEGIN.len();
    let end = start + text[start..].find(END)?;
    Some(format!("{}{body}{}", &text[..start], &text[end..]))
}

#[test]
fn operators_md_is_current() {
    let path = operators_md();
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let want = with_body(&text, &generated())
        .unwrap_or_else(|| panic!("{}: no `{BEGIN}` … `{END}` markers", path.display()));
    if want == text {
        return;
    }
    if std::env::var("VKPRISM_BLESS").is_ok_and(|v| v == "1") {
        std::fs::write(&path, want).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        return;
    }
    panic!(
        "{} is stale (a kernel's variants or the operation list changed); regenerate it with\n  \
         VKPRISM_BLESS=1 cargo test -p vkprism-shaders --test operators_table\nand review the diff",
        path.display()
    );
}

#[test]
fn variant_text_stands_for_exactly_the_names() {
    for row in operations().iter().chain(&direct_kernels()) {
        for k in &row.kernels {
            let mut got: Vec<String> = variants_text(k.names)
                .iter()
                .flat_map(|t| expand(t))
                .collect();
            got.sort();
            let mut want: Vec<String> = k.names.iter().map(|n| n.to_string()).collect();
            want.sort();
            assert_eq!(got, want, "{}", k.info.name);
        }
    }
}

/// The operation layer's sources, concatenated.
fn ops_sources() -> String {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/ops");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.expect("directory entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "rs"))
        .collect();
    files.sort();
    files
        .iter()
        .map(|p| std::fs::read_to_string(p).expect("ops source"))
        .collect()
}

/// Public methods that record into a list (`&self, list: &mut CommandList`), but the `*_with`
/// forms, which take a kernel already loaded.
fn recording_methods(src: &str) -> BTreeSet<String> {
    src.split("pub fn ")
        .skip(1)
        .filter_map(|s| {
            let name = &s[..s.find('(')?];
            let signature = &s[..s.find('{').unwrap_or(s.len())];
            let records =
                signature.contains("&self") && signature.contains("list: &mut CommandList");
            (records && !name.ends_with("_with")).then(|| name.to_string())
        })
        .collect()
}

/// Modules whose kernel the sources load (`::<module::Kernel>`).
fn loaded_kernels(src: &str) -> BTreeSet<String> {
    src.split("::<")
        .skip(1)
        .filter_map(|s| Some(s[..s.find("::Kernel>")?].to_string()))
        .filter(|m| m.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'))
        .collect()
}

#[test]
fn mapping_names_every_operation_and_kernel() {
    let src = ops_sources();
    let rows = operations();
    let ops: BTreeSet<String> = rows.iter().map(|r| r.op.to_string()).collect();
    assert_eq!(
        ops,
        recording_methods(&src),
        "the rows of `operations()` against `Ops`' methods"
    );
    let kernels: BTreeSet<String> = rows
        .iter()
        .flat_map(|r| &r.kernels)
        .map(|k| k.info.name.to_string())
        .collect();
    assert_eq!(
        kernels,
        loaded_kernels(&src),
        "the kernels of `operations()` against those `ops/` loads"
    );
}
