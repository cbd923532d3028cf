#version 450
layout (local_size_x_id = 233) in;
layout (constant_id = 0) const float c = 0.0;
layout (push_constant) uniform P { float a; float b; uint n; } p;
layout (binding = 0) uniform sampler1D x;
layout (binding = 1, r16f) writeonly uniform image1D y;
void main() {
    int i = int(gl_GlobalInvocationID.x);
    if (uint(i) >= p.n) return;
    imageStore(y, i, vec4(texelFetch(x, i, 0).r * p.a + p.b + c));
}
