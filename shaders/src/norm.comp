#version 450
#if ncnn_subgroup_basic && ncnn_subgroup_arithmetic
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#endif
// Normalization over groups of values, channels-last: x is [batch, hw, c] with c channels in
// `groups` groups of cpg = c / groups; group (n, g) is the hw · cpg values x[n][·][g·cpg ..
// (g+1)·cpg]. One workgroup per group (grid [workgroup, batch · groups, 1]).
// - layer norm: hw 1, groups 1 (a group is a row of c);
// - group norm: NHWC images, hw = h · w;
// - RMS norm (`rms`): layer norm's groups, divided by sqrt(mean(x²) + eps), no centring.
// y = (x - mean) / sqrt(var + eps) · gamma[channel] + beta[channel], gamma with `gamma_term`,
// beta with `beta_term`.
//
// fp32 throughout, two passes for the variance: the first sums x - x0 (x0 the group's first
// value: x - x0 is exact where x and x0 are within a factor 2, so data offset by a large mean
// loses nothing), giving d = mean - x0; the second sums ((x - x0) - d)², never the difference
// of two large sums; the write computes the same centred value again. Values are read one at
// a time (any c, any row length).
//
// In place (x and y one buffer) is safe: the passes' reads finish at the reductions' barriers,
// and the write pass's invocation reads exactly the values it then overwrites.
layout (local_size_x = 256) in;

layout (constant_id = 0) const int rms = 0;
layout (constant_id = 1) const int gamma_term = 0;
layout (constant_id = 2) const int beta_term = 0;

#if VKPRISM_QUADS
// norm4: rows of quads (layer and RMS norm, c a multiple of 4), every operand read as quads.
layout (binding = 0) readonly buffer x_blob { sfpvec4 x_data[]; };
layout (binding = 1) readonly buffer gamma_blob { sfpvec4 gamma_data[]; };
layout (binding = 2) readonly buffer beta_blob { sfpvec4 beta_data[]; };
layout (binding = 3) writeonly buffer y_blob { sfpvec4 y_data[]; };
#else
layout (binding = 0) readonly buffer x_blob { sfp x_data[]; };
layout (binding = 1) readonly buffer gamma_blob { sfp gamma_data[]; };
layout (binding = 2) readonly buffer beta_blob { sfp beta_data[]; };
layout (binding = 3) writeonly buffer y_blob { sfp y_data[]; };
#endif

layout (push_constant) uniform parameter {
    int batch; int hw; int c; int groups; float eps;
} p;

#include "rows.glsl"

#if VKPRISM_QUADS
// One row of c values (batch rows, hw 1, one group) as c / 4 quads: the same passes as below.
void main()
{
    const int row = rows_row();
    if (row >= p.batch) return;
    const int lid = int(gl_LocalInvocationID.x), size = int(gl_WorkGroupSize.x);
    const int quads = p.c / 4, base = row * quads;
    float x0 = 0.0;
    float d = 0.0;
    if (rms == 0)
    {
        x0 = vec4(buffer_ld4(x_data, base)).x;
        float s = 0.0;
        for (int e = lid; e < quads; e += size)
        {
            const vec4 v = vec4(buffer_ld4(x_data, base + e)) - x0;
            s += (v.x + v.y) + (v.z + v.w);
        }
        d = rows_sum(s) / float(p.c);
    }
    float q = 0.0;
    for (int e = lid; e < quads; e += size)
    {
        const vec4 v = (vec4(buffer_ld4(x_data, base + e)) - x0) - d;
        q += dot(v, v);
    }
    const float r = 1.0 / sqrt(rows_sum(q) / float(p.c) + p.eps);
    for (int e = lid; e < quads; e += size)
    {
        vec4 v = ((vec4(buffer_ld4(x_data, base + e)) - x0) - d) * r;
        if (gamma_term == 1) v *= vec4(buffer_ld4(gamma_data, e));
        if (beta_term == 1) v += vec4(buffer_ld4(beta_data, e));
        buffer_st4(y_data, base + e, afpvec4(v));
    }
}
#else
void main()
{
    const int group = rows_row();
    if (group >= p.batch * p.groups) return;
    const int n = group / p.groups, g = group % p.groups;
    const int cpg = p.c / p.groups;
    const int len = p.hw * cpg;
    const int lid = int(gl_LocalInvocationID.x), size = int(gl_WorkGroupSize.x);
    // Element e of the group: pixel e / cpg, channel g · cpg + e % cpg; one pixel (layer and
    // RMS norm) needs no division.
    const int base = n * p.hw * p.c + g * cpg;
#define AT(e) (p.hw == 1 ? base + (e) : base + ((e) / cpg) * p.c + (e) % cpg)

    float x0 = 0.0;
    float d = 0.0;
    if (rms == 0)
    {
        x0 = float(buffer_ld1(x_data, base));
        float s = 0.0;
        for (int e = lid; e < len; e += size)
            s += float(buffer_ld1(x_data, AT(e))) - x0;
        d = rows_sum(s) / float(len);
    }
    float q = 0.0;
    for (int e = lid; e < len; e += size)
    {
        const float v = (float(buffer_ld1(x_data, AT(e))) - x0) - d;
        q += v * v;
    }
    const float r = 1.0 / sqrt(rows_sum(q) / float(len) + p.eps);

    for (int e = lid; e < len; e += size)
    {
        const int at = AT(e);
        const int ch = g * cpg + e % cpg;
        float v = ((float(buffer_ld1(x_data, at)) - x0) - d) * r;
        if (gamma_term == 1) v *= float(buffer_ld1(gamma_data, ch));
        if (beta_term == 1) v += float(buffer_ld1(beta_data, ch));
        buffer_st1(y_data, at, afp(v));
    }
}
#endif
