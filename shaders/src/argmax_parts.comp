#version 450
#if ncnn_subgroup_basic && ncnn_subgroup_arithmetic
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#endif
// The second pass of a long row's argmax taken in parts: each row of x [rows, parts · len] has
// its parts' own argmax in part_index [rows, parts] (reduce.comp's argmax over x viewed as
// [rows · parts, len], an index within its part); the row's is the index of the largest of
// those parts' values, the first on ties (a part's index is its first, and parts come in
// order, so the smallest of the row). One workgroup a row (the grid's y and z, rows.glsl).
// With GUMBEL, the second pass of a draw (reduce.comp's): a value is x / T plus the same noise
// the first pass added to it (gumbel.glsl).
layout (local_size_x = 256) in;

layout (binding = 0) readonly buffer x_blob { sfp x_data[]; };
layout (binding = 1) readonly buffer part_blob { int part_data[]; };
layout (binding = 2) writeonly buffer out_blob { int out_data[]; };

#if GUMBEL
layout (binding = 3) readonly buffer seed_blob { uint seed_data[]; };

layout (push_constant) uniform parameter { int rows; int parts; int len; float inv_temperature; } p;
#include "gumbel.glsl"
#else
layout (push_constant) uniform parameter { int rows; int parts; int len; } p;
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

void main()
{
    const int row = rows_row();
    if (row >= p.rows) return;
    const int lid = int(gl_LocalInvocationID.x), size = int(gl_WorkGroupSize.x);
    const int base = row * p.parts * p.len;
    float acc = rows_neg_inf();
    int best = -1;
    for (int k = lid; k < p.parts; k += size)
    {
        const int index = k * p.len + part_data[row * p.parts + k];
        const float v = load(base + index);
        if (best < 0 || v > acc)
        {
            acc = v;
            best = index;
        }
    }
    best = rows_argmax(acc, best);
    if (lid == 0) out_data[row] = best;
}
