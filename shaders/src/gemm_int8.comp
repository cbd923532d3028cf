#version 450
// C = A · B over int8 with int32 results (as torch._int_mm): A is M×K, B is K×N, both row-major
// int8; C is M×N int32, exact. K and N must be multiples of 4 (one `sint8vec4` is 4 consecutive
// elements of a row); M, N and K need not be multiples of the tile.
#extension GL_EXT_control_flow_attributes : require
//
// Without cooperative matrices each invocation owns an 8×8 block of C (a workgroup of LX × LY
// owns 8·LY rows × 8·LX columns) and walks K four at a time. With them (`_cm`, int8 arithmetic:
// `int8_t` in registers) the GEMM's cooperative-matrix structure, on 16×16×32 int8 fragments
// with int32 accumulators: A and B are read as lines of 16 int8 (one uvec4; 16-byte aligned
// where every row is a multiple of 16: `wide_loads`), staged as stored in shared memory, subgroups in
// a (warps / cm_warps_n) × cm_warps_n grid owning cm_wfm × cm_wfn fragments each. In `_cm`
// variants A and B must each hold a multiple of 16 elements.
// The GEMM's specialization constants (transposes, bias and activation unused here); BK is
// rounded up to a multiple of 32, the int8 fragments' depth.
#include "gemm_constants.glsl"

layout (local_size_x = 16, local_size_y = 16) in;

#if NCNN_cooperative_matrix
layout (binding = 0) readonly buffer a_blob { uvec4 a_data[]; };
layout (binding = 1) readonly buffer b_blob { uvec4 b_data[]; };
#else
layout (binding = 0) readonly buffer a_blob { sint8vec4 a_data[]; };
layout (binding = 1) readonly buffer b_blob { sint8vec4 b_data[]; };
#endif
layout (push_constant) uniform parameter { int M; int N; int K; } p;

#if VKPRISM_DEQUANT
// gemm_int8_dequant: C = row_scale[m] · col_scale[n] · (A · B)[m][n] + bias[n] in fp32 (A
// quantized per row, B per column), the int32 sums dequantized as they are stored; the bias
// read where bias_term is 1.
layout (binding = 2) writeonly buffer c_blob { vec4 c_data[]; };
layout (binding = 3) readonly buffer row_scale_blob { float row_scale[]; };
layout (binding = 4) readonly buffer col_scale_blob { vec4 col_scale[]; };
layout (binding = 5) readonly buffer bias_blob { vec4 bias_data[]; };

void store_c(int m, int n, ivec4 v)
{
    vec4 r = vec4(v) * row_scale[m] * col_scale[n / 4];
    if (bias_term == 1) r += bias_data[n / 4];
    c_data[m * (p.N / 4) + n / 4] = r;
}
#else
layout (binding = 2) writeonly buffer c_blob { ivec4 c_data[]; };

void store_c(int m, int n, ivec4 v)
{
    c_data[m * (p.N / 4) + n / 4] = v;
}
#endif

const int LX = int(gl_WorkGroupSize.x);
const int LY = int(gl_WorkGroupSize.y);
const int THREADS = LX * LY;

#if NCNN_cooperative_matrix
#extension GL_KHR_shader_subgroup_basic : require
const int WARPS = THREADS / subgroup_size;
#define WARPS_N cm_warps_n
const int WARPS_M = WARPS / WARPS_N;
const int BM = WARPS_M * cm_wfm * 16;
const int BN = WARPS_N * cm_wfn * 16;
// Fragments are 32 deep: the step is BK rounded up to a multiple of 32.
const int STEP = (BK + 31) / 32 * 32;
// Tiles as stored, in lines of 16 int8 (one uvec4), rows padded by one line against bank
// conflicts: A is BM rows of STEP, B is STEP rows of BN.
const int A_LINES = STEP / 16;
const int B_LINES = BN / 16;
const int A_STRIDE = A_LINES + 1;
const int B_STRIDE = B_LINES + 1;
shared uvec4 cm_a[BM * A_STRIDE];
shared uvec4 cm_b[STEP * B_STRIDE];
shared int cm_c[WARPS * 256];
const int A_LOADS = (BM * A_LINES + THREADS - 1) / THREADS;
const int B_LOADS = (STEP * B_LINES + THREADS - 1) / THREADS;

