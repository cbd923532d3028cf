#version 450
#if ncnn_subgroup_basic && ncnn_subgroup_arithmetic
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#endif
#extension GL_EXT_control_flow_attributes : require
// Attention for few query rows (decode) with grouped-query heads: one workgroup per key/value
// head, up to HEADS of the query heads that read it, one query row and one share of the keys.
// attention.comp gives each query head its workgroup, so a key/value head's rows are read once
// per query head and a decode step is a wave of tiny workgroups that each wait on one chunk;
// here each key and value is read once per workgroup, all of a chunk's loads (keys and values)
// are in flight at once, and a share holds several chunks, so short caches need no second pass.
//
// The operation, layouts, push constants and partial results are attention.comp's: q, o
// [batch, sq, hq, d]; k, v [batch, skv, hkv, d] (rows `*_stride` elements apart, multiples of
// 4); query head h reads key/value head h / (hq / hkv); with `causal` query i sees keys
// j <= i + offset (+ pos_data[0] with `position_in_buffer`). With `split` each workgroup writes
// its unnormalized share with its running maximum and sum to part [rows][splits][d + 2] for
// attention_combine.comp.
//
// A chunk is one key per invocation. Invocation t scores key t of the chunk against every head
// (queries in shared memory, the key's quads in registers); the heads' maxima go through one
// workgroup reduction of two vec4s; the probabilities through shared memory; then invocation t
// accumulates value quad t % (D/4) over the keys ≡ t / (D/4) (mod the groups) for every head,
// with the values' loads issued before the reduction, so both operands' loads are in flight
// together. The heads' sums ride along with the outputs and are reduced once at the end.
// fp32 throughout.
layout (local_size_x = 256) in;

layout (constant_id = 0) const int causal = 0;
layout (constant_id = 1) const int split = 0;
layout (constant_id = 2) const int position_in_buffer = 0;
// The head dimension: a multiple of 4 up to 256 (the push constant d must equal it).
layout (constant_id = 3) const int D = 64;

layout (binding = 0) readonly buffer q_blob { sfpvec4 q_data[]; };
layout (binding = 1) readonly buffer k_blob { sfpvec4 k_data[]; };
layout (binding = 2) readonly buffer v_blob { sfpvec4 v_data[]; };
layout (binding = 3) writeonly buffer o_blob { sfpvec4 o_data[]; };
layout (binding = 4) writeonly buffer part_blob { float part_data[]; };
layout (binding = 5) readonly buffer pos_blob { int pos_data[]; };

layout (push_constant) uniform parameter {
    int batch; int sq; int skv; int hq; int hkv; int d;
    int q_stride; int kv_stride; int o_stride; int offset; float scale; int splits;
} p;

// Query heads per workgroup: heads 0-3 and 4-7 ride in two vec4s.
const int HEADS = 8;
const int CHUNK = int(gl_WorkGroupSize.x);
const int DQ = D / 4;
// Value-phase groups: invocation t takes quad t % DQ of the keys ≡ t / DQ (mod GROUPS).
const int GROUPS = CHUNK / DQ;
// The keys one invocation's value loads cover in a chunk; the first PREFETCH of them are
// loaded before the scores (registers bound how many).
const int PER_GROUP = (CHUNK + GROUPS - 1) / GROUPS;
const int PREFETCH = PER_GROUP < 16 ? PER_GROUP : 16;
// A key's quads loaded at once.
const int KEY_QUADS = DQ < 16 ? DQ : 16;

shared vec4 q_shared[HEADS][DQ];
// One pool of shared memory for the phases (16 KiB: with q at the largest D, 24 KiB):
// - in a chunk, the probabilities of heads 0-3 and 4-7 per key at P_LO + t and P_HI + t, and
//   the maxima's reduction from MAX_LO and MAX_HI;
// - at the end, the value groups' sums of heads 0-3 and 4-7 at g and GROUPS + g, then their
//   outputs, four heads at a time, at (g · 4 + h) · DQ + e4.
const int P_LO = 0, P_HI = CHUNK, MAX_LO = 2 * CHUNK, MAX_HI = 3 * CHUNK;
shared vec4 pool[4 * CHUNK];

