#version 450
// Rotary position embedding on x [tokens, heads, dim] (tokens = batch · seq, seq consecutive
// positions per batch): token t is at position `t % seq + offset`; pair i of a head (i < dim/2)
// is rotated by the angle pos · base^(-2i/dim):
//   (a, b) -> (a · cos - b · sin, b · cos + a · sin),
// its two elements (i, i + dim/2) with `interleaved` 0 (Llama / Hugging Face's rotate_half), or
// (2i, 2i + 1) with `interleaved` 1 (GPT-J, the original RoFormer).
//
// fp32 in every variant, as Hugging Face computes it: inv_freq = 2^(-(2i/dim) · log2(base))
// (`log2_base` computed on the host in double precision), the angle pos · inv_freq rounded to
// fp32, then reduced to [-π, π] in two steps (2π as 6.28125, exact in a product with any
// position below 2^16 turns, plus the rest) before sin and cos, whose accuracy GPUs give only
// there. The position offset is a push constant: a decode step changes it without a new
// pipeline.
//
// One pair per invocation, a grid apart (any number of pairs). Each invocation reads its two
// values before writing them, so y may be x (in place).
layout (local_size_x = 256) in;

layout (constant_id = 0) const int interleaved = 0;

layout (binding = 0) readonly buffer x_blob { sfp x_data[]; };
layout (binding = 1) writeonly buffer y_blob { sfp y_data[]; };

layout (push_constant) uniform parameter {
    int tokens; int seq; int heads; int dim; int offset; float log2_base;
} p;

// sin and cos of `a` (any magnitude an fp32 angle of a position takes), reduced first.
vec2 sin_cos(float a)
{
    const float turn_hi = 6.28125;
    const float turn_lo = 1.9353071795864769e-3;
    precise float k = round(a * 0.15915494309189535);
    precise float r = (a - k * turn_hi) - k * turn_lo;
    return vec2(sin(r), cos(r));
}

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
        const float pos = float(token % p.seq + p.offset);
        const float inv_freq = exp2(-(float(2 * i) / float(p.dim)) * p.log2_base);
        const vec2 sc = sin_cos(pos * inv_freq);
        const int base = row * p.dim;
        const int ia = interleaved == 1 ? base + 2 * i : base + i;
        const int ib = interleaved == 1 ? ia + 1 : ia + half_dim;
        const float a = float(buffer_ld1(x_data, ia));
        const float b = float(buffer_ld1(x_data, ib));
        buffer_st1(y_data, ia, afp(a * sc.y - b * sc.x));
        buffer_st1(y_data, ib, afp(b * sc.y + a * sc.x));
    }
}