// The line of 16 int8 at (row, col) of a rows × cols row-major int8 matrix held in the uvec4
// array `data` (col a multiple of 16), zero outside. With wide_loads it is one aligned load;
// otherwise rows are multiples of 4 and the line is read a word at a time (a specialization
// constant, not a run-time test: see gemm_tiles.glsl).
#define LOAD_LINE(data, row, col, rows, cols, out) { \
    out = uvec4(0); \
    if ((row) < (rows) && (col) < (cols)) { \
        const int h_ = (row) * (cols) + (col); \
        if (wide_loads == 1) { \
            out = data[h_ >> 4]; \
        } else { \
            [[unroll]] for (int c_ = 0; c_ < 4; c_++) { \
                const int w_ = (h_ >> 2) + c_; \
                if ((col) + 4 * c_ < (cols)) out[c_] = data[w_ >> 2][w_ & 3]; \
            } \
        } \
    } \
}

uvec4 line_a(int row, int col)
{
    uvec4 v;
    LOAD_LINE(a_data, row, col, p.M, p.K, v)
    return v;
}

uvec4 line_b(int row, int col)
{
    uvec4 v;
    LOAD_LINE(b_data, row, col, p.K, p.N, v)
    return v;
}

// This invocation's lines of the step at depth k0 (loaded one step ahead).
void load_step(int tid, int m0, int n0, int k0, out uvec4 ra[A_LOADS], out uvec4 rb[B_LOADS])
{
    [[unroll]] for (int i = 0; i < A_LOADS; i++) {
        const int l = tid + i * THREADS;
        ra[i] = l < BM * A_LINES ? line_a(m0 + l / A_LINES, k0 + (l % A_LINES) * 16) : uvec4(0);
    }
    [[unroll]] for (int i = 0; i < B_LOADS; i++) {
        const int l = tid + i * THREADS;
        rb[i] = l < STEP * B_LINES ? line_b(k0 + l / B_LINES, n0 + (l % B_LINES) * 16) : uvec4(0);
    }
}

