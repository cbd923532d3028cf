// The body of the library's GEMM-shaped kernels (gemm.comp, conv2d_nhwc.comp): C = act(alpha · A · B
// + bias) over vec4 quads, tiled as gemm.comp's header describes. The including kernel declares,
// before `#include "gemm_core.glsl"`: the specialization constants transpose_a, transpose_b,
// bias_term, activation, BK and subgroup_size; the buffers a_data, b_data, bias_data, c_data
// (`sfpvec4`); the push constants `p` with M, N, K, alpha and slope; and where A and B live:
//   int a_index(int m, int k)   the quad A[m][k..k+3]      (row-major A)
//   int at_index(int k, int m)  the quad A[m..m+3][k]      (A stored K×M, when transpose_a)
//   int b_index(int k, int n)   the quad B[k][n..n+3]      (row-major B)
//   int bt_index(int n, int k)  the quad B[k..k+3][n]      (B stored N×K, when transpose_b)
// each the index into a_data / b_data, or -1 where the quad reads as zero.
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

// The quads of A and B through the including kernel's address functions (a negative index reads
// as zero: outside the matrix, or padding).
vec4 a_row4(int m, int k)
{
    const int i = a_index(m, k);
    return i < 0 ? vec4(0.0) : vec4(buffer_ld4(a_data, i));
}

vec4 at_col4(int k, int m)
{
    const int i = at_index(k, m);
    return i < 0 ? vec4(0.0) : vec4(buffer_ld4(a_data, i));
}

vec4 b_row4(int k, int n)
{
    const int i = b_index(k, n);
    return i < 0 ? vec4(0.0) : vec4(buffer_ld4(b_data, i));
}

vec4 bt_col4(int n, int k)
{
    const int i = bt_index(n, k);
    return i < 0 ? vec4(0.0) : vec4(buffer_ld4(b_data, i));
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
    const int i = transpose_a == 1
        ? at_index(k0 + l / (BM / 4), m0 + (l % (BM / 4)) * 4)
        : a_index(m0 + l / (STEP / 4), k0 + (l % (STEP / 4)) * 4);
    return i < 0 ? rawvec4(0) : load_raw(a_data, i);
}

// Load l of a step of B, as stored: 4 consecutive n of one k, or 4 consecutive k of one n when B
// is transposed.
rawvec4 raw_b(int l, int n0, int k0)
{
    const int i = transpose_b == 1
        ? bt_index(n0 + l / (STEP / 4), k0 + (l % (STEP / 4)) * 4)
        : b_index(k0 + l / (BN / 4), n0 + (l % (BN / 4)) * 4);
    return i < 0 ? rawvec4(0) : load_raw(b_data, i);
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
