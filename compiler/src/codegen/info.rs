//! The kernel's type and its metadata: `Kernel`, `INFO`, `VARIANTS` and `VARIANT_NAMES`, the
//! `core::info` tables the runtime reads.

use super::dbg_ident;
use crate::model::{KernelModel, VariantModel};
use crate::reflect::Binding;
use proc_macro2::{Literal, TokenStream};
use quote::quote;
use vkprism_core::{
    CoopMatShape, DeviceFact, FactChoice, IdChoice, LocalSizeDim, ScalarKind, TensorFormat,
    VariantKey,
};

/// `Kernel`, its `Kernel` impl and the static tables behind it.
pub fn items(p: &TokenStream, name: &str, model: &KernelModel) -> TokenStream {
    let vulkan_version = model.vulkan_version.api_version();
    let variants = model
        .variants
        .iter()
        .map(|v| variant_info(p, v, vulkan_version));
    let variant_names: Vec<String> = model.variants.iter().map(|v| v.key.name()).collect();
    let kernel_doc = format!(
        " The kernel `{name}`. Variants: {}.",
        variant_names.join(", ")
    );
    let push_info = match &model.push {
        None => quote!(::core::option::Option::None),
        Some(block) => {
            let size = block.size;
            quote!(::core::option::Option::Some(#p::PushConstantInfo { size: #size }))
        }
    };
    let spec_infos = model.spec.iter().map(|s| {
        let (id, name, bits) = (s.id, &s.name, s.default_bits);
        let scalar = scalar_tokens(p, s.scalar);
        quote!(#p::SpecConstantInfo { id: #id, name: #name, scalar: #scalar, default_bits: #bits })
    });
    let local = model.local_size.iter().map(|d| local_size_tokens(p, d));
    quote! {
        #[doc = #kernel_doc]
        #[derive(::core::marker::Copy, ::core::clone::Clone, ::core::fmt::Debug, ::core::default::Default)]
        pub struct Kernel;

        // SAFETY: INFO is derived from the SPIR-V's reflection by the compiler.
        unsafe impl #p::Kernel for Kernel {
            const INFO: &'static #p::KernelInfo = &INFO;
            type PushConstants = PushConstants;
            type SpecConstants = SpecConstants;
        }

        /// Everything the runtime needs: variants with their SPIR-V, bindings, constants.
        pub static INFO: #p::KernelInfo = #p::KernelInfo {
            name: #name,
            variants: VARIANTS,
            push_constants: #push_info,
            spec_constants: &[#(#spec_infos),*],
            local_size: [#(#local),*],
        };

        /// The compiled variants, in a fixed order.
        pub static VARIANTS: &[#p::VariantInfo] = &[#(#variants),*];

        /// The names of the compiled variants.
        pub const VARIANT_NAMES: &[&str] = &[#(#variant_names),*];
    }
}

/// One `VariantInfo`: its key, what reflection found, its SPIR-V.
fn variant_info(p: &TokenStream, v: &VariantModel, vulkan_version: u32) -> TokenStream {
    let key = key_tokens(p, &v.key);
    let words = v.spirv.iter().map(|w| Literal::u32_unsuffixed(*w));
    let bindings = v.bindings.iter().map(|(b, f)| binding_tokens(p, b, *f));
    let reads_num_workgroups = v.reads_num_workgroups;
    let coopmats = v.cooperative_matrices.iter().map(|s| coopmat_tokens(p, s));
    // By index into `DeviceFact::ALL`: one path for a fact that wraps a feature too.
    let facts = v.device_facts.iter().filter_map(|f| {
        let index = DeviceFact::ALL.iter().position(|x| x == f)?;
        Some(quote!(#p::DeviceFact::ALL[#index]))
    });
    let capabilities_require = v.capabilities_require.iter().map(|f| {
        let f = dbg_ident(&f);
        quote!(#p::Feature::#f)
    });
    let tested = v.tested_facts.iter().map(|f| fact_tokens(p, f));
    quote!(#p::VariantInfo {
        key: #key,
        reads_num_workgroups: #reads_num_workgroups,
        spirv: &[#(#words),*],
        bindings: &[#(#bindings),*],
        cooperative_matrices: &[#(#coopmats),*],
        vulkan_version: #vulkan_version,
        device_facts: &[#(#facts),*],
        capabilities_require: #p::FeatureSet::from_slice(&[#(#capabilities_require),*]),
        tested_facts: &[#(#tested),*],
    })
}

fn fact_tokens(p: &TokenStream, f: &DeviceFact) -> TokenStream {
    match f {
        DeviceFact::Supports(feature) => {
            let feature = dbg_ident(feature);
            quote!(#p::DeviceFact::Supports(#p::Feature::#feature))
        }
        other => {
            let other = dbg_ident(other);
            quote!(#p::DeviceFact::#other)
        }
    }
}

/// A `FactChoice` literal.
fn facts_tokens(p: &TokenStream, c: &FactChoice) -> TokenStream {
    let flag = |v: Option<bool>| match v {
        Some(b) => quote!(::core::option::Option::Some(#b)),
        None => quote!(::core::option::Option::None),
    };
    let id = |v: Option<IdChoice>| match v {
        Some(IdChoice::Is(n)) => quote!(::core::option::Option::Some(#p::IdChoice::Is(#n))),
        Some(IdChoice::Other) => quote!(::core::option::Option::Some(#p::IdChoice::Other)),
        None => quote!(::core::option::Option::None),
    };
    let (dot, subgroup, features) = (flag(c.dot), flag(c.subgroup), flag(c.features));
    let (vendor, driver) = (id(c.vendor), id(c.driver));
    quote!(#p::FactChoice { dot: #dot, subgroup: #subgroup, features: #features, vendor: #vendor, driver: #driver })
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
    let int16 = match k.int16 {
        Some(i) => {
            let i = dbg_ident(&i);
            quote!(::core::option::Option::Some(#p::Int16Mode::#i))
        }
        None => quote!(::core::option::Option::None),
    };
    let flag = |v: Option<bool>| match v {
        Some(b) => quote!(::core::option::Option::Some(#b)),
        None => quote!(::core::option::Option::None),
    };
    let (lm, cm) = (flag(k.local_memory), flag(k.coopmat));
    let facts = facts_tokens(p, &k.facts);
    quote!(#p::VariantKey { float: #p::FloatMode::#float, memory: #p::MemoryKind::#memory, int8: #int8, int16: #int16, local_memory: #lm, coopmat: #cm, facts: #facts })
}

fn coopmat_tokens(p: &TokenStream, s: &CoopMatShape) -> TokenStream {
    let (m, n, k) = (s.m, s.n, s.k);
    let [a, b, c, r] = [s.a, s.b, s.c, s.result].map(|t| dbg_ident(&t));
    quote!(#p::CoopMatShape { m: #m, n: #n, k: #k, a: #p::ScalarKind::#a, b: #p::ScalarKind::#b, c: #p::ScalarKind::#c, result: #p::ScalarKind::#r })
}

fn scalar_tokens(p: &TokenStream, s: ScalarKind) -> TokenStream {
    let s = dbg_ident(&s);
    quote!(#p::ScalarKind::#s)
}

fn binding_tokens(p: &TokenStream, b: &Binding, format: TensorFormat) -> TokenStream {
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

fn local_size_tokens(p: &TokenStream, d: &LocalSizeDim) -> TokenStream {
    let default = d.default;
    let id = match d.spec_id {
        Some(i) => quote!(::core::option::Option::Some(#i)),
        None => quote!(::core::option::Option::None),
    };
    quote!(#p::LocalSizeDim { default: #default, spec_id: #id })
}