void main()
{
    const int tid = int(gl_LocalInvocationID.y) * LX + int(gl_LocalInvocationID.x);
    const int warp = int(gl_SubgroupID);
    const int lane = int(gl_SubgroupInvocationID);
    const int m0 = int(gl_WorkGroupID.y) * BM;
    const int n0 = int(gl_WorkGroupID.x) * BN;
    const int wm = (warp / WARPS_N) * cm_wfm * 16;
    const int wn = (warp % WARPS_N) * cm_wfn * 16;

    coopmat<int, gl_ScopeSubgroup, 16, 16, gl_MatrixUseAccumulator> acc[cm_wfm * cm_wfn];
    [[unroll]] for (int i = 0; i < cm_wfm * cm_wfn; i++) {
        acc[i] = coopmat<int, gl_ScopeSubgroup, 16, 16, gl_MatrixUseAccumulator>(0);
    }
    uvec4 ra[A_LOADS];
    uvec4 rb[B_LOADS];
    load_step(tid, m0, n0, 0, ra, rb);
    for (int k0 = 0; k0 < p.K; k0 += STEP) {
        barrier();
        [[unroll]] for (int i = 0; i < A_LOADS; i++) {
            const int l = tid + i * THREADS;
            if (l < BM * A_LINES) cm_a[(l / A_LINES) * A_STRIDE + l % A_LINES] = ra[i];
        }
        [[unroll]] for (int i = 0; i < B_LOADS; i++) {
            const int l = tid + i * THREADS;
            if (l < STEP * B_LINES) cm_b[(l / B_LINES) * B_STRIDE + l % B_LINES] = rb[i];
        }
        barrier();
        if (k0 + STEP < p.K) load_step(tid, m0, n0, k0 + STEP, ra, rb);
        [[unroll]] for (int k = 0; k < STEP; k += 32) {
            coopmat<int8_t, gl_ScopeSubgroup, 16, 32, gl_MatrixUseA> fa[cm_wfm];
            [[unroll]] for (int i = 0; i < cm_wfm; i++) {
                coopMatLoad(fa[i], cm_a, (wm + i * 16) * A_STRIDE + k / 16, A_STRIDE, gl_CooperativeMatrixLayoutRowMajor);
            }
            [[unroll]] for (int j = 0; j < cm_wfn; j++) {
                coopmat<int8_t, gl_ScopeSubgroup, 32, 16, gl_MatrixUseB> fb;
                coopMatLoad(fb, cm_b, k * B_STRIDE + (wn + j * 16) / 16, B_STRIDE, gl_CooperativeMatrixLayoutRowMajor);
                [[unroll]] for (int i = 0; i < cm_wfm; i++) {
                    acc[i * cm_wfn + j] = coopMatMulAdd(fa[i], fb, acc[i * cm_wfn + j]);
                }
            }
        }
    }

    // Each 16×16 accumulator through this subgroup's scratch: 64 ivec4s, spread over its lanes.
    [[unroll]] for (int f = 0; f < cm_wfm * cm_wfn; f++) {
        coopMatStore(acc[f], cm_c, warp * 256, 16, gl_CooperativeMatrixLayoutRowMajor);
        subgroupMemoryBarrierShared();
        subgroupBarrier();
        for (int q = lane; q < 64; q += subgroup_size) {
            const int row = q / 4, col = (q % 4) * 4;
            const int m = m0 + wm + (f / cm_wfn) * 16 + row;
            const int n = n0 + wn + (f % cm_wfn) * 16 + col;
            if (m >= p.M || n >= p.N) continue;
            const int s = warp * 256 + row * 16 + col;
            store_c(m, n, ivec4(cm_c[s], cm_c[s + 1], cm_c[s + 2], cm_c[s + 3]));
        }
        subgroupBarrier();
    }
}
#else
// Row m of A, elements k .. k+3, as ints (zero outside).
ivec4 a4(int m, int k)
{
    return m < p.M ? ivec4(i8buffer_ld4(a_data, m * (p.K / 4) + k / 4)) : ivec4(0);
}

// Row k of B, elements n .. n+3, as ints (zero outside).
ivec4 b4(int k, int n)
{
    return n < p.N ? ivec4(i8buffer_ld4(b_data, k * (p.N / 4) + n / 4)) : ivec4(0);
}

void main()
{
    const int m0 = int(gl_GlobalInvocationID.y) * 8;
    const int n0 = int(gl_GlobalInvocationID.x) * 8;
    if (m0 >= p.M || n0 >= p.N) return;
    ivec4 acc[8][2];
    [[unroll]] for (int r = 0; r < 8; r++) { acc[r][0] = ivec4(0); acc[r][1] = ivec4(0); }
    for (int k = 0; k < p.K; k += 4) {
        ivec4 b[4][2];
        [[unroll]] for (int j = 0; j < 4; j++) { b[j][0] = b4(k + j, n0); b[j][1] = b4(k + j, n0 + 4); }
        [[unroll]] for (int r = 0; r < 8; r++) {
            const ivec4 a = a4(m0 + r, k);
            [[unroll]] for (int h = 0; h < 2; h++) {
                acc[r][h] += a.x * b[0][h] + a.y * b[1][h] + a.z * b[2][h] + a.w * b[3][h];
            }
        }
    }
    [[unroll]] for (int r = 0; r < 8; r++) {
        const int m = m0 + r;
        if (m >= p.M) continue;
        [[unroll]] for (int h = 0; h < 2; h++) {
            const int n = n0 + 4 * h;
            if (n < p.N) store_c(m, n, acc[r][h]);
        }
    }
}
#endif
