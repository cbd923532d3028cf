// The body of the GEMV kernels (gemv.comp, gemv_int8.comp): y[b][n] = out(Σ_k W[n][k] ·
// x[b][k], n) for W row-major [N, K] (PyTorch's Linear layout), x [batch, K] (batch at most 8),
// y [batch, N]. The including kernel declares the bindings and push constants (N, K), the
// constant `batch`, and how a chunk of V elements is read and multiplied: W_T / X_T its types,
// W_LD(i) / X_LD(i) chunk i of W / x (counted from the buffer's start), chunk_dot(w, x), and
// gemv_output(sum, n), the value stored.
//
// Memory-bound: every W value is read once. One workgroup owns 4 consecutive rows; its
// invocations walk K a chunk each, a workgroup apart (neighbouring invocations read
// neighbouring chunks: coalesced 16-byte loads in the wide kernels), each holding the 4 rows'
// partial sums for every row of x, so a chunk of x is read once per 4 rows (x is small and stays
// in cache) and 4 independent loads of W are in flight per step. The workgroup's partial sums
// are then added: per subgroup through subgroup arithmetic, then across subgroups through shared
// memory (`_sg`), or by a tree through shared memory (`_nosg`). fp32 throughout.

// The most rows of x.
const int BMAX = 8;

shared vec4 gemv_part[gl_WorkGroupSize.x];

#if ncnn_subgroup_basic && ncnn_subgroup_arithmetic
// The sum over the workgroup of every invocation's `v`, returned to every invocation. Starts
// with a barrier, so calls may follow one another. Subgroups are counted as rows.glsl counts
// them (lavapipe leaves a partly filled last subgroup out of gl_NumSubgroups).
vec4 gemv_sum(vec4 v)
{
    barrier();
    v = subgroupAdd(v);
    if (subgroupElect()) gemv_part[gl_SubgroupID] = v;
    barrier();
    const uint subgroups =
        max(gl_NumSubgroups, (gl_WorkGroupSize.x + gl_SubgroupSize - 1) / gl_SubgroupSize);
    vec4 t = vec4(0.0);
    for (uint k = 0; k < subgroups; k++) t += gemv_part[k];
    return t;
}
#else
vec4 gemv_sum(vec4 v)
{
    const uint lid = gl_LocalInvocationID.x;
    barrier();
    gemv_part[lid] = v;
    barrier();
    for (uint s = 1; s < gl_WorkGroupSize.x; s *= 2)
    {
        if ((lid & (2 * s - 1)) == 0 && lid + s < gl_WorkGroupSize.x)
            gemv_part[lid] += gemv_part[lid + s];
        barrier();
    }
    return gemv_part[0];
}
#endif

// Blocks of 4 rows are spread over the grid's y and z, GEMV_Y per z slice (within the 65,535
// workgroups every device takes along a dimension; `GemvShape::grid` makes the grid).
const int GEMV_Y = 32768;

void main()
{
    const int block = int(gl_WorkGroupID.y) + GEMV_Y * int(gl_WorkGroupID.z);
    const int n0 = 4 * block;
    if (n0 >= p.N) return;
    const int lid = int(gl_LocalInvocationID.x), size = int(gl_WorkGroupSize.x);
    const int chunks = p.K / V;
    // Each row's first chunk; rows past N read row N - 1 again (discarded): no branch inside.
    ivec4 row;
    [[unroll]] for (int r = 0; r < 4; r++) row[r] = min(n0 + r, p.N - 1) * chunks;

    vec4 acc[BMAX];
    [[unroll]] for (int b = 0; b < BMAX; b++) acc[b] = vec4(0.0);
    for (int c = lid; c < chunks; c += size)
    {
        X_T xv[BMAX];
        [[unroll]] for (int b = 0; b < batch; b++) xv[b] = X_LD(b * chunks + c);
        [[unroll]] for (int r = 0; r < 4; r++)
        {
            const W_T w = W_LD(row[r] + c);
            [[unroll]] for (int b = 0; b < batch; b++) acc[b][r] += chunk_dot(w, xv[b]);
        }
    }

    [[unroll]] for (int b = 0; b < batch; b++)
    {
        const vec4 total = gemv_sum(acc[b]);
        const int n = n0 + lid;
        if (lid < 4 && n < p.N) buffer_st1(y_data, b * p.N + n, afp(gemv_output(total[lid], n)));
    }
}
