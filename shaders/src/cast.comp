#version 450
// y = x converted between float formats, element by element: one side is the variant's
// storage (`sfp`), the other a fixed type FIXED (`float` or `float16_t`). TO 1: x is `sfp`,
// y FIXED; TO 0: x is FIXED, y `sfp`. Values pass through fp32 (exact for every source
// format), then round to nearest even into the destination. Four consecutive elements per loop
// step, a grid apart (the grid capped at 65,535 workgroups), their loads issued before their
// stores (one element a step left the 2-byte stores of a cast to fp16 at three quarters of
// PyTorch's speed); then the first invocations take the last n % 4 elements.
#extension GL_EXT_shader_16bit_storage : require
layout (local_size_x = 256) in;

#if TO
layout (binding = 0) readonly buffer x_blob { sfp x_data[]; };
layout (binding = 1) writeonly buffer y_blob { FIXED y_data[]; };
#define LOAD(i) float(buffer_ld1(x_data, i))
#define STORE(i, v) y_data[i] = FIXED(v)
#else
layout (binding = 0) readonly buffer x_blob { FIXED x_data[]; };
layout (binding = 1) writeonly buffer y_blob { sfp y_data[]; };
#define LOAD(i) float(x_data[i])
#define STORE(i, v) buffer_st1(y_data, i, afp(v))
#endif

layout (push_constant) uniform parameter { int n; } p;

void main()
{
    const uint grid = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
    const uint quads = uint(p.n) / 4u;
    for (uint q = gl_GlobalInvocationID.x; q < quads; q += grid)
    {
        const int i = int(4u * q);
        const vec4 v = vec4(LOAD(i), LOAD(i + 1), LOAD(i + 2), LOAD(i + 3));
        STORE(i, v.x);
        STORE(i + 1, v.y);
        STORE(i + 2, v.z);
        STORE(i + 3, v.w);
    }
    const uint tail = 4u * quads + gl_GlobalInvocationID.x;
    if (tail < uint(p.n)) STORE(int(tail), LOAD(int(tail)));
}
