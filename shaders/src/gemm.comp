#version 450
// C = act(alpha * op(A) * op(B) + bias), row-major, every operand read and written as vec4s.
#extension GL_EXT_control_flow_attributes : require
//
// Shapes: op(A) is M×K, op(B) is K×N, C is M×N. A is stored M×K (K×M when transpose_a), B is
// stored K×N (N×K when transpose_b); the last dimension of every stored operand must be a multiple
// of 4 (one `sfpvec4` is 4 consecutive elements of a row). M, N and K need not be multiples of the
// tile: edge tiles load zeros and store only what is inside C.
//
// Work split (seed 001): each workgroup owns a BM×BN macro-tile of C, BM = 8 × local_size_y and
// BN = 8 × local_size_x (128×128 with the default 16×16 workgroup); each invocation owns an 8×8
// micro-tile held in 16 vec4 registers, as two 4×8 halves BM/2 rows apart (and two 8×4 halves
// BN/2 columns apart) so a warp's shared-memory reads are broadcasts of A and conflict-free rows of
// B. With local memory, the A and B slices of one BK-deep step go through shared memory (A stored
// transposed, so both are read as vec4s along M and N); the next step's global loads are issued
// before the current step's arithmetic. Accumulation is always fp32.
//
// With cooperative matrices (`_cm` variants, fp16 only): the same macro-tile and the same
// prefetching loads, staged as fp16 in shared memory; subgroup w of the workgroup owns a
// (BM / WARPS_M) × (BN / WARPS_N) warp tile of 16×16×16 fp16 × fp16 + fp32 multiply-adds, and the
// fp32 accumulators go out through a per-subgroup 16×16 scratch so bias, activation and the
// storage conversion are applied as in the other path. `subgroup_size` must be the device's
// subgroup size (32 on NVIDIA; require it at pipeline creation where it varies), and the
// workgroup's x size a multiple of it (Vulkan requires that of subgroup-scope matrices): use
// `gemm_local_size`.
layout (constant_id = 0) const int transpose_a = 0;
layout (constant_id = 1) const int transpose_b = 0;
layout (constant_id = 2) const int bias_term = 0;
// 0 none, 1 relu, 2 leaky relu (slope in the push constants), 3 sigmoid
layout (constant_id = 3) const int activation = 0;
// Depth of one shared-memory step, a multiple of 4.
layout (constant_id = 4) const int BK = 16;
// Cooperative-matrix path only: invocations per subgroup.
layout (constant_id = 5) const int subgroup_size = 32;

layout (local_size_x = 16, local_size_y = 16) in;

layout (binding = 0) readonly buffer a_blob { sfpvec4 a_data[]; };
layout (binding = 1) readonly buffer b_blob { sfpvec4 b_data[]; };
// N values, read only when bias_term is 1 (bind any tensor otherwise).
layout (binding = 2) readonly buffer bias_blob { sfpvec4 bias_data[]; };
layout (binding = 3) writeonly buffer c_blob { sfpvec4 c_data[]; };

layout (push_constant) uniform parameter { int M; int N; int K; float alpha; float slope; } p;

const int LX = int(gl_WorkGroupSize.x);
const int LY = int(gl_WorkGroupSize.y);
const int BM = 8 * LY;
const int BN = 8 * LX;
const int THREADS = LX * LY;
#if NCNN_cooperative_matrix
// Fragments are 16 deep: the step is BK rounded up to a multiple of 16.
const int STEP = (BK + 15) / 16 * 16;
#else
// (A macro, not a const alias: glslang would give the constant the alias's name.)
#define STEP BK
#endif

