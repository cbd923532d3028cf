#version 450
// x = x + 1 on 64 floats: a dispatch that costs almost nothing itself.
layout (local_size_x_id = 233) in;
layout (binding = 0) buffer X { float x[]; };
void main() {
    uint i = gl_GlobalInvocationID.x;
    if (i < 64u) x[i] = x[i] + 1.0;
}
