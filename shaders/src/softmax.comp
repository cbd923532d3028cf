#version 450
#if ncnn_subgroup_basic && ncnn_subgroup_arithmetic
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#endif
// Softmax along the last axis, one workgroup per row: y[r][c] = e^(s·x[r][c] - m) / Σ e^(s·x - m)
// with s the `scale` and m the row's largest s·x (so no exponential overflows). Rows of any
// length: values are read one at a time, in fp32 in every variant. Three passes over the row:
// its maximum, the sum of exponentials (both reduced through shared memory, rows.glsl), then
// the write. With `causal`, row r of each block of `block` rows sees only the columns
// c <= r % block + offset; the others are 0 (a row that sees no column is all 0). A prefill
// block of queries against a longer key range passes offset = keys - queries.
//
// In place (x and y one buffer) is safe: every read of the first two passes is done before the
// barrier of the second reduction, and the third pass's invocation reads exactly the values it
// then overwrites.
layout (local_size_x = 256) in;

layout (constant_id = 0) const int causal = 0;

#if VKPRISM_QUADS
// softmax4: rows of quads (cols a multiple of 4), read and written as quads.
layout (binding = 0) readonly buffer x_blob { sfpvec4 x_data[]; };
layout (binding = 1) writeonly buffer y_blob { sfpvec4 y_data[]; };
#else
layout (binding = 0) readonly buffer x_blob { sfp x_data[]; };
layout (binding = 1) writeonly buffer y_blob { sfp y_data[]; };
#endif

layout (push_constant) uniform parameter {
    int rows; int cols; int block; int offset; float scale;
} p;

#include "rows.glsl"

#if VKPRISM_QUADS
// The three passes over the row's quads; values past `visible` count as -inf (weight 0).
void main()
{
    const int row = rows_row();
    if (row >= p.rows) return;
    const int lid = int(gl_LocalInvocationID.x), size = int(gl_WorkGroupSize.x);
    const int quads = p.cols / 4, base = row * quads;
    const int visible = causal == 1 ? clamp(row % p.block + p.offset + 1, 0, p.cols) : p.cols;
    const int seen = (visible + 3) / 4;
    const ivec4 lane = ivec4(0, 1, 2, 3);

    float m = rows_neg_inf();
    for (int q = lid; q < seen; q += size)
    {
        const vec4 v = vec4(buffer_ld4(x_data, base + q)) * p.scale;
        const bvec4 in_row = lessThan(q * 4 + lane, ivec4(visible));
        m = max(m, max(max(in_row.x ? v.x : m, in_row.y ? v.y : m), max(in_row.z ? v.z : m, in_row.w ? v.w : m)));
    }
    m = rows_max(m);

    float s = 0.0;
    for (int q = lid; q < seen; q += size)
    {
        const vec4 e = exp(vec4(buffer_ld4(x_data, base + q)) * p.scale - m);
        const vec4 w = mix(vec4(0.0), e, lessThan(q * 4 + lane, ivec4(visible)));
        s += (w.x + w.y) + (w.z + w.w);
    }
    s = rows_sum(s);
    const float inv = visible > 0 ? 1.0 / s : 0.0;

    for (int q = lid; q < quads; q += size)
    {
        vec4 e = vec4(0.0);
        if (q < seen)
        {
            e = exp(vec4(buffer_ld4(x_data, base + q)) * p.scale - m) * inv;
            e = mix(vec4(0.0), e, lessThan(q * 4 + lane, ivec4(visible)));
        }
        buffer_st4(y_data, base + q, afpvec4(e));
    }
}
#else
void main()
{
    const int row = rows_row();
    if (row >= p.rows) return;
    const int lid = int(gl_LocalInvocationID.x), size = int(gl_WorkGroupSize.x);
    const int base = row * p.cols;
    const int visible = causal == 1 ? clamp(row % p.block + p.offset + 1, 0, p.cols) : p.cols;

    float m = rows_neg_inf();
    for (int c = lid; c < visible; c += size)
        m = max(m, float(buffer_ld1(x_data, base + c)) * p.scale);
    m = rows_max(m);

    float s = 0.0;
    for (int c = lid; c < visible; c += size)
        s += exp(float(buffer_ld1(x_data, base + c)) * p.scale - m);
    s = rows_sum(s);
    // s >= 1 where a column is visible (the largest term is e^0).
    const float inv = visible > 0 ? 1.0 / s : 0.0;

    for (int c = lid; c < p.cols; c += size)
    {
        float e = 0.0;
        if (c < visible) e = exp(float(buffer_ld1(x_data, base + c)) * p.scale - m) * inv;
        buffer_st1(y_data, base + c, afp(e));
    }
}
#endif
