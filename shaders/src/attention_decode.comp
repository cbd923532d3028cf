#version 450
#if ncnn_subgroup_basic && ncnn_subgroup_arithmetic && ncnn_subgroup_shuffle
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#extension GL_KHR_shader_subgroup_shuffle : require
#define DECODE_SUBGROUPS 1
#else
#define DECODE_SUBGROUPS 0
#endif
#extension GL_EXT_control_flow_attributes : require
// Attention for few query rows (decode): one large workgroup per query row and head over all of
// its keys, so no share of the keys waits for another and no second pass or merge follows.
//
// The operation, layouts and push constants are attention.comp's: q, o [batch, sq, hq, d];
// k, v [batch, skv, hkv, d], rows `*_stride` elements apart; query head h reads key/value head
// h / (hq / hkv); with `causal` query i sees keys j <= i + offset (+ pos_data[0] with
// `position_in_buffer`); a query that sees no key gives 0. Here d is the constant D, a multiple
// of 8 from 32 to 256, and every row stride is a multiple of 8.
//
// Why one workgroup a row: a decode step's keys are few (a few hundred KiB a head), and a
// workgroup of hundreds of invocations with every 16-byte load of a chunk issued before any is
// used takes them in about one memory latency, where splitting them over workgroups costs a
// merge (a device-scope barrier, an atomic, a read-back) or a second dispatch. What a large
// workgroup pays for instead is its barriers, so the subgroup path has none inside its loop.
//
// A row of K or V is R = D/8 octets; invocation t owns one octet of every P-th key, P = size / R
// rows a pass, KPI keys each, so a chunk is P · KPI keys, loaded coalesced (R neighbouring
// invocations read one row) and all at once, K and V together. Each invocation dots its octet of
// q with its octets of K.
// - Subgroup path (`_sg` variants where R is a power of two no larger than the subgroup): the R
//   partial dots of a key are added by shuffles, so every invocation holds its keys' scores
//   and keeps its own online softmax (maximum, sum, its octets of V) over them, with no barrier
//   or reduction inside the loop, so no lane waits on another's loads a chunk; at the end the
//   lanes meet on their subgroup's maximum and add by shuffles, then the subgroups meet on the
//   row's maximum through shared memory.
// - Shared path (otherwise): the partial dots meet in shared memory, where the first CHUNK
//   invocations add a key's R of them; the chunk's maximum and sum go through workgroup
//   reductions (rows.glsl), the probabilities through shared memory; at the end the P partial
//   outputs of each octet are added by a tree through shared memory.
// The softmax is online across chunks (running maximum and sum). fp32 throughout.
//
// With `split` (a long cache), the keys are shared between gl_NumWorkGroups.x / SIZE
// workgroups of whole chunks, so that each waits on one or a few chunks' loads instead of one
// workgroup on all of them: each writes its unnormalized output with its maximum and sum to
// part [rows][splits][d + 2], counts itself done in count[row], and the one that brings the
// count to `splits` merges the row into o (attention_last_share.glsl) and zeroes it.
layout (local_size_x = 512) in;

layout (constant_id = 0) const int causal = 0;
layout (constant_id = 1) const int position_in_buffer = 0;
// The head dimension (the push constant d must equal it).
layout (constant_id = 2) const int D = 64;
// Keys per invocation and chunk, 1 to min(4, D / 8).
layout (constant_id = 3) const int KPI = 4;
// 1: this workgroup's share of the keys (gl_WorkGroupID.x) into part, the last share merging.
layout (constant_id = 4) const int split = 0;

layout (binding = 0) readonly buffer q_blob { sfpvec8 q_data[]; };
layout (binding = 1) readonly buffer k_blob { sfpvec8 k_data[]; };
layout (binding = 2) readonly buffer v_blob { sfpvec8 v_data[]; };
layout (binding = 3) writeonly buffer o_blob { sfp o_data[]; };
layout (binding = 4) readonly buffer pos_blob { int pos_data[]; };
// Coherent: the last share reads what the others wrote (read and written only with `split`).
layout (binding = 5) coherent buffer part_blob { float part_data[]; };
layout (binding = 6) coherent buffer count_blob { int count_data[]; };

layout (push_constant) uniform parameter {
    int batch; int sq; int skv; int hq; int hkv; int d;
    int q_stride; int kv_stride; int o_stride; int offset; float scale; int splits;
} p;

