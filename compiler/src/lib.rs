//! vkprism's kernel compiler: the work behind `compute_shader!`, as a plain library (no
//! `proc_macro` types), so it is unit-tested directly and can serve a `build.rs` or a CLI.
//!
//! Phases, one module each:
//! 1. [`ast`]: parse the macro input; validate its keys.
//! 2. [`source`]: read the kernel text and its `#include`s.
//! 3. [`scan`]: lexical checks (unknown extended functions, `psc` needs `p`) and the variant axes.
//! 4. [`variants`]: enumerate the variants, apply the user's list.
//! 5. [`preamble`] + [`compile`]: per-variant GLSL, compiled by shaderc in parallel.
//! 6. [`reflect`]: SPIR-V reflection.
//! 7. [`model`]: merge reflections, check variants agree.
//! 8. [`codegen`]: the Rust module, or stubs plus every error at once ([`ctxt`]).

pub mod ast;
pub mod codegen;
pub mod compile;
mod coopmat;
mod glslang;
pub mod ctxt;
pub mod model;
pub mod preamble;
pub mod reflect;
pub mod scan;
pub mod source;
pub mod variants;

use ctxt::Ctxt;
use proc_macro2::TokenStream;
use std::collections::BTreeMap;

/// The entry point of `compute_shader!`.
pub fn expand(input: TokenStream) -> TokenStream {
    let input: ast::Input = match syn::parse2(input) {
        Ok(i) => i,
        Err(e) => return e.to_compile_error(),
    };
    let cx = Ctxt::new();
    let spec = ast::KernelSpec::from_input(&cx, input);
    let built = spec
        .source
        .as_ref()
        .and_then(|s| source::Source::load(&cx, s))
        .and_then(|source| {
            let requested = spec
                .variants
                .as_ref()
                .map(|v| v.iter().map(|i| (i.to_string(), i.span())).collect());
            let model = compile_kernel(&cx, &source, requested)?;
            let model = if spec.optimize {
                optimize(&cx, &source, model)?
            } else {
                model
            };
            Some((model, source))
        });
    if let (Some((model, source)), false) = (&built, cx.has_errors()) {
        match codegen::kernel(&spec, model, &source.files) {
            Ok(ts) => return ts,
            Err(e) => cx.error(source.span, e),
        }
    }
    let mut out = cx.into_compile_errors();
    out.extend(codegen::fallback(&spec));
    out
}

