#version 450
// C = act(alpha * op(A) * op(B) + beta * C + bias), row-major, every operand read and written
// as vec4s; with `batched`, one such product per workgroup z (strided batched GEMM).
#extension GL_EXT_control_flow_attributes : require
//
// Shapes: op(A) is M×K, op(B) is K×N, C is M×N. A is stored M×K (K×M when transpose_a), B is
// stored K×N (N×K when transpose_b); the last dimension of every stored operand must be a multiple
// of 4 (one `sfpvec4` is 4 consecutive elements of a row). M, N and K need not be multiples of the
// tile: edge tiles load zeros and store only what is inside C.
//
// Work split (as in V. Shimanskiy, "Matrix Multiply on Adreno GPUs"): each workgroup owns a
// BM×BN macro-tile of C, BM = 8 × local_size_y and BN = 8 × local_size_x (128×128 with the
// default 16×16 workgroup); each invocation owns an 8×8 micro-tile held in 16 vec4 registers, as
// two 4×8 halves BM/2 rows apart (and two 8×4 halves BN/2 columns apart) so a warp's
// shared-memory reads are broadcasts of A and conflict-free rows of B. With local memory, the A
// and B slices of one BK-deep step go through shared memory (A stored transposed, so both are
// read as vec4s along M and N); the next step's global loads are issued
// before the current step's arithmetic. Accumulation is always fp32.
//
// With cooperative matrices (`_cm` variants, fp16 only): A and B are read as octets of halves
// (16-byte loads where every stored row is a multiple of 8: `wide_loads`), staged as stored in shared
// memory (a transposed operand is read by column-major fragment loads), and multiplied as
// 16×16×16 fp16 × fp16 + fp32 fragments: the workgroup's subgroups form a
// (THREADS / subgroup_size / cm_warps_n) × cm_warps_n grid, each owning cm_wfm × cm_wfn
// fragments; the fp32 accumulators go out through a per-subgroup 16×16 scratch (the tiles'
// shared memory, after the last step) so bias, activation and the storage conversion are applied
// as in the other paths. `subgroup_size` must
// be the device's subgroup size (32 on NVIDIA; require it at pipeline creation where it varies),
// and the workgroup's x size a multiple of it (Vulkan requires that of subgroup-scope
// matrices): use `GemmConfig`, which chooses all of these per problem.
#include "gemm_constants.glsl"

layout (local_size_x = 16, local_size_y = 16) in;

#if NCNN_cooperative_matrix
layout (binding = 0) readonly buffer a_blob { uvec4 a_data[]; };
layout (binding = 1) readonly buffer b_blob { uvec4 b_data[]; };
#elif NCNN_fp16_storage || NCNN_bf16_storage
// 16-bit storage: quads read as two uints (gemm_tiles.glsl's AB_WORDS says why).
layout (binding = 0) readonly buffer a_blob { uvec2 a_data[]; };
layout (binding = 1) readonly buffer b_blob { uvec2 b_data[]; };
#else
layout (binding = 0) readonly buffer a_blob { sfpvec4 a_data[]; };
layout (binding = 1) readonly buffer b_blob { sfpvec4 b_data[]; };
#endif
#if VKPRISM_SPLIT_K
// Split-K kernel (gemm_split / conv2d_nhwc_split): workgroup z's fp32 sums over its share of K,
// [split_k][M][N]; bias, activation and format are applied by gemm_split_reduce.
layout (binding = 2) writeonly buffer partial_blob { vec4 partial_data[]; };
#else
// N values, read only when bias_term is 1 (bind any tensor otherwise).
layout (binding = 2) readonly buffer bias_blob { sfpvec4 bias_data[]; };
// Read back where beta_term is 1.
layout (binding = 3) buffer c_blob { sfpvec4 c_data[]; };
#endif

layout (push_constant) uniform parameter {
    int M; int N; int K; float alpha; float slope;
    int batch_a; int batch_b; int batch_c; float beta;
} p;

