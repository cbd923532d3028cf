// Workgroup-wide reductions for the row kernels (reduce, softmax, norm): every invocation of
// the workgroup passes one fp32 value, every invocation gets the reduction of all of them. A
// tree through shared memory (log2 of the workgroup's size steps, any size, not only powers of
// two), so a sum of n values adds pairs of partial sums of about equal size: its rounding error
// grows with log n, not n. Each call starts with a barrier, so calls may follow one another
// (the previous call's readers are done before the scratch is overwritten). Must be reached by
// the whole workgroup (uniform control flow).
//
// Where the device has subgroup arithmetic (`_sg` variants: the kernels enable
// GL_KHR_shader_subgroup_arithmetic under the same `#if`), each subgroup reduces its values in
// registers, its first invocation writes one partial per subgroup, and the first subgroup
// reduces the partials (a stride of the subgroup's size, so any number of them): two barriers
// instead of log2 of the workgroup's size. Partial subgroups (a workgroup that is not a
// multiple of the subgroup) reduce their active invocations only.

// -inf, the identity of max.
float rows_neg_inf()
{
    return uintBitsToFloat(0xff800000u);
}

shared float rows_value[gl_WorkGroupSize.x];
shared int rows_index[gl_WorkGroupSize.x];

#if ncnn_subgroup_basic && ncnn_subgroup_arithmetic
shared float rows_total;
shared int rows_total_index;

// The subgroups of the workgroup: gl_NumSubgroups, but at least the workgroup's size over the
// subgroup's rounded up (lavapipe counts a partly filled last subgroup out of gl_NumSubgroups,
// though it has a gl_SubgroupID and writes its partial).
uint rows_subgroups()
{
    return max(gl_NumSubgroups, (gl_WorkGroupSize.x + gl_SubgroupSize - 1) / gl_SubgroupSize);
}

// 0 sum, 1 max, 2 min.
float rows_reduce(float v, int kind)
{
    barrier();
    v = kind == 0 ? subgroupAdd(v) : (kind == 1 ? subgroupMax(v) : subgroupMin(v));
    if (subgroupElect()) rows_value[gl_SubgroupID] = v;
    barrier();
    if (gl_SubgroupID == 0)
    {
        float w = kind == 0 ? 0.0 : (kind == 1 ? rows_neg_inf() : -rows_neg_inf());
        for (uint k = gl_SubgroupInvocationID; k < rows_subgroups(); k += gl_SubgroupSize)
        {
            const float u = rows_value[k];
            w = kind == 0 ? w + u : (kind == 1 ? max(w, u) : min(w, u));
        }
        w = kind == 0 ? subgroupAdd(w) : (kind == 1 ? subgroupMax(w) : subgroupMin(w));
        if (subgroupElect()) rows_total = w;
    }
    barrier();
    return rows_total;
}

float rows_sum(float v)
{
    return rows_reduce(v, 0);
}

float rows_max(float v)
{
    return rows_reduce(v, 1);
}

float rows_min(float v)
{
    return rows_reduce(v, 2);
}

// The subgroup's largest value and its smallest index among the invocations holding it (index
// -1: nothing held); returns the value, sets `index`.
float rows_subgroup_argmax(float v, inout int index)
{
    const float m = subgroupMax(index >= 0 ? v : rows_neg_inf());
    const int i = subgroupMin(index >= 0 && v == m ? index : 0x7fffffff);
    index = i == 0x7fffffff ? -1 : i;
    return m;
}

int rows_argmax(float v, int index)
{
    barrier();
    v = rows_subgroup_argmax(v, index);
    if (subgroupElect())
    {
        rows_value[gl_SubgroupID] = v;
        rows_index[gl_SubgroupID] = index;
    }
    barrier();
    if (gl_SubgroupID == 0)
    {
        float w = rows_neg_inf();
        int wi = -1;
        for (uint k = gl_SubgroupInvocationID; k < rows_subgroups(); k += gl_SubgroupSize)
        {
            const float u = rows_value[k];
            const int ui = rows_index[k];
            if (ui >= 0 && (wi < 0 || u > w || (u == w && ui < wi)))
            {
                w = u;
                wi = ui;
            }
        }
        rows_subgroup_argmax(w, wi);
        if (subgroupElect()) rows_total_index = wi;
    }
    barrier();
    return rows_total_index;
}
#else
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
#endif

// Rows are spread over the grid's y and z, ROWS_Y per z slice (within the 65,535 workgroups a
// dimension is guaranteed on every device; `rows_grid` in rows.rs makes the grid): the row (or
// output) of this workgroup, `rows_row()`.
const int ROWS_Y = 32768;
int rows_row()
{
    return int(gl_WorkGroupID.y) + ROWS_Y * int(gl_WorkGroupID.z);
}
