#version 450
// out = a op b with numpy broadcasting over vec4s (binary_f.glsl): out's innermost dim is a
// multiple of 4 along which neither a nor b is broadcast, so d3 and the strides count vec4s;
// `p.n` counts out's vec4s. Any grid covers them (a grid apart). out may be a or b when it has
// that operand's shape (each vec4 is read before it is written, by the invocation writing it).
layout (constant_id = 0) const int op = 0;
layout (constant_id = 1) const int contiguous = 0;

layout (binding = 0) readonly buffer a_blob { sfpvec4 a_data[]; };
layout (binding = 1) readonly buffer b_blob { sfpvec4 b_data[]; };
layout (binding = 2) writeonly buffer out_blob { sfpvec4 out_data[]; };

layout (push_constant) uniform parameter {
    int n; int d1; int d2; int d3;
    int a0; int a1; int a2; int a3;
    int b0; int b1; int b2; int b3;
} p;

#include "binary_f.glsl"

void main()
{
    const int grid = int(gl_NumWorkGroups.x * gl_WorkGroupSize.x);
    for (int i = int(gl_GlobalInvocationID.x); i < p.n; i += grid) {
        const ivec2 ab = operand_indices(i);
        const vec4 a = vec4(buffer_ld4(a_data, ab.x));
        const vec4 b = vec4(buffer_ld4(b_data, ab.y));
        buffer_st4(out_data, i, afpvec4(binary_f(a, b)));
    }
}
