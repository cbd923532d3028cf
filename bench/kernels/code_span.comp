#version 450
// A kernel whose cost is the length of its code: `N` dependent multiply-adds, each with its own
// constant and unrolled, over nothing read; a value is written only where the chain's result is
// impossible, so no store happens but the compiler keeps the chain. Run before another kernel
// it leaves every SM's instruction caches holding N instructions of its code and nothing else
// (the attention probe's `code` step).
#extension GL_EXT_control_flow_attributes : require
layout (constant_id = 0) const int N = 4096;
// Where the constants start: kernels of one N and different SEEDs hold different code.
layout (constant_id = 1) const int SEED = 0;
layout (binding = 0) writeonly buffer x_blob { sfp x_data[]; };
layout (push_constant) uniform parameter { float a; } p;
void main()
{
    float x = float(gl_LocalInvocationID.x);
    [[unroll]] for (int i = 0; i < N; i++)
        x = x * p.a + float(SEED + i);
    if (x == -1.0)
        buffer_st1(x_data, int(gl_GlobalInvocationID.x), afp(x));
}
