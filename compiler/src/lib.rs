//! vkprism's kernel compiler: the work behind `compute_shader!`, as a plain library (no
//! `proc_macro` types), so it is unit-tested directly and can serve a `build.rs` or a CLI.
//!
//! This file drives the phases; each lives in its own module, in the order they run:
//! 1. `ast`: parse the macro input, validate its keys.
//! 2. `source`: read the kernel text and its `#include`s.
//! 3. `scan` + `valid`: the identifiers the text uses, which decide the variant axes; lexical
//!    checks (unknown extended functions, `psc` without a block named `p`); `budget`: the size
//!    the kernel's macros expand to, bounded before any preprocessor runs.
//! 4. `variants`: enumerate the variants, apply the user's list; `expanded`: each variant's
//!    text after the preprocessor, for the per-variant checks of `valid` (unknown extended
//!    names, constructors that store the wrong bits).
//! 5. `preamble` + `compile`: per-variant GLSL, compiled in parallel by `toolchain` (glslang,
//!    in-process; `includes`: the bounded include expansion it reads); `diagnostics` groups the
//!    compiler's messages across variants.
//! 6. `reflect`: SPIR-V reflection of each variant.
//! 7. `model`: merge the reflections, check the variants agree.
//! 8. `codegen`: the Rust module, or (`codegen::fallback`) stubs beside every error at once.
//!
//! Errors are collected in a [`Ctxt`] and taken out once, by [`Ctxt::check`].

mod ast;
mod budget;
mod codegen;
mod compile;
mod ctxt;
mod declared;
mod diagnostics;
mod dump;
mod expanded;
mod includes;
mod model;
mod options;
mod preamble;
mod precompiled;
mod reflect;
mod scan;
mod share;
mod source;
mod tested;
mod toolchain;
mod valid;
mod variants;

pub use compile::compiles_in_flight;
pub use ctxt::Ctxt;
pub use model::{KernelModel, VariantModel};
pub use options::{define_name_error, define_value_error, KernelOptions, VulkanVersion};
pub use reflect::{Binding, PushBlock, PushMember, SpecConstant};
pub use source::Source;

use diagnostics::GroupedDiagnostics;
use proc_macro2::{Span, TokenStream};
use reflect::Reflection;
use scan::Identifiers;
use std::collections::BTreeMap;
use vkprism_core::VariantKey;

/// The entry point of `compute_shader!`: the macro's input in, the kernel's module out (one
/// module per kernel under `shaders`), or the module's stubs beside every error found.
pub fn expand(input: TokenStream) -> TokenStream {
    let input: ast::Input = match syn::parse2(input) {
        Ok(i) => i,
        Err(e) => return e.to_compile_error(),
    };
    let cx = Ctxt::new();
    match ast::Invocation::from_input(&cx, input) {
        ast::Invocation::One(spec) => {
            let expanded = expand_kernel(cx, &spec);
            let prefix = spec.name.to_string();
            dump::finish(
                spec.dump.as_ref(),
                &prefix,
                false,
                expanded.tokens,
                &[expanded.dump],
            )
        }
        ast::Invocation::Many {
            attrs,
            vis,
            name,
            kernels,
        } => {
            let errors = cx.check().err().map(|e| e.to_compile_error());
            let dump_dir = kernels.first().and_then(|(_, s)| s.dump.clone());
            let built: Vec<(Built, ast::KernelSpec)> = kernels
                .into_iter()
                .map(|(kcx, spec)| (build_kernel(kcx, &spec), spec))
                .collect();
            let share_cx = Ctxt::new();
            let members: Vec<share::Member<'_>> = built
                .iter()
                .map(|(b, spec)| share::Member {
                    name: &spec.name,
                    shares: &spec.shares,
                    model: b.model.as_ref().filter(|_| !b.cx.has_errors()),
                })
                .collect();
            let shared = share::resolve(&share_cx, &members);
            let share_errors = share_cx.check().err().map(|e| e.to_compile_error());
            let (modules, dumps): (Vec<_>, Vec<_>) = built
                .into_iter()
                .zip(&shared)
                .map(|((b, spec), shared)| {
                    let e = finish_kernel(b, &spec, shared);
                    (e.tokens, e.dump)
                })
                .unzip();
            let tokens = quote::quote! {
                #(#attrs)*
                #vis mod #name {
                    #errors
                    #share_errors
                    #(#modules)*
                }
            };
            dump::finish(dump_dir.as_ref(), &name.to_string(), true, tokens, &dumps)
        }
    }
}

/// One kernel's module and what `dump` writes of it.
struct Expanded {
    tokens: TokenStream,
    dump: dump::Kernel,
}

/// Phases 2 to 8 for one kernel of the macro, with its key errors already in `cx`.
fn expand_kernel(cx: Ctxt, spec: &ast::KernelSpec) -> Expanded {
    finish_kernel(build_kernel(cx, spec), spec, &share::Shared::default())
}

