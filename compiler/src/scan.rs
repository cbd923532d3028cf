//! Phase 3, scan: lexical facts about the kernel text: the identifiers it uses (comments
//! skipped), which decide the variant axes, and the one table of known extended functions, which
//! `valid.rs` checks the names it calls against.
//! Bindings, push constants and specialization constants are NOT read from the text: they come
//! from SPIR-V reflection (`reflect/`).

use std::collections::BTreeSet;

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
            out.push((text[start..i].to_string(), line));
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
    /// Tests `NCNN_shader_local_memory`.
    pub local_memory: bool,
    /// Tests `NCNN_cooperative_matrix` (or ncnn's `ncnn_VK_KHR_cooperative_matrix`).
    pub coopmat: bool,
}

const IMAGE_FN_PREFIXES: [&str; 3] = ["image1d_", "image2d_", "image3d_"];

impl Axes {
    /// The axes the names in `idents` call for.
    pub fn of(idents: &[(String, u32)]) -> Axes {
        let mut a = Axes::default();
        let mut image_guard = false;
        let mut image_use = false;
        for (id, _) in idents {
            let id = id.as_str();
            if [
                "sfp",
                "afp",
                "lfp",
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
            if IMAGE_FN_PREFIXES.iter().any(|p| id.starts_with(p)) || id.starts_with("imfmt") {
                image_use = true;
            }
            if ["sint8", "aint8", "i8buffer_", "NCNN_int8_"]
                .iter()
                .any(|p| id.starts_with(p))
            {
                a.int8 = true;
            }
            if id == "NCNN_shader_local_memory" {
                a.local_memory = true;
            }
            if id == "NCNN_cooperative_matrix" || id == "ncnn_VK_KHR_cooperative_matrix" {
                a.coopmat = true;
            }
        }
        a.image = image_guard || image_use;
        a.buffer = image_guard || !image_use;
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
        prefixes: &["i8buffer_"],
        stems: &["ld", "st", "cp"],
        suffixes: &["1", "4"],
        summary: "i8buffer_ld/st/cp 1/4",
    },
];

/// Prefixes reserved for extended functions: a name with one that is not defined is a mistake.
const RESERVED_PREFIXES: [&str; 7] = [
    "buffer_",
    "i8buffer_",
    "sfp2",
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

/// Names that use a reserved extended-function prefix but are not defined: `(name, line)`.
pub fn unknown_functions(idents: &[(String, u32)]) -> Vec<(String, u32)> {
    let known = known_functions();
    let mut seen = BTreeSet::new();
    let mut out = Vec::new();
    for (id, line) in idents {
        let reserved = RESERVED_PREFIXES.iter().any(|p| id.starts_with(p));
        if reserved && !known.contains(id) && seen.insert(id.clone()) {
            out.push((id.clone(), *line));
        }
    }
    out
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
                local_memory: true,
                coopmat: false,
            }
        );
        let ids = identifiers("#if NCNN_cooperative_matrix\n#endif\nsfp x;");
        assert!(Axes::of(&ids).coopmat);
        let ids = identifiers("image2d_ld4(s, p)");
        assert!(Axes::of(&ids).image && !Axes::of(&ids).buffer);
    }

    #[test]
    fn known_functions_are_the_documented_set() {
        let known = known_functions();
        // 12 + 6 buffer, 27 image, 4 conversion, 6 int8 functions.
        assert_eq!(known.len(), 55);
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
            unknown_functions(&ids),
            vec![("buffer_ld3".into(), 2), ("image2d_ld2".into(), 2)]
        );
    }
}
