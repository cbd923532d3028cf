//! Phase 7, the binding model: the reflections of all variants merged into one description of
//! the kernel, with the checks that make one typed API honest: every variant agrees on push
//! constants and specialization constants, and every variant of one memory kind agrees on its
//! descriptor set (element types may differ: that is what variants are).

use crate::reflect::{Binding, PushBlock, Reflection, SpecConstant};
use std::collections::BTreeMap;
use vkprism_core::{BindingKind, LocalSizeDim, MemoryKind, ScalarKind, TensorFormat, VariantKey};

/// One variant as the kernel ships it.
#[derive(Debug)]
pub struct VariantModel {
    /// Which variant.
    pub key: VariantKey,
    /// The module shipped: glslang's output, which reflection read.
    pub spirv: Vec<u32>,
    /// Every descriptor binding with the tensor format it expects in this variant.
    pub bindings: Vec<(Binding, TensorFormat)>,
    /// The shipped module reads `gl_NumWorkGroups`.
    pub reads_num_workgroups: bool,
    /// The cooperative-matrix shapes the variant multiplies (reflected).
    pub cooperative_matrices: Vec<vkprism_core::CoopMatShape>,
    /// The device facts the variant reads (reflected).
    pub device_facts: Vec<vkprism_core::DeviceFact>,
    /// What the module's capabilities need of the device (reflected).
    pub capabilities_require: vkprism_core::FeatureSet,
    /// The device facts the kernel tests in `#if` (scanned; the same for every variant).
    pub tested_facts: Vec<vkprism_core::DeviceFact>,
}

/// The whole kernel: its variants and the interface they share.
#[derive(Debug)]
pub struct KernelModel {
    /// The variants shipped, in key order.
    pub variants: Vec<VariantModel>,
    /// The push-constant block, the same in every variant.
    pub push: Option<PushBlock>,
    /// The specialization constants other than the workgroup size, the same in every variant.
    pub spec: Vec<SpecConstant>,
    /// The workgroup size, the same in every variant.
    pub local_size: [LocalSizeDim; 3],
    /// The descriptor interface of each memory kind present.
    pub interfaces: BTreeMap<MemoryKind, Vec<Binding>>,
    /// The Vulkan version the variants are compiled for (the device must offer it).
    pub vulkan_version: crate::options::VulkanVersion,
    /// The SPIR-V file of a precompiled (`bytes:`) kernel: its rebuild dependency.
    pub precompiled: Option<std::path::PathBuf>,
}

/// The variant a binding's element type is compared with to tell a precision-following buffer
/// (`sfpvec4`: `vec4` in fp32, `uvec2` in fp16p) from a plain one (`uint`: the same everywhere).
pub fn reference_key(key: &VariantKey) -> VariantKey {
    VariantKey {
        float: vkprism_core::FloatMode::Fp32,
        int8: key.int8.map(|_| vkprism_core::Int8Mode::Int8s),
        int16: key.int16.map(|_| vkprism_core::Int16Mode::Int16s),
        // fp32 has no cooperative-matrix variants (variants::coopmat_values).
        coopmat: key.coopmat.map(|_| false),
        ..*key
    }
}

/// The tensor format a binding expects, from its element scalar in this variant and in the
/// reference variant.
pub fn binding_format(key: &VariantKey, b: &Binding, reference: Option<&Binding>) -> TensorFormat {
    if matches!(
        b.kind,
        BindingKind::SampledImage | BindingKind::StorageImage
    ) {
        return if key.float.is_fp16() {
            TensorFormat::F16
        } else {
            TensorFormat::F32
        };
    }
    let r = reference.map(|r| r.element.scalar);
    match (b.element.scalar, r) {
        (ScalarKind::F32, _) => TensorFormat::F32,
        (ScalarKind::F16, _) => TensorFormat::F16,
        (ScalarKind::Bf16, _) => TensorFormat::Bf16,
        (ScalarKind::U16, Some(ScalarKind::F32)) => TensorFormat::Bf16,
        (ScalarKind::U32, Some(ScalarKind::F32)) => key.float.storage_format(),
        (ScalarKind::U32, Some(ScalarKind::I8)) => TensorFormat::I8,
        // int8p packs a scalar `sint8` buffer four per `int`: the bytes of `int8_t`s.
        (ScalarKind::I32, Some(ScalarKind::I8)) => TensorFormat::I8,
        (ScalarKind::I8, _) => TensorFormat::I8,
        // int16p packs two int16 per `int` where int16s stores `int16_t`: the same bytes.
        (ScalarKind::I32, Some(ScalarKind::I16)) => TensorFormat::I16,
        (ScalarKind::I16, _) => TensorFormat::I16,
        (ScalarKind::I32, _) => TensorFormat::I32,
        (ScalarKind::U32, _) => TensorFormat::U32,
        _ => TensorFormat::Raw,
    }
}

/// Per memory kind: each distinct descriptor signature and the variants that declare it.
type Signatures = BTreeMap<MemoryKind, Vec<(Vec<Binding>, Vec<VariantKey>)>>;

