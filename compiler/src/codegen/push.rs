//! `PushConstants`: the push-constant block as a `repr(C)` struct laid out as the SPIR-V says,
//! with explicit padding and `const` assertions of every offset and of the size.

use super::field_ident;
use crate::reflect::{PushBlock, PushMember};
use proc_macro2::TokenStream;
use quote::{format_ident, quote};
use vkprism_core::ScalarKind;

/// `PushConstants`: the struct, or an alias of `NoPushConstants` for a kernel without a block.
pub fn items(p: &TokenStream, block: Option<&PushBlock>, users: &[String]) -> TokenStream {
    let users = super::users_doc("PushConstants", users);
    let Some(block) = block else {
        let doc = format!(" This kernel has no push-constant block.{users}");
        return quote! {
            #[doc = #doc]
            pub type PushConstants = #p::NoPushConstants;
        };
    };
    let layout = Layout::of(block);
    let Layout {
        fields,
        offset_asserts,
        ctor_args,
        ctor_fields,
        ..
    } = &layout;
    let rounded = block.size.div_ceil(4) as usize * 4;
    let doc = format!(
        " The push-constant block `{}` ({} bytes), laid out as the SPIR-V says.{users}",
        block.instance, block.size
    );
    quote! {
        #[doc = #doc]
        #[repr(C)]
        #[derive(::core::marker::Copy, ::core::clone::Clone, ::core::fmt::Debug, ::core::default::Default, ::core::cmp::PartialEq)]
        pub struct PushConstants { #(#fields,)* }
        impl PushConstants {
            /// All members, padding zeroed.
            #[allow(clippy::too_many_arguments)]
            pub const fn new(#(#ctor_args),*) -> Self { PushConstants { #(#ctor_fields),* } }
        }
        // SAFETY: repr(C), every field is plain old data, and the explicit padding
        // fields leave no implicit padding (checked by the size assertion below).
        unsafe impl #p::bytemuck::Zeroable for PushConstants {}
        unsafe impl #p::bytemuck::Pod for PushConstants {}
        const _: () = {
            ::core::assert!(::core::mem::size_of::<PushConstants>() == #rounded);
            #(#offset_asserts)*
        };
    }
}

/// The struct's pieces, member by member with padding fields between.
#[derive(Default)]
struct Layout {
    fields: Vec<TokenStream>,
    offset_asserts: Vec<TokenStream>,
    /// Parameters of `new`: the members, not the padding.
    ctor_args: Vec<TokenStream>,
    /// Field initializers of `new`: the members, and zeros for the padding.
    ctor_fields: Vec<TokenStream>,
    /// What padding fields' names start with.
    pad_prefix: String,
}

impl Layout {
    fn of(block: &PushBlock) -> Layout {
        // Padding fields are named `_pad<n>`, with as many more leading underscores as it takes
        // for no member to start that way (a member may be called `_pad0`).
        let members: Vec<String> = block
            .members
            .iter()
            .map(|m| member_field(m).to_string())
            .collect();
        let mut pad_prefix = "_pad".to_string();
        while members
            .iter()
            .any(|m| m.trim_start_matches("r#").starts_with(&pad_prefix))
        {
            pad_prefix.insert(0, '_');
        }
        let mut layout = Layout {
            pad_prefix,
            ..Layout::default()
        };
        let mut at = 0usize;
        let mut pads = 0usize;
        for m in &block.members {
            layout.pad((m.offset as usize).saturating_sub(at), &mut pads);
            layout.member(m);
            at = (m.offset + m.size) as usize;
        }
        let rounded = block.size.div_ceil(4) as usize * 4;
        layout.pad(rounded.saturating_sub(at), &mut pads);
        layout
    }

    /// `n` bytes of padding (none for 0), named `<pad_prefix><pads>`.
    fn pad(&mut self, n: usize, pads: &mut usize) {
        if n == 0 {
            return;
        }
        let name = format_ident!("{}{}", self.pad_prefix, *pads);
        *pads += 1;
        self.fields.push(quote!(#[doc(hidden)] pub #name: [u8; #n]));
        self.ctor_fields.push(quote!(#name: [0; #n]));
    }

    fn member(&mut self, m: &PushMember) {
        let f = member_field(m);
        let ty = member_type(m);
        let offset = m.offset as usize;
        let doc = format!(" `{}` at byte offset {} (from SPIR-V).", m.name, m.offset);
        self.fields.push(quote!(#[doc = #doc] pub #f: #ty));
        self.offset_asserts
            .push(quote!(::core::assert!(::core::mem::offset_of!(PushConstants, #f) == #offset);));
        self.ctor_args.push(quote!(#f: #ty));
        self.ctor_fields.push(quote!(#f));
    }
}

/// The field of one push-constant member.
fn member_field(m: &PushMember) -> proc_macro2::Ident {
    field_ident(&m.name, &format!("member_{}", m.offset))
}

/// The Rust type of one push-constant member.
fn member_type(m: &PushMember) -> TokenStream {
    let scalar = match m.scalar {
        ScalarKind::F32 => quote!(f32),
        ScalarKind::I32 => quote!(i32),
        ScalarKind::U32 | ScalarKind::Bool => quote!(u32),
        ScalarKind::F64 => quote!(f64),
        ScalarKind::I64 => quote!(i64),
        ScalarKind::U64 => quote!(u64),
        ScalarKind::I16 => quote!(i16),
        ScalarKind::U16 => quote!(u16),
        // Bits of an IEEE half or a bfloat16: Rust has no stable f16.
        ScalarKind::F16 | ScalarKind::Bf16 => quote!(u16),
        ScalarKind::I8 => quote!(i8),
        ScalarKind::U8 => quote!(u8),
    };
    let n = m.components as usize;
    let element = if n == 1 {
        scalar
    } else {
        quote!([#scalar; #n])
    };
    match m.array {
        Some(len) => {
            let len = len as usize;
            quote!([#element; #len])
        }
        None => element,
    }
}
