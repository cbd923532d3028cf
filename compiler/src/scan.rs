//! Phase 3, scan: lexical facts about the kernel text: the identifiers it uses (comments
//! skipped), which decide the variant axes, and the one table of known extended functions, which
//! `valid.rs` checks the names it calls against.
//! Bindings, push constants and specialization constants are NOT read from the text: they come
//! from SPIR-V reflection (`reflect/`).

use std::collections::BTreeSet;
use vkprism_core::{DeviceFact, FloatMode};

/// The identifiers of a kernel: of its main text (whose lines are the kernel's own) and of the
/// main text followed by every include (what the variant axes and the checks look at).
pub struct Identifiers {
    /// In the main text, with their lines there.
    pub main: Vec<(String, u32)>,
    /// In the main text and every include (lines past the main text count on through them).
    pub all: Vec<(String, u32)>,
}

impl Identifiers {
    /// Scans `main_text` and `all_text` (the main text followed by every include).
    pub fn of(main_text: &str, all_text: &str) -> Identifiers {
        Identifiers {
            main: identifiers(main_text),
            all: identifiers(all_text),
        }
    }
}

/// Identifiers of `text`, each with the 1-based line it appears on.
pub fn identifiers(text: &str) -> Vec<(String, u32)> {
    tokens(text)
        .into_iter()
        .map(|(id, line, _)| (id, line))
        .collect()
}

/// Identifiers of `text` that are called (followed by `(`, spaces aside): `(name, line)`.
#[cfg(test)]
pub fn calls(text: &str) -> Vec<(String, u32)> {
    tokens(text)
        .into_iter()
        .filter(|(_, _, call)| *call)
        .map(|(id, line, _)| (id, line))
        .collect()
}

/// The names `text` defines with `#define` (object-like or function-like): the kernel's own.
pub fn defined_names(text: &str) -> BTreeSet<String> {
    text.lines()
        .filter_map(|l| {
            let rest = l.trim_start().strip_prefix('#')?.trim_start();
            let rest = rest.strip_prefix("define")?;
            if !rest.starts_with([' ', '\t']) {
                return None;
            }
            let name: String = rest
                .trim_start()
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            (!name.is_empty()).then_some(name)
        })
        .collect()
}

/// Identifiers of `text` (comments skipped): name, 1-based line, followed by `(`.
pub fn tokens(text: &str) -> Vec<(String, u32, bool)> {
    let bytes = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    let mut line = 1u32;
    while i < bytes.len() {
        let c = bytes[i];
        if c == b'\n' {
            line += 1;
            i += 1;
        } else if c == b'/' && bytes.get(i + 1) == Some(&b'/') {
            while i < bytes.len() && bytes[i] != b'\n' {
                i += 1;
            }
        } else if c == b'/' && bytes.get(i + 1) == Some(&b'*') {
            i += 2;
            while i < bytes.len() && !(bytes[i] == b'*' && bytes.get(i + 1) == Some(&b'/')) {
                if bytes[i] == b'\n' {
                    line += 1;
                }
                i += 1;
            }
            i += 2;
        } else if c == b'"' {
            // #include "file": skip the string.
            i += 1;
            while i < bytes.len() && bytes[i] != b'"' && bytes[i] != b'\n' {
                i += 1;
            }
            i += 1;
        } else if c.is_ascii_alphabetic() || c == b'_' {
            let start = i;
            while i < bytes.len() && (bytes[i].is_ascii_alphanumeric() || bytes[i] == b'_') {
                i += 1;
            }
            let mut j = i;
            while j < bytes.len() && (bytes[j] == b' ' || bytes[j] == b'\t') {
                j += 1;
            }
            out.push((
                text[start..i].to_string(),
                line,
                bytes.get(j) == Some(&b'('),
            ));
        } else if c.is_ascii_digit() {
            while i < bytes.len() && (bytes[i].is_ascii_alphanumeric() || bytes[i] == b'.') {
                i += 1;
            }
        } else {
            i += 1;
        }
    }
    out
}

