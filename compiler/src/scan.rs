//! Lexical facts about the kernel text: the identifiers it uses (comments skipped), which decide
//! the variant axes, and the extended-GLSL names it calls, which are checked against the known set.
//! Bindings, push constants and specialization constants are NOT read from the text: they come
//! from SPIR-V reflection (`reflect.rs`).

use std::collections::BTreeSet;

/// Identifiers of `text` with the 1-based line each first appears on.
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

/// The extended functions vkprism defines (see `preamble.rs`).
pub fn known_functions() -> BTreeSet<String> {
    let mut s = BTreeSet::new();
    for w in ["1", "2", "4", "8"] {
        s.insert(format!("buffer_ld{w}"));
        s.insert(format!("buffer_st{w}"));
        s.insert(format!("buffer_cp{w}"));
    }
    for f in ["cp1to4", "cp1to8", "cp4to8", "cp4to1", "cp8to1", "cp8to4"] {
        s.insert(format!("buffer_{f}"));
    }
    for d in IMAGE_FN_PREFIXES {
        for op in ["ld", "st", "cp"] {
            for w in ["1", "4", "8"] {
                s.insert(format!("{d}{op}{w}"));
            }
        }
    }
    for f in ["sfp2lfp", "sfp2lfpvec4", "lfp2afp", "lfp2afpvec4"] {
        s.insert(f.to_string());
    }
    for op in ["ld1", "ld4", "st1", "st4", "cp1", "cp4"] {
        s.insert(format!("i8buffer_{op}"));
    }
    s
}

/// Names that use a reserved extended-function prefix but are not defined: `(name, line)`.
pub fn unknown_functions(idents: &[(String, u32)]) -> Vec<(String, u32)> {
    let known = known_functions();
    let mut seen = BTreeSet::new();
    let mut out = Vec::new();
    for (id, line) in idents {
        let reserved = ["buffer_", "i8buffer_", "sfp2", "lfp2"]
            .iter()
            .any(|p| id.starts_with(p))
            || IMAGE_FN_PREFIXES.iter().any(|p| id.starts_with(p));
        if reserved && !known.contains(id) && seen.insert(id.clone()) {
            out.push((id.clone(), *line));
        }
    }
    out
}

/// Whether the text calls `psc(`.
pub fn uses_psc(text: &str, idents: &[(String, u32)]) -> Option<u32> {
    let _ = text;
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
    fn unknown_extended_functions() {
        let ids =
            identifiers("buffer_ld4(a,i);\nbuffer_ld3(a,i); buffer_ld3(a,i); image2d_ld2(s,p);");
        assert_eq!(
            unknown_functions(&ids),
            vec![("buffer_ld3".into(), 2), ("image2d_ld2".into(), 2)]
        );
    }
}
