//! [`gemm_cm2`]: the fp16 / bf16 GEMM on workgroup-scope cooperative matrices
//! (`VK_NV_cooperative_matrix2`), and [`Cm2Tiles`], how it runs one problem.

vkprism::compute_shader! {
    /// The GEMM on workgroup-scope matrices and its split-K first pass, one module each
    /// (re-exported at the crate's root), sharing one set of constants types.
    pub mod cm2_kernels,
    variants: [fp16s_cm, fp16sa_cm, bf16s_cm],
    // glslang compiles GL_NV_cooperative_matrix2 only for SPIR-V 1.6 (Vulkan 1.3).
    vulkan_version: "1.3",
    shaders: {
    /// `C = act(alpha · op(A) · op(B) + beta · C + bias)` in fp16 (bf16 in `bf16s_cm`, which
    /// also needs `shaderBFloat16CooperativeMatrix` and `cooperativeMatrixConversions`: C is
    /// stored from an A-use matrix) with fp32 accumulation, on
    /// `VK_NV_cooperative_matrix2`'s workgroup-scope matrices and tensor-addressed loads: one
    /// BM×BN tile of C per workgroup (of [`Cm2Tiles::threads`](crate::Cm2Tiles::threads)
    /// invocations), A and B loaded BK deep straight from the buffers (the driver stages them).
    /// A stored M×K (K×M with `transpose_a`), B K×N (N×K with `transpose_b`), C M×N, the bias N
    /// values; every stored row a multiple of 8 elements; M, N and K any size (the loads clamp
    /// at the edges). Specialization constants as
    /// [`Cm2Tiles::spec`](crate::Cm2Tiles::spec) fills them (tiles, transposes, `bias_term`,
    /// `activation` as in [`gemm`](crate::gemm), `batched`, `beta_term` (C read first), the
    /// sizes fixed at pipeline creation, the K loop's unrolling); push constants M, N, K,
    /// alpha, slope, the batch strides in elements and beta; dispatch
    /// [`Cm2Tiles::grid`](crate::Cm2Tiles::grid).
    ///
    /// Its variants need, beyond `cooperativeMatrix`, the device's
    /// `cooperativeMatrixWorkgroupScope`, `cooperativeMatrixFlexibleDimensions`,
    /// `cooperativeMatrixPerElementOperations` and `cooperativeMatrixTensorAddressing`: where
    /// those are missing it does not load, and [`Ops::gemm`](crate::ops::Ops::gemm) records
    /// [`gemm`](crate::gemm).
        gemm_cm2: { path: "gemm_cm2.comp" },
    /// [`gemm_cm2`](crate::gemm_cm2) split along K, the first of two passes for one product
    /// whose grid of tiles is too small to fill the GPU: workgroup z of `split_k` multiplies
    /// one share of K (whole steps) and stores its fp32 sums to `partial` (`[split_k][M][N]`
    /// F32); [`gemm_split_reduce`](crate::gemm_split_reduce) (`fp16s`) then adds the shares and
    /// applies alpha, beta, the bias, the activation and C's format. The same variants,
    /// requirements and constants types; dispatch [`Cm2Tiles::grid`](crate::Cm2Tiles::grid) with z `split_k`.
        gemm_cm2_split: {
            path: "gemm_cm2.comp",
            define: [("VKPRISM_SPLIT_K", "1")],
            share: [gemm_cm2::SpecConstants, gemm_cm2::PushConstants],
        },
    /// A SwiGLU MLP's gate and up projections and its gate in one pass on
    /// [`gemm_cm2`](crate::gemm_cm2)'s matrices: `C[m][n] = act(A·Bᵀ[2n]) · (A·Bᵀ[2n + 1])` for
    /// A `[M][K]`, B stored `[2N][K]` with each output's gate and up rows side by side (as the
    /// decoder stores its gate/up weights) and C `[M][N]`; fp32 accumulation, no bias, beta or
    /// alpha. Each workgroup holds a BM×BN tile of both products as two accumulators and stores
    /// their gated product. The same variants, requirements and constants types
    /// (`transpose_b` 1, `activation` the gate's; M, N and K the result's and the depth;
    /// `narrow_from` and `narrow_bn`: from that column of tiles on, tiles `narrow_bn` wide, every
    /// wide tile launched before any narrow one); dispatch
    /// [`Cm2Tiles::grid`](crate::Cm2Tiles::grid) for the M×N result (with narrow tiles,
    /// `narrow_from` plus the narrow columns, in workgroups).
        gemm_cm2_glu: {
            path: "gemm_cm2.comp",
            define: [("VKPRISM_GLU", "1")],
            share: [gemm_cm2::SpecConstants, gemm_cm2::PushConstants],
        },
    /// A decoder's fused query, key and value projection rotated and placed in one pass on
    /// [`gemm_cm2`](crate::gemm_cm2)'s matrices: `x · Wᵀ` for x `[M][K]`, W stored
    /// `[(hq + 2·hkv) · dim][K]`, each row's query and key heads turned by rotary position
    /// embedding (interleaved pairs `(2i, 2i + 1)`, token m at position `offset + m`) and placed
    /// as [`rope_qkv4`](crate::rope_qkv4) places them: into q `[M][hq][dim]` and the caches'
    /// rows, k and v `[rows][hkv][dim]` (value heads copied). Each workgroup rounds its tile to
    /// the format, stages it in shared memory and places it an octet an invocation; dim a
    /// multiple of 8. The same variants and requirements; [`gemm_cm2`](crate::gemm_cm2)'s
    /// specialization constants (`transpose_b` 1, no split); push constants M, N, K (alpha,
    /// slope, the batch strides and beta unread) and `rope_qkv4`'s hq, hkv, dim, rows, offset
    /// and frequencies; `bias_term` adds `bias[n]` (binding 5) to the rounded tile before it is
    /// turned; dispatch [`Cm2Tiles::grid`](crate::Cm2Tiles::grid) for the M×N product.
        gemm_cm2_rope: {
            path: "gemm_cm2.comp",
            define: [("VKPRISM_ROPE", "1")],
            share: [gemm_cm2::SpecConstants],
        },
    },
}

