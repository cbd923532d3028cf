#version 450
// Scaled dot-product attention on cooperative matrices (flash attention, one pass): one
// workgroup per block of BR query rows of one head; each subgroup owns 16 query rows, keeps
// their Qᵀ as 16×16 fp16 matrices and their output O as fp32 accumulators, and walks the keys
// BC at a time: Sᵀ = K·Qᵀ on the matrices (K read row by row from shared memory in the loop;
// the transposing load is Q's, once), the online softmax on S in shared memory (each row's
// running maximum m and sum l), O rescaled by e^(m_old - m_new) per row, O += P·V.
//
// Scaling O per row: a matrix's elements are spread over the subgroup's invocations in a way
// the implementation chooses, but the same way for every matrix of one type, so an accumulator
// loaded once with each element's row number (`row_of`) tells each invocation which row each of
// its elements belongs to.
//
// Layouts as attention.comp: q, o [batch, sq, hq, d], k, v [batch, skv, hkv, d] with row
// strides in elements; d is the constant D (a multiple of 16, at most 256) and every stride a
// multiple of 8 (q, k, v and o are read and written as octets of halves). Query head h reads
// key/value head h / (hq / hkv). With `causal`, query i sees keys j <= i + offset; a query that
// sees none gives 0.
//
// A block's keys may be split into shares of `share_keys` keys (a multiple of BC), one
// workgroup each, so that a few blocks over many keys do not leave the GPU idle: a block of
// one share writes o itself; otherwise each share writes its unnormalized output with each
// row's maximum and sum to part ([item][BR · D values, BR maxima, BR sums] of fp32, item the
// share's workgroup; at most BC shares a block), counts itself done in count (one I32 zero
// per block and head, zero again after the dispatch), and the block's last share to finish
// merges the shares into o. Grid: [ceil(sq / BR) · shares · workgroup, hq, batch], workgroup
// x = block · shares + share; shares past a block's last key return at once.
//
// Every loop over matrices is unrolled, and arrays of matrices never leave main: the NVIDIA
// driver computed zeros where an array of accumulators was indexed by a loop variable, and
// wrong outputs where one was passed to a function.
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_EXT_control_flow_attributes : require
// 128 or 256 invocations (the operation layer: 256 up to D = 128, where the tiles fit 48 KiB).
layout (local_size_x = 128) in;

layout (constant_id = 0) const int causal = 0;
// The head dimension.
layout (constant_id = 1) const int D = 128;
// The device's subgroup size (a divisor of the workgroup, at most 64).
layout (constant_id = 2) const int subgroup_size = 32;

#if NCNN_cooperative_matrix
layout (binding = 0) readonly buffer q_blob { uvec4 q_data[]; };
layout (binding = 1) readonly buffer k_blob { uvec4 k_data[]; };
layout (binding = 2) readonly buffer v_blob { uvec4 v_data[]; };
layout (binding = 3) writeonly buffer o_blob { uvec4 o_data[]; };
#else
// The fp32 reference the bindings' formats are told from; never shipped.
layout (binding = 0) readonly buffer q_blob { sfp q_data[]; };
layout (binding = 1) readonly buffer k_blob { sfp k_data[]; };
layout (binding = 2) readonly buffer v_blob { sfp v_data[]; };
layout (binding = 3) writeonly buffer o_blob { sfp o_data[]; };
#endif

// A split block's shares (unnormalized outputs, maxima, sums) and each block's count of
// shares done.
layout (binding = 4) coherent buffer part_blob { vec4 part_data[]; };
layout (binding = 5) coherent buffer count_blob { int count_data[]; };

layout (push_constant) uniform parameter {
    int batch; int sq; int skv; int hq; int hkv;
    int q_stride; int kv_stride; int o_stride; int offset; float scale;
    int share_keys; int shares;
} p;

#if NCNN_cooperative_matrix
const int THREADS = int(gl_WorkGroupSize.x);
const int SG = THREADS / subgroup_size;
const int BR = 16 * SG;
const int BC = 32;
// Octets per row of a head, and per staged row (one more: rows start on different banks).
const int D8 = D / 8;
const int KS = D8 + 1;
// Lanes per score row, and the scores each lane owns (a whole number of octets).
const int LPR = subgroup_size / 16;
const int CPL = BC / LPR;
const int PS = BC / 8 + 1;

// The K tile (BC rows) and the V tile (BC rows); before them, Q, 2 · BC rows at a time.
shared uvec4 kv_smem[2 * BC * KS];
// Per subgroup: its 16 × BC scores (fp32), or one 16×16 output matrix on the way out.
shared float s_smem[SG * 16 * BC];
// Per subgroup: its 16 × BC probabilities as halves.
shared uvec4 p_smem[SG * 16 * PS];
// Per row: running maximum and sum, this step's rescale, and each lane's partial.
shared float row_m[BR];
shared float row_l[BR];
shared float row_a[BR];
shared float row_part[BR * LPR];

