#version 450
#if ncnn_subgroup_basic && ncnn_subgroup_arithmetic
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#endif
// rope_qkv.comp's placement of a fused query/key/value projection [tokens, (hq + 2·hkv) · dim]
// with every query and key head RMS-normalized over its own dim values and scaled by a weight
// of dim values before it turns (Qwen3's q_norm and k_norm: one weight for all query heads,
// one for all key heads); value heads copied as they are. Positions, the cache's rows and the
// pairs as rope_qkv.comp's.
//
// One workgroup per head of a token (its size set at dispatch to dim / 2: one invocation per
// pair), a grid-stride loop over the tokens' heads taken by whole workgroups, so the head's
// sum of squares is a workgroup reduction (rows.glsl) in uniform control flow. The norm in
// fp32 on the values as stored, as Hugging Face's Qwen3RMSNorm computes it in fp32.
layout (local_size_x = 64) in;

layout (constant_id = 0) const int interleaved = 0;
layout (constant_id = 1) const int position_in_buffer = 0;

layout (binding = 0) readonly buffer qkv_blob { sfp qkv_data[]; };
layout (binding = 1) writeonly buffer q_blob { sfp q_data[]; };
layout (binding = 2) writeonly buffer k_blob { sfp k_data[]; };
layout (binding = 3) writeonly buffer v_blob { sfp v_data[]; };
layout (binding = 4) readonly buffer pos_blob { int pos_data[]; };
layout (binding = 5) readonly buffer q_norm_blob { sfp q_norm_data[]; };
layout (binding = 6) readonly buffer k_norm_blob { sfp k_norm_data[]; };

layout (push_constant) uniform parameter {
    int tokens; int hq; int hkv; int dim; int rows; int offset;
    float log2_base; float freq_factor; float freq_low; float freq_high;
    float eps;
} p;

#include "rope.glsl"
#include "rows.glsl"

// Pair (a, b) at slots `at` of a query (`query`) or key head whose squares sum to `squares`,
// normalized and scaled by that head kind's weight.
vec2 head_normed(vec2 ab, ivec2 at, float squares, bool query)
{
    const float inv = inversesqrt(squares / float(p.dim) + p.eps);
    const vec2 w = query
        ? vec2(float(buffer_ld1(q_norm_data, at.x)), float(buffer_ld1(q_norm_data, at.y)))
        : vec2(float(buffer_ld1(k_norm_data, at.x)), float(buffer_ld1(k_norm_data, at.y)));
    return ab * inv * w;
}

// Pair `ab` of head `head` of token `token` (at position `pos`) written where it goes: q, or
// the cache's row `pos` where that is within it.
void place(vec2 ab, ivec2 slots, int head, int token, int pos)
{
    if (head < p.hq)
    {
        const ivec2 to = (token * p.hq + head) * p.dim + slots;
        buffer_st1(q_data, to.x, afp(ab.x));
        buffer_st1(q_data, to.y, afp(ab.y));
        return;
    }
    if (pos >= p.rows) return;
    const ivec2 to = (pos * p.hkv + (head - p.hq) % p.hkv) * p.dim + slots;
    if (head < p.hq + p.hkv)
    {
        buffer_st1(k_data, to.x, afp(ab.x));
        buffer_st1(k_data, to.y, afp(ab.y));
    }
    else
    {
        buffer_st1(v_data, to.x, afp(ab.x));
        buffer_st1(v_data, to.y, afp(ab.y));
    }
}

void main()
{
    const int i = int(gl_LocalInvocationID.x);
    const bool in_head = i < p.dim / 2;
    const int heads = p.hq + 2 * p.hkv;
    const int start = p.offset + (position_in_buffer == 1 ? pos_data[0] : 0);
    const ivec2 slots = rope_pair(0, in_head ? i : 0, p.dim, interleaved == 1);
    for (int th = int(gl_WorkGroupID.x); th < p.tokens * heads; th += int(gl_NumWorkGroups.x))
    {
        const int head = th % heads;
        const int token = th / heads;
        const int pos = start + token;
        const ivec2 from = (token * heads + head) * p.dim + slots;
        vec2 ab = in_head
            ? vec2(float(buffer_ld1(qkv_data, from.x)), float(buffer_ld1(qkv_data, from.y)))
            : vec2(0.0);
        // `head` is the workgroup's own: the reduction's barriers stay in uniform control flow.
        if (head < p.hq + p.hkv)
        {
            const float squares = rows_sum(dot(ab, ab));
            ab = head_normed(ab, slots, squares, head < p.hq);
            ab = rope_turn(ab, rope_sin_cos(pos, i, p.dim, ROPE_FREQS));
        }
        if (in_head) place(ab, slots, head, token, pos);
    }
}
