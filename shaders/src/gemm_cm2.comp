#version 450
// C = act(alpha * op(A) * op(B) + beta * C + bias) on workgroup-scope cooperative matrices
// (VK_NV_cooperative_matrix2): each workgroup owns a BM×BN tile of C as one fp32 accumulator
// matrix and walks K BK at a time, loading BM×BK of A and BK×BN of B as workgroup matrices
// straight from the buffers through tensor layouts. The driver stages those loads itself, so
// the kernel declares no shared memory.
//
// Edges: the tensor layouts clamp (`gl_CooperativeMatrixClampModeConstantNV`), so loads past
// M, N or K read zeros and stores past M or N are dropped: no size needs to be a multiple of a
// tile (`clamped` turns that off where none crosses an edge). The driver's clamped loads run at
// about half the speed, and one slow tile holds up a grid of one wave, so with `shifted_edges`
// (M, N and K at least a tile each) no tile's loads cross an edge: the first row of tiles, the
// first column and the first step of K are the short ones, the others start M % BM, N % BN and
// K % BK later than whole tiles would. A short tile computes a whole tile over rows (columns)
// the next ones also cover and reads and stores C only over its own (a layout clamped at their
// end); the short step reads K % BK elements through clamped layouts. Every stored row must be
// a multiple of 8 elements (16 bytes): the strides are written so the compiler knows that, and
// the loads go 16 bytes at a time.
//
// Layouts: A stored M×K (K×M with transpose_a), B stored K×N (N×K with transpose_b), C M×N,
// all row-major fp16 (bf16 in bf16s_cm: `cmfp`); a transposed operand is read through a tensor
// view that swaps its two dimensions. With `batched`, workgroup z multiplies product z, its
// operands `batch_a`, `batch_b` and `batch_c` elements after the previous one's (0: shared by
// every product). Sizes: M, N and K come from the push constants, or from the specialization
// constants `fixed_m`, `fixed_n`, `fixed_k` where those are not 0 (the driver then knows the
// loop's bounds and the edges at pipeline creation). The K loop runs `unroll` steps at a time,
// then the steps left one at a time. Grid: [ceil(N / BN) · workgroup, ceil(M / BM), batch].
//
// With VKPRISM_SPLIT_K (gemm_cm2_split, one product): workgroup z multiplies share z of the
// `split_k` shares of K (whole steps) and stores its fp32 sums to `partial` ([split_k][M][N]);
// gemm_split_reduce adds them and applies the rest. Grid: [.., .., split_k].
//
// With VKPRISM_GLU (gemm_cm2_glu, one product): a SwiGLU MLP's gate and up projections and its
// gate in one pass, C[m][n] = act(A·Bᵀ[2n]) · (A·Bᵀ[2n + 1]) for B stored [2N][K] with each
// output's gate and up rows side by side (transpose_b 1, no bias, beta or alpha): each workgroup
// holds a BM×BN tile of both products as two accumulators (the gate rows and the up rows read
// through two layouts of stride 2K) and stores only their gated product, C [M][N]. Where
// `narrow_from` is not 0, the tiles from that column of tiles on are `narrow_bn` wide (a grid
// whose last wave would hold few workgroups ends in more, smaller ones): grid x
// narrow_from + ceil((N - narrow_from · BN) / narrow_bn) workgroups.
//
// With VKPRISM_ROPE (gemm_cm2_rope, one product, transpose_b 1): a decoder's fused query, key
// and value projection placed as rope_qkv4 places it, C [M][(hq + 2·hkv) · dim] never stored:
// each workgroup rounds its tile to C's format into shared memory, then each invocation takes
// octets of a row (8 values, 4 interleaved pairs (2i, 2i + 1) of one head, dim a multiple of
// 8), turns the query and key pairs of token m by position offset + m (rope.glsl) and stores
// them into q [M][hq][dim] or the caches' row of that position, k and v [rows][hkv][dim];
// value heads are copied. Its rounding is the two-pass path's (C rounded, then turned in fp32).
#extension GL_EXT_control_flow_attributes : require
#if NCNN_cooperative_matrix
#extension GL_KHR_memory_scope_semantics : require
#extension GL_NV_cooperative_matrix2 : require
#endif