use crate::tuning::table::stored_rows_of_eight;
pub use cm2_kernels::{gemm_cm2, gemm_cm2_glu, gemm_cm2_rope, gemm_cm2_split};
use vkprism::ScalarKind;

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
    /// Shares of K (`split_k`): 1 for [`gemm_cm2`]; more for [`gemm_cm2_split`] and its
    /// second pass (one product only).
    pub split_k: u32,
}

/// `gl_CooperativeMatrixClampModeUndefinedNV`: no element is read or written past an edge.
const CLAMP_MODE_UNDEFINED: u32 = 0;
/// `gl_CooperativeMatrixClampModeConstantNV`: loads past an edge read 0, stores are dropped.
const CLAMP_MODE_CONSTANT: u32 = 1;

/// Whether `device` lists an `m`×`n`×`k` multiply-add on workgroup-scope matrices of
/// `operands` (A and B) into `c` with a `result` in workgroups of `invocations`
/// (`vkGetPhysicalDeviceCooperativeMatrixFlexibleDimensionsPropertiesNV`).
pub(crate) fn workgroup_offers(
    device: &vkprism::DeviceFeatures,
    mnk: (u32, u32, u32),
    (operands, c, result): (ScalarKind, ScalarKind, ScalarKind),
    invocations: u32,
) -> bool {
    let types = vkprism::CoopMatShape {
        m: 0,
        n: 0,
        k: 0,
        a: operands,
        b: operands,
        c,
        result,
    };
    device.workgroup_matrices.offer(mnk, types, invocations)
}

/// The multiprocessors the grid rules plan for where a device does not say how many it has:
/// the H100's 132, where their figures were measured.
pub const MEASURED_SMS: usize = 132;

/// `device`'s multiprocessors ([`vkprism::DeviceLimits::multiprocessors`]: NVIDIA's SMs, AMD's
/// compute units, Arm's shader cores), or [`MEASURED_SMS`] where it does not say.
pub fn multiprocessors(device: &vkprism::DeviceFeatures) -> usize {
    match device.limits.multiprocessors {
        0 => MEASURED_SMS,
        sms => sms as usize,
    }
}

/// Tiles of C that fill `sms` multiprocessors about once at one workgroup each (`sms` rounded
/// down to a multiple of 8: 128 on the H100): below this many of 128×128,
/// [`Cm2Tiles::candidates`] narrows the tiles or splits K.
fn one_wave(sms: usize) -> usize {
    (sms / 8 * 8).max(8)
}

/// The invocations of a [`gemm_cm2`] workgroup unless [`Cm2Tiles::threads`] says otherwise.
pub const GEMM_CM2_THREADS: u32 = 128;

