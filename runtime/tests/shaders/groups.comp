#version 450
// Reads gl_NumWorkGroups: its metadata must say so.
layout (local_size_x_id = 233) in;
layout (binding = 0) buffer X { float x[]; };
void main() {
    uint i = gl_GlobalInvocationID.x;
    if (i < uint(x.length())) x[i] = float(gl_NumWorkGroups.x);
}