#define ACC coopmat<float, gl_ScopeSubgroup, 16, 16, gl_MatrixUseAccumulator>

float neg_inf()
{
    return uintBitsToFloat(0xff800000u);
}

void sync_subgroup()
{
    subgroupMemoryBarrierShared();
    subgroupBarrier();
}

#include "attention_stage.glsl"

// The reduction of the LPR lanes' partials of row r (max or sum).
float row_combine(int warp, int r, int part, float v, bool is_max)
{
    row_part[(warp * 16 + r) * LPR + part] = v;
    sync_subgroup();
    float t = is_max ? neg_inf() : 0.0;
    for (int q = 0; q < LPR; q++)
    {
        const float u = row_part[(warp * 16 + r) * LPR + q];
        t = is_max ? max(t, u) : t + u;
    }
    sync_subgroup();
    return t;
}

// The online softmax of this subgroup's scores for the keys from j0: probabilities into
// p_smem as halves, each row's maximum, sum and rescale into row_m, row_l, row_a.
void softmax_step(int warp, int lane, int i0, int j0)
{
    const int r = lane / LPR, part = lane % LPR;
    const int i = i0 + r;
    const int last = causal == 1 ? min(p.skv - 1, i + p.offset) : p.skv - 1;
    // Scores are stored key-major (Sᵀ): query r's score for key c of the step at c · 16 + r.
    const int base = warp * 16 * BC + part * CPL * 16 + r;
    float s[CPL];
    float mx = neg_inf();
    [[unroll]] for (int c = 0; c < CPL; c++)
    {
        const int j = j0 + part * CPL + c;
        s[c] = j <= last ? s_smem[base + c * 16] * p.scale : neg_inf();
        mx = max(mx, s[c]);
    }
    mx = row_combine(warp, r, part, mx, true);
    const float m_old = row_m[warp * 16 + r];
    const float m_new = max(m_old, mx);
    float sum = 0.0;
    [[unroll]] for (int o = 0; o < CPL / 8; o++)
    {
        uint w[4];
        [[unroll]] for (int h = 0; h < 4; h++)
        {
            const int c = o * 8 + h * 2;
            const float a = m_new == neg_inf() ? 0.0 : exp(s[c] - m_new);
            const float b = m_new == neg_inf() ? 0.0 : exp(s[c + 1] - m_new);
            w[h] = packHalf2x16(vec2(a, b));
            // The sum of the probabilities as the multiply sees them (rounded to fp16).
            const vec2 rounded = unpackHalf2x16(w[h]);
            sum += rounded.x + rounded.y;
        }
        p_smem[(warp * 16 + r) * PS + (part * CPL) / 8 + o] = uvec4(w[0], w[1], w[2], w[3]);
    }
    sum = row_combine(warp, r, part, sum, false);
    if (part == 0)
    {
        const float a = m_old == neg_inf() ? 0.0 : exp(m_old - m_new);
        row_a[warp * 16 + r] = a;
        row_l[warp * 16 + r] = row_l[warp * 16 + r] * a + sum;
        row_m[warp * 16 + r] = m_new;
    }
    sync_subgroup();
}

// Whether this workgroup finished its block's last share.
shared bool last_share;

