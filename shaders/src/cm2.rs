//! [`gemm_cm2`]: the fp16 GEMM on workgroup-scope cooperative matrices
//! (`VK_NV_cooperative_matrix2`), and [`Cm2Tiles`], how it runs one problem.

vkprism::compute_shader! {
    /// `C = act(alpha · op(A) · op(B) + beta · C + bias)` in fp16 with fp32 accumulation, on
    /// `VK_NV_cooperative_matrix2`'s workgroup-scope matrices and tensor-addressed loads: one
    /// BM×BN tile of C per workgroup of 256 invocations, A and B loaded BK deep straight from
    /// the buffers (the driver stages them). A stored M×K (K×M with `transpose_a`), B K×N (N×K
    /// with `transpose_b`), C M×N, the bias N values; every stored row a multiple of 8
    /// elements; M, N and K any size (the loads clamp at the edges). Specialization constants
    /// as [`Cm2Tiles::spec`] fills them (tiles, transposes, `bias_term`, `activation` as in
    /// [`gemm`](crate::gemm), `batched`, `beta_term` (C read first), the sizes fixed at pipeline creation, the K loop's
    /// unrolling); push constants M, N, K, alpha, slope, the batch strides in elements and beta;
    /// dispatch [`Cm2Tiles::grid`].
    ///
    /// Its variants need, beyond `cooperativeMatrix`, the device's
    /// `cooperativeMatrixWorkgroupScope`, `cooperativeMatrixFlexibleDimensions`,
    /// `cooperativeMatrixPerElementOperations` and `cooperativeMatrixTensorAddressing`: where
    /// those are missing it does not load, and [`Ops::gemm`](crate::ops::Ops::gemm) records
    /// [`gemm`](crate::gemm).
    pub mod gemm_cm2,
    path: "gemm_cm2.comp",
    // glslang compiles GL_NV_cooperative_matrix2 only for SPIR-V 1.6 (Vulkan 1.3).
    vulkan_version: "1.3",
    variants: [fp16s_cm, fp16sa_cm],
}

/// How [`gemm_cm2`] runs one problem: the tile of C per workgroup, the step depth, how many
/// steps the K loop runs unrolled, and whether M, N and K are fixed at pipeline creation.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Cm2Tiles {
    /// Rows of C per workgroup (`BM`, a multiple of 16).
    pub bm: u32,
    /// Columns of C per workgroup (`BN`, a multiple of 16).
    pub bn: u32,
    /// The step depth (`BK`, a multiple of 16).
    pub bk: u32,
    /// Steps per iteration of the K loop (`unroll`, at least 1).
    pub unroll: u32,
    /// M, N and K become specialization constants (a pipeline per shape; the driver knows the
    /// loop's bounds).
    pub fixed_sizes: bool,
    /// Invocations per workgroup (a multiple of the subgroup size, at most the device's
    /// `cooperativeMatrixWorkgroupScopeMaxWorkgroupSize`).
    pub threads: u32,
}

/// `gl_CooperativeMatrixClampModeUndefinedNV`: no element is read or written past an edge.
const CLAMP_MODE_UNDEFINED: u32 = 0;
/// `gl_CooperativeMatrixClampModeConstantNV`: loads past an edge read 0, stores are dropped.
const CLAMP_MODE_CONSTANT: u32 = 1;

/// The invocations of a [`gemm_cm2`] workgroup unless [`Cm2Tiles::threads`] says otherwise.
pub const GEMM_CM2_THREADS: u32 = 256;

impl Cm2Tiles {
    /// The tiles for an M×N×K problem, by how many tiles the grid holds (the H100's 132 SMs,
    /// measured in BENCHMARKS.md): 128×256 tiles 32 deep with 32 steps unrolled where there are
    /// at least 128 of them, else 128×128 tiles 64 deep with 8 unrolled where there are at
    /// least 128 of those, else 64×128 tiles 64 deep with 4 unrolled; 256 invocations, the
    /// sizes fixed.
    pub fn for_problem(m: usize, n: usize, _k: usize) -> Cm2Tiles {
        let tiles = |bm: usize, bn: usize| m.div_ceil(bm) * n.div_ceil(bn);
        let (bm, bn, bk, unroll) = if tiles(128, 256) >= 128 {
            (128, 256, 32, 32)
        } else if tiles(128, 128) >= 128 {
            (128, 128, 64, 8)
        } else {
            (64, 128, 64, 4)
        };
        Cm2Tiles {
            bm,
            bn,
            bk,
            unroll,
            fixed_sizes: true,
            threads: GEMM_CM2_THREADS,
        }
    }

    /// The workgroup to create the pipeline with.
    pub fn local_size(&self) -> [u32; 3] {
        [self.threads, 1, 1]
    }

    /// The specialization constants for an M×N×K product with these tiles and `epilogue`'s
    /// transposes, bias, activation, batching and `beta_term` (only those fields of it are read). The
    /// layouts clamp at the edges unless the sizes are fixed and multiples of the tiles.
    pub fn spec(
        &self,
        (m, n, k): (usize, usize, usize),
        epilogue: gemm_cm2::SpecConstants,
    ) -> gemm_cm2::SpecConstants {
        let fixed = |v: usize| if self.fixed_sizes { v as i32 } else { 0 };
        let whole = |v: usize, tile: u32| v.is_multiple_of(tile as usize);
        let inside =
            self.fixed_sizes && whole(m, self.bm) && whole(n, self.bn) && whole(k, self.bk);
        gemm_cm2::SpecConstants {
            clamped: if inside {
                CLAMP_MODE_UNDEFINED
            } else {
                CLAMP_MODE_CONSTANT
            },
            BM: self.bm as i32,
            BN: self.bn as i32,
            BK: self.bk as i32,
            fixed_m: fixed(m),
            fixed_n: fixed(n),
            fixed_k: fixed(k),
            unroll: self.unroll.max(1) as i32,
            ..epilogue
        }
    }

    /// The dispatch for an M×N result over `batch` products, in invocations.
    pub fn grid(&self, m: usize, n: usize, batch: usize) -> [u32; 3] {
        [
            n.div_ceil(self.bn as usize) as u32 * self.threads,
            m.div_ceil(self.bm as usize) as u32,
            batch as u32,
        ]
    }
}