// This workgroup's batch (workgroup z where `batched`; the split-K kernel's z is its share of
// K) and where its A, B and C start, in elements; the constant 0 otherwise.
#if VKPRISM_SPLIT_K
#define BATCH 0
#else
#define BATCH (batched == 1 ? int(gl_WorkGroupID.z) : 0)
#endif
#define A_BASE (BATCH * p.batch_a)
#define B_BASE (BATCH * p.batch_b)
#define GEMM_C_BASE (BATCH * p.batch_c)

#include "gemm_tiles.glsl"

#if NCNN_cooperative_matrix
// The octet at (row, col) of A and of B as stored: A is M×K (K×M when transposed), B is K×N
// (N×K when transposed).
uvec4 cm_a8(int row, int col)
{
    uvec4 v;
    if (transpose_a == 1) LOAD_OCTET(a_data, A_BASE, row, col, p.K, p.M, v)
    else LOAD_OCTET(a_data, A_BASE, row, col, p.M, p.K, v)
    return v;
}

uvec4 cm_b8(int row, int col)
{
    uvec4 v;
    if (transpose_b == 1) LOAD_OCTET(b_data, B_BASE, row, col, p.N, p.K, v)
    else LOAD_OCTET(b_data, B_BASE, row, col, p.K, p.N, v)
    return v;
}

// Nothing to compute once per workgroup: an octet's address is one multiply-add.
void cm_a_prepare(int tid, int m0) {}
#define cm_a8_at(i, row, col) cm_a8(row, col)
#else
// op(A)[m][k .. k+3] as stored (row-major A), or zero outside.
vec4 a_row4(int m, int k)
{
    if (m >= p.M || k >= p.K) return vec4(0.0);
    return ld4_ab(a_data, A_BASE / 4 + m * (p.K / 4) + k / 4);
}

// A stored K×M: op(A)[m .. m+3][k], or zero outside.
vec4 at_col4(int k, int m)
{
    if (m >= p.M || k >= p.K) return vec4(0.0);
    return ld4_ab(a_data, A_BASE / 4 + k * (p.M / 4) + m / 4);
}

// op(B)[k][n .. n+3] (row-major B), or zero outside.
vec4 b_row4(int k, int n)
{
    if (k >= p.K || n >= p.N) return vec4(0.0);
    return ld4_ab(b_data, B_BASE / 4 + k * (p.N / 4) + n / 4);
}

// B stored N×K: op(B)[k .. k+3][n], or zero outside.
vec4 bt_col4(int n, int k)
{
    if (k >= p.K || n >= p.N) return vec4(0.0);
    return ld4_ab(b_data, B_BASE / 4 + n * (p.K / 4) + k / 4);
}

#if NCNN_shader_local_memory
// Load l of a step at depth k0, as stored (converted only when staged, so the load's latency
// overlaps this step's arithmetic), zero outside: 4 consecutive k of one row of A, or 4
// consecutive m of one k when A is transposed.
rawvec4 raw_a(int l, int m0, int k0)
{
    if (transpose_a == 1) {
        const int k = k0 + l / (BM / 4), m = m0 + (l % (BM / 4)) * 4;
        return m < p.M && k < p.K ? load_raw(a_data, A_BASE / 4 + k * (p.M / 4) + m / 4) : rawvec4(0);
    }
    const int m = m0 + l / (STEP / 4), k = k0 + (l % (STEP / 4)) * 4;
    return m < p.M && k < p.K ? load_raw(a_data, A_BASE / 4 + m * (p.K / 4) + k / 4) : rawvec4(0);
}

// Load l of a step of B, as stored: 4 consecutive n of one k, or 4 consecutive k of one n when B
// is transposed.
rawvec4 raw_b(int l, int n0, int k0)
{
    if (transpose_b == 1) {
        const int n = n0 + l / (STEP / 4), k = k0 + (l % (STEP / 4)) * 4;
        return n < p.N && k < p.K ? load_raw(b_data, B_BASE / 4 + n * (p.K / 4) + k / 4) : rawvec4(0);
    }
    const int k = k0 + l / (BN / 4), n = n0 + (l % (BN / 4)) * 4;
    return n < p.N && k < p.K ? load_raw(b_data, B_BASE / 4 + k * (p.N / 4) + n / 4) : rawvec4(0);
}

#endif
#endif

#include "gemm_core.glsl"
