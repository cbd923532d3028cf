#version 450
// x[i] = value for i < n, trusting n: writes past the end of a too-short tensor (the
// robustBufferAccess test).
layout (local_size_x_id = 233) in;
layout (binding = 0) buffer X { float x[]; };
layout (push_constant) uniform P { uint n; float value; };
void main() {
    uint i = gl_GlobalInvocationID.x;
    if (i < n) x[i] = value;
}