/// The variant axes a kernel uses, decided by the names it mentions.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct Axes {
    /// Mentions fp16/bf16-dependent names (`sfp…`, `afp…`, `lfp…`, `buffer_…`, `NCNN_fp16_…`).
    pub float: bool,
    /// Has buffer variants (everything but image-only kernels).
    pub buffer: bool,
    /// Has image variants (`NCNN_image_shader`, or image functions / formats).
    pub image: bool,
    /// Uses int8 types or `NCNN_int8_…`.
    pub int8: bool,
    /// Uses int16 types or functions (`sint16…`, `i16buffer_…`, `lint162aint16…`) or
    /// `NCNN_int16_…`.
    pub int16: bool,
    /// Tests `NCNN_shader_local_memory`.
    pub local_memory: bool,
    /// Tests `NCNN_cooperative_matrix` (or ncnn's `ncnn_VK_KHR_cooperative_matrix`).
    pub coopmat: bool,
    /// Tests `ncnn_VK_NV_cooperative_matrix`: ncnn does so only in kernels it runs on matrices
    /// alone (`#if ncnn_VK_KHR_cooperative_matrix … #elif ncnn_VK_NV_cooperative_matrix …
    /// #endif`, no fallback), so the kernel gets `_cm` variants only.
    pub coopmat_only: bool,
    /// Uses the float axis but nothing that packs storage (`sfpvec2/4/8`, `sfpmat4`, or its own
    /// `NCNN_fp16_packed` / `NCNN_bf16_packed` code): its buffers are scalar `sfp` (a `float` in
    /// the packed modes) or plain types, so its fp16p, fp16pa and bf16p buffer variants would
    /// store fp32 under a 16-bit name, and it has none.
    pub no_packed_storage: bool,
}

/// Names through which a kernel's storage is packed in fp16p, fp16pa and bf16p.
const PACKING_NAMES: [&str; 6] = [
    "sfpvec2",
    "sfpvec4",
    "sfpvec8",
    "sfpmat4",
    "NCNN_fp16_packed",
    "NCNN_bf16_packed",
];

const IMAGE_FN_PREFIXES: [&str; 3] = ["image1d_", "image2d_", "image3d_"];

impl Axes {
    /// The axes the names in `idents` call for.
    pub fn of(idents: &[(String, u32)]) -> Axes {
        let mut a = Axes::default();
        let mut image_guard = false;
        let mut image_use = false;
        let mut packs = false;
        for (id, _) in idents {
            let id = id.as_str();
            if [
                "sfp",
                "afp",
                "lfp",
                "cmfp",
                "buffer_",
                "NCNN_fp16_",
                "NCNN_bf16_",
                "unfp",
                "imfmt",
            ]
            .iter()
            .any(|p| id.starts_with(p))
                || IMAGE_FN_PREFIXES.iter().any(|p| id.starts_with(p))
            {
                a.float = true;
            }
            if id == "NCNN_image_shader" {
                image_guard = true;
            }
            if PACKING_NAMES.contains(&id) {
                packs = true;
            }
            if IMAGE_FN_PREFIXES.iter().any(|p| id.starts_with(p)) || id.starts_with("imfmt") {
                image_use = true;
            }
            if ["sint8", "aint8", "i8buffer_", "NCNN_int8_"]
                .iter()
                .any(|p| id.starts_with(p))
            {
                a.int8 = true;
            }
            if ["sint16", "aint16", "lint16", "i16buffer_", "NCNN_int16_"]
                .iter()
                .any(|p| id.starts_with(p))
            {
                a.int16 = true;
            }
            if id == "NCNN_shader_local_memory" {
                a.local_memory = true;
            }
            if id == "NCNN_cooperative_matrix" || id == "ncnn_VK_KHR_cooperative_matrix" {
                a.coopmat = true;
            }
            if id == "ncnn_VK_NV_cooperative_matrix" {
                a.coopmat = true;
                a.coopmat_only = true;
            }
        }
        a.image = image_guard || image_use;
        a.buffer = image_guard || !image_use;
        a.no_packed_storage = a.float && !packs;
        a
    }
}

