// The body of the library's GEMM-shaped kernels (gemm.comp, conv2d_nhwc.comp), after
// gemm_tiles.glsl and the kernel's load functions: staging, the three paths (cooperative
// matrices, shared-memory tiles, direct loads) and the store with bias and activation.
#if NCNN_shader_local_memory && !NCNN_cooperative_matrix
// A loaded quad as fp32.
vec4 to_f32(rawvec4 v)
{
#if AB_WORDS || NCNN_fp16_packed || NCNN_bf16_packed
    return unpack_quad(v);
#else
    return vec4(v);
#endif
}
#endif

#include "activation.glsl"

// Split-K kernels (`VKPRISM_SPLIT_K`): workgroup z of split_k multiplies one share of K, a
// whole number of steps so no two shares load the same depth, and writes its raw fp32 sums to
// partial_data[z][M][N]; gemm_split_reduce.comp adds the shares and applies alpha, the bias,
// the activation and the storage format. Otherwise one workgroup covers all of K.
#if VKPRISM_SPLIT_K
// The depth of one share.
int k_share()
{
    return (p.K + split_k * STEP - 1) / (split_k * STEP) * STEP;
}
#endif

int k_begin()
{
#if VKPRISM_SPLIT_K
    return int(gl_WorkGroupID.z) * k_share();
#else
    return 0;
#endif
}

int k_end()
{
#if VKPRISM_SPLIT_K
    return min(p.K, k_begin() + k_share());
#else
    return p.K;
#endif
}

// Writes the sums at C[m][n .. n+3] (inside C): the result, or this share's partial sums.
void store_c(int m, int n, vec4 sum)
{
#if VKPRISM_SPLIT_K
    partial_data[(int(gl_WorkGroupID.z) * p.M + m) * (p.N / 4) + n / 4] = sum;
#else
    const vec4 bias = bias_term == 1 ? vec4(buffer_ld4(bias_data, n / 4)) : vec4(0.0);
    vec4 v = sum * p.alpha + bias;
#ifdef GEMM_C_BASE
    // gemm.comp: this batch's C, read back where beta_term is 1.
    const int at = GEMM_C_BASE / 4 + m * (p.N / 4) + n / 4;
    if (beta_term == 1) v += p.beta * vec4(buffer_ld4(c_data, at));
#else
    const int at = m * (p.N / 4) + n / 4;
#ifdef GEMM_RESIDUAL
    // conv2d_nhwc.comp: the output's value before, added where beta_term is 1.
    if (beta_term == 1) v += vec4(buffer_ld4(c_data, at));
#endif
#endif
    buffer_st4(c_data, at, afpvec4(activate(v)));
#endif
}

#if NCNN_cooperative_matrix
// This invocation's octets of the step at depth k0, as stored (zero outside); they are loaded
// one step ahead and land while the current step multiplies.
void load_step(int tid, int m0, int n0, int k0, out uvec4 ra[A_LOADS], out uvec4 rb[B_LOADS])
{
    [[unroll]] for (int i = 0; i < A_LOADS; i++) {
        const int l = tid + i * THREADS;
        const int r = l / A_OCTETS, c = (l % A_OCTETS) * 8;
        ra[i] = uvec4(0);
        if (l < A_ROWS * A_OCTETS) {
            ra[i] = transpose_a == 1 ? cm_a8_at(i, k0 + r, m0 + c) : cm_a8_at(i, m0 + r, k0 + c);
        }
    }
    [[unroll]] for (int i = 0; i < B_LOADS; i++) {
        const int l = tid + i * THREADS;
        const int r = l / B_OCTETS, c = (l % B_OCTETS) * 8;
        rb[i] = uvec4(0);
        if (l < B_ROWS * B_OCTETS) {
            rb[i] = transpose_b == 1 ? cm_b8(n0 + r, k0 + c) : cm_b8(k0 + r, n0 + c);
        }
    }
}

void stage(int tid, uvec4 ra[A_LOADS], uvec4 rb[B_LOADS])
{
    [[unroll]] for (int i = 0; i < A_LOADS; i++) {
        const int l = tid + i * THREADS;
        if (l < A_ROWS * A_OCTETS) cm_smem[(l / A_OCTETS) * A_STRIDE + l % A_OCTETS] = ra[i];
    }
    [[unroll]] for (int i = 0; i < B_LOADS; i++) {
        const int l = tid + i * THREADS;
        if (l < B_ROWS * B_OCTETS) cm_smem[A_TILE + (l / B_OCTETS) * B_STRIDE + l % B_OCTETS] = rb[i];
    }
}

