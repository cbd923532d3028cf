// The rotation of rotary position embedding, shared by every kernel that rotates: pair i of a
// head of `dim` values at position `pos` turns by pos · base^(-2i/dim) (scaled, rope_inv_freq),
// computed in fp32 as Hugging Face computes it: inv_freq = 2^(-(2i/dim) · log2(base))
// (`log2_base` computed on the host in double precision), the angle pos · inv_freq rounded to
// fp32, then reduced to [-π, π] in two steps (2π as 6.28125, exact in a product with any
// position below 2^16 turns, plus the rest) before sin and cos, whose accuracy GPUs give only
// there.
#ifndef VKP_ROPE_GLSL
#define VKP_ROPE_GLSL

// The rotation's frequencies as every rotating kernel pushes them (its block named `p`):
// (log2 of the base, then the scaling's factor, low and high bounds; rope_inv_freq).
#define ROPE_FREQS vec4(p.log2_base, p.freq_factor, p.freq_low, p.freq_high)

// Pair i's inverse frequency base^(-2i/dim), scaled as Hugging Face's `llama3` rotary embedding
// scales it, in frequencies rather than wavelengths: above `high` kept, below `low` divided by
// `factor`, between them blended linearly from one to the other. The plain rotation pushes
// (1, 0, 0) (every frequency kept) and `linear` scaling (factor, inf, inf).
float rope_inv_freq(int i, int dim, vec4 freqs)
{
    const float f = exp2(-(float(2 * i) / float(dim)) * freqs.x);
    if (f > freqs.w) return f;
    if (f < freqs.z) return f / freqs.y;
    const float s = (f - freqs.z) / (freqs.w - freqs.z);
    return (1.0 - s) * (f / freqs.y) + s * f;
}

// (sin, cos) of pair i's angle at position `pos`.
vec2 rope_sin_cos(int pos, int i, int dim, vec4 freqs)
{
    const float a = float(pos) * rope_inv_freq(i, dim, freqs);
    const float turn_hi = 6.28125;
    const float turn_lo = 1.9353071795864769e-3;
    precise float k = round(a * 0.15915494309189535);
    precise float r = (a - k * turn_hi) - k * turn_lo;
    return vec2(sin(r), cos(r));
}

// The two element offsets of pair i in a head of `dim` values starting at `base`: (i, i + dim/2)
// or, interleaved, (2i, 2i + 1).
ivec2 rope_pair(int base, int i, int dim, bool interleaved)
{
    return interleaved ? ivec2(base + 2 * i, base + 2 * i + 1) : ivec2(base + i, base + i + dim / 2);
}

// (a, b) turned by the angle whose (sin, cos) is `sc`.
vec2 rope_turn(vec2 ab, vec2 sc)
{
    return vec2(ab.x * sc.y - ab.y * sc.x, ab.y * sc.y + ab.x * sc.x);
}

#endif
