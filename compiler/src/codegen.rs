//! Phase 7, codegen: the Rust module for one kernel. Everything is named by absolute path through
//! `<crate>::__private`, so the user's crate needs no other dependency; layouts are checked by
//! `const` assertions.

use crate::ast::KernelSpec;
use crate::model::KernelModel;
use crate::reflect::{Binding, PushMember};
use proc_macro2::{Ident, Literal, Span, TokenStream};
use quote::{format_ident, quote};
use std::path::PathBuf;
use vkprism_core::{Access, BindingKind, FeatureSet, MemoryKind, ScalarKind, VariantKey};

/// An identifier spelled like the value's `Debug` (enum variant names).
fn dbg_ident(x: &impl std::fmt::Debug) -> Ident {
    Ident::new(&format!("{x:?}"), Span::call_site())
}

/// `<crate>::__private` as seen from inside the generated module: a path relative to the
/// invocation (`vkp`, `self::vkp`) is one level up from there.
fn private(spec: &KernelSpec) -> TokenStream {
    let krate = &spec.krate;
    let first = krate
        .segments
        .first()
        .map(|s| s.ident.to_string())
        .unwrap_or_default();
    if krate.leading_colon.is_some() || first == "crate" {
        quote!(#krate::__private)
    } else if first == "self" {
        let rest = krate.segments.iter().skip(1);
        quote!(super #(::#rest)* ::__private)
    } else {
        quote!(super::#krate::__private)
    }
}

/// A Rust identifier for a GLSL name (raw for keywords, `binding<N>` when there is none).
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

fn key_tokens(p: &TokenStream, k: &VariantKey) -> TokenStream {
    let float = dbg_ident(&k.float);
    let memory = dbg_ident(&k.memory);
    let int8 = match k.int8 {
        Some(i) => {
            let i = dbg_ident(&i);
            quote!(::core::option::Option::Some(#p::Int8Mode::#i))
        }
        None => quote!(::core::option::Option::None),
    };
    let flag = |v: Option<bool>| match v {
        Some(b) => quote!(::core::option::Option::Some(#b)),
        None => quote!(::core::option::Option::None),
    };
    let (lm, cm) = (flag(k.local_memory), flag(k.coopmat));
    quote!(#p::VariantKey { float: #p::FloatMode::#float, memory: #p::MemoryKind::#memory, int8: #int8, local_memory: #lm, coopmat: #cm })
}

fn coopmat_tokens(p: &TokenStream, s: &vkprism_core::CoopMatShape) -> TokenStream {
    let (m, n, k) = (s.m, s.n, s.k);
    let [a, b, c, r] = [s.a, s.b, s.c, s.result].map(|t| dbg_ident(&t));
    quote!(#p::CoopMatShape { m: #m, n: #n, k: #k, a: #p::ScalarKind::#a, b: #p::ScalarKind::#b, c: #p::ScalarKind::#c, result: #p::ScalarKind::#r })
}

fn features_tokens(p: &TokenStream, set: FeatureSet) -> TokenStream {
    let fs = set.iter().map(|f| dbg_ident(&f));
    quote!(#p::FeatureSet::from_slice(&[#(#p::Feature::#fs),*]))
}

fn scalar_tokens(p: &TokenStream, s: ScalarKind) -> TokenStream {
    let s = dbg_ident(&s);
    quote!(#p::ScalarKind::#s)
}

fn binding_tokens(p: &TokenStream, b: &Binding, format: vkprism_core::TensorFormat) -> TokenStream {
    let (set, binding, name, dims) = (b.set, b.binding, &b.name, b.dims);
    let kind = dbg_ident(&b.kind);
    let access = dbg_ident(&b.access);
    let format = dbg_ident(&format);
    let scalar = scalar_tokens(p, b.element.scalar);
    let (components, stride) = (b.element.components, b.element.stride);
    quote!(#p::BindingInfo {
        set: #set, binding: #binding, name: #name,
        kind: #p::BindingKind::#kind, access: #p::Access::#access,
        element: #p::ElementType { scalar: #scalar, components: #components, stride: #stride },
        format: #p::TensorFormat::#format, dims: #dims,
    })
}

/// The Rust type of one push-constant member.
fn member_type(m: &PushMember) -> Result<TokenStream, String> {
    let scalar = match m.scalar {
        ScalarKind::F32 => quote!(f32),
        ScalarKind::I32 => quote!(i32),
        ScalarKind::U32 | ScalarKind::Bool => quote!(u32),
        ScalarKind::F64 => quote!(f64),
        ScalarKind::I64 => quote!(i64),
        ScalarKind::U64 => quote!(u64),
        ScalarKind::I16 => quote!(i16),
        ScalarKind::U16 => quote!(u16),
        ScalarKind::F16 => quote!(u16),
        ScalarKind::I8 => quote!(i8),
        ScalarKind::U8 => quote!(u8),
    };
    let n = m.components as usize;
    let elem = if n == 1 {
        scalar
    } else {
        quote!([#scalar; #n])
    };
    Ok(match m.array {
        Some(len) => {
            let len = len as usize;
            quote!([#elem; #len])
        }
        None => elem,
    })
}

fn describe_access(a: Access) -> &'static str {
    match a {
        Access::ReadOnly => "read-only",
        Access::WriteOnly => "write-only",
        Access::ReadWrite => "read-write",
    }
}

fn glsl_element(b: &Binding) -> String {
    let s = format!("{:?}", b.element.scalar).to_lowercase();
    if b.element.components <= 1 {
        s
    } else {
        format!("{}x{}", s, b.element.components)
    }
}

/// The whole generated module.
pub fn kernel(
    spec: &KernelSpec,
    model: &KernelModel,
    files: &[PathBuf],
) -> Result<TokenStream, String> {
    let p = private(spec);
    let (attrs, vis, name) = (&spec.attrs, &spec.vis, &spec.name);
    let name_str = name.to_string();

    // Variant table.
    let variants = model.variants.iter().map(|v| {
        let key = key_tokens(&p, &v.key);
        let requires = features_tokens(&p, v.key.requires());
        let words = v.spirv.iter().map(|w| Literal::u32_unsuffixed(*w));
        let bindings = v.bindings.iter().map(|(b, f)| binding_tokens(&p, b, *f));
        let coopmats = v.cooperative_matrices.iter().map(|s| coopmat_tokens(&p, s));
        quote!(#p::VariantInfo { key: #key, requires: #requires, spirv: &[#(#words),*], bindings: &[#(#bindings),*], cooperative_matrices: &[#(#coopmats),*] })
    });
    let variant_names: Vec<String> = model.variants.iter().map(|v| v.key.name()).collect();
    let variant_list = variant_names.join(", ");

    // Push constants.
    let (push_items, push_info) = match &model.push {
        None => (
            quote! {
                /// This kernel has no push-constant block.
                pub type PushConstants = #p::NoPushConstants;
            },
            quote!(::core::option::Option::None),
        ),
        Some(block) => {
            let mut fields = Vec::new();
            let mut asserts = Vec::new();
            let mut ctor_args = Vec::new();
            let mut ctor_fields = Vec::new();
            let mut at = 0u32;
            let mut pad = 0usize;
            for m in &block.members {
                if m.offset > at {
                    let n = (m.offset - at) as usize;
                    let pn = format_ident!("_pad{}", pad);
                    pad += 1;
                    fields.push(quote!(#[doc(hidden)] pub #pn: [u8; #n]));
                    ctor_fields.push(quote!(#pn: [0; #n]));
                }
                let f = field_ident(&m.name, &format!("member_{}", m.offset));
                let ty = member_type(m)?;
                let off = m.offset as usize;
                let doc = format!("`{}` at byte offset {} (from SPIR-V).", m.name, m.offset);
                fields.push(quote!(#[doc = #doc] pub #f: #ty));
                asserts.push(
                    quote!(::core::assert!(::core::mem::offset_of!(PushConstants, #f) == #off);),
                );
                ctor_args.push(quote!(#f: #ty));
                ctor_fields.push(quote!(#f));
                at = m.offset + m.size;
            }
            let size = block.size as usize;
            let rounded = size.div_ceil(4) * 4;
            if rounded > at as usize {
                let n = rounded - at as usize;
                let pn = format_ident!("_pad{}", pad);
                fields.push(quote!(#[doc(hidden)] pub #pn: [u8; #n]));
                ctor_fields.push(quote!(#pn: [0; #n]));
            }
            let size_u32 = block.size;
            let doc = format!(
                "The push-constant block `{}` ({} bytes), laid out as the SPIR-V says.",
                block.instance, block.size
            );
            (
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
                        #(#asserts)*
                    };
                },
                quote!(::core::option::Option::Some(#p::PushConstantInfo { size: #size_u32 })),
            )
        }
    };

    // Specialization constants.
    let push_names: Vec<&str> = model
        .push
        .iter()
        .flat_map(|b| b.members.iter().map(|m| m.name.as_str()))
        .collect();
    let mut spec_fields = Vec::new();
    let mut spec_defaults = Vec::new();
    let mut spec_entries = Vec::new();
    let mut spec_infos = Vec::new();
    for s in &model.spec {
        let f = field_ident(&s.name, &format!("constant_{}", s.id));
        let bits = s.default_bits;
        let id = s.id;
        let (ty, default, entry, shown) = match s.scalar {
            ScalarKind::F32 => (
                quote!(f32),
                quote!(f32::from_bits(#bits)),
                quote!(self.#f.to_bits()),
                f32::from_bits(bits).to_string(),
            ),
            ScalarKind::I32 => {
                let v = bits as i32;
                (
                    quote!(i32),
                    quote!(#v),
                    quote!(self.#f as u32),
                    v.to_string(),
                )
            }
            ScalarKind::Bool => {
                let v = bits != 0;
                (
                    quote!(bool),
                    quote!(#v),
                    quote!(self.#f as u32),
                    v.to_string(),
                )
            }
            _ => (
                quote!(u32),
                quote!(#bits),
                quote!(self.#f),
                bits.to_string(),
            ),
        };
        let psc = if push_names.contains(&s.name.as_str()) {
            " With `psc()`, 0 means \"use the push constant of the same name\" (so a real 0 can't be specialized)."
        } else {
            ""
        };
        let doc = format!("`constant_id = {id}`, default {shown}.{psc}");
        spec_fields.push(quote!(#[doc = #doc] pub #f: #ty));
        spec_defaults.push(quote!(#f: #default));
        spec_entries.push(quote!((#id, #entry)));
        let name_s = &s.name;
        let scalar = scalar_tokens(&p, s.scalar);
        spec_infos.push(quote!(#p::SpecConstantInfo { id: #id, name: #name_s, scalar: #scalar, default_bits: #bits }));
    }

    // Local size.
    let local = model.local_size.iter().map(|d| {
        let def = d.default;
        let id = match d.spec_id {
            Some(i) => quote!(::core::option::Option::Some(#i)),
            None => quote!(::core::option::Option::None),
        };
        quote!(#p::LocalSizeDim { default: #def, spec_id: #id })
    });

    // Typed bindings, one struct per memory kind.
    let mut binding_structs = Vec::new();
    for (memory, bindings) in &model.interfaces {
        let sname = match memory {
            MemoryKind::Buffer => format_ident!("BufferBindings"),
            MemoryKind::Image => format_ident!("ImageBindings"),
        };
        let mem = dbg_ident(&memory);
        let mut fields = Vec::new();
        let mut resources = Vec::new();
        for b in bindings {
            let f = field_ident(&b.name, &format!("binding{}", b.binding));
            let per_variant: Vec<String> = model
                .variants
                .iter()
                .filter(|v| v.key.memory == *memory)
                .filter_map(|v| {
                    v.bindings
                        .iter()
                        .find(|(x, _)| x.binding == b.binding)
                        .map(|(x, fmt)| format!("{}: {} ({:?})", v.key, glsl_element(x), fmt))
                })
                .collect();
            let (ty, res) = match b.kind {
                BindingKind::StorageBuffer | BindingKind::UniformBuffer => (
                    quote!(&'a #p::Tensor),
                    quote!(#p::Resource::Buffer(self.#f)),
                ),
                BindingKind::SampledImage | BindingKind::StorageImage => {
                    (quote!(&'a #p::Image), quote!(#p::Resource::Image(self.#f)))
                }
            };
            let doc = format!(
                "binding {}: `{}`, {:?}, {}. Element per variant: {}.",
                b.binding,
                b.name,
                b.kind,
                describe_access(b.access),
                per_variant.join("; ")
            );
            fields.push(quote!(#[doc = #doc] pub #f: #ty));
            let n = b.binding;
            resources.push(quote!((#n, #res)));
        }
        let phantom = if bindings.is_empty() {
            quote!(#[doc(hidden)] pub _marker: ::core::marker::PhantomData<&'a ()>,)
        } else {
            quote!()
        };
        let count = resources.len();
        let doc = format!(
            "The descriptors of `{name_str}`'s {} variants, one field per binding.",
            memory.name()
        );
        binding_structs.push(quote! {
            #[doc = #doc]
            #[derive(::core::marker::Copy, ::core::clone::Clone)]
            pub struct #sname<'a> { #(#fields,)* #phantom }
            impl<'a> #p::Bindings<'a> for #sname<'a> {
                type Kernel = Kernel;
                const MEMORY: #p::MemoryKind = #p::MemoryKind::#mem;
                fn resources(&self) -> impl ::core::iter::IntoIterator<Item = (u32, #p::Resource<'a>)> {
                    let resources: [(u32, #p::Resource<'a>); #count] = [#(#resources),*];
                    resources
                }
            }
        });
    }

    let deps = files.iter().map(|f| {
        let f = f.display().to_string();
        quote!(
            const _: &[u8] = ::core::include_bytes!(#f);
        )
    });
    let kernel_doc = format!("The kernel `{name_str}`. Variants: {variant_list}.");
    let spec_doc = "Specialization constants, set when a pipeline is created.";
    Ok(quote! {
        #(#attrs)*
        #vis mod #name {
            #![allow(clippy::all)]
            #[doc = #kernel_doc]
            #[derive(::core::marker::Copy, ::core::clone::Clone, ::core::fmt::Debug, ::core::default::Default)]
            pub struct Kernel;

            impl #p::Kernel for Kernel {
                const INFO: &'static #p::KernelInfo = &INFO;
                type PushConstants = PushConstants;
                type SpecConstants = SpecConstants;
            }

            /// Everything the runtime needs: variants with their SPIR-V, bindings, constants.
            pub static INFO: #p::KernelInfo = #p::KernelInfo {
                name: #name_str,
                variants: VARIANTS,
                push_constants: #push_info,
                spec_constants: &[#(#spec_infos),*],
                local_size: [#(#local),*],
            };

            /// The compiled variants, in a fixed order.
            pub static VARIANTS: &[#p::VariantInfo] = &[#(#variants),*];

            /// The names of the compiled variants.
            pub const VARIANT_NAMES: &[&str] = &[#(#variant_names),*];

            #push_items

            #[doc = #spec_doc]
            #[derive(::core::marker::Copy, ::core::clone::Clone, ::core::fmt::Debug, ::core::cmp::PartialEq)]
            pub struct SpecConstants { #(#spec_fields,)* }
            impl ::core::default::Default for SpecConstants {
                fn default() -> Self { SpecConstants { #(#spec_defaults,)* } }
            }
            impl #p::SpecConstants for SpecConstants {
                fn entries(&self) -> ::std::vec::Vec<(u32, u32)> { ::std::vec![#(#spec_entries),*] }
            }

            #(#binding_structs)*
            #(#deps)*
        }
    })
}

/// Stubs of the public names, emitted beside the errors so that code using the kernel reports
/// the kernel's error rather than a cascade of unresolved names.
pub fn fallback(spec: &KernelSpec) -> TokenStream {
    let p = private(spec);
    let (attrs, vis, name) = (&spec.attrs, &spec.vis, &spec.name);
    let name_str = name.to_string();
    quote! {
        #(#attrs)*
        #vis mod #name {
            #![allow(dead_code, clippy::all)]
            #[derive(::core::marker::Copy, ::core::clone::Clone, ::core::fmt::Debug, ::core::default::Default)]
            pub struct Kernel;
            impl #p::Kernel for Kernel {
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
