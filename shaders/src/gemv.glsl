// The body of the GEMV kernels (gemv.comp, gemv_int8.comp): y[b][n] = out(Σ_k W[n][k] ·
// x[b][k], n) for W row-major [N, K] (PyTorch's Linear layout), x [batch, K] (batch at most 8),
// y [batch, N]. The including kernel declares bindings 0 to 3 (y_data readable) and push
// constants (N, K, eps, slope, d, hq, hkv, rows, offset and the frequencies, rope.glsl), the
// constant `batch`, and how a chunk of V elements is read and multiplied: W_T / X_T its types,
// W_LD(i) / X_LD(i) chunk i of W / x (counted from the buffer's start), chunk_dot(w, x), and
// gemv_output(sum, n), the row's value before the epilogue.
//
// The epilogue fuses what a decoder does around its projections, one dispatch instead of two
// or three, each a specialization constant declared here:
// - rms_input: x is RMS-normalized first (the norm's weight folded into W's columns on the
//   host): every sum times 1/sqrt(mean(x²) + eps), the mean over the x values the workgroup
//   reads anyway;
// - activation (activation.glsl's codes) applied to each value;
// - gated: rows 2i and 2i + 1 of W are output i's gate and up projections, y = act(gate) · up,
//   y [batch, N/2] (a SwiGLU MLP's two projections in one pass over their weights);
// - accumulate: the result is added to y's value (a residual connection);
// - rope_qkv (one row of x): W is a decoder's fused query/key/value projection, hq + 2·hkv
//   heads of d rows, each head's rotation pairs side by side (rows 2j and 2j + 1 of a head are
//   pair j, rotary embedding's interleaved layout); query pairs are rotated into y, key pairs
//   rotated and value pairs copied into the KV cache's row at position p.offset (plus pos[0]
//   with rope_qkv 2), k and v [rows, hkv, d]; a position at or past `rows` writes no key or
//   value. One dispatch where the projection and the rotation into the cache took two.
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

layout (constant_id = 2) const int activation = 0;
layout (constant_id = 3) const int gated = 0;
layout (constant_id = 4) const int accumulate = 0;
layout (constant_id = 5) const int rms_input = 0;
layout (constant_id = 6) const int rope_qkv = 0;

layout (binding = 4) writeonly buffer k_blob { sfp k_data[]; };
layout (binding = 5) writeonly buffer v_blob { sfp v_data[]; };
layout (binding = 6) readonly buffer pos_blob { int pos_data[]; };

#include "activation.glsl"
#include "rope.glsl"

// Σ x² over a chunk of x, for the RMS norm of the input.
float sq_sum(float x) { return x * x; }
float sq_sum(vec4 x) { return dot(x, x); }
float sq_sum(mat2x4 x) { return dot(x[0], x[0]) + dot(x[1], x[1]); }
float sq_sum(mat4 x) { return dot(x[0], x[0]) + dot(x[1], x[1]) + dot(x[2], x[2]) + dot(x[3], x[3]); }

shared vec4 gemv_part[gl_WorkGroupSize.x];
shared float gemv_square[gl_WorkGroupSize.x];

#if ncnn_subgroup_basic && ncnn_subgroup_arithmetic
// The sums over the workgroup of every invocation's `v` and (with rms_input) `w`, returned to
// every invocation in place: both through the same two barriers. Starts with a barrier, so
// calls may follow one another. Subgroups are counted as rows.glsl counts them (lavapipe
// leaves a partly filled last subgroup out of gl_NumSubgroups).
void gemv_sum(inout vec4 v, inout float w)
{
    barrier();
    v = subgroupAdd(v);
    if (rms_input == 1) w = subgroupAdd(w);
    if (subgroupElect())
    {
        gemv_part[gl_SubgroupID] = v;
        if (rms_input == 1) gemv_square[gl_SubgroupID] = w;
    }
    barrier();
    const uint subgroups =
        max(gl_NumSubgroups, (gl_WorkGroupSize.x + gl_SubgroupSize - 1) / gl_SubgroupSize);
    v = vec4(0.0);
    w = 0.0;
    for (uint k = 0; k < subgroups; k++)
    {
        v += gemv_part[k];
        if (rms_input == 1) w += gemv_square[k];
    }
}
#else
void gemv_sum(inout vec4 v, inout float w)
{
    const uint lid = gl_LocalInvocationID.x;
    barrier();
    gemv_part[lid] = v;
    if (rms_input == 1) gemv_square[lid] = w;
    barrier();
    for (uint s = 1; s < gl_WorkGroupSize.x; s *= 2)
    {
        if ((lid & (2 * s - 1)) == 0 && lid + s < gl_WorkGroupSize.x)
        {
            gemv_part[lid] += gemv_part[lid + s];
            if (rms_input == 1) gemv_square[lid] += gemv_square[lid + s];
        }
        barrier();
    }
    v = gemv_part[0];
    if (rms_input == 1) w = gemv_square[0];
}
#endif

