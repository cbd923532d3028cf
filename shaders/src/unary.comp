#version 450
// y = f(x) over vec4s (unary_f.glsl's `op`); `p.n` counts vec4s. Any grid covers all n:
// invocation g of G dispatched takes vec4s g, g + G, g + 2G, ..., two per loop (both loads in
// flight before either store). y may be x (each vec4 is read before it is written, by the
// invocation that writes it).
layout (constant_id = 0) const int op = 0;

layout (binding = 0) readonly buffer x_blob { sfpvec4 x_data[]; };
layout (binding = 1) writeonly buffer y_blob { sfpvec4 y_data[]; };

layout (push_constant) uniform parameter { int n; float a; float b; } p;

#include "unary_f.glsl"

void main()
{
    const int grid = int(gl_NumWorkGroups.x * gl_WorkGroupSize.x);
    for (int i = int(gl_GlobalInvocationID.x); i < p.n; i += 2 * grid) {
        const int j = i + grid;
        const vec4 v = vec4(buffer_ld4(x_data, i));
        vec4 w = vec4(0.0);
        if (j < p.n) w = vec4(buffer_ld4(x_data, j));
        buffer_st4(y_data, i, afpvec4(unary_f(v)));
        if (j < p.n) buffer_st4(y_data, j, afpvec4(unary_f(w)));
    }
}
