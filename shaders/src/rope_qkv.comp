#version 450
#extension GL_EXT_control_flow_attributes : require
// A decoder step's fused query/key/value projection [tokens, (hq + 2·hkv) · dim] (each token's
// row: hq query heads, hkv key heads, hkv value heads) split and placed: the query heads
// rotated (rotary position embedding, rope.glsl) into q [tokens, hq, dim]; the key heads
// rotated and the value heads copied into the KV cache's rows at the tokens' positions,
// k and v [rows, hkv, dim]. One dispatch where separate rotations and copies take four.
//
// Token t sits at position p.offset + t, plus pos_data[0] where `position_in_buffer` is 1: a
// recorded decode step then runs at any position, the position written into the buffer before
// each replay. A position at or past `rows` (the cache's length) writes no key or value.
//
// One pair of values per invocation (pairs as rope.comp's: (i, i + dim/2), or (2i, 2i + 1)
// `interleaved`), a grid apart; value heads are copied pair by pair the same way. With
// VKPRISM_QUADS (rope_qkv4, dim a multiple of 8) four consecutive pairs per invocation, their
// values loaded and stored as two quads: (i .. i + 3) and (i + dim/2 ..), or interleaved the
// 8 values from 2i.
layout (local_size_x = 256) in;

layout (constant_id = 0) const int interleaved = 0;
layout (constant_id = 1) const int position_in_buffer = 0;

#if VKPRISM_QUADS
layout (binding = 0) readonly buffer qkv_blob { sfpvec4 qkv_data[]; };
layout (binding = 1) writeonly buffer q_blob { sfpvec4 q_data[]; };
layout (binding = 2) writeonly buffer k_blob { sfpvec4 k_data[]; };
layout (binding = 3) writeonly buffer v_blob { sfpvec4 v_data[]; };
#else
layout (binding = 0) readonly buffer qkv_blob { sfp qkv_data[]; };
layout (binding = 1) writeonly buffer q_blob { sfp q_data[]; };
layout (binding = 2) writeonly buffer k_blob { sfp k_data[]; };
layout (binding = 3) writeonly buffer v_blob { sfp v_data[]; };
#endif
layout (binding = 4) readonly buffer pos_blob { int pos_data[]; };

layout (push_constant) uniform parameter {
    int tokens; int hq; int hkv; int dim; int rows; int offset;
    float log2_base; float freq_factor; float freq_low; float freq_high;
} p;

#include "rope.glsl"

#if VKPRISM_QUADS
#include "rope_quads.glsl"

void main()
{
    const int dim = p.dim;
    const int per_head = dim / 8;
    const int heads = p.hq + 2 * p.hkv;
    const int quads = p.tokens * heads * per_head;
    const int start = p.offset + (position_in_buffer == 1 ? pos_data[0] : 0);
    const int grid = int(gl_NumWorkGroups.x * gl_WorkGroupSize.x);
    for (int q = int(gl_GlobalInvocationID.x); q < quads; q += grid)
    {
        const int j = q % per_head;
        const int head = (q / per_head) % heads;
        const int token = q / (per_head * heads);
        const int pos = start + token;
        const ivec2 from = pair_quads((token * heads + head) * dim, j, dim);
        vec4 u = vec4(buffer_ld4(qkv_data, from.x));
        vec4 v = vec4(buffer_ld4(qkv_data, from.y));
        if (head < p.hq + p.hkv) turn_quads(u, v, pos, j);
        if (head < p.hq)
        {
            const ivec2 to = pair_quads((token * p.hq + head) * dim, j, dim);
            buffer_st4(q_data, to.x, afpvec4(u));
            buffer_st4(q_data, to.y, afpvec4(v));
        }
        else if (pos < p.rows)
        {
            const int kv_head = (head - p.hq) % p.hkv;
            const ivec2 to = pair_quads((pos * p.hkv + kv_head) * dim, j, dim);
            if (head < p.hq + p.hkv)
            {
                buffer_st4(k_data, to.x, afpvec4(u));
                buffer_st4(k_data, to.y, afpvec4(v));
            }
            else
            {
                buffer_st4(v_data, to.x, afpvec4(u));
                buffer_st4(v_data, to.y, afpvec4(v));
            }
        }
    }
}
#else
void main()
{
    const int half_dim = p.dim / 2;
    const int heads = p.hq + 2 * p.hkv;
    const int pairs = p.tokens * heads * half_dim;
    const int start = p.offset + (position_in_buffer == 1 ? pos_data[0] : 0);
    const int grid = int(gl_NumWorkGroups.x * gl_WorkGroupSize.x);
    for (int q = int(gl_GlobalInvocationID.x); q < pairs; q += grid)
    {
        const int i = q % half_dim;
        const int head = (q / half_dim) % heads;
        const int token = q / (half_dim * heads);
        const int pos = start + token;
        const ivec2 from = rope_pair((token * heads + head) * p.dim, i, p.dim, interleaved == 1);
        vec2 ab = vec2(float(buffer_ld1(qkv_data, from.x)), float(buffer_ld1(qkv_data, from.y)));
        if (head < p.hq + p.hkv) ab = rope_turn(ab, rope_sin_cos(pos, i, p.dim, ROPE_FREQS));
        if (head < p.hq)
        {
            const ivec2 to = rope_pair((token * p.hq + head) * p.dim, i, p.dim, interleaved == 1);
            buffer_st1(q_data, to.x, afp(ab.x));
            buffer_st1(q_data, to.y, afp(ab.y));
        }
        else if (pos < p.rows)
        {
            const int kv_head = (head - p.hq) % p.hkv;
            const ivec2 to = rope_pair((pos * p.hkv + kv_head) * p.dim, i, p.dim, interleaved == 1);
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
    }
}
#endif
