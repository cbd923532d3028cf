//! `bytes: "kernel.spv"`: a precompiled SPIR-V module as a kernel of one variant, through the
//! same reflection and model (hence the same typed bindings, push constants, specialization
//! constants and checks) as compiled kernels. The file is a rebuild dependency.

use crate::ctxt::Ctxt;
use crate::model::{self, KernelModel};
use crate::options::{KernelOptions, VulkanVersion};
use crate::reflect;
use crate::source::{self, ReadError};
use std::collections::BTreeMap;
use std::path::Path;
use syn::{Ident, LitStr};
use vkprism_core::{MemoryKind, VariantKey};

/// The most bytes of SPIR-V read.
pub const MAX_SPIRV_BYTES: usize = 16 << 20;
const MAGIC: u32 = 0x0723_0203;

/// The model of the module at `lit` (relative to the invoking Rust file), its one variant named
/// by `variants` (default `fp32`, or `fp32_image` for a module with image bindings). Errors go
/// to `cx` at `lit`.
pub fn load(
    cx: &Ctxt,
    lit: &LitStr,
    options: &KernelOptions,
    variants: Option<&[Ident]>,
) -> Option<KernelModel> {
    let path = source::invoking_dir(lit.span()).join(lit.value());
    let fail = |m: String| {
        cx.error(lit.span(), format!("`bytes`: {}: {m}", path.display()));
        None
    };
    let words = match read_words(&path) {
        Ok(w) => w,
        Err(m) => return fail(m),
    };
    if let Err(m) = check_entry_point(&words) {
        return fail(m);
    }
    let reflection = match std::panic::catch_unwind(|| reflect::reflect(&words)) {
        Ok(Ok(r)) => r,
        Ok(Err(e)) => return fail(e.0),
        Err(_) => return fail("internal error: reflecting the SPIR-V panicked".into()),
    };
    let key = variant_key(cx, variants, &reflection)?;
    let spirv_version = (words[1] >> 16) & 0xff;
    let minor = (words[1] >> 8) & 0xff;
    let needs = match (spirv_version, minor) {
        (1, 0..=3) => VulkanVersion::V1_1,
        (1, 4 | 5) => VulkanVersion::V1_2,
        _ => VulkanVersion::V1_3,
    };
    let compiled = BTreeMap::from([(key, (words, reflection))]);
    match model::build(&compiled, &[key]) {
        Ok(m) => Some(KernelModel {
            vulkan_version: needs.max(options.vulkan_version),
            precompiled: Some(path),
            ..m
        }),
        Err(errors) => {
            for e in errors {
                cx.error(lit.span(), format!("`bytes`: {}: {e}", path.display()));
            }
            None
        }
    }
}

/// The file as SPIR-V words in host order, after checking its header.
fn read_words(path: &Path) -> Result<Vec<u32>, String> {
    let bytes = source::read_bytes(path, MAX_SPIRV_BYTES).map_err(|e| match e {
        ReadError::Io(e) => format!("cannot read it: {e} (paths are relative to the invoking Rust file, as with include_bytes!)"),
        e => e.describe(path),
    })?;
    if bytes.len() % 4 != 0 || bytes.len() < 20 {
        return Err(format!(
            "not a SPIR-V module: {} bytes is not a whole number of 32-bit words after a 5-word header",
            bytes.len()
        ));
    }
    let little: Vec<u32> = bytes
        .chunks_exact(4)
        .map(|w| u32::from_le_bytes([w[0], w[1], w[2], w[3]]))
        .collect();
    let words = match little[0] {
        MAGIC => little,
        m if m.swap_bytes() == MAGIC => little.into_iter().map(u32::swap_bytes).collect(),
        m => {
            return Err(format!(
                "not a SPIR-V module: it starts with {m:#010x}, not the magic number {MAGIC:#010x}"
            ))
        }
    };
    let (major, minor) = ((words[1] >> 16) & 0xff, (words[1] >> 8) & 0xff);
    if major != 1 || minor > 6 {
        return Err(format!(
            "SPIR-V version {major}.{minor}: vkprism reads SPIR-V 1.0 to 1.6"
        ));
    }
    Ok(words)
}

/// The module must be a compute shader whose entry point is `main` (the runtime's).
fn check_entry_point(words: &[u32]) -> Result<(), String> {
    use rspirv::dr::Operand;
    use rspirv::spirv::ExecutionModel;
    let module =
        rspirv::dr::load_words(words).map_err(|e| format!("not a valid SPIR-V module: {e}"))?;
    let compute_main = module.entry_points.iter().any(|e| {
        matches!(
            e.operands.first(),
            Some(Operand::ExecutionModel(ExecutionModel::GLCompute))
        ) && matches!(e.operands.get(2), Some(Operand::LiteralString(n)) if n == "main")
    });
    if compute_main {
        Ok(())
    } else {
        Err("no compute entry point named `main` (compile the shader as a compute shader with entry point `main`)".into())
    }
}

/// The variant the module is: the one name in `variants`, else `fp32` (`fp32_image` when it
/// binds images).
fn variant_key(
    cx: &Ctxt,
    variants: Option<&[Ident]>,
    reflection: &reflect::Reflection,
) -> Option<VariantKey> {
    match variants {
        None => {
            let images = reflection.bindings.iter().any(|b| {
                matches!(
                    b.kind,
                    vkprism_core::BindingKind::SampledImage
                        | vkprism_core::BindingKind::StorageImage
                )
            });
            let memory = if images {
                MemoryKind::Image
            } else {
                MemoryKind::Buffer
            };
            Some(VariantKey {
                memory,
                ..VariantKey::parse("fp32").ok()?
            })
        }
        Some([one]) => match VariantKey::parse(&one.to_string()) {
            Ok(k) => Some(k),
            Err(e) => {
                cx.error(one.span(), format!("variant `{one}`: {e}"));
                None
            }
        },
        Some(many) => {
            let span = many
                .get(1)
                .map(|i| i.span())
                .unwrap_or_else(proc_macro2::Span::call_site);
            cx.error(
                span,
                "a precompiled module (`bytes`) is one variant: name at most one in `variants`",
            );
            None
        }
    }
}