/// One kernel after phases 2 to 7: its errors so far, its source and its model.
struct Built {
    cx: Ctxt,
    source: Option<Source>,
    model: Option<KernelModel>,
}

/// Phases 2 to 7 for one kernel of the macro, with its key errors already in `cx`.
fn build_kernel(cx: Ctxt, spec: &ast::KernelSpec) -> Built {
    let (source, model) = match &spec.source {
        Some(ast::SourceSpec::Bytes(lit)) => (
            None,
            precompiled::load(&cx, lit, &spec.options, spec.variants.as_deref()),
        ),
        Some(s) => {
            let source = Source::load(&cx, s, &spec.options);
            let model = source.as_ref().and_then(|src| build(&cx, spec, src));
            (source, model)
        }
        None => (None, None),
    };
    Built { cx, source, model }
}

/// Phase 8 for one built kernel: its module (taking the types in `shared` from the kernels
/// that own them), or its stubs beside its errors.
fn finish_kernel(built: Built, spec: &ast::KernelSpec, shared: &share::Shared) -> Expanded {
    let Built { cx, source, model } = built;
    let name = spec.name.to_string();
    let dump = dump::Kernel::of(&name, spec, source.as_ref(), model.as_ref());
    let tokens = match (cx.check(), model) {
        (Ok(()), Some(model)) => {
            let files = match (&source, &model.precompiled) {
                (Some(s), _) => s.files.clone(),
                (None, Some(path)) => vec![path.clone()],
                (None, None) => Vec::new(),
            };
            codegen::kernel(spec, &model, &files, shared)
        }
        (Err(errors), _) => codegen::fallback(spec, errors, source.as_ref()),
        (Ok(()), None) => codegen::fallback(
            spec,
            syn::Error::new(
                spec.name.span(),
                "internal error: the kernel failed to compile but no phase said why",
            ),
            source.as_ref(),
        ),
    };
    Expanded { tokens, dump }
}

/// Phases 3 to 7 for the macro on a loaded source: the model.
fn build(cx: &Ctxt, spec: &ast::KernelSpec, source: &Source) -> Option<KernelModel> {
    let requested = spec
        .variants
        .as_ref()
        .map(|v| v.iter().map(|i| (i.to_string(), i.span())).collect());
    compile_kernel(cx, source, requested)
}

/// Phases 3 to 7 on a loaded source: `requested` narrows the variants (names with the span to
/// report a bad one at). Errors go to `cx`; `None` when there was one.
pub fn compile_kernel(
    cx: &Ctxt,
    source: &Source,
    requested: Option<Vec<(String, Span)>>,
) -> Option<KernelModel> {
    let idents = Identifiers::of(&source.text, &source.all_text);
    let tested = tested::TestedFacts::of(&source.all_text, &scan::defined_names(&source.all_text));
    let text_ok = valid::check(cx, source, &idents, &tested);
    // Nothing reaches glslang (its preprocessor included) whose macros expand past the budget.
    if !budget::check(cx, source) {
        return None;
    }
    let axes = scan::Axes::of(&idents.all);
    let emit = variants::select(cx, source.span, &axes, &tested.choices(), requested)?;
    // Preprocessing and compiling share one deadline.
    let deadline = std::time::Instant::now() + compile::time_limit();
    let uses = expanded::variant_uses(source, &emit, &tested, deadline);
    let variants_ok = valid::check_variants(cx, source, &uses, emit.len());
    if !(text_ok && variants_ok) {
        return None;
    }
    let compiled = compile_variants(cx, source, &idents, &tested, &emit, deadline)?;
    let idents = &idents;
    match model::build(&compiled, &emit) {
        Ok(mut m) => {
            for v in &mut m.variants {
                v.tested_facts = tested.facts.clone();
            }
            Some(KernelModel {
                vulkan_version: source.meta.options.vulkan_version,
                ..m
            })
        }
        Err(errors) => {
            for e in errors {
                cx.error(source.span, format!("{}: {e}", anchor(source, idents, &e)));
            }
            None
        }
    }
}

/// Where in the kernel an error found after compiling (reflection, the model) is reported: the
/// first line of the main text that uses a name the message quotes in backticks, else the line
/// declaring the push-constant block for a message about it, else the kernel's first line.
fn anchor(source: &Source, idents: &Identifiers, message: &str) -> String {
    let first_lines: std::collections::HashMap<&str, u32> = idents
        .main
        .iter()
        .rev()
        .map(|(n, l)| (n.as_str(), *l))
        .collect();
    let quoted = message.split('`').skip(1).step_by(2);
    let line = quoted
        .filter_map(|q| first_lines.get(q).copied())
        .next()
        .or_else(|| {
            message
                .contains("push")
                .then(|| first_lines.get("push_constant").copied())
                .flatten()
        })
        .unwrap_or(1);
    source.locate(line)
}

