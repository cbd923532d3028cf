#version 450
// Symmetric int8 quantization with per-tensor or per-channel scales.
// - DEQUANT 0: y = clamp(roundEven(x / s), -127, 127), x float (`sfp`), y int8 (`sint8`);
// - DEQUANT 1: y = q · s, x int8, y float.
// s is the push constant `scale` (CHANNELS 0) or scale_data[channel] (CHANNELS 1, fp32), the
// channel of element i being (i / inner) % axis: x viewed as [outer, axis, inner].
// Rounding is half to even (roundEven: the one rounding GLSL defines exactly). Every
// invocation owns 4 consecutive elements (one packed word in int8p, which only binds tensors of
// a multiple of 4 elements), a grid apart (the grid capped at 65,535 workgroups).
// WIDE (DEQUANT and CHANNELS only): the 4 read as one word and written as one quad, n and
// inner multiples of 4 (the quad shares its channel).
layout (local_size_x = 256) in;

#if WIDE
#if NCNN_int8_packed
layout (binding = 0) readonly buffer x_blob { uint x_data[]; };
#define X_QUAD(w) vec4(unpackInt4x8(int(x_data[w])))
#else
layout (binding = 0) readonly buffer x_blob { sint8vec4 x_data[]; };
#define X_QUAD(w) vec4(ivec4(x_data[w]))
#endif
layout (binding = 1) writeonly buffer y_blob { sfpvec4 y_data[]; };
#elif DEQUANT
layout (binding = 0) readonly buffer x_blob { sint8 x_data[]; };
layout (binding = 1) writeonly buffer y_blob { sfp y_data[]; };
#else
layout (binding = 0) readonly buffer x_blob { sfp x_data[]; };
layout (binding = 1) writeonly buffer y_blob { sint8 y_data[]; };
#endif
#if CHANNELS
layout (binding = 2) readonly buffer scale_blob { float scale_data[]; };
#endif

layout (push_constant) uniform parameter { int n; int axis; int inner; float scale; } p;

float scale_of(int i)
{
#if CHANNELS
    return scale_data[(i / p.inner) % p.axis];
#else
    return p.scale;
#endif
}

#if !DEQUANT
int quantized(int i)
{
    const float q = roundEven(float(buffer_ld1(x_data, i)) / scale_of(i));
    return int(clamp(q, -127.0, 127.0));
}
#endif

#if WIDE
void main()
{
    const uint grid = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
    for (uint w = gl_GlobalInvocationID.x; w < uint(p.n / 4); w += grid)
        buffer_st4(y_data, int(w), afpvec4(X_QUAD(w) * scale_of(4 * int(w))));
}
#else
void main()
{
    const uint grid = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
    const uint words = uint((p.n + 3) / 4);
    for (uint w = gl_GlobalInvocationID.x; w < words; w += grid)
    {
        const int i = int(w) * 4;
        const int m = min(4, p.n - i);
#if DEQUANT
        for (int k = 0; k < m; k++)
        {
            buffer_st1(y_data, i + k, afp(float(i8buffer_ld1(x_data, i + k)) * scale_of(i + k)));
        }
#elif NCNN_int8_packed
        // A whole word: only this invocation writes it (m is 4: n is a multiple of 4 here).
        y_data[w] = packInt4x8(ivec4(quantized(i), quantized(i + 1), quantized(i + 2), quantized(i + 3)));
#else
        for (int k = 0; k < m; k++)
        {
            i8buffer_st1(y_data, i + k, quantized(i + k));
        }
#endif
    }
}
#endif