// Cm2Tiles::threads: a workgroup size the device lists workgroup-scope matrices for
// (Cm2Tiles::offered_by).
layout (local_size_x = 128) in;

layout (constant_id = 0) const int BM = 128;
layout (constant_id = 1) const int BN = 128;
layout (constant_id = 2) const int BK = 64;
layout (constant_id = 3) const int transpose_a = 0;
layout (constant_id = 4) const int transpose_b = 0;
layout (constant_id = 5) const int bias_term = 0;
// 0 none, 1 relu, 2 leaky relu with `slope`, 3 sigmoid, 4 GELU (erf form), 5 SiLU.
layout (constant_id = 6) const int activation = 0;
layout (constant_id = 7) const int batched = 0;
layout (constant_id = 8) const int fixed_m = 0;
layout (constant_id = 9) const int fixed_n = 0;
layout (constant_id = 10) const int fixed_k = 0;
layout (constant_id = 11) const int unroll = 4;
// How the tensor layouts treat an element past an edge: gl_CooperativeMatrixClampModeConstantNV
// (loads read 0, stores drop it), or gl_CooperativeMatrixClampModeUndefinedNV where no tile
// crosses an edge (M, N and K fixed and multiples of the tiles), which spares the checks.
layout (constant_id = 12) const uint clamped = gl_CooperativeMatrixClampModeConstantNV;
// C's value before the product is read (times `beta`): a residual added in place.
layout (constant_id = 13) const int beta_term = 0;
// Split-K kernel (gemm_cm2_split): the shares of K, one per workgroup z.
layout (constant_id = 14) const int split_k = 1;
// gemm_cm2_glu only: the first column of tiles that is `narrow_bn` wide (0: every tile BN).
layout (constant_id = 15) const int narrow_from = 0;
layout (constant_id = 16) const int narrow_bn = 32;
// 1: the edges as above (`clamped` is then the unclamped mode: only the short step's loads
// and the stores clamp). gemm_cm2_glu shifts only M (N and K whole there).
layout (constant_id = 17) const int shifted_edges = 0;

#if NCNN_cooperative_matrix
layout (binding = 0) readonly buffer a_blob { cmfp a_data[]; };
layout (binding = 1) readonly buffer b_blob { cmfp b_data[]; };
#else
// The fp32 reference the bindings' formats are told from; never shipped.
layout (binding = 0) readonly buffer a_blob { sfp a_data[]; };
layout (binding = 1) readonly buffer b_blob { sfp b_data[]; };
#endif
#if VKPRISM_ROPE
// The placed projection (rope_qkv4's bindings): q [M][hq][dim], k and v [rows][hkv][dim].
layout (binding = 2) writeonly buffer q_blob { sfpvec4 q_data[]; };
layout (binding = 3) writeonly buffer k_blob { sfpvec4 k_data[]; };
layout (binding = 4) writeonly buffer v_blob { sfpvec4 v_data[]; };
// N values added to the rounded projection before it is turned, read only when bias_term is 1.
layout (binding = 5) readonly buffer bias_blob { sfpvec4 bias_data[]; };
#elif VKPRISM_SPLIT_K
// Workgroup z's fp32 sums over its share of K, [split_k][M][N]; gemm_split_reduce applies
// alpha, beta, the bias, the activation and C's format.
layout (binding = 2) writeonly buffer partial_blob { float partial_data[]; };
#elif NCNN_cooperative_matrix
// N values, read only when bias_term is 1 (bind any fp16 tensor otherwise).
layout (binding = 2) readonly buffer bias_blob { cmfp bias_data[]; };
// Read back where beta_term is 1.
layout (binding = 3) buffer c_blob { cmfp c_data[]; };
#else
layout (binding = 2) readonly buffer bias_blob { sfp bias_data[]; };
layout (binding = 3) buffer c_blob { sfp c_data[]; };
#endif