impl Cm2Tiles {
    /// The tiles for one M×N×K product on a GPU of [`MEASURED_SMS`] multiprocessors, by the
    /// grid of 128×128 tiles and the depth of K, as measured on the H100 (BENCHMARKS.md; a
    /// workgroup of 128 invocations holds about half an SM's registers, so two share one): the
    /// first of [`Cm2Tiles::candidates`].
    pub fn for_problem(m: usize, n: usize, k: usize) -> Cm2Tiles {
        Self::candidates(m, n, k, MEASURED_SMS)[0]
    }

    /// The first of [`Cm2Tiles::candidates`] for `device`'s [`multiprocessors`] that it offers
    /// for `operands` ([`Cm2Tiles::offered_by`]), if any.
    pub fn for_device(
        device: &vkprism::DeviceFeatures,
        operands: ScalarKind,
        (m, n, k): (usize, usize, usize),
    ) -> Option<Cm2Tiles> {
        Self::candidates(m, n, k, multiprocessors(device))
            .into_iter()
            .find(|t| t.offered_by(device, operands))
    }

    /// The tiles for one M×N×K product on a GPU of `sms` multiprocessors, best first (all 64
    /// deep, 128 invocations, the sizes fixed), with one wave `sms` rounded down to a multiple
    /// of 8 tiles (128 on the H100). Where fewer than a wave of 128×128 tiles cover C over a K
    /// of 2048 to 4095, tiles narrowed to a multiple of 16 columns (at least 64) so that about a
    /// wave of tiles of 128 rows would cover it, taken 64 rows high (about two workgroups an SM,
    /// so that more loads of B are in flight while each layer's weights come from memory),
    /// unsplit, 8 steps unrolled — on the H100 a decoder's prompt of 512 tokens: the
    /// query/key/value projection 512×2560×2048 on 64×80 tiles, the output projection
    /// 512×2048×2048 on 64×64 — then what a device without those widths takes. Otherwise:
    /// 128×128 tiles, 8 steps unrolled, split along K where fewer than a wave cover C — in 4
    /// over a K of at least 4096 (4 steps unrolled: each share's short loop is better served by
    /// a smaller binary, whose code a network's call finds cold; the decoder's down projection,
    /// 512×2048×5632), in 2 over a K of at least 2048 — or in 2 where fewer than two
    /// workgroups an SM cover C over a K of at least 8192; 64×128 tiles, 4 steps unrolled,
    /// where fewer than a wave cover C over a shorter K. A batch of products takes these tiles
    /// with `split_k` 1. Every choice is 64 rows high where M is 64 to 127, so that the tiles
    /// shift off M's edge instead of clamping every load ([`Cm2Tiles::shifts_edges`]).
    pub fn candidates(m: usize, n: usize, k: usize, sms: usize) -> Vec<Cm2Tiles> {
        let tiles = m.div_ceil(128) * n.div_ceil(128);
        let wave = one_wave(sms);
        // Fewer rows than 128 but 64 or more: 64-row tiles, which shift off M's edge.
        let rows = |bm: u32| if (64..128).contains(&m) { 64 } else { bm };
        let choose = |bm, bn, unroll, split_k| Cm2Tiles {
            bm: rows(bm),
            bn,
            bk: 64,
            unroll,
            fixed_sizes: true,
            threads: GEMM_CM2_THREADS,
            split_k,
        };
        if tiles < wave && k < 2048 {
            return vec![choose(64, 128, 4, 1)];
        }
        let mut candidates = Vec::with_capacity(2);
        let narrow = (n * m.div_ceil(128) / wave / 16 * 16).min(112);
        if tiles < wave && k < 4096 && narrow >= 64 {
            candidates.push(choose(64, narrow as u32, 8, 1));
        }
        let split = match k {
            4096.. if tiles < wave => 4,
            2048.. if tiles < wave => 2,
            8192.. if tiles < 2 * sms => 2,
            _ => 1,
        };
        let unroll = if split == 4 { 4 } else { 8 };
        candidates.push(choose(128, 128, unroll, split));
        candidates
    }