/// Merges reflections. `compiled` holds every compiled variant, including reference variants
/// compiled only for [`binding_format`]; `emit` says which ones the kernel ships.
pub fn build(
    compiled: &BTreeMap<VariantKey, (Vec<u32>, Reflection)>,
    emit: &[VariantKey],
) -> Result<KernelModel, Vec<String>> {
    let mut errors = Vec::new();
    let Some(&first_key) = emit.first() else {
        return Err(vec![
            "internal error: no variant to build the kernel from".into()
        ]);
    };
    let missing = |key: &VariantKey| {
        vec![format!(
            "internal error: variant `{key}` has no reflection although it compiled"
        )]
    };
    let first = &compiled
        .get(&first_key)
        .ok_or_else(|| missing(&first_key))?
        .1;
    let mut signatures = Signatures::new();
    let mut variants = Vec::new();
    for key in emit {
        let (spirv, r) = compiled.get(key).ok_or_else(|| missing(key))?;
        errors.extend(disagreements(&first_key, first, key, r));
        let groups = signatures.entry(key.memory).or_default();
        let sig = descriptor_signature(r);
        match groups.iter_mut().find(|(s, _)| *s == sig) {
            Some((_, keys)) => keys.push(*key),
            None => groups.push((sig, vec![*key])),
        }
        variants.push(variant_model(compiled, key, spirv, r));
    }
    errors.extend(signature_disagreements(&signatures));
    errors.extend(field_clashes(&signatures));
    if let Some(b) = first.bindings.iter().find(|b| b.set != 0) {
        errors.push(format!(
            "binding `{}` is in descriptor set {}; vkprism kernels use set 0 only",
            b.name, b.set
        ));
    }
    if !errors.is_empty() {
        return Err(errors);
    }
    Ok(KernelModel {
        variants,
        push: first.push.clone(),
        spec: first.spec.clone(),
        local_size: first.local_size,
        interfaces: signatures
            .into_iter()
            .map(|(m, mut g)| (m, g.swap_remove(0).0))
            .collect(),
        vulkan_version: Default::default(),
        precompiled: None,
    })
}

/// What variant `key` declares differently from the first variant, where all must agree.
fn disagreements(
    first_key: &VariantKey,
    first: &Reflection,
    key: &VariantKey,
    r: &Reflection,
) -> Vec<String> {
    let mut errors = Vec::new();
    if r.push != first.push {
        errors.push(format!("variants `{first_key}` and `{key}` declare different push-constant blocks; the block must not depend on the variant (use int/uint/float members, not afp)"));
    }
    if r.spec != first.spec {
        errors.push(format!(
            "variants `{first_key}` and `{key}` declare different specialization constants"
        ));
    }
    if r.local_size != first.local_size {
        errors.push(format!(
            "variants `{first_key}` and `{key}` declare different workgroup sizes"
        ));
    }
    errors
}

/// The bindings with their element types blanked: what variants of one memory kind must share.
fn descriptor_signature(r: &Reflection) -> Vec<Binding> {
    r.bindings
        .iter()
        .map(|b| Binding {
            element: vkprism_core::ElementType {
                scalar: ScalarKind::U8,
                components: 0,
                stride: 0,
            },
            ..b.clone()
        })
        .collect()
}

/// One variant with each binding's tensor format decided against its reference variant.
fn variant_model(
    compiled: &BTreeMap<VariantKey, (Vec<u32>, Reflection)>,
    key: &VariantKey,
    spirv: &[u32],
    r: &Reflection,
) -> VariantModel {
    let reference = compiled.get(&reference_key(key)).map(|(_, r)| r);
    let bindings = r
        .bindings
        .iter()
        .map(|b| {
            let rb = reference.and_then(|r| {
                r.bindings
                    .iter()
                    .find(|x| x.binding == b.binding && x.set == b.set)
            });
            (b.clone(), binding_format(key, b, rb))
        })
        .collect();
    VariantModel {
        key: *key,
        spirv: spirv.to_vec(),
        bindings,
        reads_num_workgroups: r.reads_num_workgroups,
        cooperative_matrices: r.cooperative_matrices.clone(),
        device_facts: r.device_facts.clone(),
        capabilities_require: r.capabilities_require,
        tested_facts: Vec::new(),
    }
}

/// One error per memory kind whose variants declare more than one descriptor signature.
fn signature_disagreements(signatures: &Signatures) -> Vec<String> {
    let mut errors = Vec::new();
    for (memory, groups) in signatures {
        if groups.len() > 1 {
            let described: Vec<String> = groups
                .iter()
                .map(|(sig, keys)| {
                    format!(
                        "{} declare {}",
                        keys.iter().map(|k| k.name()).collect::<Vec<_>>().join(", "),
                        describe(sig)
                    )
                })
                .collect();
            errors.push(format!(
                "the {} variants disagree on their descriptor bindings: {}; variants of one memory kind must agree so one bindings type fits them all",
                memory.name(),
                described.join("; ")
            ));
        }
    }
    errors
}

/// One error per two bindings that would give their bindings struct the same field: the
/// generated struct would not compile.
fn field_clashes(signatures: &Signatures) -> Vec<String> {
    let mut errors = Vec::new();
    for groups in signatures.values() {
        let Some((bindings, _)) = groups.first() else {
            continue;
        };
        let mut seen: BTreeMap<String, &Binding> = BTreeMap::new();
        for b in bindings {
            let field = crate::codegen::binding_field_name(b);
            match seen.get(&field) {
                Some(prev) => errors.push(format!(
                    "binding {} (`{}`, {:?}) and binding {} (`{}`, {:?}) both become the field `{field}` of the bindings struct; rename one of the blocks",
                    prev.binding, prev.name, prev.kind, b.binding, b.name, b.kind
                )),
                None => {
                    seen.insert(field, b);
                }
            }
        }
    }
    errors
}

fn describe(bs: &[Binding]) -> String {
    let v: Vec<String> = bs
        .iter()
        .map(|b| format!("{}:{} {:?}", b.binding, b.name, b.kind))
        .collect();
    format!("[{}]", v.join(", "))
}