void main()
{
    const int tid = int(gl_LocalInvocationID.y) * LX + int(gl_LocalInvocationID.x);
    const int warp = int(gl_SubgroupID);
    const int lane = int(gl_SubgroupInvocationID);
    const int m0 = int(gl_WorkGroupID.y) * BM;
    const int n0 = int(gl_WorkGroupID.x) * BN;
    // This subgroup's warp tile inside the workgroup's.
    const int wm = (warp / WARPS_N) * cm_wfm * 16;
    const int wn = (warp % WARPS_N) * cm_wfn * 16;

    coopmat<float, gl_ScopeSubgroup, 16, 16, gl_MatrixUseAccumulator> acc[cm_wfm * cm_wfn];
    [[unroll]] for (int i = 0; i < cm_wfm * cm_wfn; i++) {
        acc[i] = coopmat<float, gl_ScopeSubgroup, 16, 16, gl_MatrixUseAccumulator>(0.0);
    }
    uvec4 ra[A_LOADS];
    uvec4 rb[B_LOADS];
    // What the kernel's A loads can compute once per workgroup (the convolution: each loaded
    // row's pixel), before the first step.
    cm_a_prepare(tid, m0);
    const int k_first = k_begin(), k_last = k_end();
    load_step(tid, m0, n0, k_first, ra, rb);
    // One stage: a second (double-buffered tiles, one barrier a step) measured slower.
    for (int k0 = k_first; k0 < k_last; k0 += STEP) {
        barrier();
        stage(tid, ra, rb);
        barrier();
        if (k0 + STEP < k_last) load_step(tid, m0, n0, k0 + STEP, ra, rb);
        [[unroll]] for (int k = 0; k < STEP; k += 16) {
            // Offsets and strides in octets (the fragments are halves; Vulkan counts in the
            // array's elements).
            coopmat<cmfp, gl_ScopeSubgroup, 16, 16, gl_MatrixUseA> fa[cm_wfm];
            [[unroll]] for (int i = 0; i < cm_wfm; i++) {
                if (transpose_a == 1) {
                    coopMatLoad(fa[i], cm_smem, k * A_STRIDE + (wm + i * 16) / 8, A_STRIDE, gl_CooperativeMatrixLayoutColumnMajor);
                } else {
                    coopMatLoad(fa[i], cm_smem, (wm + i * 16) * A_STRIDE + k / 8, A_STRIDE, gl_CooperativeMatrixLayoutRowMajor);
                }
            }
            [[unroll]] for (int j = 0; j < cm_wfn; j++) {
                coopmat<cmfp, gl_ScopeSubgroup, 16, 16, gl_MatrixUseB> fb;
                if (transpose_b == 1) {
                    coopMatLoad(fb, cm_smem, A_TILE + (wn + j * 16) * B_STRIDE + k / 8, B_STRIDE, gl_CooperativeMatrixLayoutColumnMajor);
                } else {
                    coopMatLoad(fb, cm_smem, A_TILE + k * B_STRIDE + (wn + j * 16) / 8, B_STRIDE, gl_CooperativeMatrixLayoutRowMajor);
                }
                [[unroll]] for (int i = 0; i < cm_wfm; i++) {
                    acc[i * cm_wfn + j] = coopMatMulAdd(fa[i], fb, acc[i * cm_wfn + j]);
                }
            }
        }
    }

    // Each 16×16 accumulator through this subgroup's scratch, where the tiles were (so every
    // subgroup must be done with them): 64 quads of fp32 (one uvec4 each, rows of 4), spread
    // over the subgroup's lanes.
    barrier();
    [[unroll]] for (int f = 0; f < cm_wfm * cm_wfn; f++) {
        coopMatStore(acc[f], cm_smem, warp * 64, 4, gl_CooperativeMatrixLayoutRowMajor);
        subgroupMemoryBarrierShared();
        subgroupBarrier();
        for (int q = lane; q < 64; q += subgroup_size) {
            const int m = m0 + wm + (f / cm_wfn) * 16 + q / 4;
            const int n = n0 + wn + (f % cm_wfn) * 16 + (q % 4) * 4;
            if (m >= p.M || n >= p.N) continue;
            store_c(m, n, uintBitsToFloat(cm_smem[warp * 64 + q]));
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
    const int k_first = k_begin(), k_last = k_end();
    [[unroll]] for (int i = 0; i < A_LOADS; i++) next_a[i] = raw_a(tid + i * THREADS, m0, k_first);
    [[unroll]] for (int i = 0; i < B_LOADS; i++) next_b[i] = raw_b(tid + i * THREADS, n0, k_first);

    for (int k0 = k_first; k0 < k_last; k0 += STEP) {
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
        if (k1 < k_last) {
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
    for (int k0 = k_begin(), k_last = k_end(); k0 < k_last; k0 += 4) {
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
        [[unroll]] for (int r = 0; r < 8; r++) {
            const int m = m0 + (r < 4 ? ty * 4 + r : BM / 2 + ty * 4 + r - 4);
            if (m >= p.M) continue;
            store_c(m, n, acc[r][h]);
        }
    }
}
#endif
