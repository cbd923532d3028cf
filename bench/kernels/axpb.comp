#version 450
// y = x * scale + bias, one vec4 per invocation.
layout (binding = 0) readonly buffer x_blob { sfpvec4 x_data[]; };
layout (binding = 1) writeonly buffer y_blob { sfpvec4 y_data[]; };
layout (push_constant) uniform parameter { int n; float scale; float bias; } p;
void main() {
    const int i = int(gl_GlobalInvocationID.x);
    if (i >= p.n) return;
    afpvec4 v = buffer_ld4(x_data, i);
    buffer_st4(y_data, i, v * afp(p.scale) + afp(p.bias));
}
