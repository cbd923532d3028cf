//! [`GemmConfig`]: how a GEMM-shaped kernel runs one problem, and the rules that choose it from
//! the problem's shape (the NVIDIA row of the tile table in [`crate::tuning`]).

use crate::tuning::{DeviceClass, GemmKernel, GemmProblem, Tuned};
#[cfg(doc)]
use crate::{conv2d_nhwc, conv2d_nhwc_split, gemm_int8, gemm_split, tuning, GemmTuner};
use crate::{gemm, gemm_split_reduce, Conv2dShape, MEASURED_SMS};

/// How [`gemm`] and [`conv2d_nhwc`] run one problem: the workgroup, the step depth and, in
/// cooperative-matrix variants, the subgroups' tiles and the load width. [`GemmConfig::for_gemm`]
/// and [`GemmConfig::for_conv`] choose them from the problem's shape with the figures measured
/// on the H100 (BENCHMARKS.md), whatever the GPU; the fields are public to compare others.
///
/// Per device: [`DeviceClass::config`] gives the row of the device's class in a table keyed by
/// vendor / architecture (the NVIDIA rows are exactly these functions; the others are
/// documented defaults, not measured), and [`GemmTuner`] measures the class's candidates on the
/// first use of a problem and caches the choice beside the pipeline cache ([`tuning`]).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct GemmConfig {
    /// The workgroup (x, y). With cooperative matrices x is the subgroup size and y the number
    /// of subgroups (Vulkan wants a subgroup-scope matrix's workgroup x to be a multiple of the
    /// subgroup size).
    pub local: [u32; 2],
    /// `BK`, the step depth (a multiple of 4; rounded up to 16 with cooperative matrices).
    pub bk: i32,
    /// The variant multiplies cooperative matrices (`_cm`).
    pub coopmat: bool,
    /// The device's subgroup size (`subgroup_size`).
    pub subgroup_size: u32,
    /// Cooperative matrices: 16×16 fragments per subgroup along M (`cm_wfm`) and along N
    /// (`cm_wfn`), and subgroups along N (`cm_warps_n`).
    pub cm_tiles: [u32; 3],
    /// Every stored row is a multiple of one 16-byte load (8 halves, or 16 int8 for
    /// [`gemm_int8`]): the `wide_loads` constant, aligned loads with cooperative matrices.
    /// Must be false otherwise (the loads would straddle rows).
    pub wide_loads: bool,
    /// Workgroups along K (`split_k`): 1 for the one-pass kernels; more only for
    /// [`gemm_split`] / [`conv2d_nhwc_split`] ([`GemmConfig::split_for`]).
    pub split_k: u32,
}

impl GemmConfig {
    /// The configuration for an M×N×K [`gemm`] in `variant` on a device with subgroups of
    /// `subgroup_size` (`ctx.features().limits.subgroup_size`).
    ///
    /// Without cooperative matrices: 8×8 micro-tiles on a 16×16 workgroup (128×128 tiles), or
    /// 8×8 workgroups (64×64 tiles) when there are too few tiles to fill a large GPU, a 16-deep
    /// step. With them, tiles by the problem's shape (`coopmat_tiles` in the source says which
    /// and what each was measured at): 128×256 tiles of 8 subgroups and a 32-deep step for large
    /// problems (48-deep from K ≥ 2048), smaller tiles for small grids or N ≤ 64, a 64-deep step
    /// for long K; every choice within 48 KiB of shared memory. 16-byte loads with cooperative
    /// matrices where M, N and K are multiples of 8, as either operand may be stored transposed
    /// ([`Ops::gemm`](crate::ops::Ops::gemm), knowing how they are stored, needs only their rows
    /// and C's to be: [`GemmProblem::gemm`]).
    ///
    /// This is the NVIDIA row of [`DeviceClass`]'s table; on another GPU,
    /// `DeviceClass::of(ctx).config(..)` or a [`GemmTuner`] choose for that GPU.
    pub fn for_gemm(
        variant: &vkprism::VariantKey,
        subgroup_size: u32,
        m: usize,
        n: usize,
        k: usize,
    ) -> GemmConfig {
        // Either operand may be stored transposed: aligned only where every side is.
        let problem = GemmProblem {
            aligned: [m, n, k].iter().all(|d| d.is_multiple_of(8)),
            ..GemmProblem::gemm(m, n, k, false, false)
        };
        DeviceClass::NvidiaHopper.config(&problem, variant, subgroup_size)
    }

