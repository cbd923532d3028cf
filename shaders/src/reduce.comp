#version 450
#if ncnn_subgroup_basic && ncnn_subgroup_arithmetic
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#endif
// A reduction along one axis of a tensor viewed as [outer, axis, inner] (any axis of an N-D
// tensor is one: outer the product of the dimensions before it, inner of those after), into
// [outer, inner]: out[o][i] = op over a of x[o][a][i]. Values are read one at a time (rows of
// any length), converted to fp32 and reduced in fp32 in every variant; the result is stored in
// the variant's precision, or (ARGMAX) as an int index, the first on ties. With GUMBEL (an
// ARGMAX kernel) each value is x / T plus Gumbel noise (gumbel.glsl): the index is a draw from
// softmax(x / T) along the axis, not its largest.
//
// Two grids, chosen by `per_invocation`:
// - 0: one workgroup per output (grid [workgroup, outer · inner, 1]): each invocation reduces
//   the values a workgroup apart, then the workgroup reduces through shared memory (rows.glsl).
//   For long axes with a short inner (inner 1: contiguous rows).
// - 1: one invocation per output (grid [inner, outer, 1]): neighbouring invocations read
//   neighbouring values; a sum is compensated (Kahan, `precise`, so the compiler can't
//   reassociate it away). For a large inner.
layout (local_size_x = 256) in;

// 0 sum, 1 mean, 2 max, 3 min (the argmax kernel ignores it).
layout (constant_id = 0) const int op = 0;
layout (constant_id = 1) const int per_invocation = 0;

layout (binding = 0) readonly buffer x_blob { sfp x_data[]; };
#if ARGMAX
layout (binding = 1) writeonly buffer out_blob { int out_data[]; };
#else
layout (binding = 1) writeonly buffer out_blob { sfp out_data[]; };
#endif
#if GUMBEL
// The draw's 64-bit seed, two words.
layout (binding = 2) readonly buffer seed_blob { uint seed_data[]; };

layout (push_constant) uniform parameter { int outer; int axis; int inner; float inv_temperature; } p;
#include "gumbel.glsl"
#else
layout (push_constant) uniform parameter { int outer; int axis; int inner; } p;
#endif

#include "rows.glsl"

float load(int i)
{
#if GUMBEL
    return float(buffer_ld1(x_data, i)) * p.inv_temperature + gumbel_noise(uint(i));
#else
    return float(buffer_ld1(x_data, i));
#endif
}

void store(int i, float v, int index)
{
#if ARGMAX
    out_data[i] = index;
#else
    if (op == 1) v /= float(p.axis);
    buffer_st1(out_data, i, afp(v));
#endif
}

void main()
{
    if (per_invocation == 1)
    {
        const int i = int(gl_GlobalInvocationID.x);
        const int o = rows_row();
        if (i >= p.inner || o >= p.outer) return;
        const int base = o * p.axis * p.inner + i;
        precise float acc = op == 2 || ARGMAX == 1 ? rows_neg_inf() : (op == 3 ? -rows_neg_inf() : 0.0);
        precise float comp = 0.0;
        int best = -1;
        for (int a = 0; a < p.axis; a++)
        {
            const float v = load(base + a * p.inner);
#if ARGMAX
            if (best < 0 || v > acc)
            {
                acc = v;
                best = a;
            }
#else
            if (op == 2) acc = max(acc, v);
            else if (op == 3) acc = min(acc, v);
            else
            {
                precise float y = v - comp;
                precise float t = acc + y;
                comp = (t - acc) - y;
                acc = t;
            }
#endif
        }
        store(o * p.inner + i, acc, best);
        return;
    }

    // One workgroup per output: the grid's y and z (`rows_row`).
    const int out_index = rows_row();
    if (out_index >= p.outer * p.inner) return;
    const int o = out_index / p.inner, i = out_index % p.inner;
    const int base = o * p.axis * p.inner + i;
    const int lid = int(gl_LocalInvocationID.x), size = int(gl_WorkGroupSize.x);
    float acc = op == 2 || ARGMAX == 1 ? rows_neg_inf() : (op == 3 ? -rows_neg_inf() : 0.0);
    int best = -1;
    for (int a = lid; a < p.axis; a += size)
    {
        const float v = load(base + a * p.inner);
#if ARGMAX
        if (best < 0 || v > acc)
        {
            acc = v;
            best = a;
        }
#else
        if (op == 2) acc = max(acc, v);
        else if (op == 3) acc = min(acc, v);
        else acc += v;
#endif
    }
#if ARGMAX
    best = rows_argmax(acc, best);
#else
    if (op == 2) acc = rows_max(acc);
    else if (op == 3) acc = rows_min(acc);
    else acc = rows_sum(acc);
#endif
    if (lid == 0) store(out_index, acc, best);
}