/// One family of extended functions vkprism defines (see `preamble.rs`): every
/// `prefix + stem + suffix`, and how messages summarize the family.
struct Family {
    prefixes: &'static [&'static str],
    stems: &'static [&'static str],
    suffixes: &'static [&'static str],
    summary: &'static str,
}

/// The extended functions vkprism defines: the one list the unknown-function check and its
/// message both read.
const FAMILIES: &[Family] = &[
    Family {
        prefixes: &["buffer_"],
        stems: &["ld", "st", "cp"],
        suffixes: &["1", "2", "4", "8"],
        summary: "buffer_ld/st/cp 1/2/4/8",
    },
    Family {
        prefixes: &["buffer_"],
        stems: &["cp1to4", "cp1to8", "cp4to8", "cp4to1", "cp8to1", "cp8to4"],
        suffixes: &[""],
        summary: "buffer_cp1to4/1to8/4to8/4to1/8to1/8to4",
    },
    Family {
        prefixes: &IMAGE_FN_PREFIXES,
        stems: &["ld", "st", "cp"],
        suffixes: &["1", "4", "8"],
        summary: "image1d/2d/3d_ld/st/cp 1/4/8",
    },
    Family {
        prefixes: &["buffer_"],
        stems: &["sm"],
        suffixes: &["1", "4"],
        summary: "buffer_sm1/4",
    },
    Family {
        prefixes: &["sfp2lfp"],
        stems: &[""],
        suffixes: &["", "vec4"],
        summary: "sfp2lfp(vec4)",
    },
    Family {
        prefixes: &["lfp2afp"],
        stems: &[""],
        suffixes: &["", "vec4"],
        summary: "lfp2afp(vec4)",
    },
    Family {
        prefixes: &["afp2lfp"],
        stems: &[""],
        suffixes: &["", "vec4"],
        summary: "afp2lfp(vec4)",
    },
    Family {
        prefixes: &["sfp2afp", "afp2sfp"],
        stems: &["mat4"],
        suffixes: &[""],
        summary: "sfp2afpmat4, afp2sfpmat4",
    },
    Family {
        prefixes: &["i8buffer_"],
        stems: &["ld", "st", "cp"],
        suffixes: &["1", "4"],
        summary: "i8buffer_ld/st/cp 1/4",
    },
    Family {
        prefixes: &["i8buffer_"],
        stems: &["sm4", "cp1to4", "cp4to1"],
        suffixes: &[""],
        summary: "i8buffer_sm4/cp1to4/cp4to1",
    },
    Family {
        prefixes: &["i16buffer_"],
        stems: &["ld", "st"],
        suffixes: &["1", "2", "4"],
        summary: "i16buffer_ld/st 1/2/4",
    },
    Family {
        prefixes: &["i16buffer_"],
        stems: &["sm4"],
        suffixes: &[""],
        summary: "i16buffer_sm4",
    },
    Family {
        prefixes: &["lint162aint16"],
        stems: &[""],
        suffixes: &["", "vec4"],
        summary: "lint162aint16(vec4)",
    },
];

/// Prefixes reserved for extended functions: a name with one that is not defined is a mistake.
const RESERVED_PREFIXES: [&str; 10] = [
    "buffer_",
    "i8buffer_",
    "i16buffer_",
    "lint162",
    "sfp2",
    "afp2",
    "lfp2",
    "image1d_",
    "image2d_",
    "image3d_",
];

/// The extended functions vkprism defines.
pub fn known_functions() -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    for family in FAMILIES {
        for prefix in family.prefixes {
            for stem in family.stems {
                for suffix in family.suffixes {
                    names.insert(format!("{prefix}{stem}{suffix}"));
                }
            }
        }
    }
    names
}

/// The known extended functions, summarized for a message.
pub fn known_functions_summary() -> String {
    let summaries: Vec<&str> = FAMILIES.iter().map(|f| f.summary).collect();
    summaries.join(", ")
}