// The `count` shares of a block (items first .. first + count - 1 of part, at most BC) merged
// into o for query rows r0 .. r0 + BR - 1 of head h: o = Σ e^(m_s - M) o_s / Σ e^(m_s - M) l_s,
// M the largest m_s (a share that saw none of a row's keys has m_s = -inf and weighs 0). Each
// row's weights go to s_smem (BR rows of BC) and its reciprocal sum to row_a, then every
// output octet is merged. Loads go out a few shares at a time, so a block of few shares waits
// on memory a few times, not once a value.
void merge_shares(int tid, int n, int h, int r0, int first, int count)
{
    const int stride = BR * (D + 2) / 4;
    const int ml = BR * D / 4;
    for (int r = tid; r < BR; r += THREADS)
    {
        float big = neg_inf();
        for (int s0 = 0; s0 < count; s0 += 4)
        {
            [[unroll]] for (int u = 0; u < 4; u++)
                if (s0 + u < count) big = max(big, part_data[(first + s0 + u) * stride + ml + r / 4][r % 4]);
        }
        float l = 0.0;
        for (int s0 = 0; s0 < count; s0 += 4)
        {
            [[unroll]] for (int u = 0; u < 4; u++)
            {
                if (s0 + u >= count) continue;
                const int at = (first + s0 + u) * stride + ml + r / 4;
                const float ms = part_data[at][r % 4];
                const float w = ms == neg_inf() ? 0.0 : exp(ms - big);
                l += w * part_data[at + BR / 4][r % 4];
                s_smem[r * BC + s0 + u] = w;
            }
        }
        row_a[r] = l > 0.0 ? 1.0 / l : 0.0;
    }
    barrier();
    // Four of an invocation's octets at a time, two shares' values for each in flight.
    const int per = (BR * D8 + THREADS - 1) / THREADS;
    for (int u0 = 0; u0 < per; u0 += 4)
    {
        vec4 a[8];
        [[unroll]] for (int x = 0; x < 8; x++) a[x] = vec4(0.0);
        for (int s0 = 0; s0 < count; s0 += 2)
        {
            [[unroll]] for (int g = 0; g < 2; g++)
            {
                [[unroll]] for (int u = 0; u < 4; u++)
                {
                    const int e = tid + (u0 + u) * THREADS, s = s0 + g;
                    if (u0 + u >= per || e >= BR * D8 || s >= count) continue;
                    const int r = e / D8, c = e % D8;
                    const float w = s_smem[r * BC + s];
                    const int at = (first + s) * stride + r * (D / 4) + c * 2;
                    a[2 * u] += w * part_data[at];
                    a[2 * u + 1] += w * part_data[at + 1];
                }
            }
        }
        [[unroll]] for (int u = 0; u < 4; u++)
        {
            const int e = tid + (u0 + u) * THREADS;
            if (u0 + u >= per || e >= BR * D8) continue;
            const int r = e / D8, c = e % D8, i = r0 + r;
            if (i >= p.sq) continue;
            const float inv = row_a[r];
            const vec4 x = a[2 * u] * inv, y = a[2 * u + 1] * inv;
            o_data[((n * p.sq + i) * p.o_stride + h * D) / 8 + c] =
                uvec4(packHalf2x16(x.xy), packHalf2x16(x.zw), packHalf2x16(y.xy), packHalf2x16(y.zw));
        }
    }
}

