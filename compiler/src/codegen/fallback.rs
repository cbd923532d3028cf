//! The module of a kernel that failed: its errors, and stubs whose uses add no error of their
//! own, so the user sees the kernel's real errors only (one error per cause).
//!
//! `PushConstants` and `SpecConstants` keep their fields: the kernel text declares them
//! (`declared.rs` reads `layout (push_constant) uniform … { members } p;` and
//! `layout (constant_id = N) const T name = …;` from the text, no compiler involved), so
//! `k::PushConstants { n: 4, .. }` and `k::SpecConstants { alpha: 1.0, .. }` type-check against a
//! kernel that failed to compile. Types are GLSL's scalars and vectors mapped as codegen maps the
//! reflected ones (`float` → `f32`, `ivec4` → `[i32; 4]`, …); a member of another type (an
//! extended type, a struct, a length given by a macro) is left out, and a use of it is an error
//! of its own. The stubs' layout is not the kernel's (they are `packed`, nothing can load them:
//! the module has no variants). A kernel read from `bytes:` or without a text gets the stubs of
//! a kernel without constants.
//!
//! `BufferBindings` and `ImageBindings` are deliberately not stubbed: which of the two a kernel
//! has depends on its variants, and a struct accepts only the fields it declares, so a wrong stub
//! would turn `&k::BufferBindings { a: &x, b: &y }` into one "no field named" error per field.
//! Instead the errors are emitted *inside* the module: rustc (1.95 and later,
//! rust-lang/rust#149484) takes a module holding `compile_error!` as one whose items may be
//! missing because of that error and reports no failed lookup in it, so every use of the missing
//! names stays silent (`tests/ui/glsl/bindings_used_after_error_reported_once.rs`). Older
//! compilers report each use once ("cannot find struct `BufferBindings` in module `k`").

use super::{field_ident, private};
use crate::ast::KernelSpec;
use crate::declared::{Declared, Field};
use crate::source::Source;
use proc_macro2::TokenStream;
use quote::quote;

/// The kernel's module with `errors` (every one, as `compile_error!`) and the stubs, with the
/// fields `source`'s text declares.
pub fn fallback(spec: &KernelSpec, errors: syn::Error, source: Option<&Source>) -> TokenStream {
    let p = private(spec);
    let (attrs, vis, name) = (&spec.attrs, &spec.vis, &spec.name);
    let name_str = name.to_string();
    let errors = errors.to_compile_error();
    let declared = source
        .map(|s| Declared::of(&s.all_text))
        .unwrap_or_default();
    let push = push_stub(&p, declared.push.as_deref());
    let spec_fields = fields(&declared.spec);
    let spec_fields = spec_fields.iter().map(|(f, ty)| quote!(pub #f: #ty));
    quote! {
        #(#attrs)*
        #vis mod #name {
            #![allow(dead_code, clippy::all)]
            #errors
            #[derive(::core::marker::Copy, ::core::clone::Clone, ::core::fmt::Debug, ::core::default::Default)]
            pub struct Kernel;
            // SAFETY: no variants: nothing can be loaded.
            unsafe impl #p::Kernel for Kernel {
                const INFO: &'static #p::KernelInfo = &INFO;
                type PushConstants = PushConstants;
                type SpecConstants = SpecConstants;
            }
            pub static INFO: #p::KernelInfo = #p::KernelInfo {
                name: #name_str, variants: VARIANTS, push_constants: ::core::option::Option::None,
                spec_constants: &[], local_size: [#p::LocalSizeDim { default: 1, spec_id: ::core::option::Option::None }; 3],
            };
            pub static VARIANTS: &[#p::VariantInfo] = &[];
            pub const VARIANT_NAMES: &[&str] = &[];
            #push
            #[derive(::core::marker::Copy, ::core::clone::Clone, ::core::fmt::Debug, ::core::default::Default, ::core::cmp::PartialEq)]
            pub struct SpecConstants { #(#spec_fields,)* }
            impl #p::SpecConstants for SpecConstants {
                fn entries(&self) -> ::std::vec::Vec<(u32, u32)> { ::std::vec::Vec::new() }
            }
        }
    }
}

/// The fields of known type, as identifiers and types.
fn fields(declared: &[Field]) -> Vec<(proc_macro2::Ident, syn::Type)> {
    declared
        .iter()
        .enumerate()
        .filter_map(|(k, f)| {
            let ty = syn::parse_str::<syn::Type>(f.ty.as_deref()?).ok()?;
            Some((field_ident(&f.name, &format!("field_{k}")), ty))
        })
        .collect()
}

/// `PushConstants`: `NoPushConstants` without a block, else a struct of the block's members
/// (with `new` and `Default`, as the real one has).
fn push_stub(p: &TokenStream, members: Option<&[Field]>) -> TokenStream {
    let Some(members) = members else {
        return quote!(pub type PushConstants = #p::NoPushConstants;);
    };
    let fields = fields(members);
    let decls = fields.iter().map(|(f, ty)| quote!(pub #f: #ty));
    let args = fields.iter().map(|(f, ty)| quote!(#f: #ty));
    let names = fields.iter().map(|(f, _)| f);
    quote! {
        #[repr(C, packed)]
        #[derive(::core::marker::Copy, ::core::clone::Clone, ::core::fmt::Debug, ::core::cmp::PartialEq)]
        pub struct PushConstants { #(#decls,)* }
        impl PushConstants {
            #[allow(clippy::too_many_arguments)]
            pub const fn new(#(#args),*) -> Self { PushConstants { #(#names),* } }
        }
        impl ::core::default::Default for PushConstants {
            fn default() -> Self { <Self as #p::bytemuck::Zeroable>::zeroed() }
        }
        // SAFETY: packed, so no padding, and every field is a number or an array of numbers.
        unsafe impl #p::bytemuck::Zeroable for PushConstants {}
        unsafe impl #p::bytemuck::Pod for PushConstants {}
    }
}