layout (push_constant) uniform parameter {
    int M; int N; int K; float alpha; float slope;
    int batch_a; int batch_b; int batch_c; float beta;
#if VKPRISM_ROPE
    // rope_qkv4's: heads, head dimension, the caches' rows, the first token's position.
    int hq; int hkv; int dim; int rows; int offset;
    float log2_base; float freq_factor; float freq_low; float freq_high;
#endif
} p;

#include "activation.glsl"
#if VKPRISM_ROPE
#include "rope.glsl"
#endif

#if NCNN_cooperative_matrix && !VKPRISM_SPLIT_K
// bf16: the driver offers no bfloat16 workgroup-scope accumulator, so C is stored from an
// A-use matrix (converted from the fp32 accumulator) and its value before is read here an
// element at a time; fp16 stores and loads C as an accumulator.
#if NCNN_bf16_storage
#define C_USE gl_MatrixUseA
#define BETA_PER_ELEMENT 1
#else
#define C_USE gl_MatrixUseAccumulator
#define BETA_PER_ELEMENT 0
#endif

#if !VKPRISM_ROPE
// One element of C at (m0 + row, n0 + col) from v, alpha · (A · B) there (+ beta · C's value
// before, added as a matrix unless BETA_PER_ELEMENT): beta · C here where BETA_PER_ELEMENT
// (rows and columns before `ends`, the tile's own), then the bias and the activation.
float epilogue(const in uint row, const in uint col, const in float v, const in uint m0,
               const in uint n0, const in uint c_at, const in uvec2 ends)
{
    const uint N = fixed_n > 0 ? uint(fixed_n) : uint(p.N);
    const uint m = m0 + row;
    const uint n = n0 + col;
    float x = v;
    if (BETA_PER_ELEMENT == 1 && beta_term == 1 && m < ends.x && n < ends.y) {
        x += p.beta * float(c_data[c_at + m * N + n]);
    }
    if (bias_term == 1) {
        x += n < N ? float(bias_data[n]) : 0.0;
    }
    return activate(vec4(x)).x;
}
#endif
#endif

#if NCNN_cooperative_matrix
// A stored row of `cols` elements, rounded down to the 8 the kernel requires: a stride the
// compiler can see is a multiple of 8.
uint aligned_stride(uint cols)
{
    return (cols >> 3) << 3;
}

// Where tile (or step) `i` of `size` starts along a side of `len`: i · size, or with
// `shifted_edges` 0 for the first and len % size later than that for the others.
uint tile_start(const uint i, const uint len, const uint size)
{
    if (shifted_edges == 0 || len % size == 0) {
        return i * size;
    }
    return i == 0 ? 0 : i * size - (size - len % size);
}

// Where the elements tile `i` stores along a side of `len` end: len, or with `shifted_edges`
// the short first tile's end.
uint tile_end(const uint i, const uint len, const uint size)
{
    return shifted_edges == 1 && i == 0 && len % size != 0 ? len % size : len;
}

#if VKPRISM_GLU
// act(gate) · up of one element: `g` from the gate accumulator, `u` the up one's at the same
// place (matrices of one type hold their elements alike).
float glu_element(const in uint row, const in uint col, const in float g, const in float u)
{
    return activate(vec4(g)).x * u;
}