/// Compiles and reflects the variants in `emit` and the reference variant of each (which
/// [`model::binding_format`] compares with). A reference variant the user did not ask for may
/// fail: binding formats then fall back to the element type alone.
fn compile_variants(
    cx: &Ctxt,
    source: &Source,
    idents: &Identifiers,
    tested: &tested::TestedFacts,
    emit: &[VariantKey],
    deadline: std::time::Instant,
) -> Option<BTreeMap<VariantKey, (Vec<u32>, Reflection)>> {
    let mut keys: Vec<VariantKey> = emit.to_vec();
    for k in emit {
        let reference = model::reference_key(k);
        if !keys.contains(&reference) {
            keys.push(reference);
        }
    }
    let jobs = keys
        .iter()
        .map(|k| (*k, compile::variant_text(source, k, &idents.all, tested)))
        .collect();
    // One error per distinct reflection failure, naming every variant that hit it.
    let mut reflect_errors: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut glsl_errors = GroupedDiagnostics::default();
    let mut compiled = BTreeMap::new();
    // The main text's lines, for the messages that quote one (made once: a kernel may have
    // thousands of messages).
    let mut kernel_lines: Option<Vec<&str>> = None;
    for (key, result) in compile::compile_all(&source.meta, jobs, deadline) {
        // Reflection reads glslang's output; a module it can't handle is an error, not a panic.
        let reflected = result.map(|words| {
            let r = std::panic::catch_unwind(|| reflect::reflect(&words)).unwrap_or_else(|_| {
                Err(reflect::ReflectError(
                    "internal error: reflecting the SPIR-V panicked".into(),
                ))
            });
            (r, words)
        });
        match reflected {
            Ok((Ok(reflection), words)) => {
                compiled.insert(key, (words, reflection));
            }
            Ok((Err(e), _)) => reflect_errors.entry(e.0).or_default().push(key.name()),
            Err(mut diagnostics) if emit.contains(&key) => {
                let lines = kernel_lines.get_or_insert_with(|| source.text.lines().collect());
                for d in &mut diagnostics {
                    if let Some(line) = kernel_line(source, lines, &d.location) {
                        diagnostics::name_unknown_type(d, line);
                    }
                }
                glsl_errors.add(key, diagnostics)
            }
            Err(_) => {}
        }
    }
    let ok = reflect_errors.is_empty();
    for (message, keys) in reflect_errors {
        let which = if keys.len() == 1 {
            format!("variant `{}`", keys[0])
        } else {
            format!("variants {}", keys.join(", "))
        };
        let at = anchor(source, idents, &message);
        cx.error(source.span, format!("{at}: {which}: {message}"));
    }
    let glsl_ok = glsl_errors.report(cx, source.span, emit.len());
    (ok && glsl_ok).then_some(compiled)
}

/// The main text's line (of its `lines`) that a message located at `location` (`file:line`, as
/// `Source::locate` writes it) is about; `None` for a place in an include.
fn kernel_line<'a>(source: &Source, lines: &[&'a str], location: &str) -> Option<&'a str> {
    let (file, line) = location.rsplit_once(':')?;
    let first = source.locate(1);
    let (first_file, first_line) = first.rsplit_once(':')?;
    if file != first_file {
        return None;
    }
    let k = line
        .parse::<usize>()
        .ok()?
        .checked_sub(first_line.parse().ok()?)?;
    lines.get(k).copied()
}

/// The full GLSL text of variant `key` of `source`: the preamble of extended-GLSL definitions for
/// that variant spliced after `#version`, then the kernel (what the GLSL compiler sees; for
/// inspection, `vkprismc --emit glsl`).
pub fn variant_glsl(source: &Source, key: &VariantKey) -> String {
    let tested = tested::TestedFacts::of(&source.all_text, &scan::defined_names(&source.all_text));
    compile::variant_text(source, key, &scan::identifiers(&source.all_text), &tested)
}

/// The Rust module `compute_shader!` generates for `model` as `pub mod <name>` (`name` made an
/// identifier), pretty-printed: what `dump` writes, for `vkprismc --emit rust`.
pub fn generated_rust(name: &str, model: &KernelModel) -> String {
    let mut ident: String = name
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect();
    if !ident.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_') {
        ident.insert(0, '_');
    }
    let ident = syn::parse_str::<syn::Ident>(&ident)
        .unwrap_or_else(|_| proc_macro2::Ident::new(&format!("{ident}_"), Span::call_site()));
    let spec = ast::KernelSpec {
        attrs: Vec::new(),
        vis: syn::parse_quote!(pub),
        name: ident,
        source: None,
        variants: None,
        krate: syn::parse_quote!(::vkprism),
        options: KernelOptions::default(),
        dump: None,
        nesting: 0,
        shares: Vec::new(),
    };
    dump::pretty(&codegen::kernel(
        &spec,
        model,
        &[],
        &share::Shared::default(),
    ))
}
