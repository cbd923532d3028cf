#version 450
#extension GL_EXT_control_flow_attributes : require
// rope_qkv.comp's placement of a fused query/key/value projection [tokens, (hq + 2·hkv) · dim]
// with every query and key head RMS-normalized over its own dim values and scaled by a weight
// of dim values before it turns (Qwen3's q_norm and k_norm: one weight for all query heads,
// one for all key heads); value heads copied as they are. Positions, the cache's rows and the
// pairs as rope_qkv.comp's.
//
// A head's pairs are held by `lanes` neighbouring invocations (dim / 2 of one pair each, or
// with VKPRISM_QUADS, rope_qkv_norm4, dim / 8 of four pairs each, loaded and stored as two
// quads: dim a multiple of 8); the workgroup, sized at dispatch to a whole number of heads,
// takes that many heads at a time in a grid-stride loop every invocation runs alike. Each
// head's sum of squares is its lanes' partial sums added through shared memory in a fixed
// order. The norm in fp32 on the values as stored, as Hugging Face's Qwen3RMSNorm computes it
// in fp32.
layout (local_size_x = 64) in;

layout (constant_id = 0) const int interleaved = 0;
layout (constant_id = 1) const int position_in_buffer = 0;

#if VKPRISM_QUADS
#define PAIRS 4
layout (binding = 0) readonly buffer qkv_blob { sfpvec4 qkv_data[]; };
layout (binding = 1) writeonly buffer q_blob { sfpvec4 q_data[]; };
layout (binding = 2) writeonly buffer k_blob { sfpvec4 k_data[]; };
layout (binding = 3) writeonly buffer v_blob { sfpvec4 v_data[]; };
layout (binding = 5) readonly buffer q_norm_blob { sfpvec4 q_norm_data[]; };
layout (binding = 6) readonly buffer k_norm_blob { sfpvec4 k_norm_data[]; };
#else
#define PAIRS 1
layout (binding = 0) readonly buffer qkv_blob { sfp qkv_data[]; };
layout (binding = 1) writeonly buffer q_blob { sfp q_data[]; };
layout (binding = 2) writeonly buffer k_blob { sfp k_data[]; };
layout (binding = 3) writeonly buffer v_blob { sfp v_data[]; };
layout (binding = 5) readonly buffer q_norm_blob { sfp q_norm_data[]; };
layout (binding = 6) readonly buffer k_norm_blob { sfp k_norm_data[]; };
#endif
layout (binding = 4) readonly buffer pos_blob { int pos_data[]; };

layout (push_constant) uniform parameter {
    int tokens; int hq; int hkv; int dim; int rows; int offset;
    float log2_base; float freq_factor; float freq_low; float freq_high;
    float eps;
} p;

#include "rope.glsl"
#if VKPRISM_QUADS
#include "rope_quads.glsl"
#endif

shared float lane_squares[gl_WorkGroupSize.x];

// Where the values a lane holds go for head `head` of token `token` at position `pos`: the
// element (or quad) offset of the head's start in q or the cache (-1: nowhere, a position
// past the cache), and which of q (0), k (1), v (2).
ivec2 destination(int head, int token, int pos)
{
    if (head < p.hq) return ivec2((token * p.hq + head) * p.dim, 0);
    if (pos >= p.rows) return ivec2(-1, 0);
    const int at = (pos * p.hkv + (head - p.hq) % p.hkv) * p.dim;
    return ivec2(at, head < p.hq + p.hkv ? 1 : 2);
}

