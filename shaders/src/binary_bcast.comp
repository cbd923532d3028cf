#version 450
// out = a op b with numpy broadcasting over single elements, any shapes (binary_f.glsl): d3
// and the strides count elements, `p.n` counts out's elements. Any grid covers them.
layout (constant_id = 0) const int op = 0;
layout (constant_id = 1) const int contiguous = 0;

layout (binding = 0) readonly buffer a_blob { sfp a_data[]; };
layout (binding = 1) readonly buffer b_blob { sfp b_data[]; };
layout (binding = 2) writeonly buffer out_blob { sfp out_data[]; };

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
        const float a = float(buffer_ld1(a_data, ab.x));
        const float b = float(buffer_ld1(b_data, ab.y));
        buffer_st1(out_data, i, afp(binary_f(vec4(a), vec4(b)).x));
    }
}
