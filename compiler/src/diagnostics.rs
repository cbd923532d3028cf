//! The GLSL compiler's messages, turned into the kernel's errors: one message that several
//! variants report is one error naming them, follow-on messages are dropped, and the most common
//! surprise gets a hint.

use crate::compile::Diagnostic;
use crate::ctxt::Ctxt;
use proc_macro2::Span;
use vkprism_core::VariantKey;

/// The messages of the emitted variants, each with the names of the variants that reported it,
/// in the order they were first reported.
#[derive(Default)]
pub struct GroupedDiagnostics {
    variants_of: Vec<(Diagnostic, Vec<String>)>,
    /// Where each message is in `variants_of`.
    index: std::collections::HashMap<Diagnostic, usize>,
    /// The most messages a variant had past [`MAX_MESSAGES`], and the first of them.
    omitted: Option<(usize, Diagnostic)>,
}

/// The most messages of one variant reported: a kernel of 60,000 undeclared names is 60,000
/// glslang messages, of which the first hundred say all there is to say (and grouping them all
/// would cost time for nothing).
const MAX_MESSAGES: usize = 100;

/// The order messages are reported in: by file, then by line as a number (`:68` before
/// `:1016`); messages without a line last. A stable sort keeps glslang's order within a line,
/// where the cause comes before what follows from it.
fn position(d: &Diagnostic) -> (bool, &str, u64) {
    match d.location.rsplit_once(':') {
        Some((file, line)) if line.parse::<u64>().is_ok() => {
            (false, file, line.parse().unwrap_or(0))
        }
        _ => (true, d.location.as_str(), 0),
    }
}

impl GroupedDiagnostics {
    /// Adds the messages of the variant `key`.
    pub fn add(&mut self, key: VariantKey, mut diagnostics: Vec<Diagnostic>) {
        if diagnostics.len() > MAX_MESSAGES {
            let rest = diagnostics.split_off(MAX_MESSAGES);
            if self.omitted.as_ref().is_none_or(|(n, _)| *n < rest.len()) {
                self.omitted = Some((rest.len(), rest[0].clone()));
            }
        }
        for d in diagnostics {
            let at = match self.index.get(&d) {
                Some(&at) => at,
                None => {
                    self.index.insert(d.clone(), self.variants_of.len());
                    self.variants_of.push((d, Vec::new()));
                    self.variants_of.len() - 1
                }
            };
            let names = &mut self.variants_of[at].1;
            if !names.contains(&key.name()) {
                names.push(key.name());
            }
        }
    }

    /// Records one error per distinct message at `span`; `emitted` is how many variants were
    /// compiled for the kernel. `false` when there was any message.
    pub fn report(mut self, cx: &Ctxt, span: Span, emitted: usize) -> bool {
        self.drop_follow_on_errors(emitted);
        order(&mut self.variants_of);
        let none = self.variants_of.is_empty();
        for (d, names) in self.variants_of {
            let which = match names.len() {
                n if n == emitted && emitted > 1 => "every variant".to_string(),
                1 => format!("variant {}", names[0]),
                _ => format!("variants {}", names.join(", ")),
            };
            let at = if d.location.is_empty() {
                String::new()
            } else {
                format!("{}: ", d.location)
            };
            cx.error(
                span,
                format!("GLSL ({which}): {at}{}{}", d.message, hint(&d.message)),
            );
        }
        if let Some((n, first)) = self.omitted {
            cx.error(
                span,
                format!(
                    "GLSL: {}: {n} more messages not shown (the first {MAX_MESSAGES} of each variant are): fix the ones above first",
                    first.location
                ),
            );
        }
        none
    }

    /// glslang goes on after an error and often adds follow-on errors in some variants at the
    /// same line; where one message holds for every variant, it is the cause: keep that one.
    fn drop_follow_on_errors(&mut self, emitted: usize) {
        let universal: Vec<String> = self
            .variants_of
            .iter()
            .filter(|(d, names)| names.len() == emitted && !d.location.is_empty())
            .map(|(d, _)| d.location.clone())
            .collect();
        self.variants_of
            .retain(|(d, names)| names.len() == emitted || !universal.contains(&d.location));
    }
}