void main()
{
    const int tid = int(gl_LocalInvocationID.x);
    const int warp = int(gl_SubgroupID), lane = int(gl_SubgroupInvocationID);
    const int n = int(gl_WorkGroupID.z), h = int(gl_WorkGroupID.y);
    const int block = int(gl_WorkGroupID.x) / p.shares, share = int(gl_WorkGroupID.x) % p.shares;
    const int r0 = block * BR;
    const int i0 = r0 + warp * 16;
    const int kvh = h / (p.hq / p.hkv);
    // Keys past the block's last query's last visible key are never read.
    const int kv_end = causal == 1 ? clamp(r0 + BR + p.offset, 0, p.skv) : p.skv;
    const int block_shares = max(1, (kv_end + p.share_keys - 1) / p.share_keys);
    if (share >= block_shares) return;
    const int j_first = share * p.share_keys;
    const int j_end = min(kv_end, j_first + p.share_keys);

    for (int e = lane; e < 256; e += subgroup_size) s_smem[warp * 16 * BC + e] = float(e / 16);
    if (lane < 16)
    {
        row_m[warp * 16 + lane] = neg_inf();
        row_l[warp * 16 + lane] = 0.0;
    }
    // Q into matrices, staged 2 · BC rows (the K and V tiles' room) at a time.
    coopmat<cmfp, gl_ScopeSubgroup, 16, 16, gl_MatrixUseB> qf[D / 16];
    for (int r1 = 0; r1 < BR; r1 += 2 * BC)
    {
        barrier();
        stage_q(tid, n, h, r0 + r1, 2 * BC);
        barrier();
        if (warp * 16 >= r1 && warp * 16 < r1 + 2 * BC)
        {
            [[unroll]] for (int k = 0; k < D / 16; k++)
                coopMatLoad(qf[k], kv_smem, (warp * 16 - r1) * KS + k * 2, KS, gl_CooperativeMatrixLayoutColumnMajor);
        }
    }
    ACC row_of;
    coopMatLoad(row_of, s_smem, warp * 16 * BC, 16, gl_CooperativeMatrixLayoutRowMajor);
    ACC o[D / 16];
    [[unroll]] for (int f = 0; f < D / 16; f++) o[f] = ACC(0.0);

    uvec4 rk[KV_LOADS];
    uvec4 rv[KV_LOADS];
    load_kv(tid, n, kvh, j_first, rk, rv);
    for (int j0 = j_first; j0 < j_end; j0 += BC)
    {
        barrier();
        store_kv(tid, rk, rv);
        barrier();
        if (j0 + BC < j_end) load_kv(tid, n, kvh, j0 + BC, rk, rv);
        [[unroll]] for (int c = 0; c < BC / 16; c++)
        {
            ACC s = ACC(0.0);
            [[unroll]] for (int k = 0; k < D / 16; k++)
            {
                coopmat<cmfp, gl_ScopeSubgroup, 16, 16, gl_MatrixUseA> ka;
                coopMatLoad(ka, kv_smem, c * 16 * KS + k * 2, KS, gl_CooperativeMatrixLayoutRowMajor);
                s = coopMatMulAdd(ka, qf[k], s);
            }
            coopMatStore(s, s_smem, warp * 16 * BC + c * 256, 16, gl_CooperativeMatrixLayoutRowMajor);
        }
        sync_subgroup();
        softmax_step(warp, lane, i0, j0);
        // Each element's row is the same in every matrix: one rescale read per element.
        [[unroll]] for (int e = 0; e < row_of.length(); e++)
        {
            const float a = row_a[warp * 16 + int(row_of[e])];
            [[unroll]] for (int f = 0; f < D / 16; f++) o[f][e] *= a;
        }
        [[unroll]] for (int kk = 0; kk < BC / 16; kk++)
        {
            coopmat<cmfp, gl_ScopeSubgroup, 16, 16, gl_MatrixUseA> pa;
            coopMatLoad(pa, p_smem, warp * 16 * PS + kk * 2, PS, gl_CooperativeMatrixLayoutRowMajor);
            [[unroll]] for (int f = 0; f < D / 16; f++)
            {
                coopmat<cmfp, gl_ScopeSubgroup, 16, 16, gl_MatrixUseB> vb;
                coopMatLoad(vb, kv_smem, (BC + kk * 16) * KS + f * 2, KS, gl_CooperativeMatrixLayoutRowMajor);
                o[f] = coopMatMulAdd(pa, vb, o[f]);
            }
        }
    }

    if (block_shares > 1)
    {
        // This share's unnormalized output, maxima and sums into part; the last share merges.
        const int counted = (n * p.hq + h) * (int(gl_NumWorkGroups.x) / p.shares) + block;
        const int first = counted * p.shares;
        const int at = (first + share) * (BR * (D + 2) / 4);
        [[unroll]] for (int f = 0; f < D / 16; f++)
            coopMatStore(o[f], part_data, at + (warp * 16 * D + f * 16) / 4, D / 4, gl_CooperativeMatrixLayoutRowMajor);
        if (lane < 16)
        {
            const int r = warp * 16 + lane;
            part_data[at + BR * D / 4 + r / 4][r % 4] = row_m[r];
            part_data[at + (BR * D + BR) / 4 + r / 4][r % 4] = row_l[r];
        }
        memoryBarrierBuffer();
        barrier();
        if (tid == 0) last_share = atomicAdd(count_data[counted], 1) == block_shares - 1;
        barrier();
        if (!last_share) return;
        memoryBarrierBuffer();
        merge_shares(tid, n, h, r0, first, block_shares);
        if (tid == 0) count_data[counted] = 0;
        return;
    }
    [[unroll]] for (int e = 0; e < row_of.length(); e++)
    {
        const float l = row_l[warp * 16 + int(row_of[e])];
        const float inv = l > 0.0 ? 1.0 / l : 0.0;
        [[unroll]] for (int f = 0; f < D / 16; f++) o[f][e] *= inv;
    }
    sync_subgroup();
    // Each 16×16 output matrix through this subgroup's score scratch, as halves.
    [[unroll]] for (int f = 0; f < D / 16; f++)
    {
        coopMatStore(o[f], s_smem, warp * 16 * BC, 16, gl_CooperativeMatrixLayoutRowMajor);
        sync_subgroup();
        for (int q = lane; q < 32; q += subgroup_size)
        {
            const int r = q / 2, c = (q % 2) * 8;
            const int i = i0 + r;
            if (i >= p.sq) continue;
            const int at = warp * 16 * BC + r * 16 + c;
            uvec4 w;
            w.x = packHalf2x16(vec2(s_smem[at], s_smem[at + 1]));
            w.y = packHalf2x16(vec2(s_smem[at + 2], s_smem[at + 3]));
            w.z = packHalf2x16(vec2(s_smem[at + 4], s_smem[at + 5]));
            w.w = packHalf2x16(vec2(s_smem[at + 6], s_smem[at + 7]));
            o_data[((n * p.sq + i) * p.o_stride + h * D) / 8 + f * 2 + c / 8] = w;
        }
        sync_subgroup();
    }
}
#else
void main()
{
}
#endif
