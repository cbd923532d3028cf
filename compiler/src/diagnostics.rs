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
}

/// The order messages are reported in: by file, then by line as a number (`:68` before
/// `:1016`); messages without a line last. A stable sort keeps glslang's order within a line,
/// where the cause comes before what follows from it.
pub(crate) fn position(d: &Diagnostic) -> (bool, &str, u64) {
    match d.location.rsplit_once(':') {
        Some((file, line)) if line.parse::<u64>().is_ok() => {
            (false, file, line.parse().unwrap_or(0))
        }
        _ => (true, d.location.as_str(), 0),
    }
}

impl GroupedDiagnostics {
    /// Adds the messages of the variant `key`.
    pub fn add(&mut self, key: VariantKey, diagnostics: Vec<Diagnostic>) {
        for d in diagnostics {
            let at = match self.variants_of.iter().position(|(x, _)| *x == d) {
                Some(at) => at,
                None => {
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
        self.variants_of
            .sort_by(|(a, _), (b, _)| position(a).cmp(&position(b)));
        let none = self.variants_of.is_empty();
        for (d, names) in self.variants_of {
            let which = if names.len() == emitted && emitted > 1 {
                "every variant".to_string()
            } else {
                format!("variant {}", names.join(", "))
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

/// The most common fp16-arithmetic surprise deserves a hint, also where it surfaces inside a
/// buffer function of fp16pa (whose stores pack with `packFloat2x16`, which takes `f16vec2`
/// only).
fn hint(message: &str) -> &'static str {
    let in_fp16_pack = (message.contains("packFloat2x16") || message.contains("unpackFloat2x16"))
        && message.contains("no matching overloaded function");
    if message.contains("float16_t")
        && (message.contains("no operation") || message.contains("cannot convert"))
    {
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
        g.variants_of
            .sort_by(|(a, _), (b, _)| position(a).cmp(&position(b)));
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
    fn fp16pa_pack_errors_get_the_hint() {
        assert!(
            super::hint("'packFloat2x16' : no matching overloaded function found")
                .contains("afp(2)")
        );
        assert!(super::hint("'foo' : no matching overloaded function found").is_empty());
    }
}
