//! Kernels on `VK_NV_cooperative_matrix2`'s workgroup-scope matrices and tensor-addressed
//! loads: the module passes SPIRV-Tools' validator, reflection reads its interface through
//! instructions rspirv 0.12 does not know, lists no subgroup shape for its matrices, and
//! requires the device features their use needs (capabilities declare only some).

use std::path::Path;
use vkprism_compiler::{compile_kernel, Ctxt, KernelModel, KernelOptions, Source, VulkanVersion};
use vkprism_core::Feature;

/// A workgroup-scope multiply-add of 64×32 by 32×64 matrices loaded through clamped tensor
/// layouts, scaled per element (`PER_ELEMENT` is replaced by what a test puts there), stored
/// through a layout.
const KERNEL: &str = r#"#version 450
#extension GL_KHR_memory_scope_semantics : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#extension GL_EXT_shader_16bit_storage : require
#extension GL_NV_cooperative_matrix2 : require
layout (local_size_x = 128) in;
layout (binding = 0) readonly buffer a_blob { float16_t a_data[]; };
layout (binding = 1) writeonly buffer c_blob { float16_t c_data[]; };
layout (push_constant) uniform parameter { int n; float scale; } p;
const uint clamped = gl_CooperativeMatrixClampModeConstantNV;
float scaled(const in uint row, const in uint col, const in float v) { return v * p.scale; }
void main()
{
    tensorLayoutNV<2, clamped> l = createTensorLayoutNV(2, clamped);
    l = setTensorLayoutDimensionNV(l, p.n, p.n);
    coopmat<float16_t, gl_ScopeWorkgroup, 64, 32, gl_MatrixUseA> a;
    coopmat<float16_t, gl_ScopeWorkgroup, 32, 64, gl_MatrixUseB> b;
    coopMatLoadTensorNV(a, a_data, 0, sliceTensorLayoutNV(l, 0, 64, 0, 32));
    coopMatLoadTensorNV(b, a_data, 0, sliceTensorLayoutNV(l, 0, 32, 0, 64));
    coopmat<float, gl_ScopeWorkgroup, 64, 64, gl_MatrixUseAccumulator> c =
        coopmat<float, gl_ScopeWorkgroup, 64, 64, gl_MatrixUseAccumulator>(0.0);
    c = coopMatMulAdd(a, b, c);
    PER_ELEMENT
    coopmat<float16_t, gl_ScopeWorkgroup, 64, 64, gl_MatrixUseAccumulator> h =
        coopmat<float16_t, gl_ScopeWorkgroup, 64, 64, gl_MatrixUseAccumulator>(c);
    coopMatStoreTensorNV(h, c_data, 0, sliceTensorLayoutNV(l, 0, 64, 0, 64));
}
"#;

fn compile(per_element: &str) -> KernelModel {
    let cx = Ctxt::new();
    let options = KernelOptions {
        vulkan_version: VulkanVersion::V1_3,
        ..KernelOptions::default()
    };
    let text = KERNEL.replace("PER_ELEMENT", per_element);
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let only = Some(vec![("fp32".to_string(), proc_macro2::Span::call_site())]);
    let model = Source::from_text_with(&cx, &text, "test.comp", dir, options)
        .and_then(|s| compile_kernel(&cx, &s, only));
    if let Err(e) = cx.check() {
        let messages: Vec<String> = e.into_iter().map(|e| e.to_string()).collect();
        panic!("does not compile: {messages:?}");
    }
    model.expect("no errors, so a model")
}

mod spirv_val;

#[test]
fn workgroup_matrices_are_reflected_and_require_their_features() {
    let model = compile("coopMatPerElementNV(c, c, scaled);");
    let [v] = &model.variants[..] else {
        panic!("one variant");
    };
    spirv_val::validate(&v.spirv, "vulkan1.3").unwrap_or_else(|e| panic!("spirv-val: {e}"));
    // The interface, read around the instructions left out for rspirv.
    let names: Vec<&str> = v.bindings.iter().map(|(b, _)| b.name.as_str()).collect();
    assert_eq!(names, ["a_blob", "c_blob"]);
    assert_eq!(model.push.as_ref().map(|p| p.size), Some(8));
    // Workgroup-scope sizes are not among a device's subgroup shapes.
    assert!(
        v.cooperative_matrices.is_empty(),
        "{:?}",
        v.cooperative_matrices
    );
    let needs = v.capabilities_require;
    for f in [
        Feature::CooperativeMatrixWorkgroupScope,
        Feature::CooperativeMatrixFlexibleDimensions,
        Feature::CooperativeMatrixTensorAddressing,
        Feature::CooperativeMatrixPerElementOperations,
    ] {
        assert!(needs.contains(f), "{f} missing from {needs:?}");
    }
    assert!(!needs.contains(Feature::CooperativeMatrixReductions));
    // Without the per-element operation, its feature is not required.
    let plain = compile("");
    let plain = plain.variants[0].capabilities_require;
    assert!(!plain.contains(Feature::CooperativeMatrixPerElementOperations));
    assert!(plain.contains(Feature::CooperativeMatrixTensorAddressing));
}

/// An fp16 accumulator turned into an A matrix of the same component type changes only its use
/// (`OpCooperativeMatrixConvertNV`, which rspirv 0.12 does not know): reflected around it, and
/// the conversion's feature required.
#[test]
fn a_use_change_without_a_type_change_is_reflected() {
    let model = compile(
        "coopmat<float16_t, gl_ScopeWorkgroup, 64, 64, gl_MatrixUseAccumulator> h16 =
            coopmat<float16_t, gl_ScopeWorkgroup, 64, 64, gl_MatrixUseAccumulator>(c);
        coopmat<float16_t, gl_ScopeWorkgroup, 64, 64, gl_MatrixUseA> ha =
            coopmat<float16_t, gl_ScopeWorkgroup, 64, 64, gl_MatrixUseA>(h16);
        coopmat<float16_t, gl_ScopeWorkgroup, 64, 64, gl_MatrixUseB> b2;
        coopMatLoadTensorNV(b2, a_data, 0, sliceTensorLayoutNV(l, 0, 64, 0, 64));
        c = coopMatMulAdd(ha, b2, c);",
    );
    let v = &model.variants[0];
    spirv_val::validate(&v.spirv, "vulkan1.3").unwrap_or_else(|e| panic!("spirv-val: {e}"));
    let names: Vec<&str> = v.bindings.iter().map(|(b, _)| b.name.as_str()).collect();
    assert_eq!(names, ["a_blob", "c_blob"]);
    let needs = v.capabilities_require;
    assert!(
        needs.contains(Feature::CooperativeMatrixConversions),
        "{needs:?}"
    );
}