#if ncnn_subgroup_basic && ncnn_subgroup_arithmetic
uint subgroups()
{
    return max(gl_NumSubgroups, (gl_WorkGroupSize.x + gl_SubgroupSize - 1) / gl_SubgroupSize);
}
// The workgroup's largest lo and hi, component-wise, to every invocation.
void group_max(inout vec4 lo, inout vec4 hi)
{
    lo = subgroupMax(lo);
    hi = subgroupMax(hi);
    barrier();
    if (subgroupElect())
    {
        pool[MAX_LO + gl_SubgroupID] = lo;
        pool[MAX_HI + gl_SubgroupID] = hi;
    }
    barrier();
    for (uint k = 0; k < subgroups(); k++)
    {
        lo = max(lo, pool[MAX_LO + k]);
        hi = max(hi, pool[MAX_HI + k]);
    }
}
#else
void group_max(inout vec4 lo, inout vec4 hi)
{
    const uint lid = gl_LocalInvocationID.x;
    barrier();
    pool[MAX_LO + lid] = lo;
    pool[MAX_HI + lid] = hi;
    barrier();
    for (uint s = 1; s < gl_WorkGroupSize.x; s *= 2)
    {
        if ((lid & (2 * s - 1)) == 0 && lid + s < gl_WorkGroupSize.x)
        {
            pool[MAX_LO + lid] = max(pool[MAX_LO + lid], pool[MAX_LO + lid + s]);
            pool[MAX_HI + lid] = max(pool[MAX_HI + lid], pool[MAX_HI + lid + s]);
        }
        barrier();
    }
    lo = pool[MAX_LO];
    hi = pool[MAX_HI];
}
#endif

float neg_inf()
{
    return uintBitsToFloat(0xff800000u);
}

// Quad `e4` of the workgroup's head h (head row `row`), the value groups' sums added from the
// pool (heads h - h % 4 to h - h % 4 + 3 there): its share with the running maximum m and sum
// l to part (split), or normalized to o at `o_at`.
void store_head(int h, int row, int o_at, int e4, float m, float l)
{
    vec4 o = vec4(0.0);
    for (int k = 0; k < GROUPS; k++) o += pool[(k * 4 + h % 4) * DQ + e4];
    if (split == 1)
    {
        const int at = (row * p.splits + int(gl_WorkGroupID.x)) * (D + 2);
        [[unroll]] for (int c = 0; c < 4; c++) part_data[at + 4 * e4 + c] = o[c];
        if (e4 == 0)
        {
            part_data[at + D] = m;
            part_data[at + D + 1] = l;
        }
        return;
    }
    const float inv = l > 0.0 ? 1.0 / l : 0.0;
    buffer_st4(o_data, o_at / 4 + e4, afpvec4(o * inv));
}

// Key t's value quad v times each head's probability, added to acc (and the probabilities
// to the heads' sums). A macro, not a function: an array passed to a function may be copied
// through local memory.
#define ACCUMULATE(v, t) \
    { \
        const vec4 a = pool[P_LO + (t)], b = pool[P_HI + (t)]; \
        acc[0] += a.x * (v); acc[1] += a.y * (v); acc[2] += a.z * (v); acc[3] += a.w * (v); \
        acc[4] += b.x * (v); acc[5] += b.y * (v); acc[6] += b.z * (v); acc[7] += b.w * (v); \
        sum_lo += a; \
        sum_hi += b; \
    }

