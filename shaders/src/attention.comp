#version 450
#if ncnn_subgroup_basic && ncnn_subgroup_arithmetic
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#endif
#extension GL_EXT_control_flow_attributes : require
// Scaled dot-product attention, one workgroup per (query row, head) and share of the keys:
// o = softmax(scale · q·Kᵀ) · V with the softmax computed online (flash attention's running
// maximum and sum), so any number of keys in one pass and no score matrix in memory.
//
// Layouts (token-major, heads interleaved: a projection's output as it comes):
// q, o [batch, sq, hq, d]; k, v [batch, skv, hkv, d], rows `*_stride` elements apart (so views
// into a larger KV cache work); query head h reads key/value head h / (hq / hkv) (grouped-query
// attention). With `causal`, query i (of sq) sees keys j <= i + offset (offset = skv - sq for a
// prompt at the end of the cache); a query that sees no key gives 0.
//
// Keys are taken a workgroup at a time: invocation t scores key j0 + t (its dot product with q,
// which sits in shared memory), the chunk's maximum and sum go through a workgroup reduction
// (rows.glsl), the chunk's probabilities through shared memory, and invocation t accumulates
// output dimensions t, t + W, ... (a coalesced read of each value row), or (attention4) the
// quad t of each value row, K and V read as quads. fp32 throughout.
//
// With `split` the keys are shared between gl_NumWorkGroups.x workgroups (decode: one query
// row, thousands of keys) and each writes its unnormalized output with its running maximum
// and sum to part [rows][splits][d + 2]; attention_combine.comp merges them, or, with
// `combine_last`, the row's last workgroup to finish does (attention_merge.glsl): each
// workgroup counts itself done in count[row] once its share is written, and the one that
// brings the count to `splits` merges and sets it back to 0 (a dispatch fewer a decode step).
layout (local_size_x = 64) in;

layout (constant_id = 0) const int causal = 0;
layout (constant_id = 1) const int split = 0;
// 1: the causal offset is p.offset plus pos_data[0] (a recorded decode step replayed at any
// position of the cache; keys past the query's position are not read).
layout (constant_id = 2) const int position_in_buffer = 0;
// 1 (with `split`): the last share to finish merges the row (count_data zero before and after).
layout (constant_id = 3) const int combine_last = 0;
// VKPRISM_QUADS (attention4): d and kv_stride are multiples of 4, K and V rows are read as
// quads, and each invocation accumulates whole quads of the output.
#if VKPRISM_QUADS
const int quads = 1;
#else
const int quads = 0;
#endif

layout (binding = 0) readonly buffer q_blob { sfp q_data[]; };
#if VKPRISM_QUADS
layout (binding = 1) readonly buffer k_blob { sfpvec4 k_data[]; };
layout (binding = 2) readonly buffer v_blob { sfpvec4 v_data[]; };
#else
layout (binding = 1) readonly buffer k_blob { sfp k_data[]; };
layout (binding = 2) readonly buffer v_blob { sfp v_data[]; };
#endif
layout (binding = 3) writeonly buffer o_blob { sfp o_data[]; };
// Coherent: the last share reads what the others wrote.
layout (binding = 4) coherent buffer part_blob { float part_data[]; };
layout (binding = 5) readonly buffer pos_blob { int pos_data[]; };
layout (binding = 6) coherent buffer count_blob { int count_data[]; };

layout (push_constant) uniform parameter {
    int batch; int sq; int skv; int hq; int hkv; int d;
    int q_stride; int kv_stride; int o_stride; int offset; float scale; int splits;
} p;

#include "rows.glsl"
#include "attention_merge.glsl"
#include "attention_last_share.glsl"

// The largest head dimension: output dimensions per invocation times the workgroup.
const int MAX_D = 256;
const int PER = MAX_D / int(gl_WorkGroupSize.x) > 0 ? MAX_D / int(gl_WorkGroupSize.x) : 1;

shared vec4 q_shared[MAX_D / 4];

// attention4: the quads of a key row and the keys' value quads an invocation loads at the start
// of a chunk, in registers (a head of 64 whole: both in one wait).
const int HELD_QUADS = 16;
const int HELD_KEYS = 16;

shared float p_shared[gl_WorkGroupSize.x];

