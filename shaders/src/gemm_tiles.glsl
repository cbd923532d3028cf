// The tile shapes, shared memory and load counts of the library's GEMM-shaped kernels
// (gemm.comp, conv2d_nhwc.comp), included after the kernel's declarations: the specialization
// constants transpose_a, transpose_b, bias_term, activation, BK and subgroup_size; the buffers
// a_data, b_data, bias_data, c_data (`sfpvec4`); the push constants `p` with M, N, K, alpha and
// slope. Then the kernel defines where A and B live, and includes gemm_core.glsl:
//   rawvec4 raw_a(int l, int m0, int k0), raw_b(int l, int n0, int k0)   (the staged paths)
//   vec4 a_row4(m, k), at_col4(k, m), b_row4(k, n), bt_col4(n, k)        (the direct path)
// as gemm.comp documents them.
const int LX = int(gl_WorkGroupSize.x);
const int LY = int(gl_WorkGroupSize.y);
#if NCNN_cooperative_matrix
const int BM = cm_rows * LY;
#else
const int BM = 8 * LY;
#endif
const int BN = 8 * LX;
const int THREADS = LX * LY;
#if NCNN_cooperative_matrix
// Fragments are 16 deep: the step is BK rounded up to a multiple of 16.
const int STEP = (BK + 15) / 16 * 16;
#else
// (A macro, not a const alias: glslang would give the constant the alias's name.)
#define STEP BK
#endif

#if NCNN_shader_local_memory && !NCNN_cooperative_matrix
// One padding vec4 per row keeps the transposing stores of A (and B when transposed) off one bank.
shared vec4 tile_a[STEP][BM / 4 + 1];
shared vec4 tile_b[STEP][BN / 4 + 1];
#endif
#if NCNN_cooperative_matrix
#extension GL_KHR_shader_subgroup_basic : require
const int WARPS = THREADS / subgroup_size;
const int WARPS_N = WARPS < 4 ? WARPS : 4;
const int WARPS_M = WARPS / WARPS_N;
// 16×16 fragments per subgroup along M and N.
const int FM = BM / WARPS_M / 16;
const int FN = BN / WARPS_N / 16;
// Tiles of fp16 quads (the stored bytes, never converted): A row-major BM×STEP, B row-major
// STEP×BN, rows padded by 16 bytes against bank conflicts of the fragment loads.
const int A_STRIDE4 = STEP / 4 + 2;
const int B_STRIDE4 = BN / 4 + 2;
shared f16vec4 cm_a[BM * A_STRIDE4];
shared f16vec4 cm_b[STEP * B_STRIDE4];
shared float cm_c[WARPS * 256];
#endif
#if NCNN_shader_local_memory || NCNN_cooperative_matrix
// vec4s of A and of B one invocation moves into shared memory per step.
const int A_LOADS = (BM * STEP / 4 + THREADS - 1) / THREADS;
const int B_LOADS = (BN * STEP / 4 + THREADS - 1) / THREADS;
#endif

#if NCNN_shader_local_memory || NCNN_cooperative_matrix
#if (NCNN_fp16_storage && !NCNN_fp16_arithmetic && !NCNN_cooperative_matrix) || NCNN_bf16_storage
// 16-bit storage without 16-bit arithmetic types: a 16-bit value can't live in a register, so a
// quad is converted as it is loaded.
#define rawvec4 vec4
#define load_raw(buf, i) vec4(buffer_ld4(buf, i))
#else
#define rawvec4 sfpvec4
#define load_raw(buf, i) buf[i]
#endif

#endif
