#version 450
// The second pass of a split-K GEMM or convolution (gemm_split, conv2d_nhwc_split): adds the
// `splits` fp32 partial sums [splits][M][N] of each element of C and writes
// C = act(alpha · sum + bias) in the variant's storage format, as the one-pass kernels do.
// One invocation per 4 consecutive elements of a row (N a multiple of 4).
//
// With VKPRISM_ROW_RMS (gemm_split_reduce_rms): one workgroup per row of C, which also writes
// h = C / sqrt(mean(C²) + eps) row by row (RMS norm without a weight, of C's values as stored,
// as norm.comp computes it): a decoder's residual stream and its next layer's normed input in
// one pass. Grid [M · workgroup, 1, 1].
layout (constant_id = 0) const int splits = 2;
layout (constant_id = 1) const int bias_term = 0;
// 0 none, 1 relu, 2 leaky relu (slope in the push constants), 3 sigmoid, 4 GELU, 5 SiLU
layout (constant_id = 2) const int activation = 0;
// 1: beta · C's value before the product is added (a residual connection), C read first.
layout (constant_id = 3) const int beta_term = 0;

layout (local_size_x = 256) in;

layout (binding = 0) readonly buffer partial_blob { vec4 partial_data[]; };
// N values, read only when bias_term is 1 (bind any tensor otherwise).
layout (binding = 1) readonly buffer bias_blob { sfpvec4 bias_data[]; };
layout (binding = 2) buffer c_blob { sfpvec4 c_data[]; };
#if VKPRISM_ROW_RMS
layout (binding = 3) writeonly buffer h_blob { sfpvec4 h_data[]; };

layout (push_constant) uniform parameter {
    int M; int N; float alpha; float slope; float beta; float eps;
} p;
#else
layout (push_constant) uniform parameter { int M; int N; float alpha; float slope; float beta; } p;
#endif

#include "activation.glsl"

// C's quad i (of `quads` in all) from its partial sums, stored.
void reduce_quad(const int i, const int quads)
{
    vec4 sum = vec4(0.0);
    for (int z = 0; z < splits; z++) sum += partial_data[z * quads + i];
    const vec4 bias = bias_term == 1 ? vec4(buffer_ld4(bias_data, i % (p.N / 4))) : vec4(0.0);
    const vec4 before = beta_term == 1 ? p.beta * vec4(buffer_ld4(c_data, i)) : vec4(0.0);
    buffer_st4(c_data, i, afpvec4(activate(sum * p.alpha + before + bias)));
}

#if VKPRISM_ROW_RMS
shared float row_part[gl_WorkGroupSize.x];

// The sum of every invocation's v (the workgroup a power of two), to each of them.
float workgroup_sum(const float v)
{
    const uint lid = gl_LocalInvocationID.x;
    row_part[lid] = v;
    barrier();
    for (uint s = gl_WorkGroupSize.x / 2; s > 0; s /= 2)
    {
        if (lid < s) row_part[lid] += row_part[lid + s];
        barrier();
    }
    return row_part[0];
}

void main()
{
    const int row = int(gl_WorkGroupID.x);
    const int per_row = p.N / 4;
    const int quads = p.M * per_row;
    if (row >= p.M) return;
    const int first = row * per_row;
    // Each invocation reads back only quads it stored itself: its own writes, in order.
    float squares = 0.0;
    for (int t = int(gl_LocalInvocationID.x); t < per_row; t += int(gl_WorkGroupSize.x))
    {
        reduce_quad(first + t, quads);
        const vec4 c = vec4(buffer_ld4(c_data, first + t));
        squares += dot(c, c);
    }
    const float r = 1.0 / sqrt(workgroup_sum(squares) / float(p.N) + p.eps);
    for (int t = int(gl_LocalInvocationID.x); t < per_row; t += int(gl_WorkGroupSize.x))
        buffer_st4(h_data, first + t, afpvec4(vec4(buffer_ld4(c_data, first + t)) * r));
}
#else
void main()
{
    const int i = int(gl_GlobalInvocationID.x);
    const int quads = p.M * (p.N / 4);
    if (i >= quads) return;
    reduce_quad(i, quads);
}
#endif