    /// These tiles for a product whose result also passes row by row through a second pass
    /// (the RMS norm of [`Ops::gemm_rms_norm`](crate::Ops::gemm_rms_norm)): where they are
    /// narrow tiles 64 rows high and unsplit over an M of at least 128 and two or more steps of
    /// K, the same number of workgroups on tiles twice as high with K split in 2, so that the
    /// split's second pass does that row pass and no dispatch of its own is needed (the
    /// decoder's output projection at 512 tokens, 512×2048×2048: 64×64 → 128×64 in 2, which
    /// shortened its prompt on the H100; BENCHMARKS.md). Otherwise unchanged.
    pub fn with_row_pass(self, (m, k): (usize, usize)) -> Cm2Tiles {
        let steps = k.div_ceil(self.bk as usize);
        if self.split_k == 1 && self.bm == 64 && m >= 128 && steps >= 2 {
            return Cm2Tiles {
                bm: 128,
                split_k: 2,
                ..self
            };
        }
        self
    }

    /// Whether `device` offers these tiles' workgroup-scope matrices for `operands` (F16 or
    /// Bf16): the BM×BN×BK multiply-add into fp32 and the BM×BN matrix C is stored from (an
    /// fp16 accumulator, or a bf16 A-use matrix), in workgroups of [`Cm2Tiles::threads`]
    /// (`vkGetPhysicalDeviceCooperativeMatrixFlexibleDimensionsPropertiesNV`).
    pub fn offered_by(&self, device: &vkprism::DeviceFeatures, operands: ScalarKind) -> bool {
        let offer =
            |mnk, c, result| workgroup_offers(device, mnk, (operands, c, result), self.threads);
        let multiply = offer(
            (self.bm, self.bn, self.bk),
            ScalarKind::F32,
            ScalarKind::F32,
        );
        let stored = match operands {
            // C as an A-use matrix: BM rows, BN columns along K.
            ScalarKind::Bf16 => offer(
                (self.bm, self.bn, self.bn),
                ScalarKind::F32,
                ScalarKind::F32,
            ),
            _ => offer((self.bm, self.bn, self.bk), operands, operands),
        };
        multiply && stored
    }

    /// The workgroup to create the pipeline with.
    pub fn local_size(&self) -> [u32; 3] {
        [self.threads, 1, 1]
    }

