#version 450
// The second pass of split attention (attention.comp with `split`): each row's shares, each an
// unnormalized output o_s with its running maximum m_s and sum l_s, merged as
// o = Σ e^(m_s - M) o_s / Σ e^(m_s - M) l_s with M the largest m_s (a share that saw no key
// has m_s = -inf and weighs 0; a row whose shares saw none gives 0). One workgroup per row,
// invocations over the head dimension.
layout (local_size_x = 64) in;

layout (binding = 0) readonly buffer part_blob { float part_data[]; };
layout (binding = 1) writeonly buffer o_blob { sfp o_data[]; };

layout (push_constant) uniform parameter {
    int rows; int hq; int d; int o_stride; int splits;
} p;

const int ROWS_Y = 32768;

void main()
{
    const int row = int(gl_WorkGroupID.y) + ROWS_Y * int(gl_WorkGroupID.z);
    if (row >= p.rows) return;
    const int base = row * p.splits * (p.d + 2);
    float big = uintBitsToFloat(0xff800000u);
    for (int s = 0; s < p.splits; s++)
        big = max(big, part_data[base + s * (p.d + 2) + p.d]);
    float l = 0.0;
    for (int s = 0; s < p.splits; s++)
    {
        const float ms = part_data[base + s * (p.d + 2) + p.d];
        if (ms > uintBitsToFloat(0xff800000u))
            l += exp(ms - big) * part_data[base + s * (p.d + 2) + p.d + 1];
    }
    const float inv = l > 0.0 ? 1.0 / l : 0.0;
    // Row `row` is (query token, head): its output sits o_stride apart per token.
    const int o_at = (row / p.hq) * p.o_stride + (row % p.hq) * p.d;
    for (int e = int(gl_LocalInvocationID.x); e < p.d; e += int(gl_WorkGroupSize.x))
    {
        float a = 0.0;
        for (int s = 0; s < p.splits; s++)
        {
            const float ms = part_data[base + s * (p.d + 2) + p.d];
            if (ms > uintBitsToFloat(0xff800000u))
                a += exp(ms - big) * part_data[base + s * (p.d + 2) + e];
        }
        buffer_st1(o_data, o_at + e, afp(a * inv));
    }
}
