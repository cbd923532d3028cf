// Workgroup-wide reductions for the row kernels (reduce, softmax, norm): every invocation of
// the workgroup passes one fp32 value, every invocation gets the reduction of all of them. A
// tree through shared memory (log2 of the workgroup's size steps, any size, not only powers of
// two), so a sum of n values adds pairs of partial sums of about equal size: its rounding error
// grows with log n, not n. Each call starts with a barrier, so calls may follow one another
// (the previous call's readers are done before the scratch is overwritten). Must be reached by
// the whole workgroup (uniform control flow).
shared float rows_value[gl_WorkGroupSize.x];
shared int rows_index[gl_WorkGroupSize.x];

float rows_sum(float v)
{
    const uint lid = gl_LocalInvocationID.x;
    barrier();
    rows_value[lid] = v;
    barrier();
    for (uint s = 1; s < gl_WorkGroupSize.x; s *= 2)
    {
        if ((lid & (2 * s - 1)) == 0 && lid + s < gl_WorkGroupSize.x)
            rows_value[lid] += rows_value[lid + s];
        barrier();
    }
    return rows_value[0];
}

float rows_max(float v)
{
    const uint lid = gl_LocalInvocationID.x;
    barrier();
    rows_value[lid] = v;
    barrier();
    for (uint s = 1; s < gl_WorkGroupSize.x; s *= 2)
    {
        if ((lid & (2 * s - 1)) == 0 && lid + s < gl_WorkGroupSize.x)
            rows_value[lid] = max(rows_value[lid], rows_value[lid + s]);
        barrier();
    }
    return rows_value[0];
}

float rows_min(float v)
{
    const uint lid = gl_LocalInvocationID.x;
    barrier();
    rows_value[lid] = v;
    barrier();
    for (uint s = 1; s < gl_WorkGroupSize.x; s *= 2)
    {
        if ((lid & (2 * s - 1)) == 0 && lid + s < gl_WorkGroupSize.x)
            rows_value[lid] = min(rows_value[lid], rows_value[lid + s]);
        barrier();
    }
    return rows_value[0];
}

// The index of the largest value (the first such index on ties: a pair keeps the left one
// unless the right is strictly larger or equal with a smaller index); -1 where every value
// passed is -inf with index -1.
int rows_argmax(float v, int index)
{
    const uint lid = gl_LocalInvocationID.x;
    barrier();
    rows_value[lid] = v;
    rows_index[lid] = index;
    barrier();
    for (uint s = 1; s < gl_WorkGroupSize.x; s *= 2)
    {
        if ((lid & (2 * s - 1)) == 0 && lid + s < gl_WorkGroupSize.x)
        {
            const float a = rows_value[lid], b = rows_value[lid + s];
            const int ia = rows_index[lid], ib = rows_index[lid + s];
            if (ib >= 0 && (ia < 0 || b > a || (b == a && ib < ia)))
            {
                rows_value[lid] = b;
                rows_index[lid] = ib;
            }
        }
        barrier();
    }
    return rows_index[0];
}

// -inf, the identity of max.
float rows_neg_inf()
{
    return uintBitsToFloat(0xff800000u);
}