#if NCNN_shader_local_memory && !NCNN_cooperative_matrix
// One padding vec4 per row keeps the transposing stores of A (and B when transposed) off one bank.
shared vec4 tile_a[STEP][BM / 4 + 1];
shared vec4 tile_b[STEP][BN / 4 + 1];
#endif
#if NCNN_cooperative_matrix
#extension GL_KHR_shader_subgroup_basic : require
const int WARPS = THREADS / subgroup_size;
const int WARPS_N = WARPS < 4 ? WARPS : 4;
const int WARPS_M = WARPS / WARPS_N;
// 16×16 fragments per subgroup along M and N.
const int FM = BM / WARPS_M / 16;
const int FN = BN / WARPS_N / 16;
// Tiles of fp16 quads (the stored bytes, never converted): A row-major BM×STEP, B row-major
// STEP×BN, rows padded by 16 bytes against bank conflicts of the fragment loads.
const int A_STRIDE4 = STEP / 4 + 2;
const int B_STRIDE4 = BN / 4 + 2;
shared f16vec4 cm_a[BM * A_STRIDE4];
shared f16vec4 cm_b[STEP * B_STRIDE4];
shared float cm_c[WARPS * 256];
#endif
#if NCNN_shader_local_memory || NCNN_cooperative_matrix
// vec4s of A and of B one invocation moves into shared memory per step.
const int A_LOADS = (BM * STEP / 4 + THREADS - 1) / THREADS;
const int B_LOADS = (BN * STEP / 4 + THREADS - 1) / THREADS;
#endif

// op(A)[m][k .. k+3] as stored (row-major A), or zero outside.
vec4 a_row4(int m, int k)
{
    if (m >= p.M || k >= p.K) return vec4(0.0);
    return vec4(buffer_ld4(a_data, m * (p.K / 4) + k / 4));
}

// A stored K×M: op(A)[m .. m+3][k], or zero outside.
vec4 at_col4(int k, int m)
{
    if (m >= p.M || k >= p.K) return vec4(0.0);
    return vec4(buffer_ld4(a_data, k * (p.M / 4) + m / 4));
}

// op(B)[k][n .. n+3] (row-major B), or zero outside.
vec4 b_row4(int k, int n)
{
    if (k >= p.K || n >= p.N) return vec4(0.0);
    return vec4(buffer_ld4(b_data, k * (p.N / 4) + n / 4));
}

// B stored N×K: op(B)[k .. k+3][n], or zero outside.
vec4 bt_col4(int n, int k)
{
    if (k >= p.K || n >= p.N) return vec4(0.0);
    return vec4(buffer_ld4(b_data, n * (p.K / 4) + k / 4));
}

#if NCNN_shader_local_memory || NCNN_cooperative_matrix
#if (NCNN_fp16_storage && !NCNN_fp16_arithmetic && !NCNN_cooperative_matrix) || NCNN_bf16_storage
// 16-bit storage without 16-bit arithmetic types: a 16-bit value can't live in a register, so a
// quad is converted as it is loaded.
#define rawvec4 vec4
#define load_raw(buf, i) vec4(buffer_ld4(buf, i))
#else
#define rawvec4 sfpvec4
#define load_raw(buf, i) buf[i]
#endif

// Load l of a step at depth k0, as stored (converted only when staged, so the load's latency
// overlaps this step's arithmetic), zero outside: 4 consecutive k of one row of A, or 4
// consecutive m of one k when A is transposed.
rawvec4 raw_a(int l, int m0, int k0)
{
    if (transpose_a == 1) {
        const int k = k0 + l / (BM / 4), m = m0 + (l % (BM / 4)) * 4;
        return m < p.M && k < p.K ? load_raw(a_data, k * (p.M / 4) + m / 4) : rawvec4(0);
    }
    const int m = m0 + l / (STEP / 4), k = k0 + (l % (STEP / 4)) * 4;
    return m < p.M && k < p.K ? load_raw(a_data, m * (p.K / 4) + k / 4) : rawvec4(0);
}

// Load l of a step of B, as stored: 4 consecutive n of one k, or 4 consecutive k of one n when B
// is transposed.
rawvec4 raw_b(int l, int n0, int k0)
{
    if (transpose_b == 1) {
        const int n = n0 + l / (STEP / 4), k = k0 + (l % (STEP / 4)) * 4;
        return n < p.N && k < p.K ? load_raw(b_data, n * (p.K / 4) + k / 4) : rawvec4(0);
    }
    const int k = k0 + l / (BN / 4), n = n0 + (l % (BN / 4)) * 4;
    return n < p.N && k < p.K ? load_raw(b_data, k * (p.N / 4) + n / 4) : rawvec4(0);
}