/// Names that use a reserved extended-function prefix but are neither defined by vkprism nor by
/// the kernel itself (`own`: its `#define`s): `(name, line)`.
pub fn unknown_functions<L: Clone>(
    idents: &[(String, L)],
    own: &BTreeSet<String>,
) -> Vec<(String, L)> {
    let known = known_functions();
    let mut seen = BTreeSet::new();
    let mut out = Vec::new();
    for (id, line) in idents {
        let reserved = RESERVED_PREFIXES.iter().any(|p| id.starts_with(p));
        if reserved && !known.contains(id) && !own.contains(id) && seen.insert(id.clone()) {
            out.push((id.clone(), line.clone()));
        }
    }
    out
}

/// The known extended functions closest to `name` (at most two edits away; all of them when
/// several are equally close), empty when there is no near miss.
pub fn near_misses(name: &str) -> Vec<String> {
    let scored: Vec<(usize, String)> = known_functions()
        .into_iter()
        .map(|k| (edit_distance(name, &k), k))
        .filter(|(d, _)| *d <= 2)
        .collect();
    let Some(best) = scored.iter().map(|(d, _)| *d).min() else {
        return Vec::new();
    };
    scored
        .into_iter()
        .filter(|(d, _)| *d == best)
        .map(|(_, k)| k)
        .collect()
}

/// Levenshtein distance over bytes, exact up to 2 (all the callers ask about); beyond, a number
/// above 2. Strings whose lengths differ by more than 2 are that far apart without the table, so
/// a 300 KB identifier costs no more than its length.
fn edit_distance(a: &str, b: &str) -> usize {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    let gap = a.len().abs_diff(b.len());
    if gap > 2 {
        return gap;
    }
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.iter().enumerate() {
        let mut cur = vec![i + 1];
        for (j, cb) in b.iter().enumerate() {
            let sub = prev[j] + usize::from(ca != cb);
            cur.push(sub.min(prev[j + 1] + 1).min(cur[j] + 1));
        }
        prev = cur;
    }
    prev[b.len()]
}

/// The extended types vkprism defines (`preamble.rs`).
pub const EXTENDED_TYPES: [&str; 23] = [
    "sfp",
    "sfpvec2",
    "sfpvec4",
    "sfpvec8",
    "sfpmat4",
    "afp",
    "afpvec2",
    "afpvec4",
    "afpvec8",
    "afpmat4",
    "lfp",
    "lfpvec4",
    "sint8",
    "sint8vec4",
    "aint8",
    "aint8vec4",
    "sint16",
    "sint16vec4",
    "lint16",
    "lint16vec4",
    "aint16",
    "aint16vec4",
    "cmfp",
];

/// Whether `id` is shaped like an extended type: `[sal]fp` or `[sal]int8` / `[sal]int16`, then
/// optionally `vec` or `mat` and digits (with an `x` and digits after a `mat`).
fn looks_like_extended_type(id: &str) -> bool {
    let Some(rest) = ["sfp", "afp", "lfp"]
        .iter()
        .chain(&["sint8", "aint8", "lint8", "sint16", "aint16", "lint16"])
        .filter_map(|p| id.strip_prefix(p))
        .next()
    else {
        return false;
    };
    if rest.is_empty() {
        return true;
    }
    let Some(dims) = rest
        .strip_prefix("vec")
        .or_else(|| rest.strip_prefix("mat"))
    else {
        return false;
    };
    let mut parts = dims.splitn(2, 'x');
    let digits = |p: &str| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit());
    parts.next().is_some_and(digits) && parts.next().is_none_or(digits)
}

/// Names shaped like an extended type that vkprism doesn't define and the kernel doesn't
/// `#define` (`sfpvec3`, `afpmat2`): glslang would only say `syntax error`.
pub fn unknown_types<L: Clone>(idents: &[(String, L)], own: &BTreeSet<String>) -> Vec<(String, L)> {
    let mut seen = BTreeSet::new();
    idents
        .iter()
        .filter(|(id, _)| {
            looks_like_extended_type(id)
                && !EXTENDED_TYPES.contains(&id.as_str())
                && !own.contains(id)
                && seen.insert(id.clone())
        })
        .cloned()
        .collect()
}

