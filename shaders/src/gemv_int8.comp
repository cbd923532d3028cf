#version 450
#if ncnn_subgroup_basic && ncnn_subgroup_arithmetic
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#endif
#extension GL_EXT_control_flow_attributes : require
// y[b][n] = scale[n] · Σ_k W[n][k] · x[b][k] on int8 weights with one f32 scale per row (the
// dequantization fused), x and y in the variant's float format, through gemv.glsl. GEMV_WIDE 1:
// W read sixteen int8 (one uvec4) at a time, so K must be a multiple of 16; GEMV_WIDE 0: single
// values, any K.
layout (local_size_x = 256) in;

// Rows of x (1 to 8); `bias_term` 1 adds bias[n] after the scale.
layout (constant_id = 0) const int batch = 1;
layout (constant_id = 1) const int bias_term = 0;

#if GEMV_WIDE
const int V = 16;
#if NCNN_int8_packed
layout (binding = 0) readonly buffer w_blob { uvec4 w_data[]; };
#define W_LD(i) (w_data[i])
#else
// 8-bit storage: four i8vec4 make the chunk, packed as the packed variant holds it.
layout (binding = 0) readonly buffer w_blob { sint8vec4 w_data[]; };
#define W_LD(i) uvec4(packInt4x8(ivec4(w_data[4 * (i)])), packInt4x8(ivec4(w_data[4 * (i) + 1])), \
    packInt4x8(ivec4(w_data[4 * (i) + 2])), packInt4x8(ivec4(w_data[4 * (i) + 3])))
#endif
layout (binding = 1) readonly buffer x_blob { sfpvec4 x_data[]; };
#define W_T uvec4
#define X_T mat4
#define X_LD(i) mat4(vec4(buffer_ld4(x_data, 4 * (i))), vec4(buffer_ld4(x_data, 4 * (i) + 1)), \
    vec4(buffer_ld4(x_data, 4 * (i) + 2)), vec4(buffer_ld4(x_data, 4 * (i) + 3)))
float chunk_dot(uvec4 w, mat4 x)
{
    float s = 0.0;
    [[unroll]] for (int j = 0; j < 4; j++) s += dot(vec4(unpackInt4x8(int(w[j]))), x[j]);
    return s;
}
#else
const int V = 1;
layout (binding = 0) readonly buffer w_blob { sint8 w_data[]; };
layout (binding = 1) readonly buffer x_blob { sfp x_data[]; };
#define W_T float
#define X_T float
#define W_LD(i) float(i8buffer_ld1(w_data, i))
#define X_LD(i) float(buffer_ld1(x_data, i))
float chunk_dot(float w, float x) { return w * x; }
#endif
layout (binding = 2) readonly buffer scale_blob { float scale_data[]; };
layout (binding = 3) buffer y_blob { sfp y_data[]; };
// After gemv.glsl's 4 to 6: N values in the float format, read only with `bias_term` 1.
layout (binding = 7) readonly buffer bias_blob { sfp bias_data[]; };

layout (push_constant) uniform parameter {
    int N; int K; float eps; float slope; int d; int hq; int hkv; int rows; int offset;
    float log2_base; float freq_factor; float freq_low; float freq_high;
} p;

// Row n's sum dequantized, plus the bias where there is one.
float gemv_output(float sum, int n)
{
    const float scaled = sum * scale_data[n];
    return bias_term == 1 ? scaled + float(buffer_ld1(bias_data, n)) : scaled;
}

#include "gemv.glsl"
