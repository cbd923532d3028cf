//! The compiler core without a proc macro: the seed's kernels compile in every variant, each
//! variant's SPIR-V passes `spirv-val`, and reflection reports what the GLSL declares.

use std::path::Path;
use vkprism_compiler::{compile_kernel, Ctxt, KernelModel, Source};
use vkprism_core::{Access, BindingKind, FloatMode, MemoryKind, ScalarKind, TensorFormat};

fn compile(text: &str) -> Result<KernelModel, Vec<String>> {
    let cx = Ctxt::new();
    let model = Source::from_text(
        &cx,
        text,
        "test.comp",
        Path::new(env!("CARGO_MANIFEST_DIR")),
    )
    .and_then(|src| compile_kernel(&cx, &src, None));
    messages(cx)?;
    Ok(model.expect("no errors, so a model"))
}

/// Every error recorded in `cx`, one message each.
fn messages(cx: Ctxt) -> Result<(), Vec<String>> {
    cx.check()
        .map_err(|e| e.into_iter().map(|e| e.to_string()).collect())
}

mod spirv_val;

/// Runs the Khronos SPIR-V validator on every variant.
fn validate_all(m: &KernelModel) {
    for v in &m.variants {
        spirv_val::validate(&v.spirv, "vulkan1.1")
            .unwrap_or_else(|e| panic!("variant {} fails spirv-val: {e}", v.key));
    }
}

const SEED_ADD: &str = r#"
#version 450
layout (binding = 0) readonly buffer a_blob { sfpvec4 a_blob_data[]; };
layout (binding = 1) writeonly buffer b_blob { sfpvec4 b_blob_data[]; };
void main()
{
    const int i = int(gl_GlobalInvocationID.x);
    afpvec4 v = buffer_ld4(a_blob_data, i);
    v = v + 123;
    buffer_st4(b_blob_data, i, v);
}
"#;

#[test]
fn seed_example_as_written_fails_only_in_fp16_arithmetic_with_a_hint() {
    // `f16vec4 + 123` is not GLSL (no implicit int -> float16_t conversion); the message says so.
    let errs = compile(SEED_ADD).unwrap_err();
    assert_eq!(errs.len(), 1, "{errs:?}");
    assert!(
        errs[0].contains("variants fp16pa, fp16sa")
            && errs[0].contains("test.comp:9")
            && errs[0].contains("hint: GLSL has no implicit conversion"),
        "{errs:?}"
    );
    let cx = Ctxt::new();
    let src = Source::from_text(&cx, SEED_ADD, "test.comp", Path::new(".")).unwrap();
    let span = proc_macro2::Span::call_site();
    let names = ["fp32", "fp16p", "fp16s", "bf16p", "bf16s"]
        .map(|n| (n.to_string(), span))
        .to_vec();
    let m = compile_kernel(&cx, &src, Some(names));
    if let Err(errors) = messages(cx) {
        panic!("{errors:?}");
    }
    let m = m.unwrap();
    assert_eq!(m.variants.len(), 5);
    validate_all(&m);
}

#[test]
fn seed_example_compiles_in_every_float_variant() {
    let m = compile(&SEED_ADD.replace("v + 123", "v + afp(123)")).unwrap();
    let names: Vec<_> = m.variants.iter().map(|v| v.key.name()).collect();
    assert_eq!(
        names,
        ["fp32", "fp16p", "fp16pa", "fp16s", "fp16sa", "bf16p", "bf16s"]
    );
    validate_all(&m);
    let iface = &m.interfaces[&MemoryKind::Buffer];
    assert_eq!(iface.len(), 2);
    assert_eq!(
        (iface[0].name.as_str(), iface[0].kind, iface[0].access),
        ("a_blob", BindingKind::StorageBuffer, Access::ReadOnly)
    );
    assert_eq!(
        (iface[1].name.as_str(), iface[1].access),
        ("b_blob", Access::WriteOnly)
    );
    for v in &m.variants {
        let (b, fmt) = &v.bindings[0];
        let (scalar, comps, stride, want) = match v.key.float {
            FloatMode::Fp32 => (ScalarKind::F32, 4, 16, TensorFormat::F32),
            FloatMode::Fp16p | FloatMode::Fp16pa => (ScalarKind::U32, 2, 8, TensorFormat::F16),
            FloatMode::Fp16s | FloatMode::Fp16sa => (ScalarKind::F16, 4, 8, TensorFormat::F16),
            FloatMode::Bf16p => (ScalarKind::U32, 2, 8, TensorFormat::Bf16),
            FloatMode::Bf16s => (ScalarKind::U16, 4, 8, TensorFormat::Bf16),
        };
        assert_eq!(
            (
                b.element.scalar,
                b.element.components,
                b.element.stride,
                *fmt
            ),
            (scalar, comps, stride, want),
            "{}",
            v.key
        );
    }
    // No push constants, workgroup size defaulted and specializable.
    assert!(m.push.is_none());
    assert_eq!(m.local_size[0].default, 64);
    assert_eq!(
        m.local_size.map(|d| d.spec_id),
        [Some(233), Some(234), Some(235)]
    );
}