    /// The specialization constants for an M×N×K product with these tiles and `epilogue`'s
    /// transposes, bias, activation, batching and `beta_term` (only those fields of it are read). The
    /// layouts clamp at the edges unless the sizes are fixed and multiples of the tiles. Where
    /// the sizes are fixed but not multiples, each at least a tile, the edges are shifted
    /// ([`Cm2Tiles::shifts_edges`]): only the short first step's loads and the stores clamp
    /// (the driver's clamped loads run at about half the speed).
    pub fn spec(
        &self,
        (m, n, k): (usize, usize, usize),
        epilogue: gemm_cm2::SpecConstants,
    ) -> gemm_cm2::SpecConstants {
        let fixed = |v: usize| if self.fixed_sizes { v as i32 } else { 0 };
        let whole = |v: usize, tile: u32| v.is_multiple_of(tile as usize);
        let inside =
            self.fixed_sizes && whole(m, self.bm) && whole(n, self.bn) && whole(k, self.bk);
        let transposes = (epilogue.transpose_a == 1, epilogue.transpose_b == 1);
        let shifted = !inside && self.shifts_edges((m, n, k), transposes);
        gemm_cm2::SpecConstants {
            shifted_edges: shifted as i32,
            clamped: if inside || shifted {
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
            split_k: self.split_k.max(1) as i32,
            ..epilogue
        }
    }

    /// Whether [`gemm_cm2`] shifts its tiles off the edges for an M×N×K product with A and B
    /// transposed as `transposes` says: the sizes fixed, each at least its tile, and every
    /// stored row a multiple of 8 elements, so that each shifted start (a side's remainder
    /// after whole tiles, whose tiles are multiples of 16) stays 16 bytes into a row. The first
    /// row and column of tiles and the first step of K are then the short ones.
    pub fn shifts_edges(&self, (m, n, k): (usize, usize, usize), transposes: (bool, bool)) -> bool {
        let aligned = stored_rows_of_eight((m, n, k), transposes);
        let at_least = m >= self.bm as usize && n >= self.bn as usize && k >= self.bk as usize;
        self.fixed_sizes && at_least && aligned
    }

    /// Whether every load of an M×N×K product with A and B stored as `transposes` say clamps
    /// on these tiles: the sizes are not multiples of the tiles and the tiles can't shift off
    /// the edges. The operation layer leaves such products to the KHR kernel, which runs
    /// them faster (BENCHMARKS.md).
    pub fn clamps_every_load(
        &self,
        (m, n, k): (usize, usize, usize),
        (transpose_a, transpose_b): (bool, bool),
    ) -> bool {
        let epilogue = gemm_cm2::SpecConstants {
            transpose_a: transpose_a as i32,
            transpose_b: transpose_b as i32,
            ..Default::default()
        };
        self.spec((m, n, k), epilogue).clamped == CLAMP_MODE_CONSTANT
    }

    /// As [`Cm2Tiles::clamps_every_load`] for [`gemm_cm2_glu`] (B stored N×K, shifting only
    /// along M: [`Cm2Tiles::glu_spec`]).
    pub fn glu_clamps_every_load(&self, (m, n, k): (usize, usize, usize)) -> bool {
        let epilogue = gemm_cm2::SpecConstants {
            transpose_b: 1,
            ..Default::default()
        };
        self.glu_spec((m, n, k), epilogue).clamped == CLAMP_MODE_CONSTANT
    }

    /// [`Cm2Tiles::spec`] for [`gemm_cm2_glu`], whose tiles shift only along M: where N or K
    /// is not a multiple of its tile, every load clamps.
    pub fn glu_spec(
        &self,
        (m, n, k): (usize, usize, usize),
        epilogue: gemm_cm2::SpecConstants,
    ) -> gemm_cm2::SpecConstants {
        let spec = self.spec((m, n, k), epilogue);
        let whole = n.is_multiple_of(self.bn as usize) && k.is_multiple_of(self.bk as usize);
        if spec.shifted_edges == 1 && !whole {
            return gemm_cm2::SpecConstants {
                shifted_edges: 0,
                clamped: CLAMP_MODE_CONSTANT,
                ..spec
            };
        }
        spec
    }

    /// The dispatch for an M×N result over `batch` products (or, split, `split_k` shares of
    /// one), in invocations.
    pub fn grid(&self, m: usize, n: usize, batch: usize) -> [u32; 3] {
        let z = if self.split_k > 1 {
            self.split_k
        } else {
            batch as u32
        };
        [
            n.div_ceil(self.bn as usize) as u32 * self.threads,
            m.div_ceil(self.bm as usize) as u32,
            z,
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use vkprism::{CoopMatShape, DeviceFeatures, FeatureSet, WorkgroupMatrixShape};

    fn family(c: ScalarKind, invocations: u32) -> WorkgroupMatrixShape {
        WorkgroupMatrixShape {
            granularity: CoopMatShape {
                m: 16,
                n: 16,
                k: 16,
                a: ScalarKind::F16,
                b: ScalarKind::F16,
                c,
                result: c,
            },
            workgroup_invocations: invocations,
        }
    }

    #[test]
    fn small_grids_split_by_the_depth_of_k() {
        let split = |m, n, k| Cm2Tiles::for_problem(m, n, k).split_k;
        // A decoder's prompt of 512 tokens: down (64 tiles over 5632), O (64 over 2048), gate/up
        // (352 tiles), and the tall 4096×512×14336 (128 tiles over 14336).
        assert_eq!(split(512, 2048, 5632), 4);
        assert_eq!(split(512, 2048, 2048), 1);
        assert_eq!(split(512, 11264, 2048), 1);
        assert_eq!(split(4096, 512, 14336), 2);
        assert_eq!(split(4096, 4096, 4096), 1);
        let short = Cm2Tiles::for_problem(512, 2048, 1024);
        assert_eq!((short.bm, short.split_k), (64, 1));
        // Shares of a quarter of K run 4 steps an iteration, the others 8.
        let unroll = |m, n, k| Cm2Tiles::for_problem(m, n, k).unroll;
        assert_eq!(unroll(512, 2048, 5632), 4);
        assert_eq!(unroll(4096, 512, 14336), 8);
        assert_eq!(unroll(4096, 4096, 4096), 8);
    }

    #[test]
    fn a_row_pass_splits_narrow_tiles_64_rows_high() {
        let shape = |t: Cm2Tiles| (t.bm, t.bn, t.split_k);
        let row_pass = |m, n, k| shape(Cm2Tiles::for_problem(m, n, k).with_row_pass((m, k)));
        // The decoder's output projection at 512 tokens: 256 workgroups either way.
        assert_eq!(row_pass(512, 2048, 2048), (128, 64, 2));
        // Already split, or 128 rows high: unchanged.
        assert_eq!(row_pass(512, 2048, 5632), (128, 128, 4));
        assert_eq!(row_pass(4096, 4096, 4096), (128, 128, 1));
        // Fewer than 128 rows (64-row tiles shift off M's edge), or one step of K: unchanged.
        assert_eq!(row_pass(100, 2048, 1024), (64, 128, 1));
        let one_step = Cm2Tiles::for_problem(512, 2048, 64);
        assert_eq!(one_step.with_row_pass((512, 64)), one_step);
    }

    #[test]
    fn small_grids_over_a_medium_k_take_narrow_tiles_then_the_split() {
        let shape = |t: &Cm2Tiles| (t.bm, t.bn, t.split_k);
        // A decoder's prompt: Q/K/V 512×2560 (80 tiles of 128×128) and O 512×2048 (64).
        let qkv = Cm2Tiles::candidates(512, 2560, 2048, MEASURED_SMS);
        assert_eq!(
            qkv.iter().map(shape).collect::<Vec<_>>(),
            [(64, 80, 1), (128, 128, 2)]
        );
        let o = Cm2Tiles::candidates(512, 2048, 2048, MEASURED_SMS);
        assert_eq!(
            o.iter().map(shape).collect::<Vec<_>>(),
            [(64, 64, 1), (128, 128, 2)]
        );
        // Narrower than 64 columns: the split alone (256×2048: 32 tiles).
        assert_eq!(Cm2Tiles::candidates(256, 2048, 2048, MEASURED_SMS).len(), 1);
        // Enough tiles, or a K long enough to split in 4: no narrowing.
        assert_eq!(
            Cm2Tiles::candidates(2048, 2048, 2048, MEASURED_SMS).len(),
            1
        );
        assert_eq!(Cm2Tiles::candidates(512, 2048, 5632, MEASURED_SMS).len(), 1);
        // A device without 80-wide matrices runs the split.
        let mut device = DeviceFeatures::new(FeatureSet::all());
        let mut coarse = family(ScalarKind::F32, 128);
        coarse.granularity.n = 32;
        let mut coarse16 = family(ScalarKind::F16, 128);
        coarse16.granularity.n = 32;
        device.workgroup_matrices = [coarse, coarse16].into_iter().collect();
        let chosen = Cm2Tiles::for_device(&device, ScalarKind::F16, (512, 2560, 2048));
        assert_eq!(chosen.as_ref().map(shape), Some((128, 128, 2)));
        device.workgroup_matrices = [family(ScalarKind::F32, 128), family(ScalarKind::F16, 128)]
            .into_iter()
            .collect();
        let chosen = Cm2Tiles::for_device(&device, ScalarKind::F16, (512, 2560, 2048));
        assert_eq!(chosen.as_ref().map(shape), Some((64, 80, 1)));
    }

    #[test]
    fn the_waves_follow_the_devices_multiprocessors() {
        let shape = |t: &Cm2Tiles| (t.bm, t.bn, t.split_k);
        let plan = |sms, (m, n, k)| -> Vec<_> {
            Cm2Tiles::candidates(m, n, k, sms)
                .iter()
                .map(shape)
                .collect()
        };
        // 58 SMs (a wave of 56 tiles): the 64 tiles of a prompt's O projection fill one, and
        // its down projection's 64 over 5632 need no split; below a wave, the split.
        assert_eq!(plan(58, (512, 2048, 2048)), [(128, 128, 1)]);
        assert_eq!(plan(58, (512, 2048, 5632)), [(128, 128, 1)]);
        assert_eq!(plan(58, (256, 2048, 5632)), [(128, 128, 4)]);
        // 180 SMs: 352 tiles (a prompt's gate/up projection) over a K of 8192 are fewer than
        // two workgroups an SM; on the H100's 132 they are not.
        assert_eq!(plan(180, (512, 11264, 8192)), [(128, 128, 2)]);
        assert_eq!(plan(MEASURED_SMS, (512, 11264, 8192)), [(128, 128, 1)]);
        // A device that names its SMs plans by them; one that does not, by the H100's.
        let mut device = DeviceFeatures::new(FeatureSet::all());
        assert_eq!(multiprocessors(&device), MEASURED_SMS);
        device.limits.multiprocessors = 58;
        assert_eq!(multiprocessors(&device), 58);
        device.workgroup_matrices = [family(ScalarKind::F32, 128), family(ScalarKind::F16, 128)]
            .into_iter()
            .collect();
        let chosen = Cm2Tiles::for_device(&device, ScalarKind::F16, (512, 2048, 2048));
        assert_eq!(chosen.as_ref().map(shape), Some((128, 128, 1)));
    }

    #[test]
    fn tiles_shift_off_the_edges_where_the_sizes_are_fixed_and_the_rows_stay_aligned() {
        let tiles = Cm2Tiles::for_problem(4096, 4096, 4096);
        let spec = |mnk, (ta, tb): (i32, i32)| {
            let e = gemm_cm2::SpecConstants {
                transpose_a: ta,
                transpose_b: tb,
                ..Default::default()
            };
            let s = tiles.spec(mnk, e);
            let g = tiles.glu_spec(mnk, e);
            ((s.clamped, s.shifted_edges), (g.clamped, g.shifted_edges))
        };
        let whole = (CLAMP_MODE_UNDEFINED, 0);
        let shifted = (CLAMP_MODE_UNDEFINED, 1);
        let clamped = (CLAMP_MODE_CONSTANT, 0);
        assert_eq!(spec((4096, 4096, 4096), (0, 1)), (whole, whole));
        // Any edge: shifted; the fused MLP only along M.
        assert_eq!(spec((4000, 4096, 4096), (0, 1)), (shifted, shifted));
        assert_eq!(spec((4096, 4000, 4096), (0, 1)), (shifted, clamped));
        assert_eq!(spec((4096, 4096, 4000), (0, 1)), (shifted, clamped));
        assert_eq!(spec((500, 2048, 5632), (0, 1)), (shifted, shifted));
        // A stored K×M: M's shift moves its rows' starts, so only M a multiple of 8.
        assert_eq!(spec((4004, 4096, 4096), (1, 0)).0, clamped);
        assert_eq!(spec((4000, 4096, 4096), (1, 0)).0, shifted);
        // K in no stored row (A K×M, B K×N): any K.
        assert_eq!(spec((4096, 4096, 4001), (1, 0)).0, shifted);
        assert_eq!(spec((4096, 4096, 4001), (0, 0)).0, clamped);
        // 64 to 127 rows: 64-row tiles, shifted; fewer: every load clamps (the KHR kernel's).
        let short = Cm2Tiles::for_problem(100, 2048, 5632);
        assert_eq!(short.bm, 64);
        assert!(!short.clamps_every_load((100, 2048, 5632), (false, true)));
        let few = Cm2Tiles::for_problem(32, 8192, 2048);
        assert!(few.clamps_every_load((32, 8192, 2048), (false, true)));
        assert!(tiles.glu_clamps_every_load((100, 5632, 2048)));
        assert!(!tiles.glu_clamps_every_load((500, 5632, 2048)));
        // Smaller than a tile, or sizes pushed: every tile clamps.
        assert_eq!(spec((100, 4096, 4096), (0, 1)).0, clamped);
        let pushed = Cm2Tiles {
            fixed_sizes: false,
            ..tiles
        };
        let s = pushed.spec((4000, 4096, 4096), gemm_cm2::SpecConstants::default());
        assert_eq!((s.clamped, s.shifted_edges), clamped);
    }

    #[test]
    fn tiles_are_offered_only_with_both_families_at_their_workgroup_size() {
        let tiles = Cm2Tiles::for_problem(4096, 4096, 4096);
        let mut device = DeviceFeatures::new(FeatureSet::all());
        assert!(!tiles.offered_by(&device, ScalarKind::F16));
        device.workgroup_matrices = [family(ScalarKind::F32, 128)].into_iter().collect();
        assert!(
            !tiles.offered_by(&device, ScalarKind::F16),
            "no fp16 result family"
        );
        device.workgroup_matrices = [family(ScalarKind::F32, 128), family(ScalarKind::F16, 128)]
            .into_iter()
            .collect();
        assert!(tiles.offered_by(&device, ScalarKind::F16));
        let wide = Cm2Tiles {
            threads: 256,
            ..tiles
        };
        assert!(
            !wide.offered_by(&device, ScalarKind::F16),
            "no family of 256 invocations"
        );
        let odd = Cm2Tiles { bk: 24, ..tiles };
        assert!(
            !odd.offered_by(&device, ScalarKind::F16),
            "24 is no multiple of 16"
        );
    }
}
