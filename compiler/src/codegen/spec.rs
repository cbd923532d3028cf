//! `SpecConstants`: one field per specialization constant, defaulting to the kernel's values.

use super::field_ident;
use crate::model::KernelModel;
use crate::reflect::SpecConstant;
use proc_macro2::TokenStream;
use quote::quote;
use vkprism_core::ScalarKind;

/// `SpecConstants` with its `Default` and `SpecConstants` impls.
pub fn items(p: &TokenStream, model: &KernelModel, users: &[String]) -> TokenStream {
    let push_names: Vec<&str> = model
        .push
        .iter()
        .flat_map(|b| b.members.iter().map(|m| m.name.as_str()))
        .collect();
    let mut fields = Vec::new();
    let mut defaults = Vec::new();
    let mut entries = Vec::new();
    for s in &model.spec {
        let f = field_ident(&s.name, &format!("constant_{}", s.id));
        let Value {
            ty,
            default,
            entry,
            shown,
        } = Value::of(s, &f);
        let psc = if push_names.contains(&s.name.as_str()) {
            " With `psc()`, 0 means \"use the push constant of the same name\" (so a real 0 can't be specialized)."
        } else {
            ""
        };
        let doc = format!(" `constant_id = {}`, default {shown}.{psc}", s.id);
        let id = s.id;
        fields.push(quote!(#[doc = #doc] pub #f: #ty));
        defaults.push(quote!(#f: #default));
        entries.push(quote!((#id, #entry)));
    }
    let doc = format!(
        " Specialization constants, set when a pipeline is created.{}",
        super::users_doc("SpecConstants", users)
    );
    quote! {
        #[doc = #doc]
        #[derive(::core::marker::Copy, ::core::clone::Clone, ::core::fmt::Debug, ::core::cmp::PartialEq)]
        pub struct SpecConstants { #(#fields,)* }
        impl ::core::default::Default for SpecConstants {
            fn default() -> Self { SpecConstants { #(#defaults,)* } }
        }
        impl #p::SpecConstants for SpecConstants {
            fn entries(&self) -> ::std::vec::Vec<(u32, u32)> { ::std::vec![#(#entries),*] }
        }
    }
}

/// How one constant appears in Rust.
struct Value {
    /// The field's type.
    ty: TokenStream,
    /// The default, as an expression of that type.
    default: TokenStream,
    /// The field as the 32 bits Vulkan takes.
    entry: TokenStream,
    /// The default, for the docs.
    shown: String,
}

impl Value {
    fn of(s: &SpecConstant, f: &proc_macro2::Ident) -> Value {
        let bits = s.default_bits;
        match s.scalar {
            ScalarKind::F32 => Value {
                ty: quote!(f32),
                default: quote!(f32::from_bits(#bits)),
                entry: quote!(self.#f.to_bits()),
                shown: f32::from_bits(bits).to_string(),
            },
            ScalarKind::I32 => {
                let v = bits as i32;
                Value {
                    ty: quote!(i32),
                    default: quote!(#v),
                    entry: quote!(self.#f as u32),
                    shown: v.to_string(),
                }
            }
            ScalarKind::Bool => {
                let v = bits != 0;
                Value {
                    ty: quote!(bool),
                    default: quote!(#v),
                    entry: quote!(self.#f as u32),
                    shown: v.to_string(),
                }
            }
            _ => Value {
                ty: quote!(u32),
                default: quote!(#bits),
                entry: quote!(self.#f),
                shown: bits.to_string(),
            },
        }
    }
}
