//! Phase 1, parse: the macro's input as written ([`Input`]), then with its keys validated
//! ([`KernelSpec`]).
//!
//! ```text
//! compute_shader! {
//!     /// docs
//!     pub mod add_one,                // visibility and module name of the generated bindings
//!     src: r#"#version 450 ..."#,    // inline extended GLSL, or
//!     path: "kernels/add_one.comp",   // a file relative to the invoking Rust file
//!     variants: [fp32, fp16sa],       // optional: narrow the variant list
//!     optimize: true,                 // optional: ship spirv-opt's performance output
//!     crate: ::vkprism,               // optional: path of the vkprism facade
//! }
//! ```

use crate::ctxt::Ctxt;
use proc_macro2::Span;
use syn::parse::{Parse, ParseStream};
use syn::{Attribute, Ident, LitStr, Path, Token, Visibility};

/// The macro's input as written.
pub struct Input {
    /// Attributes (docs) for the generated module.
    pub attrs: Vec<Attribute>,
    /// The generated module's visibility.
    pub vis: Visibility,
    /// The generated module's name, which is also the kernel's.
    pub name: Ident,
    /// The `key: value` entries, in order.
    pub entries: Vec<Entry>,
}

/// One `key: value` entry, before validation.
pub struct Entry {
    /// The key (`crate` included, though it is a keyword).
    pub key: Ident,
    /// Its value.
    pub value: Value,
}

/// A value of any shape a key takes; `KernelSpec` checks it has the shape its key wants.
pub enum Value {
    /// A string literal (`src`, `path`).
    Str(LitStr),
    /// `true` or `false` (`optimize`).
    Bool(syn::LitBool),
    /// `[a, b]` (`variants`), with the span of the brackets.
    List(Vec<Ident>, Span),
    /// A path (`crate`).
    Path(Path),
}

impl Parse for Input {
    fn parse(input: ParseStream) -> syn::Result<Self> {
        let attrs = input.call(Attribute::parse_outer)?;
        let vis: Visibility = input.parse()?;
        input.parse::<Token![mod]>().map_err(|e| {
            syn::Error::new(
                e.span(),
                "expected `mod <name>` (e.g. `pub mod add_one,`) first",
            )
        })?;
        let name: Ident = input.parse()?;
        let mut entries = Vec::new();
        while !input.is_empty() {
            input.parse::<Token![,]>()?;
            if input.is_empty() {
                break;
            }
            let key: Ident = if input.peek(Token![crate]) {
                let k: Token![crate] = input.parse()?;
                Ident::new("crate", k.span)
            } else {
                input.parse()?
            };
            input.parse::<Token![:]>()?;
            let value = if input.peek(LitStr) {
                Value::Str(input.parse()?)
            } else if input.peek(syn::LitBool) {
                Value::Bool(input.parse()?)
            } else if input.peek(syn::token::Bracket) {
                let content;
                let bracket = syn::bracketed!(content in input);
                let items = content.parse_terminated(Ident::parse, Token![,])?;
                Value::List(items.into_iter().collect(), bracket.span.join())
            } else {
                Value::Path(input.parse()?)
            };
            entries.push(Entry { key, value });
        }
        Ok(Input {
            attrs,
            vis,
            name,
            entries,
        })
    }
}

/// The source of the kernel.
#[derive(Clone)]
pub enum SourceSpec {
    /// `src: "..."`: the text itself.
    Inline(LitStr),
    /// `path: "..."`: a file relative to the invoking Rust file.
    File(LitStr),
}

impl SourceSpec {
    /// The literal, whichever key gave it.
    pub fn lit(&self) -> &LitStr {
        match self {
            SourceSpec::Inline(l) | SourceSpec::File(l) => l,
        }
    }
}

/// The input with every key checked. Errors go to `cx`; what could not be
/// understood is left at its default so later phases can still run and report their own errors.
pub struct KernelSpec {
    /// Attributes (docs) for the generated module.
    pub attrs: Vec<Attribute>,
    /// The generated module's visibility.
    pub vis: Visibility,
    /// The generated module's name, which is also the kernel's.
    pub name: Ident,
    /// The kernel's text or file; `None` after an error.
    pub source: Option<SourceSpec>,
    /// The user's list of variants, or `None` for all of them.
    pub variants: Option<Vec<Ident>>,
    /// Path of the vkprism facade (`::vkprism` unless `crate:` says otherwise).
    pub krate: Path,
    /// Ship SPIR-V through spirv-opt's performance passes (reflection still reads the
    /// unoptimized module, which keeps its names).
    pub optimize: bool,
}

const KEYS: &[&str] = &["src", "path", "variants", "optimize", "crate"];

impl KernelSpec {
    /// Checks every key of `input`.
    pub fn from_input(cx: &Ctxt, input: Input) -> KernelSpec {
        let mut source: Option<SourceSpec> = None;
        let mut variants = None;
        let mut krate: Option<Path> = None;
        let mut optimize = false;
        let mut seen: Vec<String> = Vec::new();
        for Entry { key, value } in input.entries {
            let k = key.to_string();
            if seen.contains(&k) {
                cx.error(key.span(), format!("duplicate key `{k}`"));
                continue;
            }
            seen.push(k.clone());
            match (k.as_str(), value) {
                ("src", Value::Str(s)) => set_source(cx, &mut source, SourceSpec::Inline(s), &key),
                ("path", Value::Str(s)) => set_source(cx, &mut source, SourceSpec::File(s), &key),
                ("variants", Value::List(list, span)) => {
                    if list.is_empty() {
                        cx.error(
                            span,
                            "`variants` is empty: list at least one variant or leave the key out",
                        );
                    }
                    variants = Some(list)
                }
                ("crate", Value::Path(p)) => krate = Some(p),
                ("optimize", Value::Bool(b)) => optimize = b.value,
                ("optimize", _) => cx.error(key.span(), "`optimize` takes `true` or `false`"),
                ("src" | "path", _) => {
                    cx.error(key.span(), format!("`{k}` takes a string literal"))
                }
                ("variants", _) => {
                    cx.error(key.span(), "`variants` takes a list, e.g. `[fp32, fp16sa]`")
                }
                ("crate", _) => cx.error(key.span(), "`crate` takes a path, e.g. `::vkprism`"),
                _ => cx.error(
                    key.span(),
                    format!("unknown key `{k}`; expected one of: {}", KEYS.join(", ")),
                ),
            }
        }
        if source.is_none() && !seen.iter().any(|k| k == "src" || k == "path") {
            cx.error(
                input.name.span(),
                "missing kernel source: add `src: \"...\"` or `path: \"file.comp\"`",
            );
        }
        KernelSpec {
            attrs: input.attrs,
            vis: input.vis,
            name: input.name,
            source,
            variants,
            krate: krate.unwrap_or_else(|| syn::parse_quote!(::vkprism)),
            optimize,
        }
    }
}

fn set_source(cx: &Ctxt, slot: &mut Option<SourceSpec>, new: SourceSpec, key: &Ident) {
    if slot.is_some() {
        cx.error(
            key.span(),
            "give the kernel source once: `src` and `path` exclude each other",
        );
    } else {
        *slot = Some(new);
    }
}