/// Phases 3 to 7 on a loaded source. Errors go to `cx` (at the source's span).
pub fn compile_kernel(
    cx: &Ctxt,
    source: &source::Source,
    requested: Option<Vec<(String, proc_macro2::Span)>>,
) -> Option<model::KernelModel> {
    let span = source.span;
    let all_idents = scan::identifiers(&source.all_text);
    let main_idents = scan::identifiers(&source.text);

    for (name, line) in scan::unknown_functions(&all_idents) {
        let at = if main_idents.iter().any(|(n, _)| *n == name) {
            source.locate(line_in_main(&main_idents, &name).unwrap_or(line))
        } else {
            "an included file".to_string()
        };
        cx.error(span, format!("{at}: unknown extended GLSL function `{name}`; known: buffer_ld/st/cp 1/2/4/8, buffer_cp1to4/1to8/4to8/4to1/8to1/8to4, image1d/2d/3d_ld/st/cp 1/4/8, sfp2lfp(vec4), lfp2afp(vec4), i8buffer_ld/st/cp 1/4"));
    }
    if let Some(line) = scan::uses_psc(&source.all_text, &all_idents) {
        match push_instance_name(&source.all_text) {
            Some(n) if n == "p" => {}
            found => cx.error(span, format!(
                "{}: psc() reads the push constant of the same name from a block named `p`, but {}; declare `layout (push_constant) uniform parameter {{ ... }} p;`",
                source.locate(line),
                match found { Some(n) => format!("the push-constant block is named `{n}`"), None => "the kernel declares no push-constant block".to_string() }
            )),
        }
    }
    let axes = scan::Axes::of(&all_idents);
    let emit = variants::select(cx, &axes, requested)?;
    if cx.has_errors() {
        return None;
    }

    let mut jobs: Vec<vkprism_core::VariantKey> = emit.clone();
    for k in &emit {
        let r = model::reference_key(k);
        if !jobs.contains(&r) {
            jobs.push(r);
        }
    }
    let texts = jobs
        .iter()
        .map(|k| (*k, compile::variant_text(source, k, &all_idents)))
        .collect();
    let results = compile::compile_all(&source.meta, texts);

    // Group identical messages across variants so one mistake reads as one error.
    let mut grouped: BTreeMap<compile::Diagnostic, Vec<String>> = BTreeMap::new();
    let mut compiled = BTreeMap::new();
    for (key, r) in results {
        match r {
            Ok(words) => match reflect::reflect(&words) {
                Ok(refl) => {
                    compiled.insert(key, (words, refl));
                }
                Err(e) => cx.error(span, format!("variant `{key}`: {}", e.0)),
            },
            Err(diags) if emit.contains(&key) => {
                for d in diags {
                    let keys = grouped.entry(d).or_default();
                    if !keys.contains(&key.name()) {
                        keys.push(key.name());
                    }
                }
            }
            // A reference variant the user did not ask for may fail: binding formats then
            // fall back to the element type alone.
            Err(_) => {}
        }
    }
    // glslang goes on after an error and often adds follow-on errors in some variants at the same
    // line; where one message holds for every variant, it is the cause: report that one.
    let universal: Vec<String> = grouped
        .iter()
        .filter(|(d, k)| k.len() == emit.len() && !d.location.is_empty())
        .map(|(d, _)| d.location.clone())
        .collect();
    grouped.retain(|d, k| k.len() == emit.len() || !universal.contains(&d.location));
    for (d, keys) in grouped {
        let which = if keys.len() == emit.len() && emit.len() > 1 {
            "every variant".to_string()
        } else {
            format!("variant {}", keys.join(", "))
        };
        let at = if d.location.is_empty() {
            String::new()
        } else {
            format!("{}: ", d.location)
        };
        // The most common fp16-arithmetic surprise deserves a hint.
        let hint = if d.message.contains("float16_t")
            && (d.message.contains("no operation") || d.message.contains("cannot convert"))
        {
            "; hint: GLSL has no implicit conversion from int or float to float16_t, so in fp16-arithmetic variants write `afp(123)` / `afpvec4(...)` around literals and fp32 values"
        } else {
            ""
        };
        cx.error(span, format!("GLSL ({which}): {at}{}{hint}", d.message));
    }
    if cx.has_errors() {
        return None;
    }
    match model::build(&compiled, &emit) {
        Ok(m) => Some(m),
        Err(errs) => {
            for e in errs {
                cx.error(span, e);
            }
            None
        }
    }
}

/// Replaces each variant's SPIR-V by spirv-opt's performance output (compiled from the same
/// text; the reflection already made from the unoptimized module stays).
pub fn optimize(
    cx: &Ctxt,
    source: &source::Source,
    mut model: model::KernelModel,
) -> Option<model::KernelModel> {
    let idents = scan::identifiers(&source.all_text);
    let jobs = model
        .variants
        .iter()
        .map(|v| (v.key, compile::variant_text(source, &v.key, &idents)))
        .collect();
    for (key, result) in compile::compile_all_at(&source.meta, jobs, true) {
        match result {
            Ok(words) => {
                if let Some(v) = model.variants.iter_mut().find(|v| v.key == key) {
                    v.spirv = words;
                }
            }
            Err(d) => cx.error(
                source.span,
                format!("variant `{key}`: optimizing failed: {:?}", d),
            ),
        }
    }
    (!cx.has_errors()).then_some(model)
}

fn line_in_main(idents: &[(String, u32)], name: &str) -> Option<u32> {
    idents.iter().find(|(n, _)| n == name).map(|(_, l)| *l)
}

/// The instance name of the `push_constant` block, read lexically for the `psc` diagnostic
/// (reflection can't help: without `p` the kernel doesn't compile).
fn push_instance_name(text: &str) -> Option<String> {
    let at = text.find("push_constant")?;
    let rest = &text[at..];
    let close = rest.find('}')?;
    let after = rest[close + 1..].trim_start();
    let name: String = after
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
        .collect();
    Some(name)
}