/// Orders messages for reading: the first message of each variant (its likeliest cause) first,
/// then the rest; each part by file and numeric line ([`position`]), glslang's order kept within
/// a line.
pub(crate) fn order(messages: &mut Vec<(Diagnostic, Vec<String>)>) {
    messages.sort_by(|(a, _), (b, _)| position(a).cmp(&position(b)));
    let mut seen: Vec<&str> = Vec::new();
    let firsts: Vec<bool> = messages
        .iter()
        .map(|(_, names)| {
            let first = names.iter().any(|n| !seen.contains(&n.as_str()));
            seen.extend(names.iter().map(String::as_str));
            first
        })
        .collect();
    let mut flagged: Vec<(bool, (Diagnostic, Vec<String>))> =
        firsts.into_iter().zip(messages.drain(..)).collect();
    // Stable: within each part the positional order stays.
    flagged.sort_by_key(|(first, _)| !*first);
    messages.extend(flagged.into_iter().map(|(_, m)| m));
}

/// glslang reports an unknown type in a declaration (`mytype x;`) as `'' : syntax error,
/// unexpected IDENTIFIER`, without the name. `line` is the kernel's text at the message's line:
/// the first identifier that is followed by another and is neither a GLSL type nor a keyword is
/// the unknown type, and the message names it.
pub fn name_unknown_type(d: &mut Diagnostic, line: &str) {
    if !d.message.contains("syntax error, unexpected IDENTIFIER") {
        return;
    }
    let Some(name) = unknown_type_in(line) else {
        return;
    };
    let (severity, glslang) = d.message.split_once(": ").unwrap_or(("error", &d.message));
    let near = crate::scan::near_types(&name);
    let hint = match near.as_slice() {
        [] => String::new(),
        [one] => format!(" (did you mean `{one}`?)"),
        many => format!(" (did you mean one of {}?)", many.join(", ")),
    };
    d.message = format!(
        "{severity}: `{name}` is not a type: neither GLSL, vkprism nor the kernel declares it{hint}; glslang says: {}",
        glslang.trim()
    );
}

/// The unknown type of a declaration on `line`, if it has one: see [`name_unknown_type`].
fn unknown_type_in(line: &str) -> Option<String> {
    let code = line.split("//").next().unwrap_or("");
    let words: Vec<(usize, usize)> = word_spans(code);
    words.windows(2).find_map(|w| {
        let ((s0, e0), (s1, _)) = (w[0], w[1]);
        let between = &code[e0..s1];
        let name = &code[s0..e0];
        let declares = between.chars().all(char::is_whitespace) && !between.is_empty();
        (declares && !is_glsl_word(name)).then(|| name.to_string())
    })
}

/// Byte spans of the identifiers in `code` (numbers skipped).
fn word_spans(code: &str) -> Vec<(usize, usize)> {
    let bytes = code.as_bytes();
    let word = |b: u8| b.is_ascii_alphanumeric() || b == b'_';
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        if word(bytes[i]) {
            let start = i;
            while i < bytes.len() && word(bytes[i]) {
                i += 1;
            }
            if !bytes[start].is_ascii_digit() {
                out.push((start, i));
            }
        } else {
            i += 1;
        }
    }
    out
}

/// GLSL's qualifiers, keywords that precede a name, and built-in types (by their shapes).
fn is_glsl_word(w: &str) -> bool {
    const WORDS: &[&str] = &[
        "const",
        "in",
        "out",
        "inout",
        "uniform",
        "buffer",
        "shared",
        "layout",
        "highp",
        "mediump",
        "lowp",
        "readonly",
        "writeonly",
        "coherent",
        "volatile",
        "restrict",
        "flat",
        "smooth",
        "noperspective",
        "precise",
        "invariant",
        "struct",
        "return",
        "else",
        "case",
        "void",
        "bool",
        "int",
        "uint",
        "float",
        "double",
        "atomic_uint",
        "precision",
    ];
    const TYPE_PREFIXES: &[&str] = &[
        "vec",
        "ivec",
        "uvec",
        "bvec",
        "dvec",
        "mat",
        "dmat",
        "f16",
        "f32",
        "f64",
        "i8",
        "i16",
        "i32",
        "i64",
        "u8",
        "u16",
        "u32",
        "u64",
        "int8_t",
        "int16_t",
        "int32_t",
        "int64_t",
        "uint8_t",
        "uint16_t",
        "uint32_t",
        "uint64_t",
        "float16_t",
        "float32_t",
        "float64_t",
        "sampler",
        "isampler",
        "usampler",
        "image",
        "iimage",
        "uimage",
        "texture",
        "itexture",
        "utexture",
        "subpass",
        "coopmat",
        "bfloat16_t",
    ];
    WORDS.contains(&w) || TYPE_PREFIXES.iter().any(|p| w.starts_with(p))
}

