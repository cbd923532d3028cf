// Plain GLSL, precompiled to saxpy.spv for tests/parity.rs (`bytes:`); rebuild with
//   .tools/glslang/glslangValidator -V --target-env vulkan1.1 -o tests/parity/saxpy.spv tests/parity/saxpy.comp
#version 450
layout (local_size_x_id = 233) in;
layout (constant_id = 0) const float a = 2.0;
layout (binding = 0) readonly buffer x_blob { float x[]; };
layout (binding = 1) buffer y_blob { float y[]; };
layout (push_constant) uniform parameter { int n; float b; } p;
void main() {
    int i = int(gl_GlobalInvocationID.x);
    if (i >= p.n) return;
    y[i] = a * x[i] + y[i] + p.b;
}
