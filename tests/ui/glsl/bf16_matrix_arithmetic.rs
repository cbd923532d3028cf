// Arithmetic on `cmfp` matrices: fine in fp16, refused in bf16 `_cm` variants, whose matrices are
// `bfloat16_t` (GL_EXT_bfloat16 has no arithmetic on it): glslang's error at the line, with
// vkprism's hint to compute on the fp32 accumulator.
vkprism::compute_shader! {
    pub mod k,
    variants: [fp16s_cm, bf16s_cm],
    src: r#"
#version 450
layout (local_size_x = 32) in;
layout (binding = 0) readonly buffer a_blob { uvec4 a_data[]; };
layout (binding = 1) writeonly buffer c_blob { float c_data[]; };
layout (binding = 2) writeonly buffer d_blob { sfp d_data[]; };
void main()
{
    buffer_st1(d_data, 0, afp(1));
#if NCNN_cooperative_matrix
    coopmat<cmfp, gl_ScopeSubgroup, 16, 16, gl_MatrixUseA> a;
    coopmat<cmfp, gl_ScopeSubgroup, 16, 16, gl_MatrixUseB> b;
    coopMatLoad(a, a_data, 0, 2, gl_CooperativeMatrixLayoutRowMajor);
    coopMatLoad(b, a_data, 0, 2, gl_CooperativeMatrixLayoutRowMajor);
    a = -a;
    coopmat<float, gl_ScopeSubgroup, 16, 16, gl_MatrixUseAccumulator> c =
        coopmat<float, gl_ScopeSubgroup, 16, 16, gl_MatrixUseAccumulator>(0.0);
    c = coopMatMulAdd(a, b, c);
    coopMatStore(c, c_data, 0, 16, gl_CooperativeMatrixLayoutRowMajor);
#endif
}
"#,
}

fn main() {}
