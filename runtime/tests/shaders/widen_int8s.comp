#version 450
#extension GL_EXT_shader_8bit_storage : require
layout (local_size_x_id = 233) in;
layout (binding = 0) readonly buffer X { int8_t x[]; };
layout (binding = 1) writeonly buffer Y { int y[]; };
layout (push_constant) uniform P { uint n; } p;
void main() {
    uint i = gl_GlobalInvocationID.x;
    if (i >= p.n) return;
    y[i] = int(x[i]) * 2;
}
