// The tile shapes, shared memory and load counts of the library's GEMM-shaped kernels
// (gemm.comp, conv2d_nhwc.comp), included after the kernel's declarations: the specialization
// constants transpose_a, transpose_b, bias_term, activation, BK, subgroup_size, cm_wfm, cm_wfn,
// cm_warps_n and wide_loads; the buffers a_data, b_data (`sfpvec4`, or `uvec4` octets of halves in
// cooperative-matrix variants), bias_data, c_data (`sfpvec4`); the push constants `p` with M,
// N, K, alpha and slope. Then the kernel defines where A and B live, and includes
// gemm_core.glsl:
//   uvec4 cm_a8_at(i, row, col), cm_b8(row, col)  (cooperative matrices: octets of A and B as
//       stored; i is the invocation's load index, whose row stays the same through K), and
//   void cm_a_prepare(tid, m0)  (once per workgroup, before the first step)
//   rawvec4 raw_a(int l, int m0, int k0), raw_b(int l, int n0, int k0)   (the staged path)
//   vec4 a_row4(m, k), at_col4(k, m), b_row4(k, n), bt_col4(n, k)        (the direct path)
// as gemm.comp documents them.
const int LX = int(gl_WorkGroupSize.x);
const int LY = int(gl_WorkGroupSize.y);
const int THREADS = LX * LY;
#if NCNN_cooperative_matrix
#extension GL_KHR_shader_subgroup_basic : require
// Subgroups of the workgroup, cm_warps_n of them along N; each owns cm_wfm × cm_wfn 16×16
// accumulators (a (16·cm_wfm) × (16·cm_wfn) warp tile).
const int WARPS = THREADS / subgroup_size;
#define WARPS_N cm_warps_n
const int WARPS_M = WARPS / WARPS_N;
const int BM = WARPS_M * cm_wfm * 16;
const int BN = WARPS_N * cm_wfn * 16;
// Fragments are 16 deep: the step is BK rounded up to a multiple of 16.
const int STEP = (BK + 15) / 16 * 16;
// The tiles of one step as stored (A: BM rows of STEP, or STEP rows of BM when transposed; B:
// STEP rows of BN, or BN rows of STEP), in octets of halves (one uvec4 each), rows padded by one
// octet against bank conflicts of the fragment loads; a transposed operand is read by
// column-major fragment loads, never transposed element by element.
const int A_ROWS = transpose_a * STEP + (1 - transpose_a) * BM;
const int A_OCTETS = transpose_a * (BM / 8) + (1 - transpose_a) * (STEP / 8);
const int B_ROWS = transpose_b * BN + (1 - transpose_b) * STEP;
const int B_OCTETS = transpose_b * (STEP / 8) + (1 - transpose_b) * (BN / 8);
const int A_STRIDE = A_OCTETS + 1;
const int B_STRIDE = B_OCTETS + 1;
// A's tile, then B's, in one array of octets; after the last step the same memory is each
// subgroup's scratch for one 16×16 fp32 accumulator at a time (64 uvec4s a subgroup), which
// leaves 128×256 tiles room for 48-deep steps within the 48 KiB of shared memory NVIDIA's GPUs
// give a workgroup (tuning::shared_memory_bytes computes the same size).
const int A_TILE = A_ROWS * A_STRIDE;
const int B_TILE = B_ROWS * B_STRIDE;
const int CM_SCRATCH = WARPS * 64;
shared uvec4 cm_smem[A_TILE + B_TILE > CM_SCRATCH ? A_TILE + B_TILE : CM_SCRATCH];
// Octets of A and of B one invocation moves into shared memory per step.
const int A_LOADS = (A_ROWS * A_OCTETS + THREADS - 1) / THREADS;
const int B_LOADS = (B_ROWS * B_OCTETS + THREADS - 1) / THREADS;

// The octet of halves at (row, col) of a rows × cols row-major fp16 matrix held in the uvec4
// array `data` from element `base` (a multiple of 8; col a multiple of 8), zero outside. With wide_loads every row is a multiple of 8
// halves, so an octet is one aligned 16-byte load; otherwise rows are multiples of 4 and an
// octet may straddle two uvec4s (read as two 8-byte halves). wide_loads is a specialization constant,
// not a test of the sizes at run time: a branch between the two paths made the loop 1.7× slower
// on the H100.
#define LOAD_OCTET(data, base, row, col, rows, cols, out) { \
    out = uvec4(0); \
    if ((row) < (rows) && (col) < (cols)) { \
        const int h_ = (base) + (row) * (cols) + (col); \
        if (wide_loads == 1) { \
            out = data[h_ >> 3]; \
        } else if ((h_ & 7) == 0) { \
            out = data[h_ >> 3]; \
            if ((col) + 8 > (cols)) out.zw = uvec2(0); \
        } else { \
            out.xy = data[h_ >> 3].zw; \
            if ((col) + 8 <= (cols)) out.zw = data[(h_ >> 3) + 1].xy; \
        } \
    } \
}
#else
const int BM = 8 * LY;
const int BN = 8 * LX;
// (A macro, not a const alias: glslang would give the constant the alias's name.)
#define STEP BK
#endif

#if !NCNN_cooperative_matrix
// Quads of A and B as fp32 (the tiles and accumulators are fp32 in every variant). With 16-bit
// storage (fp16s, fp16sa, bf16s) the kernels declare A and B as uvec2 words (AB_WORDS: the same
// bytes) and unpack a quad here, as the packed modes do: read as four 16-bit values, the same
// GEMM ran at half the speed of fp16p on the H100 (BENCHMARKS.md, "Tile rules").
#if NCNN_fp16_storage || NCNN_bf16_storage
#define AB_WORDS 1
#else
#define AB_WORDS 0
#endif
#if AB_WORDS || NCNN_fp16_packed || NCNN_bf16_packed
// A quad held in two uints (element 0 in the low 16 bits), as fp32.
vec4 unpack_quad(uvec2 v)
{
#if NCNN_fp16_storage || NCNN_fp16_packed
    return vec4(unpackHalf2x16(v.x), unpackHalf2x16(v.y));
#else
    return uintBitsToFloat(uvec4(v.x << 16, v.x & 0xffff0000u, v.y << 16, v.y & 0xffff0000u));
#endif
}
#endif
// Quad i of A or B (a_data, b_data) as fp32.
#if AB_WORDS
#define ld4_ab(buf, i) unpack_quad(buf[i])
#else
#define ld4_ab(buf, i) vec4(buffer_ld4(buf, i))
#endif
#endif

#if NCNN_shader_local_memory && !NCNN_cooperative_matrix
// One padding vec4 per row keeps the transposing stores of A (and B when transposed) off one bank.
shared vec4 tile_a[STEP][BM / 4 + 1];
shared vec4 tile_b[STEP][BN / 4 + 1];
// vec4s of A and of B one invocation moves into shared memory per step.
const int A_LOADS = (BM * STEP / 4 + THREADS - 1) / THREADS;
const int B_LOADS = (BN * STEP / 4 + THREADS - 1) / THREADS;
// A quad as loaded, converted to fp32 (to_f32) only when staged, so the load's latency overlaps
// the step's arithmetic.
#if AB_WORDS
#define rawvec4 uvec2
#else
#define rawvec4 sfpvec4
#endif
#define load_raw(buf, i) buf[i]
#endif