    /// The configuration for an M×N×K [`gemm_int8`]: as [`GemmConfig::for_gemm`], with steps
    /// twice as deep in elements (the same bytes) and 16-byte loads where K and N are multiples
    /// of 16.
    pub fn for_gemm_int8(
        variant: &vkprism::VariantKey,
        subgroup_size: u32,
        m: usize,
        n: usize,
        k: usize,
    ) -> GemmConfig {
        let problem = GemmProblem::gemm_int8(m, n, k);
        DeviceClass::NvidiaHopper.config(&problem, variant, subgroup_size)
    }

    /// The configuration for a [`conv2d_nhwc`] of `shape`, as [`GemmConfig::for_gemm`] for its
    /// implicit GEMM (16-byte loads where the channel counts are multiples of 8), except that
    /// large grids with cooperative matrices get 96×256 tiles of 12 subgroups and 48-deep steps
    /// (its A loads gather: `coopmat_tiles` says what was measured).
    pub fn for_conv(
        variant: &vkprism::VariantKey,
        subgroup_size: u32,
        shape: &Conv2dShape,
    ) -> GemmConfig {
        let problem = GemmProblem::conv2d_nhwc(shape);
        DeviceClass::NvidiaHopper.config(&problem, variant, subgroup_size)
    }

    /// The measured rule (the NVIDIA rows of the table): the workgroup, step and tiles for
    /// `problem` in `variant`, before the int8 kernel's deeper steps.
    pub(crate) fn measured_choice(
        problem: &GemmProblem,
        variant: &vkprism::VariantKey,
        subgroup_size: u32,
    ) -> Tuned {
        let (m, n, k) = (problem.m, problem.n, problem.k);
        let tiles = m.div_ceil(128) * n.div_ceil(128);
        if variant.coopmat == Some(true) {
            let gathers = problem.kernel == GemmKernel::Conv2dNhwc;
            let (subgroups, cm_tiles, bk) = coopmat_tiles((m, n, k), tiles, gathers);
            return Tuned {
                local: [subgroup_size, subgroups],
                bk,
                cm_tiles,
            };
        }
        // Grids of few 128×128 tiles get 64×64 ones so every SM has work; fp32 lost on the tall
        // 4096×512×14336 with them, hence its lower threshold (BENCHMARKS.md, "Tile rules").
        let enough = if variant.float == vkprism::FloatMode::Fp32 {
            128
        } else {
            256
        };
        let side = if tiles < enough { 8 } else { 16 };
        Tuned {
            local: [side, side],
            bk: 16,
            cm_tiles: PLAIN_CM_TILES,
        }
    }

    /// The rows and columns of C one workgroup computes.
    pub fn tile(&self) -> (usize, usize) {
        if self.coopmat {
            let [wfm, wfn, warps_n] = self.cm_tiles;
            let warps = self.local[0] * self.local[1] / self.subgroup_size;
            let warps_m = warps / warps_n;
            ((warps_m * wfm * 16) as usize, (warps_n * wfn * 16) as usize)
        } else {
            (8 * self.local[1] as usize, 8 * self.local[0] as usize)
        }
    }

    /// The workgroup as `pipeline` takes it.
    pub fn local_size(&self) -> [u32; 3] {
        [self.local[0], self.local[1], 1]
    }

    /// The invocation grid for an M×N result: one workgroup per tile.
    pub fn grid(&self, m: usize, n: usize) -> [u32; 3] {
        let (bm, bn) = self.tile();
        [
            (n.div_ceil(bn) as u32) * self.local[0],
            (m.div_ceil(bm) as u32) * self.local[1],
            self.split_k,
        ]
    }

