//! `compute_shader!`: a thin proc-macro shell over `vkprism-compiler`, which does all the work
//! as a plain library (so it can be tested without a proc macro). Use it through the `vkprism`
//! facade, which documents the macro's input.

#![deny(missing_docs)]

use proc_macro::TokenStream;

/// Compiles an inline or file kernel in extended GLSL to SPIR-V for every variant at build time
/// and expands to a module with its typed bindings (see the `vkprism` crate's documentation).
#[proc_macro]
pub fn compute_shader(input: TokenStream) -> TokenStream {
    vkprism_compiler::expand(input.into()).into()
}
