#version 450
#extension GL_EXT_control_flow_attributes : require
// 2D convolution as an implicit GEMM (no im2col buffer), channels-last:
//   out[b][y][x][o] = act(alpha * sum_{ky,kx,c} in[b][y*stride+ky-pad][x*stride+kx-pad][c]
//                                              * w[ky][kx][c][o] + bias[o] (+ out[b][y][x][o]))
// with zero outside the input; out's value before is added where beta_term is 1 (a residual
// connection written over the tensor it adds: each element read before it is written). As a GEMM: M = batch × outh × outw output pixels, N = outc,
// K = kh × kw × c; A[m][k] is gathered from the input on the fly (a quad of A is 4 consecutive
// channels of one input pixel, so c must be a multiple of 4), B is the weight tensor
// [kh][kw][c][outc] as it is stored (outc a multiple of 4), C is the NHWC output. A 1×1
// convolution with stride 1 is a plain GEMM of the pixels. Tiles, variants (cooperative matrices
// included) and specialization constants are the GEMM's (gemm_core.glsl); there is no transpose.
#include "gemm_constants.glsl"
// No transposes: the shared constants are ignored, and the tiles read these zeros.
#define transpose_a 0
#define transpose_b 0

layout (local_size_x = 16, local_size_y = 16) in;

#if NCNN_cooperative_matrix
layout (binding = 0) readonly buffer in_blob { uvec4 a_data[]; };
layout (binding = 1) readonly buffer w_blob { uvec4 b_data[]; };
#elif NCNN_fp16_storage || NCNN_bf16_storage
// 16-bit storage: quads read as two uints (gemm_tiles.glsl's AB_WORDS says why).
layout (binding = 0) readonly buffer in_blob { uvec2 a_data[]; };
layout (binding = 1) readonly buffer w_blob { uvec2 b_data[]; };
#else
layout (binding = 0) readonly buffer in_blob { sfpvec4 a_data[]; };
layout (binding = 1) readonly buffer w_blob { sfpvec4 b_data[]; };
#endif
#if VKPRISM_SPLIT_K
// Split-K kernel (gemm_split / conv2d_nhwc_split): workgroup z's fp32 sums over its share of K,
// [split_k][M][N]; bias, activation and format are applied by gemm_split_reduce.
layout (binding = 2) writeonly buffer partial_blob { vec4 partial_data[]; };
#else
layout (binding = 2) readonly buffer bias_blob { sfpvec4 bias_data[]; };
// Read back where beta_term is 1.
layout (binding = 3) buffer out_blob { sfpvec4 c_data[]; };
#define GEMM_RESIDUAL
#endif

// M, N, K, alpha, slope as in the GEMM; then the input size, the output size, the kernel size,
// the stride and the zero padding.
layout (push_constant) uniform parameter {
    int M; int N; int K; float alpha; float slope;
    int h; int w; int c; int outh; int outw; int kh; int kw; int stride; int pad;
} p;

#include "gemm_tiles.glsl"

// Input quad for output pixel m and GEMM depth k (tap (ky, kx), channels c..c+3), or -1 in the
// zero padding or outside the problem.
int a_index(int m, int k)
{
    if (m >= p.M || k >= p.K) return -1;
    const int x = m % p.outw, y = (m / p.outw) % p.outh, b = m / (p.outw * p.outh);
    const int tap = k / p.c, c = k % p.c;
    const int iy = y * p.stride + tap / p.kw - p.pad;
    const int ix = x * p.stride + tap % p.kw - p.pad;
    if (iy < 0 || ix < 0 || iy >= p.h || ix >= p.w) return -1;
    return ((b * p.h + iy) * p.w + ix) * (p.c / 4) + c / 4;
}

// The weight quad w[k][n .. n+3], or -1 outside.
int b_index(int k, int n) { return k < p.K && n < p.N ? k * (p.N / 4) + n / 4 : -1; }

#if NCNN_cooperative_matrix
// Quad q of the input (4 halves), from the octets it is stored in; zero for q < 0.
uvec2 a_quad(int q)
{
    if (q < 0) return uvec2(0);
    const uvec4 o = a_data[q >> 1];
    return (q & 1) == 0 ? o.xy : o.zw;
}

// Each A load of this invocation reads one output pixel's row through the whole of K: its
// image's first input row, and the input position of its tap (0, 0), computed once
// (cm_a_prepare), so a load divides only to split its depth into tap and channel (the
// decomposition of the pixel index costs five divisions, and was the convolution's bottleneck at
// 256 channels).
int a_image_row[A_LOADS];
int a_iy0[A_LOADS];
int a_ix0[A_LOADS];
// Each load's depth split into tap (ky, kx) and channel c, kept from one step to the next: a
// load's column in the tile stays the same, so its next depth is one STEP on and is reached by
// adding (the two divisions that split a depth were the gather's cost at 256
// channels once the pixel's were gone).
int a_k[A_LOADS];
int a_c[A_LOADS];
int a_ky[A_LOADS];
int a_kx[A_LOADS];

