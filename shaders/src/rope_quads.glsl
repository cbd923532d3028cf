// Four rotation pairs of a head held in two quads, for the kernels that turn four pairs an
// invocation (rope_qkv4, rope_qkv_norm4). Included after the kernel declares its `interleaved`
// specialization constant and its push block `p` (with `dim` and the frequencies rope.glsl's
// ROPE_FREQS reads).
#ifndef VKP_ROPE_QUADS_GLSL
#define VKP_ROPE_QUADS_GLSL

// The two quads holding pairs 4j .. 4j + 3 of the head whose values start at `base` (a
// multiple of 8).
ivec2 pair_quads(int base, int j, int dim)
{
    return interleaved == 1 ? ivec2(base / 4 + 2 * j, base / 4 + 2 * j + 1)
                            : ivec2(base / 4 + j, (base + dim / 2) / 4 + j);
}

// Pairs 4j .. 4j + 3 held in quads u and v (as pair_quads reads them) turned at `pos`, and
// written back where they were.
void turn_quads(inout vec4 u, inout vec4 v, int pos, int j)
{
    [[unroll]] for (int k = 0; k < 4; k++)
    {
        const int i = 4 * j + k;
        const vec2 sc = rope_sin_cos(pos, i, p.dim, ROPE_FREQS);
        if (interleaved == 1)
        {
            vec4 w = k < 2 ? u : v;
            const vec2 ab = rope_turn(k % 2 == 0 ? w.xy : w.zw, sc);
            if (k % 2 == 0) w.xy = ab; else w.zw = ab;
            if (k < 2) u = w; else v = w;
        }
        else
        {
            const vec2 ab = rope_turn(vec2(u[k], v[k]), sc);
            u[k] = ab.x;
            v[k] = ab.y;
        }
    }
}

#endif