#if VKPRISM_QUADS
// Lane j's two quads of the head starting at `base`: loaded, normalized by `inv` and the weight
// of a query (`kind` 0) or key (1) head, turned at `pos`, and stored where `to` says.
void lane_place(vec4 u, vec4 v, int j, float inv, int kind, int pos, ivec2 to)
{
    const ivec2 w_at = pair_quads(0, j, p.dim);
    if (kind < 2)
    {
        if (kind == 0)
        {
            u *= inv * vec4(buffer_ld4(q_norm_data, w_at.x));
            v *= inv * vec4(buffer_ld4(q_norm_data, w_at.y));
        }
        else
        {
            u *= inv * vec4(buffer_ld4(k_norm_data, w_at.x));
            v *= inv * vec4(buffer_ld4(k_norm_data, w_at.y));
        }
        turn_quads(u, v, pos, j);
    }
    if (to.x < 0) return;
    const ivec2 at = pair_quads(to.x, j, p.dim);
    if (to.y == 0) { buffer_st4(q_data, at.x, afpvec4(u)); buffer_st4(q_data, at.y, afpvec4(v)); }
    else if (to.y == 1) { buffer_st4(k_data, at.x, afpvec4(u)); buffer_st4(k_data, at.y, afpvec4(v)); }
    else { buffer_st4(v_data, at.x, afpvec4(u)); buffer_st4(v_data, at.y, afpvec4(v)); }
}
#else
// Lane i's pair of the head: as lane_place above, one pair.
void lane_place(vec2 ab, int i, float inv, int kind, int pos, ivec2 to)
{
    const ivec2 w_at = rope_pair(0, i, p.dim, interleaved == 1);
    if (kind < 2)
    {
        const vec2 w = kind == 0
            ? vec2(float(buffer_ld1(q_norm_data, w_at.x)), float(buffer_ld1(q_norm_data, w_at.y)))
            : vec2(float(buffer_ld1(k_norm_data, w_at.x)), float(buffer_ld1(k_norm_data, w_at.y)));
        ab = rope_turn(ab * inv * w, rope_sin_cos(pos, i, p.dim, ROPE_FREQS));
    }
    if (to.x < 0) return;
    const ivec2 at = rope_pair(to.x, i, p.dim, interleaved == 1);
    if (to.y == 0) { buffer_st1(q_data, at.x, afp(ab.x)); buffer_st1(q_data, at.y, afp(ab.y)); }
    else if (to.y == 1) { buffer_st1(k_data, at.x, afp(ab.x)); buffer_st1(k_data, at.y, afp(ab.y)); }
    else { buffer_st1(v_data, at.x, afp(ab.x)); buffer_st1(v_data, at.y, afp(ab.y)); }
}
#endif

void main()
{
    const int lanes = p.dim / (2 * PAIRS);
    const int per_group = int(gl_WorkGroupSize.x) / lanes;
    const int lid = int(gl_LocalInvocationID.x);
    const int slot = lid / lanes, j = lid % lanes;
    const int heads = p.hq + 2 * p.hkv;
    const int total = p.tokens * heads;
    const int start = p.offset + (position_in_buffer == 1 ? pos_data[0] : 0);
    const int stride = int(gl_NumWorkGroups.x) * per_group;
    for (int first = int(gl_WorkGroupID.x) * per_group; first < total; first += stride)
    {
        const int th = first + slot;
        const bool live = slot < per_group && th < total;
        const int head = th % heads, token = th / heads;
        const int base = (token * heads + head) * p.dim;
#if VKPRISM_QUADS
        const ivec2 from = pair_quads(base, j, p.dim);
        const vec4 u = live ? vec4(buffer_ld4(qkv_data, from.x)) : vec4(0.0);
        const vec4 v = live ? vec4(buffer_ld4(qkv_data, from.y)) : vec4(0.0);
        const float squares = dot(u, u) + dot(v, v);
#else
        const ivec2 from = rope_pair(base, j, p.dim, interleaved == 1);
        const vec2 ab = live
            ? vec2(float(buffer_ld1(qkv_data, from.x)), float(buffer_ld1(qkv_data, from.y)))
            : vec2(0.0);
        const float squares = dot(ab, ab);
#endif
        // The last round's sums are read before this round's are written.
        barrier();
        lane_squares[lid] = squares;
        barrier();
        if (!live) continue;
        float head_squares = 0.0;
        for (int k = 0; k < lanes; k++) head_squares += lane_squares[slot * lanes + k];
        const float inv = inversesqrt(head_squares / float(p.dim) + p.eps);
        const int kind = head < p.hq ? 0 : (head < p.hq + p.hkv ? 1 : 2);
        const int pos = start + token;
#if VKPRISM_QUADS
        lane_place(u, v, j, inv, kind, pos, destination(head, token, pos));
#else
        lane_place(ab, j, inv, kind, pos, destination(head, token, pos));
#endif
    }
}