// Blocks of 4 rows are spread over the grid's y and z, GEMV_Y per z slice (within the 65,535
// workgroups every device takes along a dimension; `GemvShape::grid` makes the grid).
const int GEMV_Y = 32768;

// Stores the workgroup's four rows' sums `total` of x's row b (rows n0 .. n0 + 3 of W)
// through the epilogue: invocation r < 4 stores row n0 + r's, or, gated, r < 2 output
// n0/2 + r from rows n0 + 2r and n0 + 2r + 1.
// rope_qkv's epilogue: invocation r < 2 places the pair of rows n0 + 2r and n0 + 2r + 1.
void gemv_store_rope(int n0, int lid, vec4 total)
{
    const int r = n0 + 2 * lid;
    if (lid >= 2 || r >= p.N) return;
    vec2 ab = vec2(gemv_output(total[2 * lid], r), gemv_output(total[2 * lid + 1], r + 1));
    const int head = r / p.d, within = r % p.d;
    const int pos = p.offset + (rope_qkv == 2 ? pos_data[0] : 0);
    if (head < p.hq + p.hkv) ab = rope_turn(ab, rope_sin_cos(pos, within / 2, p.d, ROPE_FREQS));
    if (head < p.hq)
    {
        buffer_st1(y_data, r, afp(ab.x));
        buffer_st1(y_data, r + 1, afp(ab.y));
        return;
    }
    if (pos >= p.rows) return;
    const int at = (pos * p.hkv + (head - p.hq) % p.hkv) * p.d + within;
    if (head < p.hq + p.hkv)
    {
        buffer_st1(k_data, at, afp(ab.x));
        buffer_st1(k_data, at + 1, afp(ab.y));
    }
    else
    {
        buffer_st1(v_data, at, afp(ab.x));
        buffer_st1(v_data, at + 1, afp(ab.y));
    }
}

void gemv_store(int b, int n0, int lid, vec4 total)
{
    if (rope_qkv != 0)
    {
        gemv_store_rope(n0, lid, total);
        return;
    }
    const int outputs = gated == 1 ? p.N / 2 : p.N;
    const int n = (gated == 1 ? n0 / 2 : n0) + lid;
    if (lid >= (gated == 1 ? 2 : 4) || n >= outputs) return;
    float v;
    if (gated == 1)
    {
        const float gate = gemv_output(total[2 * lid], 2 * n);
        const float up = gemv_output(total[2 * lid + 1], 2 * n + 1);
        v = activate(vec4(gate)).x * up;
    }
    else
    {
        v = activate(vec4(gemv_output(total[lid], n))).x;
    }
    const int at = b * outputs + n;
    if (accumulate == 1) v += float(buffer_ld1(y_data, at));
    buffer_st1(y_data, at, afp(v));
}

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
    float squares[BMAX];
    [[unroll]] for (int b = 0; b < BMAX; b++) { acc[b] = vec4(0.0); squares[b] = 0.0; }
    for (int c = lid; c < chunks; c += size)
    {
        X_T xv[BMAX];
        [[unroll]] for (int b = 0; b < batch; b++) xv[b] = X_LD(b * chunks + c);
        if (rms_input == 1)
            [[unroll]] for (int b = 0; b < batch; b++) squares[b] += sq_sum(xv[b]);
        [[unroll]] for (int r = 0; r < 4; r++)
        {
            const W_T w = W_LD(row[r] + c);
            [[unroll]] for (int b = 0; b < batch; b++) acc[b][r] += chunk_dot(w, xv[b]);
        }
    }

    [[unroll]] for (int b = 0; b < batch; b++)
    {
        // The rows' sums and, for the norm, x's squares: one reduction for both.
        vec4 total = acc[b];
        float square = squares[b];
        gemv_sum(total, square);
        if (rms_input == 1) total *= inversesqrt(square / float(p.K) + p.eps);
        gemv_store(b, n0, lid, total);
    }
}
