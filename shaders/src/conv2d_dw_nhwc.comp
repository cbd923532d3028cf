#version 450
// Depthwise 2D convolution, channels-last: every channel convolved with its own kernel,
//   out[b][y][x][c] = act(sum_{ky,kx} in[b][y*stride+ky-pad][x*stride+kx-pad][c] * w[ky][kx][c]
//                         + bias[c])
// with zero outside the input (as `F.conv2d(x, w, groups=c)`). One invocation computes one
// output pixel's quad of channels, so c must be a multiple of 4; x of the grid walks the channel
// quads (neighbouring invocations read neighbouring bytes), y the output pixels
// (M = batch × outh × outw). There is no shared-memory tile: each input quad is read by at most
// kh × kw invocations of nearby pixels, which the caches serve, and the kernel is bound by the
// bytes it moves, not by arithmetic. Sums run in the variant's arithmetic precision (fp16 in
// fp16pa / fp16sa), fp32 otherwise.
layout (constant_id = 0) const int bias_term = 0;
// 0 none, 1 relu, 2 leaky relu (slope in the push constants), 3 sigmoid, 4 GELU (erf form),
// 5 SiLU: the GEMM's numbering
layout (constant_id = 1) const int activation = 0;

layout (local_size_x = 16, local_size_y = 8, local_size_z = 1) in;

layout (binding = 0) readonly buffer in_blob { sfpvec4 in_data[]; };
layout (binding = 1) readonly buffer w_blob { sfpvec4 w_data[]; };
layout (binding = 2) readonly buffer bias_blob { sfpvec4 bias_data[]; };
layout (binding = 3) writeonly buffer out_blob { sfpvec4 out_data[]; };

// M = batch × outh × outw output pixels; then the input size, the output size, the kernel
// size, the stride, the zero padding and leaky relu's slope.
layout (push_constant) uniform parameter {
    int M; int h; int w; int c; int outh; int outw; int kh; int kw; int stride; int pad;
    float slope;
} p;

#include "unary_math.glsl"

afpvec4 activate(afpvec4 v)
{
    if (activation == 1) return max(v, afpvec4(0));
    if (activation == 2) return mix(v * afp(p.slope), v, greaterThan(v, afpvec4(0)));
    // sigmoid in fp32: exp overflows fp16 for |x| > 11
    if (activation == 3) return afpvec4(1.0 / (1.0 + exp(-vec4(v))));
    // GELU and SiLU in fp32 too (unary_math.glsl, as the GEMM's epilogue)
    if (activation == 4) return afpvec4(um_gelu(vec4(v)));
    if (activation == 5) return afpvec4(um_silu(vec4(v)));
    return v;
}

void main()
{
    const int cq = int(gl_GlobalInvocationID.x);
    const int m = int(gl_GlobalInvocationID.y);
    const int quads = p.c / 4;
    if (cq >= quads || m >= p.M) return;
    const int x = m % p.outw, y = (m / p.outw) % p.outh, b = m / (p.outw * p.outh);
    const int y0 = y * p.stride - p.pad, x0 = x * p.stride - p.pad;

    afpvec4 sum = bias_term == 1 ? buffer_ld4(bias_data, cq) : afpvec4(0);
    for (int ky = 0; ky < p.kh; ky++) {
        const int iy = y0 + ky;
        if (iy < 0 || iy >= p.h) continue;
        const int row = (b * p.h + iy) * p.w;
        for (int kx = 0; kx < p.kw; kx++) {
            const int ix = x0 + kx;
            if (ix < 0 || ix >= p.w) continue;
            const afpvec4 v = buffer_ld4(in_data, (row + ix) * quads + cq);
            const afpvec4 k = buffer_ld4(w_data, (ky * p.kw + kx) * quads + cq);
            sum += v * k;
        }
    }
    buffer_st4(out_data, m * quads + cq, activate(sum));
}