    /// This configuration split along K where an M×N×K problem's grid is too small to fill a
    /// large GPU. With cooperative matrices, a K longer than M and N (and N over 64) first gets
    /// the most efficient tiles, 128×256 of 8 subgroups, where at least [`MIN_WIDE_TILES`] of
    /// them cover the result (fewer rows keep the table's smaller tiles: more workgroups to
    /// split); then (every path) a grid of fewer than [`SPLIT_K_WORKGROUPS`] workgroups over a
    /// K of at least 512 gets enough shares of K to reach that many (at most [`MAX_SPLIT`],
    /// each at least two 32-deep steps; workgroups of 4 subgroups below and toward
    /// [`SMALL_CM_SPLIT_WORKGROUPS`]; without cooperative matrices [`PLAIN_SPLIT_WORKGROUPS`]
    /// in at most [`PLAIN_MAX_SPLIT`]), 48-deep steps where a share is 2048 or more. Every
    /// choice fits in 48 KiB of shared memory
    /// ([`tuning::shared_memory_bytes`]; NVIDIA's limit, the smallest of the desktop GPUs'):
    /// 64-deep steps of 128×256 tiles would need 60,416 bytes. Splitting won on the H100 for
    /// the tall 4096×512×14336 GEMM and the small-grid 3×3 convolutions at batch 8 14×14;
    /// ResNet-50's last stages at batch 1 (results of 49 and 196 rows: one or two wide tiles)
    /// are why the wide tiles need [`MIN_WIDE_TILES`] and why the shares go to [`MAX_SPLIT`]
    /// (BENCHMARKS.md, "Tile rules", has the measurements). A configuration with
    /// `split_k` > 1 is for [`gemm_split`] / [`conv2d_nhwc_split`] and [`gemm_split_reduce`].
    /// The workgroup counts are the H100's ([`MEASURED_SMS`] multiprocessors);
    /// [`GemmConfig::split_for_sms`] scales them to another GPU's.
    pub fn split_for(self, mnk: (usize, usize, usize)) -> GemmConfig {
        self.split_for_sms(mnk, MEASURED_SMS)
    }

    /// [`GemmConfig::split_for`] on a GPU of `sms` multiprocessors
    /// ([`crate::multiprocessors`]): each workgroup count of the rule scaled by `sms` /
    /// [`MEASURED_SMS`] (rounded up), so a grid that fills a smaller GPU stays whole and a
    /// split aims at as many workgroups an SM as on the H100.
    pub fn split_for_sms(self, (m, n, k): (usize, usize, usize), sms: usize) -> GemmConfig {
        let wide = GemmConfig {
            local: [self.subgroup_size, 8],
            bk: 32,
            cm_tiles: [4, 4, 4],
            ..self
        };
        let (wide_m, wide_n) = wide.tile();
        let wide_tiles = m.div_ceil(wide_m) * n.div_ceil(wide_n);
        let base = if self.coopmat && n > 64 && k > m.max(n) && wide_tiles >= MIN_WIDE_TILES {
            wide
        } else {
            self
        };
        let (bm, bn) = base.tile();
        let workgroups = m.div_ceil(bm) * n.div_ceil(bn);
        // (grids this large stay whole, the workgroups a split aims at, the most shares)
        let (whole, aim, cap) = match (self.coopmat, base.local[1] <= 4) {
            (true, true) => (
                SMALL_CM_SPLIT_WORKGROUPS,
                SMALL_CM_SPLIT_WORKGROUPS,
                MAX_SPLIT,
            ),
            (true, false) => (SPLIT_K_WORKGROUPS, SPLIT_K_WORKGROUPS, MAX_SPLIT),
            (false, _) => (SPLIT_K_WORKGROUPS, PLAIN_SPLIT_WORKGROUPS, PLAIN_MAX_SPLIT),
        };
        let scaled = |workgroups: usize| (workgroups * sms.max(1)).div_ceil(MEASURED_SMS);
        let (whole, aim) = (scaled(whole), scaled(aim));
        if workgroups >= whole || k < 512 {
            return self;
        }
        let split = aim.div_ceil(workgroups).min(cap).min(k / 64);
        // Without matrices the table's step depth stays: the shares are whole steps of it.
        let bk = match (self.coopmat, k / split >= 2048) {
            (false, _) => self.bk,
            (true, true) => 48,
            (true, false) => 32,
        };
        GemmConfig {
            split_k: split as u32,
            bk,
            ..base
        }
    }

