#version 450
#if ncnn_subgroup_basic && ncnn_subgroup_arithmetic
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#endif
// Dynamic symmetric int8 quantization of each row of x ([rows, cols], cols a multiple of 4):
// the row's scale s = max |x| / 127 (1 for a row of zeros) into scale_data[row], and
// y = clamp(roundEven(x / s), -127, 127). One workgroup per row (rows over grid y and z,
// rows.glsl); each invocation writes whole words of four int8 (the packed format's unit).
layout (local_size_x = 256) in;

layout (binding = 0) readonly buffer x_blob { sfp x_data[]; };
layout (binding = 1) writeonly buffer y_blob { sint8 y_data[]; };
layout (binding = 2) writeonly buffer scale_blob { float scale_data[]; };

layout (push_constant) uniform parameter { int rows; int cols; } p;

#include "rows.glsl"

void main()
{
    const int row = rows_row();
    if (row >= p.rows) return;
    const int lid = int(gl_LocalInvocationID.x), size = int(gl_WorkGroupSize.x);
    const int base = row * p.cols;
    float big = 0.0;
    for (int c = lid; c < p.cols; c += size)
        big = max(big, abs(float(buffer_ld1(x_data, base + c))));
    big = rows_max(big);
    const float s = big > 0.0 ? big / 127.0 : 1.0;
    if (lid == 0) scale_data[row] = s;
    for (int w = lid; w < p.cols / 4; w += size)
    {
        const int i = base + 4 * w;
        ivec4 q;
        for (int k = 0; k < 4; k++)
            q[k] = int(clamp(roundEven(float(buffer_ld1(x_data, i + k)) / s), -127.0, 127.0));
#if NCNN_int8_packed
        y_data[i / 4] = packInt4x8(q);
#else
        for (int k = 0; k < 4; k++) i8buffer_st1(y_data, i + k, q[k]);
#endif
    }
}