#[test]
fn psc_and_push_constants_reflect() {
    let m = compile(
        r#"
#version 450
layout (constant_id = 0) const int size = 0;
layout (constant_id = 1) const float scale = 2.5;
layout (local_size_x = 128) in;
layout (binding = 0) buffer blob { sfp data[]; };
layout (push_constant) uniform parameter { int size; float bias; vec4 extra; } p;
void main() {
    int i = int(gl_GlobalInvocationID.x);
    if (i >= psc(size)) return;
    buffer_st1(data, i, buffer_ld1(data, i) * afp(scale) + afp(p.bias + p.extra.x));
}
"#,
    )
    .unwrap();
    validate_all(&m);
    let push = m.push.as_ref().unwrap();
    assert_eq!(push.instance, "p");
    let members: Vec<_> = push
        .members
        .iter()
        .map(|m| (m.name.as_str(), m.offset, m.scalar, m.components))
        .collect();
    assert_eq!(
        members,
        [
            ("size", 0, ScalarKind::I32, 1),
            ("bias", 4, ScalarKind::F32, 1),
            ("extra", 16, ScalarKind::F32, 4)
        ]
    );
    assert_eq!(push.size, 32);
    let spec: Vec<_> = m
        .spec
        .iter()
        .map(|s| (s.id, s.name.as_str(), s.scalar, s.default_bits))
        .collect();
    assert_eq!(
        spec,
        [
            (0, "size", ScalarKind::I32, 0),
            (1, "scale", ScalarKind::F32, 2.5f32.to_bits())
        ]
    );
    assert_eq!(m.local_size[0].default, 128);
    assert_eq!(m.local_size[0].spec_id, Some(233));
    // `sfp` is float16_t / uint16_t in storage modes; in packed modes it would be float, so a
    // kernel whose storage is scalar only has no packed variants.
    let fmt = |f: FloatMode| {
        m.variants
            .iter()
            .find(|v| v.key.float == f)
            .unwrap()
            .bindings[0]
            .1
    };
    assert!(m.variants.iter().all(|v| !v.key.float.is_packed()));
    assert_eq!(fmt(FloatMode::Fp16s), TensorFormat::F16);
    assert_eq!(fmt(FloatMode::Bf16s), TensorFormat::Bf16);
}

#[test]
fn every_extended_function_compiles() {
    let m = compile(
        r#"
#version 450
layout (binding = 0) buffer b1 { sfp d1[]; };
layout (binding = 1) buffer b2 { sfpvec2 d2[]; };
layout (binding = 2) buffer b4 { sfpvec4 d4[]; };
layout (binding = 3) buffer b8 { sfpvec8 d8[]; };
shared lfp tmp[64];
shared lfpvec4 tmp4[64];
void main() {
    int i = int(gl_GlobalInvocationID.x);
    afp a = buffer_ld1(d1, i);
    afpvec2 b = buffer_ld2(d2, i);
    afpvec4 c = buffer_ld4(d4, i);
    afpvec8 e = buffer_ld8(d8, i);
    buffer_st1(d1, i, a);
    buffer_st2(d2, i, b);
    buffer_st4(d4, i, c);
    buffer_st8(d8, i, e);
    buffer_cp1(d1, i, d1, i + 1);
    buffer_cp2(d2, i, d2, i + 1);
    buffer_cp4(d4, i, d4, i + 1);
    buffer_cp8(d8, i, d8, i + 1);
    buffer_cp1to4(d4, i, d1, ivec4(0, 1, 2, 3));
    buffer_cp1to8(d8, i, d1, ivec4(0, 1, 2, 3), ivec4(4, 5, 6, 7));
    buffer_cp4to8(d8, i, d4, ivec2(0, 1));
    buffer_cp4to1(d1, ivec4(0, 1, 2, 3), d4, i);
    buffer_cp8to1(d1, ivec4(0, 1, 2, 3), ivec4(4, 5, 6, 7), d8, i);
    buffer_cp8to4(d4, ivec2(0, 1), d8, i);
    tmp[gl_LocalInvocationID.x] = sfp2lfp(d1[i]);
    tmp4[gl_LocalInvocationID.x] = sfp2lfpvec4(d4[i]);
    barrier();
    afp x = lfp2afp(tmp[0]);
    afpvec4 y = lfp2afpvec4(tmp4[0]);
    buffer_st4(d4, i, y + x);
}
"#,
    )
    .unwrap();
    assert_eq!(m.variants.len(), 7);
    validate_all(&m);
}

