#version 450
// The second pass of a split-K GEMM or convolution (gemm_split, conv2d_nhwc_split): adds the
// `splits` fp32 partial sums [splits][M][N] of each element of C and writes
// C = act(alpha · sum + bias) in the variant's storage format, as the one-pass kernels do.
// One invocation per 4 consecutive elements of a row (N a multiple of 4).
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

layout (push_constant) uniform parameter { int M; int N; float alpha; float slope; float beta; } p;

#include "activation.glsl"

void main()
{
    const int i = int(gl_GlobalInvocationID.x);
    const int quads = p.M * (p.N / 4);
    if (i >= quads) return;
    vec4 sum = vec4(0.0);
    for (int z = 0; z < splits; z++) sum += partial_data[z * quads + i];
    const vec4 bias = bias_term == 1 ? vec4(buffer_ld4(bias_data, i % (p.N / 4))) : vec4(0.0);
    const vec4 before = beta_term == 1 ? p.beta * vec4(buffer_ld4(c_data, i)) : vec4(0.0);
    buffer_st4(c_data, i, afpvec4(activate(sum * p.alpha + before + bias)));
}