/// The most common fp16-arithmetic surprise deserves a hint, also where it surfaces inside a
/// buffer function of fp16pa (whose stores pack with `packFloat2x16`, which takes `f16vec2`
/// only).
fn hint(message: &str) -> &'static str {
    let in_fp16_pack = (message.contains("packFloat2x16") || message.contains("unpackFloat2x16"))
        && message.contains("no matching overloaded function");
    let no_operation = message.contains("no operation") || message.contains("cannot convert");
    if message.contains("bfloat16_t") && no_operation {
        "; hint: GL_EXT_bfloat16 has no arithmetic on `bfloat16_t` (in bf16 `_cm` variants, `cmfp`): load, store and multiply-add its matrices into an fp32 accumulator (`coopmat<float, ..., gl_MatrixUseAccumulator>`) and compute on that, or convert scalars with `float(s)`"
    } else if message.contains("float16_t") && no_operation {
        "; hint: GLSL has no implicit conversion from int or float to float16_t, so in fp16-arithmetic variants write `afp(123)` / `afpvec4(...)` around literals and fp32 values"
    } else if in_fp16_pack {
        "; hint: in fp16pa, buffer_st/cp functions pack `afp` values (float16_t), and an fp32 value or literal makes the stored expression float (`v * 2.0`, `v + 123`); write `afp(2)` / `afpvec4(...)` around literals and fp32 values"
    } else {
        ""
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn diag(location: &str, message: &str) -> Diagnostic {
        Diagnostic {
            location: location.into(),
            message: message.into(),
        }
    }

    #[test]
    fn messages_are_ordered_by_numeric_line_keeping_glslang_order_within_a_line() {
        let mut g = GroupedDiagnostics::default();
        let key = VariantKey::parse("fp32").unwrap();
        g.add(
            key,
            vec![
                diag("k.rs:1016", "late"),
                diag("k.rs:68", "'afpmat4' : undeclared identifier"),
                diag("k.rs:68", "'' : syntax error"),
                diag("", "no line"),
            ],
        );
        order(&mut g.variants_of);
        let order: Vec<&str> = g
            .variants_of
            .iter()
            .map(|(d, _)| d.message.as_str())
            .collect();
        assert_eq!(
            order,
            [
                "'afpmat4' : undeclared identifier",
                "'' : syntax error",
                "late",
                "no line"
            ]
        );
    }

    #[test]
    fn each_variants_first_message_comes_first() {
        let names = |n: &[&str]| n.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let mut m = vec![
            (diag("k.rs:30", "fp16 late"), names(&["fp16s"])),
            (diag("k.rs:10", "fp32 first"), names(&["fp32"])),
            (diag("k.rs:20", "fp32 second"), names(&["fp32"])),
            (diag("k.rs:25", "fp16 first"), names(&["fp16s", "fp16sa"])),
        ];
        order(&mut m);
        let order: Vec<&str> = m.iter().map(|(d, _)| d.message.as_str()).collect();
        assert_eq!(
            order,
            ["fp32 first", "fp16 first", "fp32 second", "fp16 late"]
        );
    }

    #[test]
    fn unknown_types_in_declarations_are_named() {
        for (line, name) in [
            ("mytype g;", Some("mytype")),
            (
                "layout (binding = 0) buffer b { sfpvex4 d[]; };",
                Some("sfpvex4"),
            ),
            ("    const mytype2 d = 1; // float x", Some("mytype2")),
            ("    float x = y z;", Some("y")),
            ("    vec4 v; int k;", None),
        ] {
            assert_eq!(unknown_type_in(line).as_deref(), name, "{line}");
        }
        let mut d = diag("k.rs:3", "error: '' :  syntax error, unexpected IDENTIFIER");
        name_unknown_type(&mut d, "layout (binding = 0) buffer b { sfpvex4 d[]; };");
        assert_eq!(
            d.message,
            "error: `sfpvex4` is not a type: neither GLSL, vkprism nor the kernel declares it (did you mean `sfpvec4`?); glslang says: '' :  syntax error, unexpected IDENTIFIER"
        );
    }

    #[test]
    fn fp16pa_pack_errors_get_the_hint() {
        assert!(
            super::hint("'packFloat2x16' : no matching overloaded function found")
                .contains("afp(2)")
        );
        assert!(super::hint("'foo' : no matching overloaded function found").is_empty());
    }
}