/// The extended types closest to `name` (at most two edits away).
pub fn near_types(name: &str) -> Vec<&'static str> {
    let best = EXTENDED_TYPES.iter().map(|t| edit_distance(name, t)).min();
    match best {
        Some(d) if d <= 2 => EXTENDED_TYPES
            .iter()
            .copied()
            .filter(|t| edit_distance(name, t) == d)
            .collect(),
        _ => Vec::new(),
    }
}

/// The `ncnn_*` facts vkprism defines as macros, per variant (`preamble.rs`). The numeric device
/// facts (`vkprism_core::DeviceFact`) are specialization constants instead; the rest of ncnn's
/// `ncnn_*` names describe the device a pipeline is created on, unknown at build time.
pub const KNOWN_DEVICE_FACTS: [&str; 3] = [
    "ncnn_VK_KHR_cooperative_matrix",
    "ncnn_VK_NV_cooperative_matrix",
    "ncnn_glsl_version",
];

/// `ncnn_*` names that vkprism doesn't define (as a macro or a device fact) and the kernel doesn't
/// `#define`: `(name, line)`.
pub fn unknown_device_facts(
    idents: &[(String, u32)],
    own: &BTreeSet<String>,
) -> Vec<(String, u32)> {
    let mut seen = BTreeSet::new();
    idents
        .iter()
        .filter(|(id, _)| {
            id.starts_with("ncnn_")
                && !KNOWN_DEVICE_FACTS.contains(&id.as_str())
                && DeviceFact::from_glsl_name(id).is_none()
                && vkprism_core::preprocessor_fact(id).is_none()
                && !own.contains(id)
                && seen.insert(id.clone())
        })
        .cloned()
        .collect()
}

/// The preprocessor's conditional lines of `text` (`#if`, `#elif`, `#ifdef`, `#ifndef`), each
/// with its backslash continuations, `//` comments cut: `(code, line of the directive)`, one entry
/// per physical line.
pub fn conditional_lines(text: &str) -> Vec<(&str, u32)> {
    let mut out = Vec::new();
    let mut continued: Option<u32> = None;
    for (k, line) in text.lines().enumerate() {
        let number = k as u32 + 1;
        let start = match continued {
            Some(first) => Some(first),
            None => {
                let directive = line.trim_start().strip_prefix('#').map(str::trim_start);
                directive
                    .filter(|d| {
                        ["if", "elif", "ifdef", "ifndef"].iter().any(|w| {
                            d.strip_prefix(w).is_some_and(|r| {
                                r.is_empty()
                                    || !r.starts_with(|c: char| {
                                        c.is_ascii_alphanumeric() || c == '_'
                                    })
                            })
                        })
                    })
                    .map(|_| number)
            }
        };
        let Some(first) = start else { continue };
        out.push((line.split("//").next().unwrap_or(""), first));
        continued = line.trim_end().ends_with('\\').then_some(first);
    }
    out
}

/// The identifiers on the preprocessor's conditional lines of `text` (`#if`, `#elif`, `#ifdef`,
/// `#ifndef`, backslash continuations joined): `(name, line)`.
pub fn conditional_identifiers(text: &str) -> Vec<(String, u32)> {
    conditional_lines(text)
        .into_iter()
        .flat_map(|(code, first)| {
            identifiers(code)
                .into_iter()
                .map(move |(id, _)| (id, first))
        })
        .collect()
}