// One workgroup's tile of both products, BM rows from m0 by W columns from n0: the K loop,
// the gate, the store. A macro, as GLSL has no functions over matrix sizes: glu_wide (BN) and
// glu_narrow (narrow_bn).
#define GLU_TILE(NAME, W) \
void NAME(const uint m0, const uint n0, const uint m_end) \
{ \
    const uint M = fixed_m > 0 ? uint(fixed_m) : uint(p.M); \
    const uint N = fixed_n > 0 ? uint(fixed_n) : uint(p.N); \
    const uint K = fixed_k > 0 ? uint(fixed_k) : uint(p.K); \
    tensorLayoutNV<2, clamped> la = createTensorLayoutNV(2, clamped); \
    tensorLayoutNV<2, clamped> lb = createTensorLayoutNV(2, clamped); \
    la = setTensorLayoutDimensionNV(la, M, K); \
    la = setTensorLayoutStrideNV(la, aligned_stride(K), 1); \
    /* Every other stored row of B: the gates from row 0, the ups from row 1 (K elements on). */ \
    lb = setTensorLayoutDimensionNV(lb, N, K); \
    lb = setTensorLayoutStrideNV(lb, 2 * aligned_stride(K), 1); \
    tensorLayoutNV<2, clamped> lc = createTensorLayoutNV(2, clamped); \
    lc = setTensorLayoutDimensionNV(lc, M, N); \
    lc = setTensorLayoutStrideNV(lc, aligned_stride(N), 1); \
    /* A short first row of tiles stores its own rows only, clamped at their end. */ \
    tensorLayoutNV<2, gl_CooperativeMatrixClampModeConstantNV> own = \
        createTensorLayoutNV(2, gl_CooperativeMatrixClampModeConstantNV); \
    own = setTensorLayoutDimensionNV(own, m_end, N); \
    own = setTensorLayoutStrideNV(own, aligned_stride(N), 1); \
    tensorViewNV<2, false, 1, 0> swapped = createTensorViewNV(2, false, 1, 0); \
    const uint up_at = aligned_stride(K); \
    coopmat<float, gl_ScopeWorkgroup, BM, W, gl_MatrixUseAccumulator> gate = \
        coopmat<float, gl_ScopeWorkgroup, BM, W, gl_MatrixUseAccumulator>(0.0); \
    coopmat<float, gl_ScopeWorkgroup, BM, W, gl_MatrixUseAccumulator> up = \
        coopmat<float, gl_ScopeWorkgroup, BM, W, gl_MatrixUseAccumulator>(0.0); \
    coopmat<cmfp, gl_ScopeWorkgroup, BM, BK, gl_MatrixUseA> ma; \
    coopmat<cmfp, gl_ScopeWorkgroup, BK, W, gl_MatrixUseB> mg; \
    coopmat<cmfp, gl_ScopeWorkgroup, BK, W, gl_MatrixUseB> mu; \
    const uint steps = (K + BK - 1) / BK; \
    const uint whole = steps - steps % uint(unroll); \
    uint step = 0; \
    for (; step < whole; step += unroll) { \
        [[unroll]] for (int u = 0; u < unroll; u++) { \
            const uint k = (step + u) * BK; \
            coopMatLoadTensorNV(ma, a_data, 0, sliceTensorLayoutNV(la, m0, BM, k, BK)); \
            coopMatLoadTensorNV(mg, b_data, 0, sliceTensorLayoutNV(lb, n0, W, k, BK), swapped); \
            coopMatLoadTensorNV(mu, b_data, up_at, sliceTensorLayoutNV(lb, n0, W, k, BK), swapped); \
            gate = coopMatMulAdd(ma, mg, gate); \
            up = coopMatMulAdd(ma, mu, up); \
        } \
    } \
    for (; step < steps; step++) { \
        const uint k = step * BK; \
        coopMatLoadTensorNV(ma, a_data, 0, sliceTensorLayoutNV(la, m0, BM, k, BK)); \
        coopMatLoadTensorNV(mg, b_data, 0, sliceTensorLayoutNV(lb, n0, W, k, BK), swapped); \
        coopMatLoadTensorNV(mu, b_data, up_at, sliceTensorLayoutNV(lb, n0, W, k, BK), swapped); \
        gate = coopMatMulAdd(ma, mg, gate); \
        up = coopMatMulAdd(ma, mu, up); \
    } \
    coopMatPerElementNV(gate, gate, glu_element, up); \
    coopmat<cmfp, gl_ScopeWorkgroup, BM, W, C_USE> out16 = \
        coopmat<cmfp, gl_ScopeWorkgroup, BM, W, C_USE>(gate); \
    if (m_end < M) { \
        coopMatStoreTensorNV(out16, c_data, 0, sliceTensorLayoutNV(own, m0, BM, n0, W)); \
    } else { \
        coopMatStoreTensorNV(out16, c_data, 0, sliceTensorLayoutNV(lc, m0, BM, n0, W)); \
    } \
}

GLU_TILE(glu_wide, BN)
GLU_TILE(glu_narrow, narrow_bn)