#include "rows.glsl"
// A split row's shares: at most 256 (the operation layer's DECODE_MAX_SPLITS, held equal by
// its unit test), all their weights held.
#define MERGE_MAX_SPLITS 256
#include "attention_merge.glsl"
#include "attention_last_share.glsl"

const int SIZE = int(gl_WorkGroupSize.x);
// Octets a row, rows a pass, keys a chunk (at most SIZE: KPI <= R).
const int R = D / 8;
const int P = SIZE / R;
const int CHUNK = P * KPI;

// The chunk's partial dots ([key][octet]: at most KPI · SIZE), then at the end the partial
// outputs (the subgroups', whole or half of each octet at a time): never both at once.
shared float pool[SIZE * 4];
// The chunk's probabilities (shared path), or each subgroup's maximum and sum of exponentials
// at the end (subgroup path: subgroups of at least 4 invocations, as R >= 4).
shared float chunk_values[SIZE];

// What a row's pass over its keys leaves: its running maximum and sum, this invocation's
// partial output (its octet, over its keys), and at the end, for invocation t < D, element t
// of the row's unnormalized output.
struct Attended { float m; float l; mat2x4 acc; float element; };

// The keys' rows an invocation loads: octet `oct` of keys j0 + group + u·P (u < KPI); from
// `end` on (the end of this workgroup's keys), or where the invocation holds no row, row 0,
// always there, counted for nothing.
int key_at(int kv_at, int kv_row, int j, bool held, int end)
{
    return kv_at + (held && j < end ? j : 0) * kv_row;
}

Attended attend_shared(const mat2x4 q, int kv_at, int kv_row, int begin, int end)
{
    const int lid = int(gl_LocalInvocationID.x);
    const int oct = lid % R, group = lid / R;
    // Invocations past P whole rows (R not dividing the workgroup) load and add nothing.
    const bool in_rows = group < P;
    Attended a = Attended(rows_neg_inf(), 0.0, mat2x4(0.0), 0.0);
    for (int j0 = begin; j0 < end; j0 += CHUNK)
    {
        afpvec8 kw[KPI];
        afpvec8 vw[KPI];
        [[unroll]] for (int u = 0; u < KPI; u++)
        {
            const int at = key_at(kv_at + oct, kv_row, j0 + group + u * P, in_rows, end);
            kw[u] = buffer_ld8(k_data, at);
            vw[u] = buffer_ld8(v_data, at);
        }
        // The previous chunk's readers of pool and chunk_values are done.
        barrier();
        if (in_rows)
        {
            [[unroll]] for (int u = 0; u < KPI; u++)
            {
                const mat2x4 k = mat2x4(kw[u]);
                pool[(group + u * P) * R + oct] = dot(q[0], k[0]) + dot(q[1], k[1]);
            }
        }
        barrier();
        const bool scores = lid < CHUNK && j0 + lid < end;
        float s = rows_neg_inf();
        if (scores)
        {
            s = 0.0;
            for (int e = 0; e < R; e++) s += pool[lid * R + e];
        }
        // m_new is finite: the chunk holds at least one visible key.
        const float m_new = max(a.m, rows_max(s));
        const float pj = scores ? exp(s - m_new) : 0.0;
        const float rescale = exp(a.m - m_new);
        a.l = a.l * rescale + rows_sum(pj);
        if (lid < CHUNK) chunk_values[lid] = pj;
        barrier();
        a.acc *= rescale;
        if (in_rows)
            [[unroll]] for (int u = 0; u < KPI; u++) a.acc += chunk_values[group + u * P] * mat2x4(vw[u]);
        a.m = m_new;
    }
    // Each octet's P partial outputs added by a tree (any P), half an octet at a time (pool
    // holds 4 values an invocation); element oct · 8 + c ends in pool[oct · 8 + c].
    vec4 halves[2];
    [[unroll]] for (int half_at = 0; half_at < 2; half_at++)
    {
        barrier();
        [[unroll]] for (int c = 0; c < 4; c++) pool[lid * 4 + c] = a.acc[half_at][c];
        barrier();
        for (int count = P; count > 1;)
        {
            const int upper = (count + 1) / 2;
            if (group < count - upper)
                [[unroll]] for (int c = 0; c < 4; c++) pool[lid * 4 + c] += pool[(lid + upper * R) * 4 + c];
            count = upper;
            barrier();
        }
        halves[half_at] = vec4(pool[lid * 4], pool[lid * 4 + 1], pool[lid * 4 + 2], pool[lid * 4 + 3]);
    }
    barrier();
    if (group == 0)
        [[unroll]] for (int c = 0; c < 8; c++) pool[lid * 8 + c] = halves[c / 4][c % 4];
    barrier();
    if (lid < D) a.element = pool[lid];
    return a;
}