    /// The shape of [`gemm_split`]'s fp32 partial sums for an M×N result: `[split_k, M, N]`.
    pub fn partial_shape(&self, m: usize, n: usize) -> [usize; 3] {
        [self.split_k as usize, m, n]
    }

    /// The invocation grid of [`gemm_split_reduce`] for an M×N result (one per 4 elements).
    pub fn reduce_grid(&self, m: usize, n: usize) -> [u32; 3] {
        split_reduce_grid(m, n)
    }

    /// [`gemm_split_reduce`]'s constants for this configuration, with `bias_term` and
    /// `activation` as given to the one-pass kernel (`beta_term` 0: set it where C's value is
    /// added).
    pub fn reduce_spec(
        &self,
        bias_term: bool,
        activation: i32,
    ) -> gemm_split_reduce::SpecConstants {
        gemm_split_reduce::SpecConstants {
            splits: self.split_k as i32,
            bias_term: bias_term as i32,
            activation,
            beta_term: 0,
        }
    }

    /// `spec` with this configuration's constants (`BK`, `subgroup_size`, `cm_*`, `wide_loads`,
    /// `split_k`) and the caller's (`transpose_*`, `bias_term`, `activation`): the constants of
    /// every GEMM-shaped kernel, which share this one type.
    pub fn spec(&self, spec: gemm::SpecConstants) -> gemm::SpecConstants {
        let [cm_wfm, cm_wfn, cm_warps_n] = self.cm_tiles.map(|v| v as i32);
        gemm::SpecConstants {
            BK: self.bk,
            subgroup_size: self.subgroup_size as i32,
            cm_wfm,
            cm_wfn,
            cm_warps_n,
            wide_loads: self.wide_loads as i32,
            split_k: self.split_k as i32,
            ..spec
        }
    }
}

/// `cm_tiles` of a configuration without cooperative matrices (unused there; the kernels'
/// defaults).
pub(crate) const PLAIN_CM_TILES: [u32; 3] = [4, 4, 2];

/// The fewest 128×256 tiles covering a result for which [`GemmConfig::split_for`] takes them.
pub const MIN_WIDE_TILES: usize = 8;

/// The most shares [`GemmConfig::split_for`] splits K into.
pub const MAX_SPLIT: usize = 16;

/// The workgroups a split without cooperative matrices aims at: two an SM, whose register
/// tiles leave room for both (measured on ResNet-50 in fp32: BENCHMARKS.md). Grids of
/// [`SPLIT_K_WORKGROUPS`] or more stay whole all the same (a 4096×512×14336 GEMM in fp32 lost
/// split in 2 there).
pub const PLAIN_SPLIT_WORKGROUPS: usize = 256;

/// The most shares a split without cooperative matrices takes.
pub const PLAIN_MAX_SPLIT: usize = 32;

/// The workgroups [`GemmConfig::split_for`] aims at: about one per SM of an H100 (132); below
/// it a grid is split. Every workgroup count of the rule is the H100's, scaled to another GPU
/// by [`GemmConfig::split_for_sms`].
pub const SPLIT_K_WORKGROUPS: usize = 128;

/// The workgroups a split with cooperative matrices aims at where a workgroup is only 4
/// subgroups (64×64 tiles): two an SM, as small workgroups leave room for both (measured on
/// ResNet-50 in fp16: BENCHMARKS.md); larger workgroups aim at [`SPLIT_K_WORKGROUPS`].
pub const SMALL_CM_SPLIT_WORKGROUPS: usize = 256;