// Workgroups in the order they are launched: every wide tile (row by row) before any narrow
// one, so that the narrow ones fill the wave the wide ones leave.
void main()
{
    const uint M = fixed_m > 0 ? uint(fixed_m) : uint(p.M);
    const uint columns = gl_NumWorkGroups.x;
    const uint wide = narrow_from == 0 ? columns : uint(narrow_from);
    const uint at = gl_WorkGroupID.y * columns + gl_WorkGroupID.x;
    const uint wide_tiles = (M + BM - 1) / BM * wide;
    if (at < wide_tiles) {
        const uint row = at / wide;
        glu_wide(tile_start(row, M, BM), at % wide * BN, tile_end(row, M, BM));
    } else {
        const uint narrow = columns - wide;
        const uint j = at - wide_tiles;
        const uint row = j / narrow;
        glu_narrow(tile_start(row, M, BM), wide * BN + j % narrow * uint(narrow_bn),
                   tile_end(row, M, BM));
    }
}
#else
#if VKPRISM_ROPE
// The workgroup's tile of C in C's format, row-major: written by the matrix store, read an
// octet at a time by place_tile.
shared cmfp rope_tile[BM * BN];

// Pairs 4j .. 4j + 3 of a head at position `pos`, interleaved: (u.xy, u.zw, v.xy, v.zw).
void turn_octet(inout vec4 u, inout vec4 v, const int pos, const int j)
{
    u.xy = rope_turn(u.xy, rope_sin_cos(pos, 4 * j, p.dim, ROPE_FREQS));
    u.zw = rope_turn(u.zw, rope_sin_cos(pos, 4 * j + 1, p.dim, ROPE_FREQS));
    v.xy = rope_turn(v.xy, rope_sin_cos(pos, 4 * j + 2, p.dim, ROPE_FREQS));
    v.zw = rope_turn(v.zw, rope_sin_cos(pos, 4 * j + 3, p.dim, ROPE_FREQS));
}

// rope_tile's rows from m0 and columns from n0 (those before `ends`, the tile's own) turned
// and placed, an octet an invocation at a time: a query head's into q, a key head's into k
// and a value head's into v at the token's position (none past the caches' rows).
void place_tile(const uint m0, const uint n0, const uvec2 ends)
{
    const int dim = p.dim;
    const int octets = BN / 8;
    for (int e = int(gl_LocalInvocationID.x); e < BM * octets; e += int(gl_WorkGroupSize.x)) {
        const int row = e / octets;
        const int col = e % octets * 8;
        const int token = int(m0) + row;
        const int n = int(n0) + col;
        if (token >= int(ends.x) || n >= int(ends.y)) {
            continue;
        }
        const int at = row * BN + col;
        vec4 u = vec4(float(rope_tile[at]), float(rope_tile[at + 1]), float(rope_tile[at + 2]),
                      float(rope_tile[at + 3]));
        vec4 v = vec4(float(rope_tile[at + 4]), float(rope_tile[at + 5]), float(rope_tile[at + 6]),
                      float(rope_tile[at + 7]));
        if (bias_term == 1) {
            u += vec4(buffer_ld4(bias_data, n / 4));
            v += vec4(buffer_ld4(bias_data, n / 4 + 1));
        }
        const int head = n / dim;
        const int within = n % dim;
        const int pos = p.offset + token;
        if (head < p.hq + p.hkv) {
            turn_octet(u, v, pos, within / 8);
        }
        if (head < p.hq) {
            // q's row of the token: its hq heads side by side, as C's first hq · dim columns.
            const int to = (token * p.hq * dim + n) / 4;
            buffer_st4(q_data, to, afpvec4(u));
            buffer_st4(q_data, to + 1, afpvec4(v));
        } else if (pos < p.rows) {
            const int to = ((pos * p.hkv + (head - p.hq) % p.hkv) * dim + within) / 4;
            if (head < p.hq + p.hkv) {
                buffer_st4(k_data, to, afpvec4(u));
                buffer_st4(k_data, to + 1, afpvec4(v));
            } else {
                buffer_st4(v_data, to, afpvec4(u));
                buffer_st4(v_data, to + 1, afpvec4(v));
            }
        }
    }
}
#endif

