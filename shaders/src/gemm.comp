#version 450
// C = act(alpha * op(A) * op(B) + bias), row-major, every operand read and written as vec4s.
#extension GL_EXT_control_flow_attributes : require
//
// Shapes: op(A) is M×K, op(B) is K×N, C is M×N. A is stored M×K (K×M when transpose_a), B is
// stored K×N (N×K when transpose_b); the last dimension of every stored operand must be a multiple
// of 4 (one `sfpvec4` is 4 consecutive elements of a row). M, N and K need not be multiples of the
// tile: edge tiles load zeros and store only what is inside C.
//
// Work split (seed 001): each workgroup owns a BM×BN macro-tile of C, BM = 8 × local_size_y and
// BN = 8 × local_size_x (128×128 with the default 16×16 workgroup); each invocation owns an 8×8
// micro-tile held in 16 vec4 registers, as two 4×8 halves BM/2 rows apart (and two 8×4 halves
// BN/2 columns apart) so a warp's shared-memory reads are broadcasts of A and conflict-free rows of
// B. With local memory, the A and B slices of one BK-deep step go through shared memory (A stored
// transposed, so both are read as vec4s along M and N); the next step's global loads are issued
// before the current step's arithmetic. Accumulation is always fp32.
//
// With cooperative matrices (`_cm` variants, fp16 only): the same macro-tile and the same
// prefetching loads, staged as fp16 in shared memory; subgroup w of the workgroup owns a
// (BM / WARPS_M) × (BN / WARPS_N) warp tile of 16×16×16 fp16 × fp16 + fp32 multiply-adds, and the
// fp32 accumulators go out through a per-subgroup 16×16 scratch so bias, activation and the
// storage conversion are applied as in the other path. `subgroup_size` must be the device's
// subgroup size (32 on NVIDIA; require it at pipeline creation where it varies), and the
// workgroup's x size a multiple of it (Vulkan requires that of subgroup-scope matrices): use
// `gemm_local_size`.
layout (constant_id = 0) const int transpose_a = 0;
layout (constant_id = 1) const int transpose_b = 0;
layout (constant_id = 2) const int bias_term = 0;
// 0 none, 1 relu, 2 leaky relu (slope in the push constants), 3 sigmoid
layout (constant_id = 3) const int activation = 0;
// Depth of one shared-memory step, a multiple of 4.
layout (constant_id = 4) const int BK = 16;
// Cooperative-matrix path only: invocations per subgroup.
layout (constant_id = 5) const int subgroup_size = 32;

layout (local_size_x = 16, local_size_y = 16) in;

layout (binding = 0) readonly buffer a_blob { sfpvec4 a_data[]; };
layout (binding = 1) readonly buffer b_blob { sfpvec4 b_data[]; };
// N values, read only when bias_term is 1 (bind any tensor otherwise).
layout (binding = 2) readonly buffer bias_blob { sfpvec4 bias_data[]; };
layout (binding = 3) writeonly buffer c_blob { sfpvec4 c_data[]; };

layout (push_constant) uniform parameter { int M; int N; int K; float alpha; float slope; } p;

// Where the quads of A and B are (gemm_core.glsl's contract), -1 outside the matrices.
int a_index(int m, int k) { return m < p.M && k < p.K ? m * (p.K / 4) + k / 4 : -1; }
int at_index(int k, int m) { return m < p.M && k < p.K ? k * (p.M / 4) + m / 4 : -1; }
int b_index(int k, int n) { return k < p.K && n < p.N ? k * (p.N / 4) + n / 4 : -1; }
int bt_index(int n, int k) { return k < p.K && n < p.N ? n * (p.K / 4) + k / 4 : -1; }

#include "gemm_core.glsl"