/// Storage and shared types whose constructor converts values where a mode packs them or
/// stores bits: the type, the float modes where its constructor stores the wrong bits, how they
/// hold the type, and the function to use instead.
pub const PACKED_TYPES: [(&str, &[FloatMode], &str, &str); 6] = [
    (
        "lfpvec4",
        &[FloatMode::Fp16p, FloatMode::Fp16pa, FloatMode::Fp16s, FloatMode::Bf16p],
        "four halves or bf16 values packed in a `uvec2`",
        "`afp2lfpvec4(v)` (from an arithmetic value) or `sfp2lfpvec4(v)` / `buffer_sm4(buf, i)` (from storage)",
    ),
    (
        "sfp",
        &[FloatMode::Bf16s],
        "bf16 bits in a `uint16_t`",
        "`buffer_st1(buf, i, v)`",
    ),
    (
        "sfpvec2",
        &[FloatMode::Fp16p, FloatMode::Fp16pa, FloatMode::Bf16p, FloatMode::Bf16s],
        "packed halves or bf16 bits",
        "`buffer_st2(buf, i, v)`",
    ),
    (
        "sfpvec4",
        &[FloatMode::Fp16p, FloatMode::Fp16pa, FloatMode::Bf16p, FloatMode::Bf16s],
        "packed halves or bf16 bits",
        "`buffer_st4(buf, i, v)`",
    ),
    (
        "sfpvec8",
        &[FloatMode::Fp16p, FloatMode::Fp16pa, FloatMode::Bf16p, FloatMode::Bf16s],
        "packed halves or bf16 bits",
        "`buffer_st8(buf, i, v)`",
    ),
    (
        "sfpmat4",
        &[
            FloatMode::Fp16p,
            FloatMode::Fp16pa,
            FloatMode::Fp16s,
            FloatMode::Bf16p,
            FloatMode::Bf16s,
        ],
        "packed halves or bf16 bits",
        "`afp2sfpmat4(v)`",
    ),
];

/// Constructor calls on [`PACKED_TYPES`] that store the wrong bits in float mode `mode`, the
/// kernel doesn't define itself: `(type, line)`.
pub fn packed_constructors<L: Clone>(
    calls: &[(String, L)],
    own: &BTreeSet<String>,
    mode: FloatMode,
) -> Vec<(String, L)> {
    calls
        .iter()
        .filter(|(id, _)| {
            PACKED_TYPES
                .iter()
                .any(|(t, modes, _, _)| t == id && modes.contains(&mode))
                && !own.contains(id)
        })
        .cloned()
        .collect()
}

/// The arguments of `psc(NAME)` calls in `text` (an argument that isn't a plain name is
/// skipped), with their lines.
pub fn psc_arguments(text: &str) -> Vec<(String, u32)> {
    let t = tokens(text);
    t.iter()
        .zip(t.iter().skip(1))
        .filter(|((id, _, call), _)| id == "psc" && *call)
        .map(|(_, (arg, line, _))| (arg.clone(), *line))
        .collect()
}

