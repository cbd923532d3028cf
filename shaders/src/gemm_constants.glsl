// The specialization constants of the library's GEMM-shaped kernels (gemm.comp and
// conv2d_nhwc.comp, one-pass and split-K, and gemm_int8.comp), declared once so that the kernels
// share one `SpecConstants` type (`share` in lib.rs) and `GemmConfig::spec` fills it for all.
// A kernel ignores what it has no use for: the convolution has no transposes, gemm_int8 no
// transposes, bias or activation, the one-pass kernels no split_k.
layout (constant_id = 0) const int transpose_a = 0;
layout (constant_id = 1) const int transpose_b = 0;
layout (constant_id = 2) const int bias_term = 0;
// 0 none, 1 relu, 2 leaky relu (slope in the push constants), 3 sigmoid
layout (constant_id = 3) const int activation = 0;
// Depth of one shared-memory step, a multiple of 4 (cooperative matrices round it up to their
// fragments' depth: 16, or 32 for int8).
layout (constant_id = 4) const int BK = 16;
// Cooperative-matrix path only: invocations per subgroup.
layout (constant_id = 5) const int subgroup_size = 32;
// Cooperative-matrix path only: 16×16 fragments per subgroup along M and along N, subgroups
// along N, and 1 when every stored row is a multiple of one 16-byte load (8 halves, 16 int8).
layout (constant_id = 6) const int cm_wfm = 4;
layout (constant_id = 7) const int cm_wfn = 4;
layout (constant_id = 8) const int cm_warps_n = 2;
layout (constant_id = 9) const int wide_loads = 0;
// Split-K kernels only: workgroups along K, each summing one share of whole BK steps.
layout (constant_id = 10) const int split_k = 1;
// gemm.comp only: `batched` 1 when workgroup z is a batch index (strided batched GEMM: each
// batch's A, B and C `batch_a`, `batch_b`, `batch_c` elements after the previous one, 0 for an
// operand all batches share), `beta_term` 1 when C is read back:
// C = act(alpha · op(A) · op(B) + beta · C + bias).
layout (constant_id = 11) const int batched = 0;
layout (constant_id = 12) const int beta_term = 0;
