#version 450
// A gated linear unit over interleaved pairs: y[i] = act(x[2i]) · x[2i + 1] for i < p.n, x
// holding each output's gate and up values side by side (a SwiGLU MLP's two projections made
// by one GEMM over their interleaved weight rows; x [.., 2m] gives y [.., m]). The activation
// is activation.glsl's (constant `activation`), in fp32 in every variant. One output per
// invocation, a grid apart.
layout (local_size_x = 256) in;

layout (constant_id = 0) const int activation = 0;

layout (binding = 0) readonly buffer x_blob { sfp x_data[]; };
layout (binding = 1) writeonly buffer y_blob { sfp y_data[]; };

layout (push_constant) uniform parameter { int n; float slope; } p;

#include "activation.glsl"

void main()
{
    const int grid = int(gl_NumWorkGroups.x * gl_WorkGroupSize.x);
    for (int i = int(gl_GlobalInvocationID.x); i < p.n; i += grid)
    {
        const float gate = float(buffer_ld1(x_data, 2 * i));
        const float up = float(buffer_ld1(x_data, 2 * i + 1));
        buffer_st1(y_data, i, afp(activate(vec4(gate)).x * up));
    }
}
