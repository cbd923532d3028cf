//! Phase 8, codegen: the Rust module for one kernel, one generator per item (`info`: the
//! metadata tables, `push`: `PushConstants`, `spec`: `SpecConstants`, `bindings`: the bindings
//! structs), or `fallback`'s stubs beside the errors. Everything is named by absolute path
//! through `<crate>::__private_<version>`, so the user's crate needs no other dependency;
//! layouts are checked by `const` assertions.

mod bindings;
mod fallback;
mod info;
mod push;
mod spec;

pub use fallback::fallback;

use crate::ast::KernelSpec;
use crate::model::KernelModel;
use crate::share::Shared;
use proc_macro2::{Ident, Span, TokenStream};
use quote::quote;
use std::path::PathBuf;

/// The whole generated module.
pub fn kernel(
    spec: &KernelSpec,
    model: &KernelModel,
    files: &[PathBuf],
    shared: &Shared,
) -> TokenStream {
    let p = private(spec);
    let (attrs, vis, name) = (&spec.attrs, &spec.vis, &spec.name);
    let info = info::items(&p, &name.to_string(), model);
    let push = match &shared.push {
        Some(owner) => reexport(owner, "PushConstants"),
        None => push::items(&p, model.push.as_ref(), &shared.push_users),
    };
    let spec_constants = match &shared.spec {
        Some(owner) => reexport(owner, "SpecConstants"),
        None => spec::items(&p, model, &shared.spec_users),
    };
    let bindings = bindings::items(&p, &name.to_string(), model);
    // Each file read is a rebuild dependency.
    let deps = files.iter().map(|f| {
        let f = f.display().to_string();
        quote!(
            const _: &[u8] = ::core::include_bytes!(#f);
        )
    });
    quote! {
        #(#attrs)*
        #vis mod #name {
            #![allow(clippy::all)]
            #info
            #push
            #spec_constants
            #bindings
            #(#deps)*
        }
    }
}

/// `pub use` of another kernel's type (`share`): the kernels are sibling modules.
fn reexport(owner: &Ident, ty: &str) -> TokenStream {
    let ty = Ident::new(ty, Span::call_site());
    let doc = format!(" The `{ty}` of [`{owner}`](super::{owner}), shared (`share`).");
    quote! {
        #[doc = #doc]
        pub use super::#owner::#ty;
    }
}

/// " Also the `T` of `a`, `b`." for a type other kernels share, else nothing.
fn users_doc(ty: &str, users: &[String]) -> String {
    if users.is_empty() {
        return String::new();
    }
    let names: Vec<String> = users
        .iter()
        .map(|u| format!("[`{u}`](super::{u})"))
        .collect();
    format!(" Also the `{ty}` of {} (`share`).", names.join(", "))
}

/// The name of the facade's module for generated code: versioned, so a macro and a facade of
/// different versions fail to build rather than disagree on the layout of what they share.
fn private_module() -> Ident {
    Ident::new(
        &vkprism_core::private_module_name(env!("CARGO_PKG_VERSION")),
        Span::call_site(),
    )
}

/// `<crate>::__private_<version>` as seen from inside the generated module: a path relative to
/// the invocation (`vkp`, `self::vkp`) is one level up from there (two under `shaders`).
fn private(spec: &KernelSpec) -> TokenStream {
    let krate = &spec.krate;
    let module = private_module();
    let first = krate
        .segments
        .first()
        .map(|s| s.ident.to_string())
        .unwrap_or_default();
    // One `super` out of the kernel's module, one more per module it is nested in.
    let supers = std::iter::repeat_n(quote!(super::), spec.nesting);
    if krate.leading_colon.is_some() || first == "crate" {
        quote!(#krate::#module)
    } else if first == "self" {
        let rest = krate.segments.iter().skip(1);
        quote!(#(#supers)* super #(::#rest)* ::#module)
    } else {
        quote!(#(#supers)* super::#krate::#module)
    }
}

/// The name of the field a binding gets in its bindings struct (the model checks two bindings
/// don't share one).
pub(crate) fn binding_field_name(b: &crate::reflect::Binding) -> String {
    bindings::binding_field(b).to_string()
}

/// An identifier spelled like the value's `Debug` (enum variant names).
fn dbg_ident(x: &impl std::fmt::Debug) -> Ident {
    Ident::new(&format!("{x:?}"), Span::call_site())
}

/// A Rust identifier for a GLSL name (raw for keywords, `fallback` when there is none).
fn field_ident(name: &str, fallback: &str) -> Ident {
    if name.is_empty()
        || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        || name.starts_with(|c: char| c.is_ascii_digit())
    {
        return Ident::new(fallback, Span::call_site());
    }
    if syn::parse_str::<Ident>(name).is_ok() {
        Ident::new(name, Span::call_site())
    } else if matches!(name, "self" | "Self" | "super" | "crate" | "_") {
        Ident::new(&format!("{name}_"), Span::call_site())
    } else {
        Ident::new_raw(name, Span::call_site())
    }
}
