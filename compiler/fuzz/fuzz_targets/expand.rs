//! `compute_shader!`'s whole work on arbitrary kernel text: every input must come back as tokens
//! that parse (the module, or its stubs beside the errors), never a panic or a hang (run with
//! `-timeout`). The first byte picks the macro's form (inline or `path:`, which variants); the
//! rest, as UTF-8 (lossily), is the kernel text.

#![no_main]

use libfuzzer_sys::fuzz_target;
use proc_macro2::Literal;
use quote::quote;

fuzz_target!(|data: &[u8]| {
    let Some((&form, text)) = data.split_first() else {
        return;
    };
    let text = String::from_utf8_lossy(text);
    let lit = Literal::string(&text);
    let input = match form % 8 {
        0 => quote!(pub mod k, src: #lit,),
        1 => quote!(pub mod k, src: #lit, variants: [fp32, fp16s], optimize: true),
        2 => quote!(pub mod k, path: #lit),
        3 => quote!(pub mod k, src: #lit, variants: [fp16sa, bf16s]),
        _ => quote!(pub mod k, src: #lit, variants: [fp32]),
    };
    let out = vkprism_compiler::expand(input);
    syn::parse2::<syn::File>(out).expect("expand's output parses as items");
});