// One step of K from k: A's BM×BK block and B's BK×BN block read through the layouts `la` and
// `lb`, multiplied into acc. A macro, as GLSL has no functions over a layout's clamp mode.
#define GEMM_STEP(la, lb, k) \
    if (transpose_a == 1) { \
        coopMatLoadTensorNV(ma, a_data, a_at, sliceTensorLayoutNV(la, k, BK, m0, BM), swapped); \
    } else { \
        coopMatLoadTensorNV(ma, a_data, a_at, sliceTensorLayoutNV(la, m0, BM, k, BK)); \
    } \
    if (transpose_b == 1) { \
        coopMatLoadTensorNV(mb, b_data, b_at, sliceTensorLayoutNV(lb, n0, BN, k, BK), swapped); \
    } else { \
        coopMatLoadTensorNV(mb, b_data, b_at, sliceTensorLayoutNV(lb, k, BK, n0, BN)); \
    } \
    acc = coopMatMulAdd(ma, mb, acc);

// A and B as stored (rows × columns), K `depth` deep: the dimensions and strides of `la` and
// `lb`, whatever their clamp mode.
#define OPERAND_LAYOUTS(la, lb, depth) \
    la = transpose_a == 1 ? setTensorLayoutDimensionNV(la, depth, M) : setTensorLayoutDimensionNV(la, M, depth); \
    la = setTensorLayoutStrideNV(la, aligned_stride(transpose_a == 1 ? M : K), 1); \
    lb = transpose_b == 1 ? setTensorLayoutDimensionNV(lb, N, depth) : setTensorLayoutDimensionNV(lb, depth, N); \
    lb = setTensorLayoutStrideNV(lb, aligned_stride(transpose_b == 1 ? K : N), 1);

