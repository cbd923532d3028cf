#version 450
// y = x, one vec4 per invocation, copied in storage precision (no round trip through arithmetic).
layout (binding = 0) readonly buffer x_blob { sfpvec4 x_data[]; };
layout (binding = 1) writeonly buffer y_blob { sfpvec4 y_data[]; };
layout (push_constant) uniform parameter { int n; } p;
void main() {
    const int i = int(gl_GlobalInvocationID.x);
    if (i >= p.n) return;
    buffer_cp4(y_data, i, x_data, i);
}
