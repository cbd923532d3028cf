#version 450
layout (local_size_x_id = 233) in;
layout (constant_id = 0) const float c = 0.0;
layout (push_constant) uniform P { float a; float b; uint n; } p;
float bf(uint h) { return uintBitsToFloat(h << 16); }
// Round to nearest even, as the runtime does on upload.
uint tobf(float f) { uint u = floatBitsToUint(f); return (u + 0x7fffu + ((u >> 16) & 1u)) >> 16; }
layout (binding = 0) readonly buffer X { uint x[]; };
layout (binding = 1) writeonly buffer Y { uint y[]; };
void main() {
    uint i = gl_GlobalInvocationID.x;
    if (2u * i >= p.n) return;
    uint w = x[i];
    uint lo = tobf(bf(w & 0xffffu) * p.a + p.b + c);
    uint hi = tobf(bf(w >> 16) * p.a + p.b + c);
    y[i] = lo | (hi << 16);
}
