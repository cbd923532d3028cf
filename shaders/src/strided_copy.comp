#version 450
// The data-movement copy, one element per loop step over a domain of up to 6 dimensions
// (outermost first, the first `6 - rank` unused), each invocation a grid apart (the grid is
// capped at 65,535 workgroups; any count is covered).
// - PAD 0 (`strided_copy`): y[dst_off + Σ c·dst_stride] = x[src_off + Σ c·src_stride] for
//   every coordinate c of the domain `dims`: permute, slice and concat are this copy with
//   their strides.
// - PAD 1 (`pad_copy`): y is the contiguous domain `dims`; y[c] = x[src_off + Σ (c - before)·
//   src_stride] where 0 <= c - before < src_dims along every dimension, else `fill`.
// Values are copied as stored (buffer_cp1): bit-exact in every variant.
layout (local_size_x = 256) in;

layout (binding = 0) readonly buffer x_blob { sfp x_data[]; };
layout (binding = 1) writeonly buffer y_blob { sfp y_data[]; };

#if PAD
layout (push_constant) uniform parameter {
    int n; int rank; int src_off; float fill;
    int dims[6]; int src_stride[6]; int before[6]; int src_dims[6];
} p;
#else
layout (push_constant) uniform parameter {
    int n; int rank; int src_off; int dst_off;
    int dims[6]; int src_stride[6]; int dst_stride[6];
} p;
#endif

void main()
{
    const uint grid = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
    for (uint i = gl_GlobalInvocationID.x; i < uint(p.n); i += grid)
    {
        int rest = int(i);
        int src = p.src_off;
#if PAD
        bool inside = true;
#else
        int dst = p.dst_off;
#endif
        for (int d = 5; d >= 6 - p.rank; d--)
        {
            const int c = rest % p.dims[d];
            rest /= p.dims[d];
#if PAD
            const int k = c - p.before[d];
            // One unsigned comparison: a negative k wraps past any length.
            inside = inside && uint(k) < uint(p.src_dims[d]);
            src += k * p.src_stride[d];
#else
            src += c * p.src_stride[d];
            dst += c * p.dst_stride[d];
#endif
        }
#if PAD
        if (inside)
        {
            buffer_cp1(y_data, int(i), x_data, src);
        }
        else
        {
            buffer_st1(y_data, int(i), afp(p.fill));
        }
#else
        buffer_cp1(y_data, dst, x_data, src);
#endif
    }
}