#if DECODE_SUBGROUPS
// This lane's running maximum and sum after it adds a chunk's scores `s` (minus infinity for
// keys it does not see) and their values `vw`, online: earlier sums rescaled to the new maximum.
// Without branches, so that the values' loads are not held back behind the scores: while the
// lane has seen no key the maximum stays minus infinity and the exponentials are taken from 0
// instead (exp(-inf) is 0), so exp never meets -inf - (-inf).
void attend_chunk(inout Attended a, const float s[KPI], const afpvec8 vw[KPI])
{
    float m_new = a.m;
    [[unroll]] for (int u = 0; u < KPI; u++) m_new = max(m_new, s[u]);
    const float from = m_new > rows_neg_inf() ? m_new : 0.0;
    const float rescale = exp(a.m - from);
    a.l *= rescale;
    a.acc *= rescale;
    [[unroll]] for (int u = 0; u < KPI; u++)
    {
        const float e = exp(s[u] - from);
        a.l += e;
        a.acc += e * mat2x4(vw[u]);
    }
    a.m = m_new;
}

// `w` · exp(m - to), or 0 where m is minus infinity (nothing seen).
float rescaled(float w, float m, float to)
{
    return m > rows_neg_inf() ? w * exp(m - to) : 0.0;
}

Attended attend_subgroups(const mat2x4 q, int kv_at, int kv_row, int begin, int end)
{
    const int lane = int(gl_SubgroupInvocationID), sg = int(gl_SubgroupSize);
    const int sid = int(gl_SubgroupID);
    const int oct = lane % R, group = sid * (sg / R) + lane / R;
    const int subgroups = int(rows_subgroups());
    // Each lane's own online softmax over its keys: no lane waits for another within the loop.
    Attended a = Attended(rows_neg_inf(), 0.0, mat2x4(0.0), 0.0);
    for (int j0 = begin; j0 < end; j0 += CHUNK)
    {
        afpvec8 kw[KPI];
        afpvec8 vw[KPI];
        [[unroll]] for (int u = 0; u < KPI; u++)
        {
            const int at = key_at(kv_at + oct, kv_row, j0 + group + u * P, true, end);
            kw[u] = buffer_ld8(k_data, at);
            vw[u] = buffer_ld8(v_data, at);
        }
        float s[KPI];
        [[unroll]] for (int u = 0; u < KPI; u++)
        {
            const mat2x4 k = mat2x4(kw[u]);
            float d = dot(q[0], k[0]) + dot(q[1], k[1]);
            for (int mask = 1; mask < R; mask <<= 1) d += subgroupShuffleXor(d, mask);
            s[u] = j0 + group + u * P < end ? d : rows_neg_inf();
        }
        attend_chunk(a, s, vw);
    }
    // The lanes met on the subgroup's maximum: partial outputs of each octet added by shuffles
    // (lanes oct + R·g), the sum counted once a key (by its octet 0).
    const float m_sub = subgroupMax(a.m);
    a.acc *= rescaled(1.0, a.m, m_sub);
    const float l_sub = subgroupAdd(oct == 0 ? rescaled(a.l, a.m, m_sub) : 0.0);
    for (int mask = R; mask < sg; mask <<= 1)
    {
        a.acc[0] += subgroupShuffleXor(a.acc[0], mask);
        a.acc[1] += subgroupShuffleXor(a.acc[1], mask);
    }
    // The subgroups meet on the row's maximum through shared memory: each subgroup's (maximum,
    // sum) pair in chunk_values and its output in pool, and invocation t < D adds element t's
    // over the subgroups, each rescaled as it is read: one barrier. Where the subgroups' outputs
    // overflow pool (subgroups narrower than 32 lanes at large D), half an octet at a time.
    if (subgroupElect())
    {
        chunk_values[2 * sid] = m_sub;
        chunk_values[2 * sid + 1] = l_sub;
    }
    const int t = int(gl_LocalInvocationID.x);
    const bool whole = subgroups * D <= SIZE * 4;
    if (whole && lane < R)
        [[unroll]] for (int c = 0; c < 8; c++) pool[sid * D + lane * 8 + c] = a.acc[c / 4][c % 4];
    barrier();
    a.m = rows_neg_inf();
    for (int k = 0; k < subgroups; k++) a.m = max(a.m, chunk_values[2 * k]);
    // Each subgroup's weight taken once, for its sum and (whole) its element t.
    a.l = 0.0;
    a.element = 0.0;
    for (int k = 0; k < subgroups; k++)
    {
        const float w = rescaled(1.0, chunk_values[2 * k], a.m);
        a.l += chunk_values[2 * k + 1] * w;
        if (whole && t < D) a.element += pool[k * D + t] * w;
    }
    if (whole) return a;
    // Half an octet at a time: subgroup k's first R lanes write pool[k · D/2 + oct · 4 + c], and
    // invocation t < D/2 adds element (t / 4) · 8 + half · 4 + t % 4 over k.
    float sums[2];
    [[unroll]] for (int half_at = 0; half_at < 2; half_at++)
    {
        barrier();
        if (lane < R)
            [[unroll]] for (int c = 0; c < 4; c++) pool[sid * (D / 2) + lane * 4 + c] = a.acc[half_at][c];
        barrier();
        sums[half_at] = 0.0;
        if (t < D / 2)
            for (int k = 0; k < subgroups; k++)
                sums[half_at] += rescaled(pool[k * (D / 2) + t], chunk_values[2 * k], a.m);
    }
    barrier();
    if (t < D / 2)
        [[unroll]] for (int half_at = 0; half_at < 2; half_at++) pool[(t / 4) * 8 + half_at * 4 + t % 4] = sums[half_at];
    barrier();
    if (t < D) a.element = pool[t];
    return a;
}
#endif

