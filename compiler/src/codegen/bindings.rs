//! `BufferBindings` / `ImageBindings`: one struct per memory kind the kernel has, one field per
//! descriptor binding, each implementing `Bindings`.

use super::{dbg_ident, field_ident};
use crate::model::KernelModel;
use crate::reflect::Binding;
use proc_macro2::TokenStream;
use quote::{format_ident, quote};
use vkprism_core::{Access, BindingKind, MemoryKind};

/// The bindings struct of every memory kind in `model`.
pub fn items(p: &TokenStream, kernel: &str, model: &KernelModel) -> TokenStream {
    model
        .interfaces
        .iter()
        .map(|(memory, bindings)| bindings_struct(p, kernel, model, *memory, bindings))
        .collect()
}

fn bindings_struct(
    p: &TokenStream,
    kernel: &str,
    model: &KernelModel,
    memory: MemoryKind,
    bindings: &[Binding],
) -> TokenStream {
    let name = match memory {
        MemoryKind::Buffer => format_ident!("BufferBindings"),
        MemoryKind::Image => format_ident!("ImageBindings"),
    };
    let mem = dbg_ident(&memory);
    let mut fields = Vec::new();
    let mut resources = Vec::new();
    for b in bindings {
        let f = binding_field(b);
        let (ty, resource) = match b.kind {
            BindingKind::StorageBuffer | BindingKind::UniformBuffer => (
                quote!(&'a #p::Tensor),
                quote!(#p::Resource::Buffer(self.#f)),
            ),
            BindingKind::SampledImage | BindingKind::StorageImage => {
                (quote!(&'a #p::Image), quote!(#p::Resource::Image(self.#f)))
            }
        };
        let doc = field_doc(model, memory, b);
        fields.push(quote!(#[doc = #doc] pub #f: #ty));
        let n = b.binding;
        resources.push(quote!((#n, #resource)));
    }
    // The lifetime needs a use in a struct without fields.
    let phantom = if bindings.is_empty() {
        quote!(#[doc(hidden)] pub _marker: ::core::marker::PhantomData<&'a ()>,)
    } else {
        quote!()
    };
    let count = resources.len();
    let doc = format!(
        " The descriptors of `{kernel}`'s {} variants, one field per binding.",
        memory.name()
    );
    quote! {
        #[doc = #doc]
        #[derive(::core::marker::Copy, ::core::clone::Clone)]
        pub struct #name<'a> { #(#fields,)* #phantom }
        impl<'a> #p::Bindings<'a> for #name<'a> {
            type Kernel = Kernel;
            const MEMORY: #p::MemoryKind = #p::MemoryKind::#mem;
            // An array: a dispatch allocates nothing for it.
            fn resources(&self) -> impl ::core::iter::IntoIterator<Item = (u32, #p::Resource<'a>)> {
                let resources: [(u32, #p::Resource<'a>); #count] = [#(#resources),*];
                resources
            }
        }
    }
}

/// The field a binding gets in its bindings struct.
pub fn binding_field(b: &Binding) -> proc_macro2::Ident {
    field_ident(&b.name, &format!("binding{}", b.binding))
}

/// A binding's doc: what it is, and its element type and tensor format in each variant.
fn field_doc(model: &KernelModel, memory: MemoryKind, b: &Binding) -> String {
    let per_variant: Vec<String> = model
        .variants
        .iter()
        .filter(|v| v.key.memory == memory)
        .filter_map(|v| {
            v.bindings
                .iter()
                .find(|(x, _)| x.binding == b.binding)
                .map(|(x, fmt)| format!("{}: {} ({:?})", v.key, glsl_element(x), fmt))
        })
        .collect();
    format!(
        "binding {}: `{}`, {:?}, {}. Element per variant: {}.",
        b.binding,
        b.name,
        b.kind,
        describe_access(b.access),
        per_variant.join("; ")
    )
}

fn describe_access(a: Access) -> &'static str {
    match a {
        Access::ReadOnly => "read-only",
        Access::WriteOnly => "write-only",
        Access::ReadWrite => "read-write",
    }
}

/// The element type as a short name: `f32`, `u32x2`.
fn glsl_element(b: &Binding) -> String {
    let s = format!("{:?}", b.element.scalar).to_lowercase();
    if b.element.components <= 1 {
        s
    } else {
        format!("{}x{}", s, b.element.components)
    }
}