// A loaded quad as fp32 (packed halves and bf16 keep element 0 in the low 16 bits).
vec4 to_f32(rawvec4 v)
{
#if NCNN_fp16_packed
    return vec4(unpackHalf2x16(v.x), unpackHalf2x16(v.y));
#elif NCNN_bf16_packed
    return uintBitsToFloat(uvec4(v.x << 16, v.x & 0xffff0000u, v.y << 16, v.y & 0xffff0000u));
#else
    return vec4(v);
#endif
}
#endif

vec4 activate(vec4 v)
{
    if (activation == 1) return max(v, vec4(0.0));
    if (activation == 2) return mix(v * p.slope, v, greaterThan(v, vec4(0.0)));
    if (activation == 3) return 1.0 / (1.0 + exp(-v));
    return v;
}

#if NCNN_cooperative_matrix
#if NCNN_fp16_packed
// Packed storage holds the bytes of an f16vec4 (element 0 in the low half).
f16vec4 raw4(uvec2 v) { return f16vec4(unpackFloat2x16(v.x), unpackFloat2x16(v.y)); }
#else
f16vec4 raw4(f16vec4 v) { return v; }
#endif

// Moves this invocation's prefetched quads of one step into the tiles.
void stage_fp16(int tid, rawvec4 next_a_raw[A_LOADS], rawvec4 next_b_raw[B_LOADS])
{
    f16vec4 next_a[A_LOADS];
    f16vec4 next_b[B_LOADS];
    [[unroll]] for (int i = 0; i < A_LOADS; i++) next_a[i] = raw4(next_a_raw[i]);
    [[unroll]] for (int i = 0; i < B_LOADS; i++) next_b[i] = raw4(next_b_raw[i]);
    [[unroll]] for (int i = 0; i < A_LOADS; i++) {
        const int l = tid + i * THREADS;
        if (l >= BM * STEP / 4) break;
        if (transpose_a == 1) {
            const int k = l / (BM / 4), m = (l % (BM / 4)) * 4;
            [[unroll]] for (int j = 0; j < 4; j++) cm_a[(m + j) * A_STRIDE4 + k / 4][k % 4] = next_a[i][j];
        } else {
            cm_a[(l / (STEP / 4)) * A_STRIDE4 + l % (STEP / 4)] = next_a[i];
        }
    }
    [[unroll]] for (int i = 0; i < B_LOADS; i++) {
        const int l = tid + i * THREADS;
        if (l >= BN * STEP / 4) break;
        if (transpose_b == 1) {
            const int n = l / (STEP / 4), k = (l % (STEP / 4)) * 4;
            [[unroll]] for (int j = 0; j < 4; j++) cm_b[(k + j) * B_STRIDE4 + n / 4][n % 4] = next_b[i][j];
        } else {
            cm_b[(l / (BN / 4)) * B_STRIDE4 + l % (BN / 4)] = next_b[i];
        }
    }
}