void main()
{
    const int row = rows_row();
    if (row >= p.batch * p.sq * p.hq) return;
    const int lid = int(gl_LocalInvocationID.x);
    const int h = row % p.hq, i = (row / p.hq) % p.sq, n = row / (p.hq * p.sq);
    const int kvh = h / (p.hq / p.hkv);
    const int kv_at = (n * p.skv * p.kv_stride + kvh * D) / 8;
    const int kv_row = p.kv_stride / 8;
    const int offset = p.offset + (position_in_buffer == 1 ? pos_data[0] : 0);
    const int visible = causal == 1 ? clamp(i + offset + 1, 0, p.skv) : p.skv;
    const int q_at = ((n * p.sq + i) * p.q_stride + h * D) / 8;
    // This workgroup's keys: all it sees, or with `split` its share of whole chunks.
    const int share = split == 1 ? int(gl_WorkGroupID.x) : 0;
    const int share_keys = (p.skv + p.splits * CHUNK - 1) / (p.splits * CHUNK) * CHUNK;
    const int begin = split == 1 ? share * share_keys : 0;
    const int end = split == 1 ? min(visible, begin + share_keys) : visible;

    Attended a;
#if DECODE_SUBGROUPS
    // Shuffles reach R lanes within a subgroup where R is a power of two no larger than it.
    const bool shuffles = R <= int(gl_SubgroupSize) && (R & (R - 1)) == 0;
    if (shuffles)
    {
        const int oct = int(gl_SubgroupInvocationID) % R;
        const mat2x4 q = mat2x4(buffer_ld8(q_data, q_at + oct)) * p.scale;
        a = attend_subgroups(q, kv_at, kv_row, begin, end);
    }
    else
#endif
    {
        const mat2x4 q = mat2x4(buffer_ld8(q_data, q_at + lid % R)) * p.scale;
        a = attend_shared(q, kv_at, kv_row, begin, end);
    }
    // Invocation lid < D holds element lid of the row's (or share's) unnormalized output.
    const int o_at = (n * p.sq + i) * p.o_stride + h * D;
    if (split == 1)
    {
        const int at = (row * p.splits + share) * (D + 2);
        if (lid < D) part_data[at + lid] = a.element;
        if (lid == 0)
        {
            part_data[at + D] = a.m;
            part_data[at + D + 1] = a.l;
        }
        merge_if_last(row, o_at);
        return;
    }
    if (lid < D)
    {
        const float inv = a.l > 0.0 ? 1.0 / a.l : 0.0;
        buffer_st1(o_data, o_at + lid, afp(a.element * inv));
    }
}
