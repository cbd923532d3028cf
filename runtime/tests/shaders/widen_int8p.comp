#version 450
layout (local_size_x_id = 233) in;
// Four int8 per uint (element 4i in the low byte).
layout (binding = 0) readonly buffer X { uint x[]; };
layout (binding = 1) writeonly buffer Y { int y[]; };
layout (push_constant) uniform P { uint n; } p;
void main() {
    uint i = gl_GlobalInvocationID.x;
    if (i >= p.n) return;
    int w = int(x[i / 4u]);
    y[i] = bitfieldExtract(w, int(i % 4u) * 8, 8) * 2;
}
