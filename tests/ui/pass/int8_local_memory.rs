vkprism::compute_shader! {
    pub mod dequantize,
    src: r#"
#version 450
layout (binding = 0) readonly buffer q_blob { sint8vec4 q_data[]; };
layout (binding = 1) writeonly buffer y_blob { sfpvec4 y_data[]; };
layout (push_constant) uniform parameter { int n; float scale; } p;
#if NCNN_shader_local_memory
shared ivec4 tile[64];
#endif
void main() {
    int i = int(gl_GlobalInvocationID.x);
    aint8vec4 q = i8buffer_ld4(q_data, min(i, p.n - 1));
#if NCNN_shader_local_memory
    tile[gl_LocalInvocationID.x] = ivec4(q);
    barrier();
    q = aint8vec4(tile[gl_LocalInvocationID.x]);
#endif
    if (i >= p.n) return;
    buffer_st4(y_data, i, afpvec4(vec4(q) * p.scale));
}
"#,
    variants: [fp32_int8p_nolm, fp16s_int8s_lm, fp16sa_int8a_lm],
}

fn main() {
    assert_eq!(dequantize::VARIANT_NAMES, ["fp32_int8p_nolm", "fp16s_int8s_lm", "fp16sa_int8a_lm"]);
}
