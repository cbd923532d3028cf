//! `compute_shader!`'s whole work on arbitrary kernel text: every input must come back as tokens
//! that parse (the module, or its stubs beside the errors, each error naming a `file:line`), never
//! a panic or a hang (run with `-timeout=5`: issue 20's bound; the seed corpus has its runaway
//! inputs: `exp_macros`, `exp_fn_macros`, `huge_ident`, `deep_if`, `long_line`). The first byte picks the macro's form (inline or `path:`, which variants); the
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
    let file = syn::parse2::<syn::File>(out).expect("expand's output parses as items");
    check_located(&file.items);
});

/// Every `compile_error!` names a `file:line`.
fn check_located(items: &[syn::Item]) {
    for item in items {
        match item {
            syn::Item::Mod(m) => check_located(m.content.as_ref().map_or(&[][..], |(_, i)| i)),
            syn::Item::Macro(m) if m.mac.path.is_ident("compile_error") => {
                let message = m
                    .mac
                    .parse_body::<syn::LitStr>()
                    .expect("a message")
                    .value();
                let located = message.match_indices(':').any(|(i, _)| {
                    let digits = message[i + 1..]
                        .bytes()
                        .take_while(u8::is_ascii_digit)
                        .count();
                    digits > 0 && i > 0 && !message[..i].ends_with(' ')
                });
                assert!(located, "an error without a file:line: {message}");
            }
            _ => {}
        }
    }
}
