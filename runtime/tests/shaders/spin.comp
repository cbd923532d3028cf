#version 450
// A long-running kernel: every invocation runs `iterations` steps of xorshift32 (the
// fence-timeout test). llvmpipe (lavapipe) ends a shader's loops after 65535 iterations, so
// long runs come from many workgroups.
layout (local_size_x_id = 233) in;
layout (binding = 0) buffer X { uint x[]; };
layout (push_constant) uniform P { uint iterations; };
void main() {
    uint i = gl_GlobalInvocationID.x;
    uint acc = i;
    for (uint k = 0u; k < iterations; k++) {
        // xorshift32 plus the counter: nothing a compiler can fold into a closed form.
        acc ^= acc << 13;
        acc ^= acc >> 17;
        acc ^= acc << 5;
        acc += k;
    }
    x[i] = acc;
}
