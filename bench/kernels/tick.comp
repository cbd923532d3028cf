#version 450
// x = x + 1 on 64 floats: a dispatch that costs almost nothing itself (the dispatch benchmark,
// the soak test).
layout (binding = 0) buffer x_blob { float x[]; };
void main() {
    uint i = gl_GlobalInvocationID.x;
    if (i < 64u) x[i] = x[i] + 1.0;
}
