#version 450
layout (local_size_x_id = 233) in;
layout (constant_id = 0) const float c = 0.0;
layout (push_constant) uniform P { float a; float b; uint n; } p;
layout (binding = 0) readonly buffer X { float x[]; };
layout (binding = 1) writeonly buffer Y { float y[]; };
void main() {
    uint i = gl_GlobalInvocationID.x;
    if (i >= p.n) return;
    y[i] = x[i] * p.a + p.b + c;
}