#[test]
fn image_and_buffer_variants_have_their_own_bindings() {
    let m = compile(
        r#"
#version 450
#if NCNN_image_shader
layout (binding = 0) uniform unfp sampler3D bottom_blob;
layout (binding = 1, imfmtc4) writeonly uniform unfp image3D top_blob;
#else
layout (binding = 0) buffer bottom_top_blob { sfpvec4 bottom_top_blob_data[]; };
#endif
void main() {
    ivec3 g = ivec3(gl_GlobalInvocationID);
#if NCNN_image_shader
    afpvec4 v = image3d_ld4(bottom_blob, g);
    image3d_st4(top_blob, g, v * afp(2));
    afpvec8 w = image3d_ld8(bottom_blob, g);
    image3d_st8(top_blob, g, w);
    image3d_cp4(top_blob, g, bottom_blob, g);
    image3d_cp8(top_blob, g, bottom_blob, g);
    afp s = image3d_ld1(bottom_blob, g);
    image3d_st1(top_blob, g, s);
#else
    buffer_st4(bottom_top_blob_data, g.x, buffer_ld4(bottom_top_blob_data, g.x) * afp(2));
#endif
}
"#,
    )
    .unwrap();
    assert_eq!(m.variants.len(), 12);
    validate_all(&m);
    assert_eq!(m.interfaces[&MemoryKind::Buffer].len(), 1);
    let img = &m.interfaces[&MemoryKind::Image];
    assert_eq!(
        (img[0].kind, img[1].kind, img[1].access),
        (
            BindingKind::SampledImage,
            BindingKind::StorageImage,
            Access::WriteOnly
        )
    );
    assert_eq!(img[0].dims, 3);
}

#[test]
fn int8_and_local_memory_axes() {
    let m = compile(
        r#"
#version 450
layout (binding = 0) readonly buffer a { sint8vec4 a_data[]; };
layout (binding = 1) writeonly buffer b { sfpvec4 b_data[]; };
layout (push_constant) uniform parameter { float scale; } p;
#if NCNN_shader_local_memory
shared ivec4 tile[64];
#endif
void main() {
    int i = int(gl_GlobalInvocationID.x);
    aint8vec4 q = i8buffer_ld4(a_data, i);
#if NCNN_shader_local_memory
    tile[gl_LocalInvocationID.x] = ivec4(q);
    barrier();
    q = aint8vec4(tile[gl_LocalInvocationID.x]);
#endif
    buffer_st4(b_data, i, afpvec4(vec4(q) * p.scale));
}
"#,
    )
    .unwrap();
    assert_eq!(m.variants.len(), 7 * 3 * 2);
    validate_all(&m);
    for v in &m.variants {
        assert_eq!(v.bindings[0].1, TensorFormat::I8, "{}", v.key);
    }
}

#[test]
fn glsl_errors_are_located_and_grouped() {
    let errs = compile("#version 450\nlayout (binding = 0) buffer b { sfp d[]; };\nvoid main() {\n    buffer_st1(d, 0, undefined_thing);\n}\n").unwrap_err();
    assert_eq!(errs.len(), 1, "{errs:?}");
    assert!(
        errs[0].contains("every variant")
            && errs[0].contains("test.comp:4")
            && errs[0].contains("undefined_thing"),
        "{errs:?}"
    );
}

#[test]
fn a_reflection_failure_is_one_error_naming_its_variants() {
    let errs = compile("#version 450\nlayout (binding = 0) buffer a_blob { sfpvec4 a[]; };\nlayout (push_constant, std140) uniform parameter { float w[4]; } p;\nvoid main() { buffer_st4(a, 0, afpvec4(p.w[1])); }\n").unwrap_err();
    assert_eq!(errs.len(), 1, "{errs:?}");
    assert!(
        errs[0].starts_with(
            "test.comp:3: variants fp32, fp16p, fp16pa, fp16s, fp16sa, bf16p, bf16s: "
        ) && errs[0].contains("array stride 16"),
        "{errs:?}"
    );
}

#[test]
fn lexical_checks() {
    let errs = compile("#version 450\nlayout (binding = 0) buffer b { sfp d[]; };\nvoid main() { afp x = buffer_ld3(d, 0); }\n").unwrap_err();
    assert!(
        errs[0].contains("unknown extended GLSL function `buffer_ld3`")
            && errs[0].contains("test.comp:3"),
        "{errs:?}"
    );
    let errs = compile("#version 450\nlayout (constant_id = 0) const int n = 0;\nlayout (push_constant) uniform parameter { int n; } q;\nvoid main() { int x = psc(n); }\n").unwrap_err();
    assert!(errs[0].contains("named `q`"), "{errs:?}");
}

#[test]
fn reading_gl_num_workgroups_is_reflected_in_the_shipped_module() {
    const READS: &str = r#"
#version 450
layout (binding = 0) writeonly buffer x_blob { uint x[]; };
void main() {
    x[gl_GlobalInvocationID.x] = gl_NumWorkGroups.x;
}
"#;
    let m = compile(READS).unwrap();
    assert!(m.variants.iter().all(|v| v.reads_num_workgroups));
    let m = compile(&SEED_ADD.replace("v + 123", "v + afp(123)")).unwrap();
    assert!(m.variants.iter().all(|v| !v.reads_num_workgroups));
}