/// The first line that calls `psc`, if any.
pub fn psc_line(idents: &[(String, u32)]) -> Option<u32> {
    idents.iter().find(|(id, _)| id == "psc").map(|(_, l)| *l)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn axes_follow_names() {
        let ids =
            identifiers("// sfpvec4 in a comment\nlayout (binding=0) buffer b { float d[]; };");
        assert_eq!(
            Axes::of(&ids),
            Axes {
                buffer: true,
                ..Default::default()
            }
        );
        let ids = identifiers("buffer_ld4(a,i); /* */\n#if NCNN_image_shader\n#endif\nNCNN_shader_local_memory sint8vec4");
        assert_eq!(
            Axes::of(&ids),
            Axes {
                float: true,
                buffer: true,
                image: true,
                int8: true,
                int16: false,
                local_memory: true,
                coopmat: false,
                coopmat_only: false,
                // buffer_ld4 without an sfpvec4 buffer anywhere: nothing packs.
                no_packed_storage: true,
            }
        );
        let ids = identifiers("layout (binding = 0) buffer b { sfp d[]; };");
        assert!(Axes::of(&ids).no_packed_storage);
        let ids = identifiers("#if NCNN_fp16_packed\n#endif\nsfp x;");
        assert!(!Axes::of(&ids).no_packed_storage);
        let ids = identifiers("#if NCNN_cooperative_matrix\n#endif\nsfp x;");
        assert!(Axes::of(&ids).coopmat && !Axes::of(&ids).coopmat_only);
        let ids = identifiers(
            "#if ncnn_VK_KHR_cooperative_matrix\n#elif ncnn_VK_NV_cooperative_matrix\n#endif",
        );
        assert!(Axes::of(&ids).coopmat && Axes::of(&ids).coopmat_only);
        let ids = identifiers("aint16vec4 v = lint162aint16vec4(t);");
        assert!(Axes::of(&ids).int16 && !Axes::of(&ids).int8);
        let ids = identifiers("int x = packInt2x16(v);");
        assert!(!Axes::of(&ids).int16);
        let ids = identifiers("image2d_ld4(s, p)");
        assert!(Axes::of(&ids).image && !Axes::of(&ids).buffer);
    }

    #[test]
    fn known_functions_are_the_documented_set() {
        let known = known_functions();
        // 12 + 6 + 2 buffer, 27 image, 8 conversion, 6 + 3 int8, 6 + 1 + 2 int16 functions.
        assert_eq!(known.len(), 73);
        for name in [
            "buffer_cp8to4",
            "image3d_st8",
            "sfp2lfpvec4",
            "lfp2afp",
            "i8buffer_cp4",
        ] {
            assert!(known.contains(name), "{name}");
        }
    }

    #[test]
    fn unknown_extended_functions() {
        let ids =
            identifiers("buffer_ld4(a,i);\nbuffer_ld3(a,i); buffer_ld3(a,i); image2d_ld2(s,p);");
        assert_eq!(
            unknown_functions(&ids, &BTreeSet::new()),
            vec![("buffer_ld3".into(), 2), ("image2d_ld2".into(), 2)]
        );
        // A kernel's own #define is its own; afp2* is reserved like sfp2*.
        let text = "#define sfp2float(v) float(v)\n  #  define buffer_mine 1\nsfp2float(x); buffer_mine; afp2float(y);";
        assert_eq!(
            unknown_functions(&identifiers(text), &defined_names(text)),
            vec![("afp2float".into(), 3)]
        );
    }

    #[test]
    fn near_misses_are_suggested() {
        assert_eq!(
            near_misses("buffer_ld3"),
            ["buffer_ld1", "buffer_ld2", "buffer_ld4", "buffer_ld8"]
        );
        assert_eq!(near_misses("buffer_load4"), ["buffer_ld4"]);
        assert_eq!(near_misses("afp2lfpvec"), ["afp2lfpvec4"]);
        assert!(near_misses("sfp2everything").is_empty());
    }

    #[test]
    fn unknown_extended_types() {
        let text = "#define afpvec3 vec3\nsfpvec3 a; afpvec3 b; sfpmat2x3 c; sfpx d; lfpos e; aint8vec2 f; sfpvec4 g;";
        let unknown = unknown_types(&identifiers(text), &defined_names(text));
        let names: Vec<&str> = unknown.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["sfpvec3", "sfpmat2x3", "aint8vec2"]);
        assert_eq!(near_types("sfpvec3"), ["sfpvec2", "sfpvec4", "sfpvec8"]);
    }

    #[test]
    fn conditional_lines() {
        let text =
            "#if A \\\n  || B // C\nD\n  #  ifdef E\n#ifx F\n#elif G\n#include \"H\"\n#define I J";
        assert_eq!(
            conditional_identifiers(text),
            [
                ("if".to_string(), 1),
                ("A".into(), 1),
                ("B".into(), 1),
                ("ifdef".into(), 4),
                ("E".into(), 4),
                ("elif".into(), 6),
                ("G".into(), 6)
            ]
        );
    }

    #[test]
    fn device_facts_and_constructors() {
        let text = "#define ncnn_mine 1\n#if ncnn_robustBufferAccess > 32 || ncnn_mine || ncnn_VK_KHR_cooperative_matrix\n#endif\ntmp[i] = lfpvec4 (v); afpvec4 a = afpvec4(v); sfp2lfpvec4(w);\nint s = ncnn_subgroupSize;";
        let own = defined_names(text);
        assert_eq!(
            unknown_device_facts(&identifiers(text), &own),
            vec![("ncnn_robustBufferAccess".into(), 2)]
        );
        assert_eq!(
            packed_constructors(&calls(text), &own, FloatMode::Fp16s),
            vec![("lfpvec4".into(), 4)]
        );
        assert!(packed_constructors(&calls(text), &own, FloatMode::Fp16sa).is_empty());
    }
}
