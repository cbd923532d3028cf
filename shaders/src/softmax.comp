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

layout (binding = 0) readonly buffer x_blob { sfp x_data[]; };
layout (binding = 1) writeonly buffer y_blob { sfp y_data[]; };

layout (push_constant) uniform parameter {
    int rows; int cols; int block; int offset; float scale;
} p;

#include "rows.glsl"

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
