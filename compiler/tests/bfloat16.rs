//! bf16 cooperative-matrix variants: their `cmfp` matrices are `bfloat16_t` (GL_EXT_bfloat16).
//! The module must pass SPIRV-Tools' validator (which knows SPV_KHR_bfloat16), reflection must
//! report bfloat16 shapes, and what GL_EXT_bfloat16 leaves out (arithmetic on `bfloat16_t`) is
//! glslang's located error with vkprism's hint, while conversions through fp32 compile.

use std::path::Path;
use vkprism_compiler::{compile_kernel, Ctxt, KernelModel, Source};
use vkprism_core::{CoopMatShape, Feature, FloatMode, ScalarKind};

/// One 16×16×16 multiply-add of matrices loaded from octets of 16-bit values, its fp32 result
/// stored as is; `EXTRA` is replaced by what a test adds inside `main`.
const KERNEL: &str = r#"#version 450
layout (local_size_x = 32) in;
layout (binding = 0) readonly buffer a_blob { uvec4 a_data[]; };
layout (binding = 1) readonly buffer b_blob { uvec4 b_data[]; };
layout (binding = 2) writeonly buffer c_blob { float c_data[]; };
layout (binding = 3) writeonly buffer d_blob { sfp d_data[]; };
void main()
{
    buffer_st1(d_data, 0, afp(1));
#if NCNN_cooperative_matrix
    coopmat<cmfp, gl_ScopeSubgroup, 16, 16, gl_MatrixUseA> a;
    coopmat<cmfp, gl_ScopeSubgroup, 16, 16, gl_MatrixUseB> b;
    coopMatLoad(a, a_data, 0, 2, gl_CooperativeMatrixLayoutRowMajor);
    coopMatLoad(b, b_data, 0, 2, gl_CooperativeMatrixLayoutRowMajor);
    EXTRA
    coopmat<float, gl_ScopeSubgroup, 16, 16, gl_MatrixUseAccumulator> c =
        coopmat<float, gl_ScopeSubgroup, 16, 16, gl_MatrixUseAccumulator>(0.0);
    c = coopMatMulAdd(a, b, c);
    coopMatStore(c, c_data, 0, 16, gl_CooperativeMatrixLayoutRowMajor);
#endif
}
"#;

fn compile(extra: &str, variants: &[&str]) -> Result<KernelModel, Vec<String>> {
    let cx = Ctxt::new();
    let only = Some(
        variants
            .iter()
            .map(|v| (v.to_string(), proc_macro2::Span::call_site()))
            .collect(),
    );
    let text = KERNEL.replace("EXTRA", extra);
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let model =
        Source::from_text(&cx, &text, "test.comp", dir).and_then(|s| compile_kernel(&cx, &s, only));
    match cx.check() {
        Ok(()) => Ok(model.expect("no errors, so a model")),
        Err(e) => Err(e.into_iter().map(|e| e.to_string()).collect()),
    }
}

mod spirv_val;

fn validate(name: &str, words: &[u32]) {
    spirv_val::validate(words, "vulkan1.3")
        .unwrap_or_else(|e| panic!("{name} fails spirv-val: {e}"));
}

fn shape(operands: ScalarKind) -> CoopMatShape {
    CoopMatShape {
        m: 16,
        n: 16,
        k: 16,
        a: operands,
        b: operands,
        c: ScalarKind::F32,
        result: ScalarKind::F32,
    }
}

