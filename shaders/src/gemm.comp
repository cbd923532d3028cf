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
layout (constant_id = 0) const int transpose_a = 0;
layout (constant_id = 1) const int transpose_b = 0;
layout (constant_id = 2) const int bias_term = 0;
// 0 none, 1 relu, 2 leaky relu (slope in the push constants), 3 sigmoid
layout (constant_id = 3) const int activation = 0;
// Depth of one shared-memory step, a multiple of 4.
layout (constant_id = 4) const int BK = 16;

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

#if NCNN_shader_local_memory
// One padding vec4 per row keeps the transposing stores of A (and B when transposed) off one bank.
shared vec4 tile_a[BK][BM / 4 + 1];
shared vec4 tile_b[BK][BN / 4 + 1];
// vec4s of A and of B one invocation moves into shared memory per step.
const int A_LOADS = (BM * BK / 4 + THREADS - 1) / THREADS;
const int B_LOADS = (BN * BK / 4 + THREADS - 1) / THREADS;
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

vec4 activate(vec4 v)
{
    if (activation == 1) return max(v, vec4(0.0));
    if (activation == 2) return mix(v * p.slope, v, greaterThan(v, vec4(0.0)));
    if (activation == 3) return 1.0 / (1.0 + exp(-v));
    return v;
}

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
    vec4 next_a[A_LOADS];
    vec4 next_b[B_LOADS];
    [[unroll]] for (int i = 0; i < A_LOADS; i++) {
        const int l = tid + i * THREADS;
        if (transpose_a == 1) next_a[i] = at_col4(l / (BM / 4), m0 + (l % (BM / 4)) * 4);
        else next_a[i] = a_row4(m0 + l / (BK / 4), (l % (BK / 4)) * 4);
    }
    [[unroll]] for (int i = 0; i < B_LOADS; i++) {
        const int l = tid + i * THREADS;
        if (transpose_b == 1) next_b[i] = bt_col4(n0 + l / (BK / 4), (l % (BK / 4)) * 4);
        else next_b[i] = b_row4(l / (BN / 4), n0 + (l % (BN / 4)) * 4);
    }

    for (int k0 = 0; k0 < p.K; k0 += BK) {
        barrier();
        [[unroll]] for (int i = 0; i < A_LOADS; i++) {
            const int l = tid + i * THREADS;
            if (l < BM * BK / 4) {
                if (transpose_a == 1) {
                    tile_a[l / (BM / 4)][l % (BM / 4)] = next_a[i];
                } else {
                    const int m = l / (BK / 4);
                    const int k = (l % (BK / 4)) * 4;
                    [[unroll]] for (int j = 0; j < 4; j++) tile_a[k + j][m / 4][m % 4] = next_a[i][j];
                }
            }
        }
        [[unroll]] for (int i = 0; i < B_LOADS; i++) {
            const int l = tid + i * THREADS;
            if (l < BN * BK / 4) {
                if (transpose_b == 1) {
                    const int n = l / (BK / 4);
                    const int k = (l % (BK / 4)) * 4;
                    [[unroll]] for (int j = 0; j < 4; j++) tile_b[k + j][n / 4][n % 4] = next_b[i][j];
                } else {
                    tile_b[l / (BN / 4)][l % (BN / 4)] = next_b[i];
                }
            }
        }
        barrier();

        // Issue the next step's global loads now; they land while this step's FMAs run.
        const int k1 = k0 + BK;
        if (k1 < p.K) {
            [[unroll]] for (int i = 0; i < A_LOADS; i++) {
                const int l = tid + i * THREADS;
                if (transpose_a == 1) next_a[i] = at_col4(k1 + l / (BM / 4), m0 + (l % (BM / 4)) * 4);
                else next_a[i] = a_row4(m0 + l / (BK / 4), k1 + (l % (BK / 4)) * 4);
            }
            [[unroll]] for (int i = 0; i < B_LOADS; i++) {
                const int l = tid + i * THREADS;
                if (transpose_b == 1) next_b[i] = bt_col4(n0 + l / (BK / 4), k1 + (l % (BK / 4)) * 4);
                else next_b[i] = b_row4(k1 + l / (BN / 4), n0 + (l % (BN / 4)) * 4);
            }
        }

        [[unroll]] for (int k = 0; k < BK; k++) {
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