void main()
{
    const uint M = fixed_m > 0 ? uint(fixed_m) : uint(p.M);
    const uint N = fixed_n > 0 ? uint(fixed_n) : uint(p.N);
    const uint K = fixed_k > 0 ? uint(fixed_k) : uint(p.K);
    const uint m0 = tile_start(gl_WorkGroupID.y, M, BM);
    const uint n0 = tile_start(gl_WorkGroupID.x, N, BN);
    // The rows and columns this tile stores end there (a short tile's own).
    const uvec2 ends = uvec2(tile_end(gl_WorkGroupID.y, M, BM), tile_end(gl_WorkGroupID.x, N, BN));
#if VKPRISM_SPLIT_K
    const uint z = 0;
#else
    const uint z = batched == 1 ? gl_WorkGroupID.z : 0;
#endif
    const uint a_at = z * uint(p.batch_a);
    const uint b_at = z * uint(p.batch_b);
    const uint c_at = z * uint(p.batch_c);

    // Each operand as stored, clamped at its edges (unless `clamped` says none is crossed).
    tensorLayoutNV<2, clamped> la = createTensorLayoutNV(2, clamped);
    tensorLayoutNV<2, clamped> lb = createTensorLayoutNV(2, clamped);
    OPERAND_LAYOUTS(la, lb, K)
    // C as stored; and for a short tile, clamped at the end of its own rows and columns.
    tensorLayoutNV<2, clamped> lc = createTensorLayoutNV(2, clamped);
    lc = setTensorLayoutDimensionNV(lc, M, N);
    lc = setTensorLayoutStrideNV(lc, aligned_stride(N), 1);
    tensorLayoutNV<2, gl_CooperativeMatrixClampModeConstantNV> own =
        createTensorLayoutNV(2, gl_CooperativeMatrixClampModeConstantNV);
    own = setTensorLayoutDimensionNV(own, ends.x, ends.y);
    own = setTensorLayoutStrideNV(own, aligned_stride(N), 1);
    const bool short_tile = ends.x < M || ends.y < N;
    // Reads a stored K×M (N×K) block as the M×K (K×N) matrix it holds.
    tensorViewNV<2, false, 1, 0> swapped = createTensorViewNV(2, false, 1, 0);

    coopmat<float, gl_ScopeWorkgroup, BM, BN, gl_MatrixUseAccumulator> acc =
        coopmat<float, gl_ScopeWorkgroup, BM, BN, gl_MatrixUseAccumulator>(0.0);
    coopmat<cmfp, gl_ScopeWorkgroup, BM, BK, gl_MatrixUseA> ma;
    coopmat<cmfp, gl_ScopeWorkgroup, BK, BN, gl_MatrixUseB> mb;

    // This workgroup's steps of K: all of them, or share z of split_k (whole steps).
    const uint all_steps = (K + BK - 1) / BK;
#if VKPRISM_SPLIT_K
    const uint share = (all_steps + split_k - 1) / split_k;
    const uint first = min(gl_WorkGroupID.z * share, all_steps);
    const uint steps = min(first + share, all_steps);
#else
    const uint first = 0;
    const uint steps = all_steps;
#endif
    uint step = first;
    // With shifted edges, a short first step: K % BK elements through layouts clamped there.
    if (shifted_edges == 1 && K % BK != 0 && step == 0 && steps > 0) {
        tensorLayoutNV<2, gl_CooperativeMatrixClampModeConstantNV> sa =
            createTensorLayoutNV(2, gl_CooperativeMatrixClampModeConstantNV);
        tensorLayoutNV<2, gl_CooperativeMatrixClampModeConstantNV> sb =
            createTensorLayoutNV(2, gl_CooperativeMatrixClampModeConstantNV);
        OPERAND_LAYOUTS(sa, sb, K % BK)
        GEMM_STEP(sa, sb, 0)
        step = 1;
    }
    const uint count = steps - step;
    const uint whole = step + count - count % uint(unroll);
    for (; step < whole; step += unroll) {
        [[unroll]] for (int u = 0; u < unroll; u++) {
            const uint k = tile_start(step + u, K, BK);
            GEMM_STEP(la, lb, k)
        }
    }
    for (; step < steps; step++) {
        const uint k = tile_start(step, K, BK);
        GEMM_STEP(la, lb, k)
    }

#if VKPRISM_ROPE
    coopmat<cmfp, gl_ScopeWorkgroup, BM, BN, C_USE> out16 =
        coopmat<cmfp, gl_ScopeWorkgroup, BM, BN, C_USE>(acc);
    coopMatStore(out16, rope_tile, 0, BN, gl_CooperativeMatrixLayoutRowMajor);
    barrier();
    place_tile(m0, n0, ends);
#elif VKPRISM_SPLIT_K
    const uint partial_at = gl_WorkGroupID.z * M * N;
    if (short_tile) {
        coopMatStoreTensorNV(acc, partial_data, partial_at, sliceTensorLayoutNV(own, m0, BM, n0, BN));
    } else {
        coopMatStoreTensorNV(acc, partial_data, partial_at, sliceTensorLayoutNV(lc, m0, BM, n0, BN));
    }
#else
    acc = acc * p.alpha;
#if !BETA_PER_ELEMENT
    if (beta_term == 1) {
        coopmat<cmfp, gl_ScopeWorkgroup, BM, BN, gl_MatrixUseAccumulator> before;
        if (short_tile) {
            coopMatLoadTensorNV(before, c_data, c_at, sliceTensorLayoutNV(own, m0, BM, n0, BN));
        } else {
            coopMatLoadTensorNV(before, c_data, c_at, sliceTensorLayoutNV(lc, m0, BM, n0, BN));
        }
        acc += coopmat<float, gl_ScopeWorkgroup, BM, BN, gl_MatrixUseAccumulator>(before) * p.beta;
    }
#endif
    coopMatPerElementNV(acc, acc, epilogue, m0, n0, c_at, ends);
    coopmat<cmfp, gl_ScopeWorkgroup, BM, BN, C_USE> out16 =
        coopmat<cmfp, gl_ScopeWorkgroup, BM, BN, C_USE>(acc);
    if (short_tile) {
        coopMatStoreTensorNV(out16, c_data, c_at, sliceTensorLayoutNV(own, m0, BM, n0, BN));
    } else {
        coopMatStoreTensorNV(out16, c_data, c_at, sliceTensorLayoutNV(lc, m0, BM, n0, BN));
    }
#endif
}
#endif
#else
void main()
{
}
#endif
