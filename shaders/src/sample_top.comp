#version 450
#if ncnn_subgroup_basic && ncnn_subgroup_arithmetic
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#endif
#extension GL_EXT_control_flow_attributes : require
// A draw from each row of x [rows, n] as `transformers` samples: the logits times 1/T; cut to
// those at least the top_k-th largest (ties kept; top_k 0: none cut); cut again to those at
// least the largest value whose tokens' probabilities (softmax over what the first cut kept)
// add up to top_p of it (ties kept; top_p 1: none cut); then the index of the largest of what
// is left plus Gumbel noise (gumbel.glsl), which is a draw from its softmax. Each cut's value
// is found by bisection over the values' order keys (unsigned integers ordered as the floats
// are): at most 32 rounds, each a count or a sum across the workgroup, uniform across it. A
// NaN counts as -inf (the least likely). One workgroup a row; each invocation holds HELD of
// its row's values in registers (the whole row up to HELD · the workgroup's size) and reads the
// rest from memory in every round.
layout (local_size_x = 1024) in;

layout (binding = 0) readonly buffer x_blob { sfp x_data[]; };
layout (binding = 1) writeonly buffer out_blob { int out_data[]; };
// The draw's 64-bit seed, two words.
layout (binding = 2) readonly buffer seed_blob { uint seed_data[]; };

layout (push_constant) uniform parameter {
    int rows; int n; float inv_temperature; int top_k; float top_p;
} p;

#include "rows.glsl"
#include "gumbel.glsl"

const int HELD = 32;

// This invocation's first HELD values of the row (lid + j · size), -inf past its end.
float held[HELD];
int row_base;

// Element i of the row times 1/T, a NaN as -inf.
float scaled(int i)
{
    const float v = float(buffer_ld1(x_data, row_base + i)) * p.inv_temperature;
    return isnan(v) ? rows_neg_inf() : v;
}

// Unsigned keys in the floats' order (-0 just below +0).
uint order_key(float v)
{
    const uint u = floatBitsToUint(v);
    return (u & 0x80000000u) != 0u ? ~u : u | 0x80000000u;
}

// Values of the row whose key is at least t, across the workgroup.
float count_from(uint t)
{
    const int lid = int(gl_LocalInvocationID.x), size = int(gl_WorkGroupSize.x);
    float c = 0.0;
    [[unroll]] for (int j = 0; j < HELD; j++)
        c += lid + j * size < p.n && order_key(held[j]) >= t ? 1.0 : 0.0;
    for (int i = lid + HELD * size; i < p.n; i += size)
        c += order_key(scaled(i)) >= t ? 1.0 : 0.0;
    return rows_sum(c);
}

// The unnormalized probability exp(v - m) of the values whose key is at least t, across the
// workgroup.
float mass_from(uint t, float m)
{
    const int lid = int(gl_LocalInvocationID.x), size = int(gl_WorkGroupSize.x);
    float s = 0.0;
    [[unroll]] for (int j = 0; j < HELD; j++)
        s += lid + j * size < p.n && order_key(held[j]) >= t ? exp(held[j] - m) : 0.0;
    for (int i = lid + HELD * size; i < p.n; i += size)
    {
        const float v = scaled(i);
        s += order_key(v) >= t ? exp(v - m) : 0.0;
    }
    return rows_sum(s);
}

// The index of the largest value plus noise among those whose key is at least t (the first
// on ties).
int draw_from(uint t)
{
    const int lid = int(gl_LocalInvocationID.x), size = int(gl_WorkGroupSize.x);
    float best_v = rows_neg_inf();
    int best = -1;
    [[unroll]] for (int j = 0; j < HELD; j++)
    {
        const int i = lid + j * size;
        if (i < p.n && order_key(held[j]) >= t)
        {
            const float w = held[j] + gumbel_noise(uint(row_base + i));
            if (best < 0 || w > best_v)
            {
                best_v = w;
                best = i;
            }
        }
    }
    for (int i = lid + HELD * size; i < p.n; i += size)
    {
        const float v = scaled(i);
        if (order_key(v) >= t)
        {
            const float w = v + gumbel_noise(uint(row_base + i));
            if (best < 0 || w > best_v)
            {
                best_v = w;
                best = i;
            }
        }
    }
    return rows_argmax(best_v, best);
}

void main()
{
    const int row = rows_row();
    if (row >= p.rows) return;
    const int lid = int(gl_LocalInvocationID.x), size = int(gl_WorkGroupSize.x);
    row_base = row * p.n;
    float m = rows_neg_inf();
    [[unroll]] for (int j = 0; j < HELD; j++)
    {
        const int i = lid + j * size;
        held[j] = i < p.n ? scaled(i) : rows_neg_inf();
        m = max(m, held[j]);
    }
    for (int i = lid + HELD * size; i < p.n; i += size) m = max(m, scaled(i));
    m = rows_max(m);
    // The largest key the top_k largest values reach: at least top_k values from it on.
    uint from = 0u;
    if (p.top_k > 0 && p.top_k < p.n)
    {
        uint hi = 0xffffffffu;
        while (from < hi)
        {
            const uint mid = from + (hi - from) / 2u + 1u;
            if (count_from(mid) >= float(p.top_k)) from = mid;
            else hi = mid - 1u;
        }
    }
    // The largest key from which the values kept reach top_p of their probability.
    if (p.top_p < 1.0 && m > rows_neg_inf())
    {
        const float wanted = p.top_p * mass_from(from, m);
        uint hi = 0xffffffffu;
        while (from < hi)
        {
            const uint mid = from + (hi - from) / 2u + 1u;
            if (mass_from(mid, m) >= wanted) from = mid;
            else hi = mid - 1u;
        }
    }
    const int best = draw_from(from);
    if (lid == 0) out_data[row] = max(best, 0);
}
