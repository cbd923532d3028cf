#version 450
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
layout (local_size_x_id = 233) in;
layout (constant_id = 0) const float c = 0.0;
layout (push_constant) uniform P { float a; float b; uint n; } p;
layout (binding = 0) readonly buffer X { uint x[]; };
layout (binding = 1) writeonly buffer Y { uint y[]; };
void main() {
    uint i = gl_GlobalInvocationID.x;
    if (2u * i >= p.n) return;
    f16vec2 v = unpackFloat2x16(x[i]);
    y[i] = packFloat2x16(v * float16_t(p.a) + float16_t(p.b + c));
}
