#version 450
#extension GL_EXT_shader_8bit_storage : require
#extension GL_EXT_shader_explicit_arithmetic_types_int8 : require
layout (local_size_x_id = 233) in;
layout (binding = 0) readonly buffer X { int8_t x[]; };
layout (binding = 1) writeonly buffer Y { int y[]; };
layout (push_constant) uniform P { uint n; } p;
void main() {
    uint i = gl_GlobalInvocationID.x;
    if (i >= p.n) return;
    int8_t v = x[i] >> int8_t(1);   // 8-bit arithmetic
    y[i] = int(v) * 4 + (int(x[i]) & 1) * 2;
}