/// Cooperative-matrix tiles for an M×N×K problem with `tiles` 128×128 tiles: (subgroups per
/// workgroup, `cm_tiles`, `BK`). Each rule won against its runner-up on the H100 (BENCHMARKS.md,
/// "Tile rules", has the figures):
/// - N ≤ 64 with many tiles (convolutions with 64 channels), or a tiny grid over a long K:
///   64×64 tiles of 4 subgroups;
/// - few tiles over a long K: 128×128 tiles, 8 subgroups of 64×32 and a 64-deep step, fewer
///   barriers per multiply-add; also a short, wide product of fewer than 512 such tiles (a
///   prompt's gate/up projection);
/// - few tiles otherwise: 64×128 tiles so every SM has work;
/// - a convolution (`gathers`: its A loads compute an input address per octet) with N > 128
///   and K > 64: 96×256 tiles of 12 subgroups of 32×64 (3 along M) and a 48-deep step, two
///   thirds of the workgroups of 128×256 tiles with 12 subgroups an SM instead of 8 (192×256
///   tiles of 12 subgroups spill at their register cap; a GEMM loses with 32×64 subgroup
///   tiles);
/// - a convolution of N ≤ 128 or K ≤ 64 (ResNet's 1×1 layers of 64 input channels, its
///   128-channel reductions): 64×128 tiles of 8 subgroups, as half of a 256-wide tile would be
///   empty and a 48-deep step over a depth of 64 multiplies a second step of mostly zeros;
/// - else 128×256 tiles, 8 subgroups of 64×64, a 32-deep step, 48-deep where K ≥ 2048 (the
///   deepest step of these tiles within the 48 KiB of shared memory a workgroup may have on
///   NVIDIA GPUs: 39,680 bytes; 64 would need 52,224).
fn coopmat_tiles(
    (m, n, k): (usize, usize, usize),
    tiles: usize,
    gathers: bool,
) -> (u32, [u32; 3], i32) {
    let tiles64 = m.div_ceil(64) * n.div_ceil(64);
    if (n <= 64 && tiles64 >= 256) || (tiles < 64 && k >= 2048) {
        (4, [2, 2, 2], 32)
    } else if k >= 2048 && (tiles < 256 || (m <= 512 && tiles < 512)) {
        (8, [4, 2, 4], 64)
    } else if tiles < 128 {
        (8, [2, 2, 4], 32)
    } else if gathers && n > 128 && k > 64 {
        (12, [2, 4, 4], 48)
    } else if gathers {
        (8, [2, 2, 4], 32)
    } else {
        (8, [4, 4, 4], if k >= 2048 { 48 } else { 32 })
    }
}

/// The invocation grid of [`gemm_split_reduce`] for an M×N result, whatever the first pass:
/// one invocation per 4 elements.
pub(crate) fn split_reduce_grid(m: usize, n: usize) -> [u32; 3] {
    [(m * n.div_ceil(4)) as u32, 1, 1]
}

/// The invocations of a [`gemm_split_reduce_rms`](crate::gemm_split_reduce_rms) workgroup.
const SPLIT_REDUCE_RMS_LOCAL: usize = 256;

/// The most rows [`gemm_split_reduce_rms`](crate::gemm_split_reduce_rms) takes: one workgroup a
/// row along x, which every device takes 65,535 of.
pub const SPLIT_REDUCE_RMS_MAX_ROWS: usize = 65535;

/// The invocation grid of [`gemm_split_reduce_rms`](crate::gemm_split_reduce_rms) for M rows
/// (at most [`SPLIT_REDUCE_RMS_MAX_ROWS`]): one workgroup per row.
pub fn split_reduce_rms_grid(m: usize) -> [u32; 3] {
    [(m * SPLIT_REDUCE_RMS_LOCAL) as u32, 1, 1]
}