void main()
{
    const int lid = int(gl_LocalInvocationID.x);
    const int group_heads = p.hq / p.hkv;
    const int head_sets = (group_heads + HEADS - 1) / HEADS;
    const int kvh = int(gl_WorkGroupID.y) / head_sets;
    const int h0 = kvh * group_heads + (int(gl_WorkGroupID.y) % head_sets) * HEADS;
    const int heads = min(HEADS, (kvh + 1) * group_heads - h0);
    const int n = int(gl_WorkGroupID.z) / p.sq, i = int(gl_WorkGroupID.z) % p.sq;
    const int kv_at = n * p.skv * p.kv_stride + kvh * D;

    const int offset = p.offset + (position_in_buffer == 1 ? pos_data[0] : 0);
    const int visible = causal == 1 ? clamp(i + offset + 1, 0, p.skv) : p.skv;
    const int share = (p.skv + p.splits * CHUNK - 1) / (p.splits * CHUNK) * CHUNK;
    const int j_begin = int(gl_WorkGroupID.x) * share;
    const int j_end = min(visible, j_begin + share);

    const int q_row = (n * p.sq + i) * p.q_stride;
    for (int e = lid; e < HEADS * DQ; e += CHUNK)
    {
        const int h = e / DQ, e4 = e % DQ;
        q_shared[h][e4] = h < heads ? vec4(buffer_ld4(q_data, (q_row + (h0 + h) * D) / 4 + e4)) * p.scale : vec4(0.0);
    }
    barrier();

    const int qd = lid % DQ, g = lid / DQ;
    const bool accumulates = g < GROUPS;
    vec4 m_lo = vec4(neg_inf()), m_hi = vec4(neg_inf());
    // Indexed by constants only (unrolled loops): registers, not local memory.
    vec4 acc[HEADS];
    [[unroll]] for (int h = 0; h < HEADS; h++) acc[h] = vec4(0.0);
    vec4 sum_lo = vec4(0.0), sum_hi = vec4(0.0);

    for (int j0 = j_begin; j0 < j_end; j0 += CHUNK)
    {
        const int count = min(CHUNK, j_end - j0);
        // This invocation's value quads, loaded before the scores are known.
        afpvec4 vals[16];
        [[unroll]] for (int r = 0; r < 16; r++)
        {
            if (r >= PREFETCH) break;
            const int t = g + r * GROUPS;
            vals[r] = accumulates && t < count ? buffer_ld4(v_data, (kv_at + (j0 + t) * p.kv_stride) / 4 + qd) : afpvec4(0.0);
        }
        vec4 s_lo = vec4(neg_inf()), s_hi = vec4(neg_inf());
        if (lid < count)
        {
            const int at = (kv_at + (j0 + lid) * p.kv_stride) / 4;
            s_lo = vec4(0.0);
            s_hi = vec4(0.0);
            // Sixteen quads of the key at a time, all loaded before the first is used: a head of
            // 64 at once, larger ones in steps (the unrolled body stays small enough for a CPU
            // driver to compile).
            [[dont_unroll]] for (int e0 = 0; e0 < DQ; e0 += KEY_QUADS)
            {
                // Sized by a literal, not the specialization constant: an array whose size
                // the SPIR-V leaves open may be placed in local memory, and each load then waits
                // on the one before.
                afpvec4 key[16];
                [[unroll]] for (int c = 0; c < 16; c++)
                    key[c] = c < KEY_QUADS && e0 + c < DQ ? buffer_ld4(k_data, at + e0 + c) : afpvec4(0.0);
                // Heads past `heads` have zero queries: their scores are 0, unread.
                [[unroll]] for (int c = 0; c < 16; c++)
                {
                    if (c >= KEY_QUADS) break;
                    const vec4 kk = vec4(key[c]);
                    const int e4 = min(e0 + c, DQ - 1);
                    s_lo += vec4(dot(q_shared[0][e4], kk), dot(q_shared[1][e4], kk), dot(q_shared[2][e4], kk), dot(q_shared[3][e4], kk));
                    s_hi += vec4(dot(q_shared[4][e4], kk), dot(q_shared[5][e4], kk), dot(q_shared[6][e4], kk), dot(q_shared[7][e4], kk));
                }
            }
        }
        vec4 c_lo = s_lo, c_hi = s_hi;
        group_max(c_lo, c_hi);
        // Finite: the chunk holds at least one visible key.
        const vec4 new_lo = max(m_lo, c_lo), new_hi = max(m_hi, c_hi);
        pool[P_LO + lid] = lid < count ? exp(s_lo - new_lo) : vec4(0.0);
        pool[P_HI + lid] = lid < count ? exp(s_hi - new_hi) : vec4(0.0);
        const vec4 r_lo = exp(m_lo - new_lo), r_hi = exp(m_hi - new_hi);
        m_lo = new_lo;
        m_hi = new_hi;
        barrier();
        [[unroll]] for (int h = 0; h < 4; h++)
        {
            acc[h] *= r_lo[h];
            acc[h + 4] *= r_hi[h];
        }
        sum_lo *= r_lo;
        sum_hi *= r_hi;
        [[unroll]] for (int r = 0; r < 16; r++)
        {
            if (r >= PREFETCH) break;
            const int t = g + r * GROUPS;
            const vec4 v = vec4(vals[r]);
            if (accumulates && t < count) ACCUMULATE(v, t)
        }
        for (int t = g + PREFETCH * GROUPS; accumulates && t < count; t += GROUPS)
        {
            const vec4 v = vec4(buffer_ld4(v_data, (kv_at + (j0 + t) * p.kv_stride) / 4 + qd));
            ACCUMULATE(v, t)
        }
        barrier();
    }

    // The groups' partial outputs and sums added up (their maxima are the workgroup's m),
    // through the pool once its probabilities are read.
    if (accumulates && qd == 0)
    {
        pool[g] = sum_lo;
        pool[GROUPS + g] = sum_hi;
    }
    vec4 l_lo = vec4(0.0), l_hi = vec4(0.0);
    barrier();
    for (int k = 0; k < GROUPS; k++)
    {
        l_lo += pool[k];
        l_hi += pool[GROUPS + k];
    }
    const int row0 = (n * p.sq + i) * p.hq + h0;
    const int o_row = (n * p.sq + i) * p.o_stride;
    barrier();
    if (accumulates)
        [[unroll]] for (int h = 0; h < 4; h++) pool[(g * 4 + h) * DQ + qd] = acc[h];
    barrier();
    for (int e = lid; e < min(heads, 4) * DQ; e += CHUNK)
    {
        const int h = e / DQ;
        store_head(h, row0 + h, o_row + (h0 + h) * D, e % DQ, m_lo[h], l_lo[h]);
    }
    // `heads` is the workgroup's: the barriers stay in uniform control flow.
    if (heads <= 4) return;
    barrier();
    if (accumulates)
        [[unroll]] for (int h = 0; h < 4; h++) pool[(g * 4 + h) * DQ + qd] = acc[h + 4];
    barrier();
    for (int e = lid; e < (heads - 4) * DQ; e += CHUNK)
    {
        const int h = 4 + e / DQ;
        store_head(h, row0 + h, o_row + (h0 + h) * D, e % DQ, m_hi[h - 4], l_hi[h - 4]);
    }
}
