#version 450
layout (constant_id = 0) const int tile = 4;
layout (binding = 0) buffer x_blob { float x_data[]; };
layout (push_constant) uniform parameter { int n; float factor; } p;
void main() {
    const int i = int(gl_GlobalInvocationID.x) * tile;
    if (i >= p.n) return;
#if TWICE
    x_data[i] *= p.factor * p.factor;
#else
    x_data[i] *= p.factor;
#endif
}
