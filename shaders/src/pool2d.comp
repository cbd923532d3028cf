#version 450
// Max or average pooling of a channels-last x [batch, h, w, c] (the layout of conv2d_nhwc) into
// y [batch, outh, outw, c]: the window of kh × kw pixels at (oy · sh - ph, ox · sw - pw) for
// each output pixel and channel. `op` 0: the maximum over the window's pixels inside x (the
// padding is never the maximum); 1: the sum over the pixels inside x divided by kh · kw (the
// padding counts as zeros: PyTorch's count_include_pad, with floor-rounded output sizes every
// window lies within the padded input, so every divisor is kh · kw). fp32 in every variant.
//
// One output per invocation, a grid apart (any size); neighbouring invocations take
// neighbouring channels, so reads and writes are coalesced. POOL_VEC4 1: four channels per
// invocation, read and written as one quad (c a multiple of 4; `c` below counts quads then).
layout (local_size_x = 256) in;

layout (constant_id = 0) const int op = 0;

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

layout (push_constant) uniform parameter {
    int batch; int h; int w; int c; int outh; int outw; int kh; int kw; int sh; int sw; int ph;
    int pw;
} p;

void main()
{
    const int total = p.batch * p.outh * p.outw * p.c;
    const int grid = int(gl_NumWorkGroups.x * gl_WorkGroupSize.x);
    for (int o = int(gl_GlobalInvocationID.x); o < total; o += grid)
    {
        const int ch = o % p.c;
        const int px = o / p.c;
        const int ox = px % p.outw;
        const int oy = (px / p.outw) % p.outh;
        const int b = px / (p.outw * p.outh);
        const int y0 = oy * p.sh - p.ph, x0 = ox * p.sw - p.pw;
        T acc = T(op == 0 ? uintBitsToFloat(0xff800000u) : 0.0);
        for (int ky = max(0, -y0); ky < min(p.kh, p.h - y0); ky++)
        {
            const int row = (b * p.h + y0 + ky) * p.w;
            for (int kx = max(0, -x0); kx < min(p.kw, p.w - x0); kx++)
            {
                const T v = LD((row + x0 + kx) * p.c + ch);
                acc = op == 0 ? max(acc, v) : acc + v;
            }
        }
        if (op == 1) acc /= float(p.kh * p.kw);
        ST(o, acc);
    }
}
