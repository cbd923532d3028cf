#version 450
#extension GL_EXT_control_flow_attributes : require
// What bounds the library GEMM's cooperative-matrix loop (shaders/src/gemm_core.glsl) on a
// device: the same 128×256 tiles of 8 subgroups of 64×64 fp32 accumulators and one stage of
// shared memory (rows padded by an octet), without edges, transposes, epilogue or gathers.
// `mode` (constant 1) takes parts away:
//   0  the loop as the library runs it: stage a step, barrier, issue the next step's global
//      loads, multiply the staged step, barrier;
//   1  the same without the global loads (the first step is staged over and over);
//   2  the multiplies alone, from a step staged once (no barrier in the loop).
// C = A·B, A M×K and B K×N row-major halves, M and N multiples of the tile, K of the step; C is
// stored as halves.
layout (constant_id = 0) const int BK = 32;
layout (constant_id = 1) const int mode = 0;
layout (local_size_x = 32, local_size_y = 8) in;
// Halves, read as octets (uvec4) with cooperative matrices; declared as the storage type
// otherwise, which is what makes the octets' tensors F16 (vkprism_compiler::model).
#if NCNN_cooperative_matrix
layout (binding = 0) readonly buffer a_blob { uvec4 a_data[]; };
layout (binding = 1) readonly buffer b_blob { uvec4 b_data[]; };
#else
layout (binding = 0) readonly buffer a_blob { sfpvec4 a_data[]; };
layout (binding = 1) readonly buffer b_blob { sfpvec4 b_data[]; };
#endif
layout (binding = 2) writeonly buffer c_blob { sfp c_data[]; };
layout (push_constant) uniform parameter { int M; int N; int K; } p;

#if NCNN_cooperative_matrix
#extension GL_KHR_shader_subgroup_basic : require
const int THREADS = 256;
const int BM = 128;
const int BN = 256;
const int A_OCTETS = BK / 8;
const int B_OCTETS = BN / 8;
const int A_STRIDE = A_OCTETS + 1;
const int B_STRIDE = B_OCTETS + 1;
const int A_TILE = BM * A_STRIDE;
shared uvec4 tiles[A_TILE + BK * B_STRIDE];
const int A_LOADS = BM * A_OCTETS / THREADS;
const int B_LOADS = BK * B_OCTETS / THREADS;
uvec4 ra[A_LOADS];
uvec4 rb[B_LOADS];
coopmat<float, gl_ScopeSubgroup, 16, 16, gl_MatrixUseAccumulator> acc[16];

void load_step(int tid, int m0, int n0, int k0)
{
    [[unroll]] for (int i = 0; i < A_LOADS; i++) {
        const int l = tid + i * THREADS;
        ra[i] = a_data[((m0 + l / A_OCTETS) * p.K + k0) / 8 + l % A_OCTETS];
    }
    [[unroll]] for (int i = 0; i < B_LOADS; i++) {
        const int l = tid + i * THREADS;
        rb[i] = b_data[((k0 + l / B_OCTETS) * p.N + n0) / 8 + l % B_OCTETS];
    }
}

void stage(int tid)
{
    [[unroll]] for (int i = 0; i < A_LOADS; i++) {
        const int l = tid + i * THREADS;
        tiles[(l / A_OCTETS) * A_STRIDE + l % A_OCTETS] = ra[i];
    }
    [[unroll]] for (int i = 0; i < B_LOADS; i++) {
        const int l = tid + i * THREADS;
        tiles[A_TILE + (l / B_OCTETS) * B_STRIDE + l % B_OCTETS] = rb[i];
    }
}

void multiply(int wm, int wn)
{
    [[unroll]] for (int k = 0; k < BK; k += 16) {
        coopmat<float16_t, gl_ScopeSubgroup, 16, 16, gl_MatrixUseA> fa[4];
        [[unroll]] for (int i = 0; i < 4; i++) {
            coopMatLoad(fa[i], tiles, (wm + i * 16) * A_STRIDE + k / 8, A_STRIDE, gl_CooperativeMatrixLayoutRowMajor);
        }
        [[unroll]] for (int j = 0; j < 4; j++) {
            coopmat<float16_t, gl_ScopeSubgroup, 16, 16, gl_MatrixUseB> fb;
            coopMatLoad(fb, tiles, A_TILE + k * B_STRIDE + (wn + j * 16) / 8, B_STRIDE, gl_CooperativeMatrixLayoutRowMajor);
            [[unroll]] for (int i = 0; i < 4; i++) {
                acc[i * 4 + j] = coopMatMulAdd(fa[i], fb, acc[i * 4 + j]);
            }
        }
    }
}

void main()
{
    const int tid = int(gl_LocalInvocationID.y) * 32 + int(gl_LocalInvocationID.x);
    const int warp = int(gl_SubgroupID);
    const int wm = (warp / 4) * 64, wn = (warp % 4) * 64;
    const int m0 = int(gl_WorkGroupID.y) * BM, n0 = int(gl_WorkGroupID.x) * BN;
    [[unroll]] for (int f = 0; f < 16; f++) {
        acc[f] = coopmat<float, gl_ScopeSubgroup, 16, 16, gl_MatrixUseAccumulator>(0.0);
    }
    load_step(tid, m0, n0, 0);
    if (mode == 2) {
        stage(tid);
        barrier();
    }
    for (int k0 = 0; k0 < p.K; k0 += BK) {
        if (mode != 2) {
            barrier();
            stage(tid);
            barrier();
            if (mode == 0 && k0 + BK < p.K) load_step(tid, m0, n0, k0 + BK);
        }
        multiply(wm, wn);
    }
    [[unroll]] for (int f = 0; f < 16; f++) {
        const coopmat<float16_t, gl_ScopeSubgroup, 16, 16, gl_MatrixUseAccumulator> h =
            coopmat<float16_t, gl_ScopeSubgroup, 16, 16, gl_MatrixUseAccumulator>(acc[f]);
        const int m = m0 + wm + (f / 4) * 16, n = n0 + wn + (f % 4) * 16;
        coopMatStore(h, c_data, m * p.N + n, p.N, gl_CooperativeMatrixLayoutRowMajor);
    }
}
#else
// Only the `_cm` variant ships; the others are compiled for their bindings' formats.
void main()
{
    if (p.M < 0) buffer_st1(c_data, 0, afp(buffer_ld4(a_data, 0).x + buffer_ld4(b_data, 0).x));
}
#endif
