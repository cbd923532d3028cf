// Extended names are checked per variant, after the preprocessor: `lfpvec4(v)` is right where
// `lfpvec4` holds values unpacked (fp32, fp16sa, bf16s), and a branch no variant compiles may
// name anything.
vkprism::compute_shader! {
    pub mod k,
    src: r#"
#version 450
layout (local_size_x = 64) in;
layout (binding = 0) buffer a_blob { sfpvec4 a_data[]; };
shared lfpvec4 tmp[64];
void main() {
    const int l = int(gl_LocalInvocationID.x);
    afpvec4 v = buffer_ld4(a_data, l) * afp(2);
#if NCNN_fp16_packed || NCNN_bf16_packed || (NCNN_fp16_storage && !NCNN_fp16_arithmetic)
    tmp[l] = afp2lfpvec4(v);
#else
    tmp[l] = lfpvec4(v);
#endif
#if 0
    buffer_ld3(a_data, l); sfpvec3 nothing;
#endif
    barrier();
    buffer_st4(a_data, l, lfp2afpvec4(tmp[63 - l]));
}
"#,
}

fn main() {
    assert_eq!(k::VARIANT_NAMES.len(), 7);
}
