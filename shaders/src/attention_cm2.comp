#version 450
// Scaled dot-product attention on workgroup-scope cooperative matrices
// (VK_NV_cooperative_matrix2), flash attention in one pass: one workgroup per block of BR query
// rows of one head holds their Q as one fp16 matrix and their output O as one fp32
// accumulator, and walks the keys BC at a time: S = Q·Kᵀ (K read from shared memory as a
// column-major matrix), the online softmax on S as matrices (each row's maximum by a row
// reduction, smeared across the row), O rescaled and O += P·V. The kernel stages every
// operand itself through shared memory, an octet of halves a load: Q's block once before the
// loop, O's after it, and each step's K and V tiles read into registers a step ahead and
// stored at the step's start, so the reads overlap the step before (left to the driver's
// tensor-addressed loads, they did not; Q and O through tensor layouts were slower too:
// BENCHMARKS.md).
//
// Each row's running maximum M and sum L are kept as BR×BC matrices whose columns repeat the
// row's value (the reductions return them so); a row's rescale reaches O's D columns through a
// second row reduction that only smears.
//
// Layouts as attention.comp: q, o [batch, sq, hq, d], k, v [batch, skv, hkv, d] with row
// strides in elements; d is the constant D (a multiple of 16, at most 256) and every stride a
// multiple of 8. Query head h reads key/value head h / (hq / hkv). With `causal`, query i sees
// keys j <= i + offset; a query that sees none gives 0. Loads past sq or skv read zeros, scores
// past skv or the causal edge are masked, stores past sq are dropped. Shared memory:
// max(BR, 2 · BC) · (D / 8 + 1) · 16 bytes.
// Grid: [ceil(sq / BR) · workgroup, hq, batch].
#extension GL_EXT_control_flow_attributes : require
#if NCNN_cooperative_matrix
#extension GL_KHR_memory_scope_semantics : require
#extension GL_NV_cooperative_matrix2 : require
#endif

// A workgroup size the device lists workgroup-scope matrices of these shapes for (the
// operation layer: 256).
layout (local_size_x = 256) in;

layout (constant_id = 0) const int causal = 0;
// The head dimension.
layout (constant_id = 1) const int D = 64;
// Query rows per workgroup and keys per step.
layout (constant_id = 2) const int BR = 128;
layout (constant_id = 3) const int BC = 64;

#if NCNN_cooperative_matrix
// Every operand is staged by the kernel, an octet of halves a load or store.
layout (binding = 0) readonly buffer q_blob { uvec4 q_data[]; };
layout (binding = 1) readonly buffer k_blob { uvec4 k_data[]; };
layout (binding = 2) readonly buffer v_blob { uvec4 v_data[]; };
layout (binding = 3) writeonly buffer o_blob { uvec4 o_data[]; };
#else
// The fp32 reference the bindings' formats are told from; never shipped.
layout (binding = 0) readonly buffer q_blob { sfp q_data[]; };
layout (binding = 1) readonly buffer k_blob { sfp k_data[]; };
layout (binding = 2) readonly buffer v_blob { sfp v_data[]; };
layout (binding = 3) writeonly buffer o_blob { sfp o_data[]; };
#endif

layout (push_constant) uniform parameter {
    int batch; int sq; int skv; int hq; int hkv;
    int q_stride; int kv_stride; int o_stride; int offset; float scale;
    // attention_cm's key split (this kernel walks a block's keys whole: unread).
    int share_keys; int shares;
} p;

#if NCNN_cooperative_matrix
#define SCORES coopmat<float, gl_ScopeWorkgroup, BR, BC, gl_MatrixUseAccumulator>
#define OUT coopmat<float, gl_ScopeWorkgroup, BR, D, gl_MatrixUseAccumulator>

// A masked score: e^(it - max) is 0 and it never raises a row's maximum above the finite start.
float neg_inf()
{
    return uintBitsToFloat(0xff800000u);
}

// Where a row's maximum starts: finite, so a row whose scores are all masked keeps
// e^(M_old - M_new) = 1 and e^(score - M) = 0 (its sum stays 0, its output 0).
const float LOWEST = -1.0e30;

// Score (row, col) of the step at key j0 for the block at query r0: scaled, or masked where
// the key is past skv or past the query's causal edge.
float mask_scores(const in uint row, const in uint col, const in float s, const in int r0,
                  const in int j0)
{
    const int i = r0 + int(row), j = j0 + int(col);
    const bool hidden = j >= p.skv || (causal == 1 && j > i + p.offset);
    return hidden ? neg_inf() : s * p.scale;
}

float exp_of(const in uint row, const in uint col, const in float x)
{
    return exp(x);
}

float max_of(const in uint row, const in uint col, const in float a, const in float b)
{
    return max(a, b);
}

float reduce_max(const in float a, const in float b)
{
    return max(a, b);
}

// A reduction that keeps one of its operands: the row's value smeared over another width.
float smear(const in float a, const in float b)
{
    return a;
}

// 1 / L, or 0 for a row that saw no key.
float reciprocal(const in uint row, const in uint col, const in float l)
{
    return l > 0.0 ? 1.0 / l : 0.0;
}

