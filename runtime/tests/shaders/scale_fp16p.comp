#version 450
layout (local_size_x_id = 233) in;
layout (constant_id = 0) const float c = 0.0;
layout (push_constant) uniform P { float a; float b; uint n; } p;
// Two elements per invocation, packed in one uint (element 2i in the low half).
layout (binding = 0) readonly buffer X { uint x[]; };
layout (binding = 1) writeonly buffer Y { uint y[]; };
void main() {
    uint i = gl_GlobalInvocationID.x;
    if (2u * i >= p.n) return;
    y[i] = packHalf2x16(unpackHalf2x16(x[i]) * p.a + p.b + c);
}
