#version 450
// Rotary position embedding on x [tokens, heads, dim] (tokens = batch · seq, seq consecutive
// positions per batch): token t is at position `t % seq + offset`; pair i of a head (i < dim/2)
// is rotated by the angle pos · base^(-2i/dim):
//   (a, b) -> (a · cos - b · sin, b · cos + a · sin),
// its two elements (i, i + dim/2) with `interleaved` 0 (Llama / Hugging Face's rotate_half), or
// (2i, 2i + 1) with `interleaved` 1 (GPT-J, the original RoFormer).
//
// fp32 in every variant (rope.glsl). The position offset is a push constant: a decode step
// changes it without a new pipeline.
//
// One pair per invocation, a grid apart (any number of pairs). Each invocation reads its two
// values before writing them, so y may be x (in place).
layout (local_size_x = 256) in;

layout (constant_id = 0) const int interleaved = 0;

layout (binding = 0) readonly buffer x_blob { sfp x_data[]; };
layout (binding = 1) writeonly buffer y_blob { sfp y_data[]; };

layout (push_constant) uniform parameter {
    int tokens; int seq; int heads; int dim; int offset;
    float log2_base; float freq_factor; float freq_low; float freq_high;
} p;

#include "rope.glsl"

void main()
{
    const int half_dim = p.dim / 2;
    const int pairs = p.tokens * p.heads * half_dim;
    const int grid = int(gl_NumWorkGroups.x * gl_WorkGroupSize.x);
    for (int q = int(gl_GlobalInvocationID.x); q < pairs; q += grid)
    {
        const int i = q % half_dim;
        const int row = q / half_dim;
        const int token = row / p.heads;
        const vec2 sc = rope_sin_cos(token % p.seq + p.offset, i, p.dim, ROPE_FREQS);
        const ivec2 at = rope_pair(row * p.dim, i, p.dim, interleaved == 1);
        const vec2 ab = vec2(float(buffer_ld1(x_data, at.x)), float(buffer_ld1(x_data, at.y)));
        const vec2 turned = rope_turn(ab, sc);
        buffer_st1(y_data, at.x, afp(turned.x));
        buffer_st1(y_data, at.y, afp(turned.y));
    }
}
