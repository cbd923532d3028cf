//! The module of a kernel that failed: its errors, and stubs of the names whose shape doesn't
//! depend on the kernel, so that code using the kernel reports the kernel's error rather than a
//! cascade of unresolved names.
//!
//! `BufferBindings` and `ImageBindings` are deliberately not stubbed: their fields are what
//! reflection would have found, and a struct accepts only the fields it declares, so a fieldless
//! stub would turn `&k::BufferBindings { a: &x, b: &y }` into one "no field named" error per
//! field, more than no stub at all. Instead the errors are emitted *inside* the module: rustc
//! (1.95 and later, rust-lang/rust#149484) takes a module holding `compile_error!` as one whose
//! items may be missing because of that error and reports no failed lookup in it, so every use
//! of the missing names stays silent (`tests/ui/glsl/bindings_used_after_error_reported_once.rs`).
//! Older compilers report each use once ("cannot find struct `BufferBindings` in module `k`").
//! `PushConstants` and `SpecConstants` keep the stubs of a kernel without constants, so
//! `Default::default()` works; a literal naming their fields still reports those fields.

use super::private;
use crate::ast::KernelSpec;
use proc_macro2::TokenStream;
use quote::quote;

/// The kernel's module with `errors` (every one, as `compile_error!`) and the stubs.
pub fn fallback(spec: &KernelSpec, errors: syn::Error) -> TokenStream {
    let p = private(spec);
    let (attrs, vis, name) = (&spec.attrs, &spec.vis, &spec.name);
    let name_str = name.to_string();
    let errors = errors.to_compile_error();
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
            pub type PushConstants = #p::NoPushConstants;
            #[derive(::core::marker::Copy, ::core::clone::Clone, ::core::fmt::Debug, ::core::default::Default, ::core::cmp::PartialEq)]
            pub struct SpecConstants {}
            impl #p::SpecConstants for SpecConstants {
                fn entries(&self) -> ::std::vec::Vec<(u32, u32)> { ::std::vec::Vec::new() }
            }
        }
    }
}