void cm_a_prepare(int tid, int m0)
{
    [[unroll]] for (int i = 0; i < A_LOADS; i++) {
        const int m = m0 + (tid + i * THREADS) / A_OCTETS;
        const int x = m % p.outw, y = (m / p.outw) % p.outh, b = m / (p.outw * p.outh);
        a_image_row[i] = m < p.M ? b * p.h : -1;
        a_iy0[i] = y * p.stride - p.pad;
        a_ix0[i] = x * p.stride - p.pad;
        // No depth yet: the first move divides.
        a_k[i] = -(1 << 30);
    }
}

// Depth k split into tap (ky, kx) and channel c.
void split_depth(int k, out int c, out int ky, out int kx)
{
    const int tap = k / p.c;
    c = k - tap * p.c;
    ky = tap / p.kw;
    kx = tap - ky * p.kw;
}

// Moves a split depth (channel c of tap (ky, kx)) `by` further, by adding.
void advance_depth(int by, inout int c, inout int ky, inout int kx)
{
    c += by;
    while (c >= p.c) {
        c -= p.c;
        kx++;
        if (kx == p.kw) {
            kx = 0;
            ky++;
        }
    }
}

// Moves load i's split depth to k: by adding when k is one STEP past the last (every step
// after a workgroup's first), by dividing otherwise.
void a_move(int i, int k)
{
    if (k != a_k[i] + STEP) {
        split_depth(k, a_c[i], a_ky[i], a_kx[i]);
    } else {
        advance_depth(STEP, a_c[i], a_ky[i], a_kx[i]);
    }
    a_k[i] = k;
}

// Input quad for load i at GEMM depth k, split as tap (ky, kx) and channels c..c+3, or -1
// outside: the one bounds check and index of both octet paths.
int a_index_split(int i, int k, int c, int ky, int kx)
{
    if (a_image_row[i] < 0 || k >= p.K) return -1;
    const int iy = a_iy0[i] + ky, ix = a_ix0[i] + kx;
    if (iy < 0 || ix < 0 || iy >= p.h || ix >= p.w) return -1;
    return ((a_image_row[i] + iy) * p.w + ix) * (p.c / 4) + c / 4;
}

// gemm_core.glsl's octet loads at the depth a_move carries: 8 channels of one tap (with
// wide_loads, c is a multiple of 8, so they are one aligned octet of one pixel), or two quads
// that may belong to different taps (the second reached from the first by adding, as a_move
// does: dividing for both cost the 4-channel stem more than its multiply-adds).
uvec4 cm_a8_at(int i, int m, int k)
{
    a_move(i, k);
    if (wide_loads == 1) {
        const int q = a_index_split(i, k, a_c[i], a_ky[i], a_kx[i]);
        return q < 0 ? uvec4(0) : a_data[q >> 1];
    }
    // The second quad: 4 channels on, or the next tap's first.
    int c = a_c[i], ky = a_ky[i], kx = a_kx[i];
    advance_depth(4, c, ky, kx);
    return uvec4(a_quad(a_index_split(i, k, a_c[i], a_ky[i], a_kx[i])),
                 a_quad(a_index_split(i, k + 4, c, ky, kx)));
}

uvec4 cm_b8(int k, int n)
{
    uvec4 v;
    LOAD_OCTET(b_data, 0, k, n, p.K, p.N, v)
    return v;
}
#else
// gemm_core.glsl's load functions; nothing is transposed here.
vec4 a_row4(int m, int k)
{
    const int i = a_index(m, k);
    return i < 0 ? vec4(0.0) : ld4_ab(a_data, i);
}
vec4 at_col4(int k, int m) { return vec4(0.0); }
vec4 b_row4(int k, int n)
{
    const int i = b_index(k, n);
    return i < 0 ? vec4(0.0) : ld4_ab(b_data, i);
}
vec4 bt_col4(int n, int k) { return vec4(0.0); }

#if NCNN_shader_local_memory
rawvec4 raw_a(int l, int m0, int k0)
{
    const int i = a_index(m0 + l / (STEP / 4), k0 + (l % (STEP / 4)) * 4);
    return i < 0 ? rawvec4(0) : load_raw(a_data, i);
}
rawvec4 raw_b(int l, int n0, int k0)
{
    const int i = b_index(k0 + l / (BN / 4), n0 + (l % (BN / 4)) * 4);
    return i < 0 ? rawvec4(0) : load_raw(b_data, i);
}
#endif
#endif

#include "gemm_core.glsl"
