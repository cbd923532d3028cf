#version 450
// The mean over pixels of a channels-last x [batch, hw, c] per image and channel, into y
// [batch, c]: ResNet's head (7 × 7 × 2048). POOL_VEC4 1 reads four channels at a time
// (c a multiple of 4; `c` below counts vec4s then), POOL_VEC4 0 one (any c).
//
// A workgroup is gl_WorkGroupSize.x channel units (neighbouring invocations read neighbouring
// channels: coalesced) by gl_WorkGroupSize.y slices of the pixels; each invocation sums its
// slice, a tree through shared memory adds the slices. Grid [channel units, local y, batch].
// fp32 throughout.
layout (local_size_x = 64, local_size_y = 4) in;

#if POOL_VEC4
layout (binding = 0) readonly buffer x_blob { sfpvec4 x_data[]; };
layout (binding = 1) writeonly buffer y_blob { sfpvec4 y_data[]; };
#define T vec4
#define LD(i) vec4(buffer_ld4(x_data, i))
#define ST(i, v) buffer_st4(y_data, i, afpvec4(v))
#else
layout (binding = 0) readonly buffer x_blob { sfp x_data[]; };
layout (binding = 1) writeonly buffer y_blob { sfp y_data[]; };
#define T float
#define LD(i) float(buffer_ld1(x_data, i))
#define ST(i, v) buffer_st1(y_data, i, afp(v))
#endif

layout (push_constant) uniform parameter { int batch; int hw; int c; } p;

shared T slices[gl_WorkGroupSize.y][gl_WorkGroupSize.x];

void main()
{
    const int cu = int(gl_GlobalInvocationID.x);
    const int b = int(gl_WorkGroupID.z);
    const int lx = int(gl_LocalInvocationID.x), ly = int(gl_LocalInvocationID.y);
    const int ny = int(gl_WorkGroupSize.y);
    T s = T(0.0);
    if (cu < p.c)
        for (int i = ly; i < p.hw; i += ny) s += LD((b * p.hw + i) * p.c + cu);
    slices[ly][lx] = s;
    barrier();
    for (int st = 1; st < ny; st *= 2)
    {
        if ((ly & (2 * st - 1)) == 0 && ly + st < ny) slices[ly][lx] += slices[ly + st][lx];
        barrier();
    }
    if (ly == 0 && cu < p.c) ST(b * p.c + cu, slices[0][lx] / float(p.hw));
}
