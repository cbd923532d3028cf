#version 450
#extension GL_EXT_control_flow_attributes : require
// y = f(x) over vec4s (unary_f.glsl's `op`); `p.n` counts vec4s. Any grid covers all n:
// invocation g of G dispatched takes vec4s g, g + G, g + 2G, ..., QUADS per loop (all loaded
// before any is stored: an unrolled loop over an array, which NVIDIA's driver streams faster
// than the same loads written out one by one). y may be x (each vec4 is read before it is
// written, by the invocation that writes it).
layout (constant_id = 0) const int op = 0;
const int QUADS = 2;

layout (binding = 0) readonly buffer x_blob { sfpvec4 x_data[]; };
layout (binding = 1) writeonly buffer y_blob { sfpvec4 y_data[]; };

layout (push_constant) uniform parameter { int n; float a; float b; } p;

#include "unary_f.glsl"

void main()
{
    const int grid = int(gl_NumWorkGroups.x * gl_WorkGroupSize.x);
    for (int i = int(gl_GlobalInvocationID.x); i < p.n; i += QUADS * grid) {
        vec4 v[QUADS];
        [[unroll]] for (int u = 0; u < QUADS; u++)
            if (i + u * grid < p.n) v[u] = vec4(buffer_ld4(x_data, i + u * grid));
        [[unroll]] for (int u = 0; u < QUADS; u++)
            if (i + u * grid < p.n) buffer_st4(y_data, i + u * grid, afpvec4(unary_f(v[u])));
    }
}
