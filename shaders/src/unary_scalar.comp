#version 450
// y = f(x) over single elements, for any length `p.n` (unary.comp needs a multiple of 4): each
// invocation takes 4 consecutive elements (fewer at the end), a grid apart.
layout (constant_id = 0) const int op = 0;

layout (binding = 0) readonly buffer x_blob { sfp x_data[]; };
layout (binding = 1) writeonly buffer y_blob { sfp y_data[]; };

layout (push_constant) uniform parameter { int n; float a; float b; } p;

#include "unary_f.glsl"

void main()
{
    const int grid = int(gl_NumWorkGroups.x * gl_WorkGroupSize.x);
    const int quads = (p.n + 3) / 4;
    for (int q = int(gl_GlobalInvocationID.x); q < quads; q += grid) {
        const int i = 4 * q;
        const int m = min(4, p.n - i);
        vec4 v = vec4(0.0);
        for (int k = 0; k < m; k++) v[k] = float(buffer_ld1(x_data, i + k));
        const vec4 r = unary_f(v);
        for (int k = 0; k < m; k++) buffer_st1(y_data, i + k, afp(r[k]));
    }
}
