#version 450
// C = act(alpha * A * B + bias) with B read through the sampled-image (texture) path, after seed
// 001 (Qualcomm's Adreno SGEMM): A comes through the load/store path from a buffer, B through the
// texture units and their own L1 cache, so the two operands' reads do not contend for one path.
#extension GL_EXT_control_flow_attributes : require
//
// Layouts: A is M×K row-major in a buffer of `sfpvec4` (K a multiple of 4); B is a 2D image of
// width N/4 and height K whose texel (x, k) holds B[k][4x .. 4x+3] (N a multiple of 4); C is M×N
// row-major `sfpvec4`; bias (read only when bias_term is 1) N values.
//
// Work split: each invocation owns a TM×(4·TN4) = 8×8 register micro-tile of C (16 fp32 vec4
// accumulators); each workgroup a macro-tile of (8·local_size_y)×(8·local_size_x), 64×64 with
// the default 8×8 workgroup. Invocations of one workgroup row share A's rows and those of one
// column share B's texels, so the caches serve most reads, as the seed counts on; there is no
// shared-memory staging (the texture L1 is the staging). Per step of 4 along K an invocation
// issues TM vec4 loads of A and 4·TN4 texel fetches of B for 4·TM·TN4 vec4 multiply-adds.
//
// Precision: storage follows the variant (fp32 or fp16 buffers and rgba32f / rgba16f texels).
// Accumulation is fp32. The fp16-arithmetic variants form each step's 4-term partial products
// in fp16 (half-rate ALUs on mobile GPUs run them twice as fast) and add those to the fp32
// accumulators, so the rounding error stays that of 4-term fp16 sums, not of K-term ones.
//
// Edges: M and N need not be multiples of the micro-tile: rows past M read the last row of A
// and columns past N read the last texel of B (in bounds either way), and neither is stored.
layout (constant_id = 0) const int bias_term = 0;
// 0 none, 1 relu, 2 leaky relu (slope in the push constants), 3 sigmoid
layout (constant_id = 1) const int activation = 0;

layout (local_size_x = 8, local_size_y = 8) in;

layout (binding = 0) readonly buffer a_blob { sfpvec4 a_data[]; };
layout (binding = 1) uniform unfp sampler2D b_tex;
layout (binding = 2) readonly buffer bias_blob { sfpvec4 bias_data[]; };
layout (binding = 3) writeonly buffer c_blob { sfpvec4 c_data[]; };

layout (push_constant) uniform parameter { int M; int N; int K; float alpha; float slope; } p;

// Rows of C per invocation, and texels (4 columns each) of C per invocation.
#define TM 8
#define TN4 2

#include "activation.glsl"

void main() {
    const int n4 = int(gl_GlobalInvocationID.x) * TN4;
    const int m0 = int(gl_GlobalInvocationID.y) * TM;
    const int N4 = p.N / 4;
    const int K4 = p.K / 4;
    if (n4 >= N4 || m0 >= p.M) return;

    // Where each row of the micro-tile starts in A (in vec4s) and which texel column each of its
    // column groups reads, clamped into the operands.
    int a_row[TM];
    [[unroll]] for (int r = 0; r < TM; r++) a_row[r] = min(m0 + r, p.M - 1) * K4;
    int b_col[TN4];
    [[unroll]] for (int j = 0; j < TN4; j++) b_col[j] = min(n4 + j, N4 - 1);

    vec4 acc[TM][TN4];
    [[unroll]] for (int r = 0; r < TM; r++) {
        [[unroll]] for (int j = 0; j < TN4; j++) acc[r][j] = vec4(0.0);
    }

    for (int k4 = 0; k4 < K4; k4++) {
        // B[4·k4 .. 4·k4+3][the micro-tile's columns]: one texel per row and column group.
        afpvec4 b[4][TN4];
        [[unroll]] for (int kk = 0; kk < 4; kk++) {
            [[unroll]] for (int j = 0; j < TN4; j++) {
                b[kk][j] = image2d_ld4(b_tex, ivec2(b_col[j], k4 * 4 + kk));
            }
        }
        [[unroll]] for (int r = 0; r < TM; r++) {
            const afpvec4 a = buffer_ld4(a_data, a_row[r] + k4);
            [[unroll]] for (int j = 0; j < TN4; j++) {
                acc[r][j] += vec4(a.x * b[0][j] + a.y * b[1][j] + a.z * b[2][j] + a.w * b[3][j]);
            }
        }
    }

    [[unroll]] for (int j = 0; j < TN4; j++) {
        if (n4 + j >= N4) break;
        const vec4 bias = bias_term == 1 ? vec4(buffer_ld4(bias_data, n4 + j)) : vec4(0.0);
        [[unroll]] for (int r = 0; r < TM; r++) {
            if (m0 + r >= p.M) break;
            buffer_st4(c_data, (m0 + r) * N4 + n4 + j, afpvec4(activate(acc[r][j] * p.alpha + bias)));
        }
    }
}
