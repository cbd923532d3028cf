#version 450
#include "scale_op.glsl"
layout (binding = 0) buffer blob { sfpvec4 blob_data[]; };
layout (constant_id = 0) const int n = 0;
layout (push_constant) uniform parameter { int n; float s; } p;
void main() {
    const int i = int(gl_GlobalInvocationID.x);
    if (i >= psc(n)) return;
    buffer_st4(blob_data, i, scale_op(buffer_ld4(blob_data, i), afp(p.s)));
}