#[test]
fn bf16_matrices_are_bfloat16_in_the_module_and_its_reflection() {
    let model = compile("", &["fp16s_cm", "bf16s_cm"]).expect("compiles");
    assert_eq!(model.variants.len(), 2);
    for v in &model.variants {
        validate(&v.key.name(), &v.spirv);
        let (operands, capability) = if v.key.float == FloatMode::Bf16s {
            (ScalarKind::Bf16, 5116)
        } else {
            (ScalarKind::F16, 9)
        };
        assert_eq!(v.cooperative_matrices, vec![shape(operands)], "{}", v.key);
        // OpCapability BFloat16TypeKHR in bf16, Float16 in fp16, and not the other.
        let has = |c: u32| v.spirv.windows(2).any(|w| w == [2 << 16 | 17, c]);
        assert!(has(capability), "{}", v.key);
        assert!(!has(if capability == 9 { 5116 } else { 9 }), "{}", v.key);
    }
    let bf16 = &model.variants[1].key;
    assert!(bf16
        .requires()
        .contains(Feature::ShaderBFloat16CooperativeMatrix));
    assert!(!bf16.requires().contains(Feature::ShaderFloat16));
}

#[test]
fn the_library_bf16_variants_validate() {
    // The kernels of vkprism-shaders compiled the same way (packed and 16-bit storage).
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shaders/src");
    for file in ["gemm.comp", "conv2d_nhwc.comp"] {
        let cx = Ctxt::new();
        let text = std::fs::read_to_string(dir.join(file)).unwrap();
        let only = Some(
            ["bf16p_lm_cm", "bf16s_lm_cm"]
                .iter()
                .map(|v| (v.to_string(), proc_macro2::Span::call_site()))
                .collect(),
        );
        let model =
            Source::from_text(&cx, &text, file, &dir).and_then(|s| compile_kernel(&cx, &s, only));
        let model = match cx.check() {
            Ok(()) => model.unwrap(),
            Err(e) => panic!(
                "{file}: {:?}",
                e.into_iter().map(|e| e.to_string()).collect::<Vec<_>>()
            ),
        };
        for v in &model.variants {
            validate(&format!("{file}-{}", v.key.name()), &v.spirv);
            assert!(
                v.cooperative_matrices
                    .iter()
                    .all(|s| s.a == ScalarKind::Bf16),
                "{file} {}: {:?}",
                v.key,
                v.cooperative_matrices
            );
        }
    }
}

#[test]
fn bf16_matrices_compute_through_fp32_and_arithmetic_is_glslangs_located_error() {
    // The fp32 accumulator computed on, a bf16 accumulator converted to and back, a bf16
    // scalar made and read.
    let through_fp32 = "coopmat<float, gl_ScopeSubgroup, 16, 16, gl_MatrixUseAccumulator> e = \
        coopmat<float, gl_ScopeSubgroup, 16, 16, gl_MatrixUseAccumulator>(1.0); e = e * 2.0; \
        coopmat<cmfp, gl_ScopeSubgroup, 16, 16, gl_MatrixUseAccumulator> h = \
        coopmat<cmfp, gl_ScopeSubgroup, 16, 16, gl_MatrixUseAccumulator>(e); \
        e = coopmat<float, gl_ScopeSubgroup, 16, 16, gl_MatrixUseAccumulator>(h); \
        coopMatStore(e, c_data, 256, 16, gl_CooperativeMatrixLayoutRowMajor); \
        cmfp s = cmfp(1.5); buffer_st1(d_data, 1, afp(float(s)));";
    let model = compile(through_fp32, &["fp16s_cm", "bf16s_cm"]).expect("conversions compile");
    for v in &model.variants {
        validate(&v.key.name(), &v.spirv);
    }
    // The kernel's line of the statement: `EXTRA` sits on line 15 of `KERNEL`.
    for extra in ["a = a * cmfp(2.0);", "a = -a;", "a = a + a;"] {
        let errs = compile(extra, &["fp16s_cm", "bf16s_cm"]).expect_err(extra);
        assert_eq!(errs.len(), 1, "{errs:?}");
        assert!(
            errs[0].contains("(variant bf16s_cm)")
                && errs[0].contains("test.comp:15")
                && errs[0].contains("bfloat16_t")
                && errs[0].contains("GL_EXT_bfloat16 has no arithmetic"),
            "{extra}: {errs:?}"
        );
        compile(extra, &["fp16s_cm"]).expect("fp16 computes in cmfp");
    }
}