// This invocation's r-th output dimension, lid + r·size, as the scalar or quad path holds
// it: quads are spread back through shared memory (the quad of dimension e is held by
// invocation e / 4).
shared vec4 out_quads[MAX_D / 4];
// Each invocation's partial quad (attention4).
shared vec4 group_quads[gl_WorkGroupSize.x];
float out_value(float acc[PER], vec4 acc4, int r)
{
    if (quads == 0) return acc[r];
    const int e = int(gl_LocalInvocationID.x) + r * int(gl_WorkGroupSize.x);
    return out_quads[e / 4][e % 4];
}

// Where query i of batch n, head h, writes its output.
int output_at(int n, int i, int h)
{
    return (n * p.sq + i) * p.o_stride + h * p.d;
}

void main()
{
    const int row = rows_row();
    if (row >= p.batch * p.sq * p.hq) return;
    const int lid = int(gl_LocalInvocationID.x), size = int(gl_WorkGroupSize.x);
    const int h = row % p.hq, i = (row / p.hq) % p.sq, n = row / (p.hq * p.sq);
    const int kvh = h / (p.hq / p.hkv);
    const int q_at = (n * p.sq + i) * p.q_stride + h * p.d;
    const int kv_at = n * p.skv * p.kv_stride + kvh * p.d;

    const int offset = p.offset + (position_in_buffer == 1 ? pos_data[0] : 0);
    const int visible = causal == 1 ? clamp(i + offset + 1, 0, p.skv) : p.skv;
    // attention4: groups of d/4 invocations, each group a share of every chunk's keys.
    const int groups = max(1, size / max(1, p.d / 4));
    // This workgroup's share of the keys: whole chunks of the workgroup's size.
    const int share = (p.skv + p.splits * size - 1) / (p.splits * size) * size;
    const int j_begin = int(gl_WorkGroupID.x) * share;
    const int j_end = min(visible, j_begin + share);

    // q's values this invocation places in shared memory, loaded now and stored once the
    // first chunk's loads are issued (their waits overlap).
    float q_own[PER];
    [[unroll]] for (int r = 0; r < PER; r++)
    {
        const int e = lid + r * size;
        q_own[r] = e < p.d ? float(buffer_ld1(q_data, q_at + e)) * p.scale : 0.0;
    }

    float m = rows_neg_inf();
    float l = 0.0;
    // Output dimensions lid + r·size (scalar rows) or quad lid (quads: d/4 <= 64 quads).
    float acc[PER];
    for (int r = 0; r < PER; r++) acc[r] = 0.0;
    vec4 acc4 = vec4(0.0);

    for (int j0 = j_begin; j0 < j_end; j0 += size)
    {
        const int j = j0 + lid;
        const int at = kv_at + j * p.kv_stride;
        const int count = min(size, j_end - j0);
#if VKPRISM_QUADS
        // The chunk's first loads all issued before any is used, so the chunk waits on memory
        // about once rather than once a quad or a key: this invocation's key row (up to
        // HELD_QUADS quads) and its value quads (up to HELD_KEYS keys; the keys t ≡ g mod
        // groups, quad qd of each row).
        const int qn = p.d / 4;
        const int qd = lid % qn, g = lid / qn;
        const bool holds_values = lid < groups * qn;
        vec4 k_held[HELD_QUADS];
        [[unroll]] for (int u = 0; u < HELD_QUADS; u++)
            k_held[u] = j < j_end && u < qn ? vec4(buffer_ld4(k_data, at / 4 + u)) : vec4(0.0);
        vec4 v_held[HELD_KEYS];
        [[unroll]] for (int u = 0; u < HELD_KEYS; u++)
        {
            const int t = g + u * groups;
            v_held[u] = holds_values && t < count
                ? vec4(buffer_ld4(v_data, (kv_at + (j0 + t) * p.kv_stride) / 4 + qd))
                : vec4(0.0);
        }
#endif
        if (j0 == j_begin)
        {
            [[unroll]] for (int r = 0; r < PER; r++)
            {
                const int e = lid + r * size;
                if (e < MAX_D) q_shared[e / 4][e % 4] = q_own[r];
            }
            barrier();
        }
        float s = rows_neg_inf();
        if (j < j_end)
        {
#if VKPRISM_QUADS
            vec4 s4 = vec4(0.0);
            [[unroll]] for (int u = 0; u < HELD_QUADS; u++) s4[u % 4] += dot(q_shared[u], k_held[u]);
            // Rows longer than HELD_QUADS quads: the rest four at a time.
            int e4 = HELD_QUADS;
            for (; e4 + 4 <= qn; e4 += 4)
            {
                const int b = at / 4 + e4;
                s4 += vec4(dot(q_shared[e4], vec4(buffer_ld4(k_data, b))),
                           dot(q_shared[e4 + 1], vec4(buffer_ld4(k_data, b + 1))),
                           dot(q_shared[e4 + 2], vec4(buffer_ld4(k_data, b + 2))),
                           dot(q_shared[e4 + 3], vec4(buffer_ld4(k_data, b + 3))));
            }
            for (; e4 < qn; e4++)
                s4.x += dot(q_shared[e4], vec4(buffer_ld4(k_data, at / 4 + e4)));
            s = (s4.x + s4.y) + (s4.z + s4.w);
#else
            s = 0.0;
            for (int e = 0; e < p.d; e++)
                s += q_shared[e / 4][e % 4] * float(buffer_ld1(k_data, at + e));
#endif
        }
        const float m_new = max(m, rows_max(s));
        // m_new is finite: the chunk holds at least one visible key.
        const float pj = j < j_end ? exp(s - m_new) : 0.0;
        const float rescale = exp(m - m_new);
        l = l * rescale + rows_sum(pj);
        p_shared[lid] = pj;
        barrier();
#if VKPRISM_QUADS
        // Invocation lid holds quad lid % d/4 of the keys t ≡ lid / (d/4) (mod groups): the
        // first HELD_KEYS from registers, the rest loaded two at a time.
        if (holds_values)
        {
            vec4 a = acc4 * rescale, b = vec4(0.0);
            [[unroll]] for (int u = 0; u < HELD_KEYS; u++)
            {
                const int t = g + u * groups;
                if (t < count) a += p_shared[t] * v_held[u];
            }
            int t = g + HELD_KEYS * groups;
            for (; t + groups < count; t += 2 * groups)
            {
                const vec4 v0 = vec4(buffer_ld4(v_data, (kv_at + (j0 + t) * p.kv_stride) / 4 + qd));
                const vec4 v1 = vec4(buffer_ld4(v_data, (kv_at + (j0 + t + groups) * p.kv_stride) / 4 + qd));
                a += p_shared[t] * v0;
                b += p_shared[t + groups] * v1;
            }
            if (t < count) a += p_shared[t] * vec4(buffer_ld4(v_data, (kv_at + (j0 + t) * p.kv_stride) / 4 + qd));
            acc4 = a + b;
        }
#else
        for (int r = 0; r < PER; r++)
        {
            const int e = lid + r * size;
            if (e >= p.d) break;
            float a = acc[r] * rescale;
            for (int t = 0; t < count; t++)
                a += p_shared[t] * float(buffer_ld1(v_data, kv_at + (j0 + t) * p.kv_stride + e));
            acc[r] = a;
        }
#endif
        m = m_new;
        barrier();
    }

    if (quads == 1)
    {
        // The groups' partial quads summed (their running maxima are the workgroup's one m).
        group_quads[lid] = acc4;
        barrier();
        if (lid < p.d / 4)
        {
            vec4 sum = vec4(0.0);
            for (int g = 0; g < groups; g++) sum += group_quads[g * (p.d / 4) + lid];
            out_quads[lid] = sum;
        }
        barrier();
    }
    if (split == 1)
    {
        const int at = (row * p.splits + int(gl_WorkGroupID.x)) * (p.d + 2);
        for (int r = 0; r < PER; r++)
        {
            const int e = lid + r * size;
            if (e < p.d) part_data[at + e] = out_value(acc, acc4, r);
        }
        if (lid == 0)
        {
            part_data[at + p.d] = m;
            part_data[at + p.d + 1] = l;
        }
        if (combine_last == 1) merge_if_last(row, output_at(n, i, h));
        return;
    }
    const float inv = l > 0.0 ? 1.0 / l : 0.0;
    const int o_at = output_at(n, i, h);
    for (int r = 0; r < PER; r++)
    {
        const int e = lid + r * size;
        if (e < p.d) buffer_st1(o_data, o_at + e, afp(out_value(acc, acc4, r) * inv));
    }
}