void main()
{
    const int tid = int(gl_LocalInvocationID.y) * LX + int(gl_LocalInvocationID.x);
    const int warp = int(gl_SubgroupID);
    const int lane = int(gl_SubgroupInvocationID);
    const int m0 = int(gl_WorkGroupID.y) * BM;
    const int n0 = int(gl_WorkGroupID.x) * BN;
    // This subgroup's warp tile inside the macro-tile.
    const int wm = (warp / WARPS_N) * FM * 16;
    const int wn = (warp % WARPS_N) * FN * 16;

    coopmat<float, gl_ScopeSubgroup, 16, 16, gl_MatrixUseAccumulator> acc[FM * FN];
    [[unroll]] for (int i = 0; i < FM * FN; i++) {
        acc[i] = coopmat<float, gl_ScopeSubgroup, 16, 16, gl_MatrixUseAccumulator>(0.0);
    }
    rawvec4 next_a[A_LOADS];
    rawvec4 next_b[B_LOADS];
    [[unroll]] for (int i = 0; i < A_LOADS; i++) next_a[i] = raw_a(tid + i * THREADS, m0, 0);
    [[unroll]] for (int i = 0; i < B_LOADS; i++) next_b[i] = raw_b(tid + i * THREADS, n0, 0);

    for (int k0 = 0; k0 < p.K; k0 += STEP) {
        barrier();
        stage_fp16(tid, next_a, next_b);
        barrier();
        const int k1 = k0 + STEP;
        if (k1 < p.K) {
            [[unroll]] for (int i = 0; i < A_LOADS; i++) next_a[i] = raw_a(tid + i * THREADS, m0, k1);
            [[unroll]] for (int i = 0; i < B_LOADS; i++) next_b[i] = raw_b(tid + i * THREADS, n0, k1);
        }
        [[unroll]] for (int k = 0; k < STEP; k += 16) {
            coopmat<float16_t, gl_ScopeSubgroup, 16, 16, gl_MatrixUseA> fa[FM];
            [[unroll]] for (int i = 0; i < FM; i++) {
                coopMatLoad(fa[i], cm_a, (wm + i * 16) * A_STRIDE4 + k / 4, A_STRIDE4, gl_CooperativeMatrixLayoutRowMajor);
            }
            [[unroll]] for (int j = 0; j < FN; j++) {
                coopmat<float16_t, gl_ScopeSubgroup, 16, 16, gl_MatrixUseB> fb;
                coopMatLoad(fb, cm_b, k * B_STRIDE4 + (wn + j * 16) / 4, B_STRIDE4, gl_CooperativeMatrixLayoutRowMajor);
                [[unroll]] for (int i = 0; i < FM; i++) {
                    acc[i * FN + j] = coopMatMulAdd(fa[i], fb, acc[i * FN + j]);
                }
            }
        }
    }

    // Each 16×16 accumulator through this subgroup's scratch: 64 vec4s, spread over its lanes.
    [[unroll]] for (int f = 0; f < FM * FN; f++) {
        coopMatStore(acc[f], cm_c, warp * 256, 16, gl_CooperativeMatrixLayoutRowMajor);
        subgroupMemoryBarrierShared();
        subgroupBarrier();
        for (int q = lane; q < 64; q += subgroup_size) {
            const int row = q / 4, col = (q % 4) * 4;
            const int m = m0 + wm + (f / FN) * 16 + row;
            const int n = n0 + wn + (f % FN) * 16 + col;
            if (m >= p.M || n >= p.N) continue;
            const int s = warp * 256 + row * 16 + col;
            const vec4 v = vec4(cm_c[s], cm_c[s + 1], cm_c[s + 2], cm_c[s + 3]);
            const vec4 bias = bias_term == 1 ? vec4(buffer_ld4(bias_data, n / 4)) : vec4(0.0);
            buffer_st4(c_data, m * (p.N / 4) + n / 4, afpvec4(activate(v * p.alpha + bias)));
        }
        subgroupBarrier();
    }
}
#else
void main()
{
    const int tx = int(gl_LocalInvocationID.x);
    const int ty = int(gl_LocalInvocationID.y);
    const int tid = ty * LX + tx;
    const int m0 = int(gl_WorkGroupID.y) * BM;
    const int n0 = int(gl_WorkGroupID.x) * BN;

    // acc[r][h]: row (r < 4 ? ty*4 + r : BM/2 + ty*4 + r-4), columns (h == 0 ? tx*4 : BN/2 + tx*4) + 0..3
    vec4 acc[8][2];
    [[unroll]] for (int r = 0; r < 8; r++) { acc[r][0] = vec4(0.0); acc[r][1] = vec4(0.0); }

#if NCNN_shader_local_memory
    // The vec4 this invocation moves for A (and B) in one step: (row, k) or (k, column) in the tile.
    rawvec4 next_a[A_LOADS];
    rawvec4 next_b[B_LOADS];
    [[unroll]] for (int i = 0; i < A_LOADS; i++) next_a[i] = raw_a(tid + i * THREADS, m0, 0);
    [[unroll]] for (int i = 0; i < B_LOADS; i++) next_b[i] = raw_b(tid + i * THREADS, n0, 0);

    for (int k0 = 0; k0 < p.K; k0 += STEP) {
        barrier();
        [[unroll]] for (int i = 0; i < A_LOADS; i++) {
            const int l = tid + i * THREADS;
            if (l < BM * STEP / 4) {
                const vec4 v = to_f32(next_a[i]);
                if (transpose_a == 1) {
                    tile_a[l / (BM / 4)][l % (BM / 4)] = v;
                } else {
                    const int m = l / (STEP / 4);
                    const int k = (l % (STEP / 4)) * 4;
                    [[unroll]] for (int j = 0; j < 4; j++) tile_a[k + j][m / 4][m % 4] = v[j];
                }
            }
        }
        [[unroll]] for (int i = 0; i < B_LOADS; i++) {
            const int l = tid + i * THREADS;
            if (l < BN * STEP / 4) {
                const vec4 v = to_f32(next_b[i]);
                if (transpose_b == 1) {
                    const int n = l / (STEP / 4);
                    const int k = (l % (STEP / 4)) * 4;
                    [[unroll]] for (int j = 0; j < 4; j++) tile_b[k + j][n / 4][n % 4] = v[j];
                } else {
                    tile_b[l / (BN / 4)][l % (BN / 4)] = v;
                }
            }
        }
        barrier();

        // Issue the next step's global loads now; they land while this step's FMAs run.
        const int k1 = k0 + STEP;
        if (k1 < p.K) {
            [[unroll]] for (int i = 0; i < A_LOADS; i++) next_a[i] = raw_a(tid + i * THREADS, m0, k1);
            [[unroll]] for (int i = 0; i < B_LOADS; i++) next_b[i] = raw_b(tid + i * THREADS, n0, k1);
        }

        [[unroll]] for (int k = 0; k < STEP; k++) {
            const vec4 a0 = tile_a[k][ty];
            const vec4 a1 = tile_a[k][BM / 8 + ty];
            const vec4 b0 = tile_b[k][tx];
            const vec4 b1 = tile_b[k][BN / 8 + tx];
            [[unroll]] for (int r = 0; r < 4; r++) {
                acc[r][0] += a0[r] * b0;
                acc[r][1] += a0[r] * b1;
                acc[4 + r][0] += a1[r] * b0;
                acc[4 + r][1] += a1[r] * b1;
            }
        }
    }
#else
    // No shared memory: every invocation reads its own rows and columns (through the cache).
    for (int k0 = 0; k0 < p.K; k0 += 4) {
        vec4 a[8];
        [[unroll]] for (int r = 0; r < 8; r++) {
            const int m = m0 + (r < 4 ? ty * 4 + r : BM / 2 + ty * 4 + r - 4);
            if (transpose_a == 1) {
                // column m of A^T's rows k0 .. k0+3
                const int mq = m - m % 4;
                a[r] = vec4(at_col4(k0, mq)[m % 4], at_col4(k0 + 1, mq)[m % 4],
                            at_col4(k0 + 2, mq)[m % 4], at_col4(k0 + 3, mq)[m % 4]);
            } else {
                a[r] = a_row4(m, k0);
            }
        }
        [[unroll]] for (int kk = 0; kk < 4; kk++) {
            vec4 b[2];
            [[unroll]] for (int h = 0; h < 2; h++) {
                const int n = n0 + h * (BN / 2) + tx * 4;
                if (transpose_b == 1) {
                    b[h] = vec4(bt_col4(n, k0)[kk], bt_col4(n + 1, k0)[kk],
                                bt_col4(n + 2, k0)[kk], bt_col4(n + 3, k0)[kk]);
                } else {
                    b[h] = b_row4(k0 + kk, n);
                }
            }
            [[unroll]] for (int r = 0; r < 8; r++) {
                acc[r][0] += a[r][kk] * b[0];
                acc[r][1] += a[r][kk] * b[1];
            }
        }
    }
#endif

    [[unroll]] for (int h = 0; h < 2; h++) {
        const int n = n0 + h * (BN / 2) + tx * 4;
        if (n >= p.N) continue;
        const vec4 bias = bias_term == 1 ? vec4(buffer_ld4(bias_data, n / 4)) : vec4(0.0);
        [[unroll]] for (int r = 0; r < 8; r++) {
            const int m = m0 + (r < 4 ? ty * 4 + r : BM / 2 + ty * 4 + r - 4);
            if (m >= p.M) continue;
            buffer_st4(c_data, m * (p.N / 4) + n / 4, afpvec4(activate(acc[r][h] * p.alpha + bias)));
        }
    }
}
#endif
