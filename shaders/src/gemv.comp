#version 450
#if ncnn_subgroup_basic && ncnn_subgroup_arithmetic
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#endif
#extension GL_EXT_control_flow_attributes : require
// y[b][n] = Σ_k W[n][k] · x[b][k] + bias[n] on float weights (the variant's format), through
// gemv.glsl. GEMV_WIDE 1: W and x read in 16-byte chunks (a vec4 of fp32, eight fp16 / bf16
// values), so K must be a multiple of the chunk; GEMV_WIDE 0: single values, any K.
layout (local_size_x = 256) in;

// Rows of x (1 to 8): a constant, so the loops over them unroll and the sums stay in registers.
layout (constant_id = 0) const int batch = 1;
layout (constant_id = 1) const int bias_term = 0;

#if GEMV_WIDE
#if NCNN_fp16_storage || NCNN_bf16_storage
const int V = 8;
layout (binding = 0) readonly buffer w_blob { sfpvec8 w_data[]; };
layout (binding = 1) readonly buffer x_blob { sfpvec8 x_data[]; };
#define W_T mat2x4
#define X_T mat2x4
#define W_LD(i) mat2x4(buffer_ld8(w_data, i))
#define X_LD(i) mat2x4(buffer_ld8(x_data, i))
float chunk_dot(mat2x4 w, mat2x4 x) { return dot(w[0], x[0]) + dot(w[1], x[1]); }
#else
const int V = 4;
layout (binding = 0) readonly buffer w_blob { sfpvec4 w_data[]; };
layout (binding = 1) readonly buffer x_blob { sfpvec4 x_data[]; };
#define W_T vec4
#define X_T vec4
#define W_LD(i) vec4(buffer_ld4(w_data, i))
#define X_LD(i) vec4(buffer_ld4(x_data, i))
float chunk_dot(vec4 w, vec4 x) { return dot(w, x); }
#endif
#else
const int V = 1;
layout (binding = 0) readonly buffer w_blob { sfp w_data[]; };
layout (binding = 1) readonly buffer x_blob { sfp x_data[]; };
#define W_T float
#define X_T float
#define W_LD(i) float(buffer_ld1(w_data, i))
#define X_LD(i) float(buffer_ld1(x_data, i))
float chunk_dot(float w, float x) { return w * x; }
#endif
layout (binding = 2) readonly buffer bias_blob { sfp bias_data[]; };
layout (binding = 3) buffer y_blob { sfp y_data[]; };

layout (push_constant) uniform parameter {
    int N; int K; float eps; float slope; int d; int hq; int hkv; int rows; int offset;
    float log2_base; float freq_factor; float freq_low; float freq_high;
} p;

// Row n's sum as stored: plus the bias where there is one.
float gemv_output(float sum, int n)
{
    return bias_term == 1 ? sum + float(buffer_ld1(bias_data, n)) : sum;
}

#include "gemv.glsl"
