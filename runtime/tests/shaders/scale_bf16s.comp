#version 450
#extension GL_EXT_shader_16bit_storage : require
layout (local_size_x_id = 233) in;
layout (constant_id = 0) const float c = 0.0;
layout (push_constant) uniform P { float a; float b; uint n; } p;
float bf(uint h) { return uintBitsToFloat(h << 16); }
// Round to nearest even, as the runtime does on upload.
uint tobf(float f) { uint u = floatBitsToUint(f); return (u + 0x7fffu + ((u >> 16) & 1u)) >> 16; }
layout (binding = 0) readonly buffer X { uint16_t x[]; };
layout (binding = 1) writeonly buffer Y { uint16_t y[]; };
void main() {
    uint i = gl_GlobalInvocationID.x;
    if (i >= p.n) return;
    y[i] = uint16_t(tobf(bf(uint(x[i])) * p.a + p.b + c));
}