const int THREADS = int(gl_WorkGroupSize.x);
// Octets per row of a head, and per staged row (one more: rows start on different banks).
const int D8 = D / 8;
const int KS = D8 + 1;
// Rows staged at once: the K tile (BC rows) then the V tile (BC rows); before the loop Q's BR
// rows, after it O's.
const int STAGED_ROWS = BR > 2 * BC ? BR : 2 * BC;
shared uvec4 kv_smem[STAGED_ROWS * KS];

#include "attention_stage.glsl"

void main()
{
    const int n = int(gl_WorkGroupID.z), h = int(gl_WorkGroupID.y);
    // The blocks of the last rows first: under a causal mask they see the most keys, so the
    // longest workgroups start first.
    const int r0 = (int(gl_NumWorkGroups.x) - 1 - int(gl_WorkGroupID.x)) * BR;
    const int kvh = h / (p.hq / p.hkv);

    const int tid = int(gl_LocalInvocationID.x);
    stage_q(tid, n, h, r0, BR);
    barrier();
    coopmat<cmfp, gl_ScopeWorkgroup, BR, D, gl_MatrixUseA> q;
    coopMatLoad(q, kv_smem, 0, KS, gl_CooperativeMatrixLayoutRowMajor);

    OUT o = OUT(0.0);
    SCORES m = SCORES(LOWEST);
    SCORES l = SCORES(0.0);
    // Multiplying P by ones sums each row as the multiply with V sees it (rounded to fp16).
    coopmat<cmfp, gl_ScopeWorkgroup, BC, BC, gl_MatrixUseB> ones =
        coopmat<cmfp, gl_ScopeWorkgroup, BC, BC, gl_MatrixUseB>(1.0);

    // Keys past the block's last query's last visible key are never read.
    const int kv_end = causal == 1 ? clamp(r0 + BR + p.offset, 0, p.skv) : p.skv;
    // Steps from here on cross the causal edge or skv: only they need the mask.
    const int unmasked_end = causal == 1 ? min(r0 + p.offset + 1, p.skv) : p.skv;
    uvec4 rk[KV_LOADS], rv[KV_LOADS];
    load_kv(tid, n, kvh, 0, rk, rv);
    for (int j0 = 0; j0 < kv_end; j0 += BC)
    {
        coopmat<cmfp, gl_ScopeWorkgroup, D, BC, gl_MatrixUseB> kt;
        // The tile loaded a step ago goes to shared memory once the last step's reads are
        // done; the next one is loaded now and waits in registers while this step computes.
        barrier();
        store_kv(tid, rk, rv);
        barrier();
        if (j0 + BC < kv_end)
            load_kv(tid, n, kvh, j0 + BC, rk, rv);
        coopMatLoad(kt, kv_smem, 0, KS, gl_CooperativeMatrixLayoutColumnMajor);
        SCORES s = coopMatMulAdd(q, kt, SCORES(0.0));
        if (j0 + BC > unmasked_end)
            coopMatPerElementNV(s, s, mask_scores, r0, j0);
        else
            s *= p.scale;

        SCORES row_max;
        coopMatReduceNV(row_max, s, gl_CooperativeMatrixReduceRowNV, reduce_max);
        SCORES m_old = m;
        coopMatPerElementNV(m, row_max, max_of, m_old);
        SCORES e;
        coopMatPerElementNV(e, s - m, exp_of);
        SCORES rescale;
        coopMatPerElementNV(rescale, m_old - m, exp_of);

        coopmat<cmfp, gl_ScopeWorkgroup, BR, BC, gl_MatrixUseA> pa =
            coopmat<cmfp, gl_ScopeWorkgroup, BR, BC, gl_MatrixUseA>(e);
        l = rescale * l + coopMatMulAdd(pa, ones, SCORES(0.0));

        coopmat<cmfp, gl_ScopeWorkgroup, BC, D, gl_MatrixUseB> v;
        coopMatLoad(v, kv_smem, BC * KS, KS, gl_CooperativeMatrixLayoutRowMajor);
        OUT rescale_o;
        coopMatReduceNV(rescale_o, rescale, gl_CooperativeMatrixReduceRowNV, smear);
        o = coopMatMulAdd(pa, v, o * rescale_o);
    }

    OUT inv_l;
    coopMatReduceNV(inv_l, l, gl_CooperativeMatrixReduceRowNV, smear);
    coopMatPerElementNV(inv_l, inv_l, reciprocal);
    o *= inv_l;
    coopmat<cmfp, gl_ScopeWorkgroup, BR, D, gl_MatrixUseAccumulator> out16 =
        coopmat<cmfp, gl_ScopeWorkgroup, BR, D, gl_MatrixUseAccumulator>(o);
    // O's rows through shared memory once every step's reads of it are done (none past sq).
    barrier();
    coopMatStore(out16, kv_smem, 0, KS, gl_CooperativeMatrixLayoutRowMajor);
    barrier();
    for (int l = tid; l < BR * D8; l += THREADS)
    {
        const int r = l / D8, c = l % D8, i = r0 + r;
        if (i < p.sq)
            o_data[((n * p.sq + i) * p.o_stride + h * D) / 8 + c] = kv_smem[r * KS + c];
    }
}
#else
void main()
{
}
#endif
