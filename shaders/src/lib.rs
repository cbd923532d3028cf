//! A kernel library written with `compute_shader!`: every kernel is compiled for every variant
//! its axes allow and tested on every one against the CPU references in [`mod@reference`].
//!
//! - [`activation`]: relu, leaky relu, sigmoid, tanh, hardswish, chosen by a specialization
//!   constant (one pipeline per activation, no branch at run time);
//! - [`binary_op`]: element-wise add, sub, mul, div, max, min of two tensors;
//! - [`gemm`]: C = act(alpha · op(A) · op(B) + bias), register-tiled, staged through shared memory
//!   where `NCNN_shader_local_memory` is on;
//! - [`gemm_image`]: the same product with B read through the sampled-image (texture) path, for
//!   GPUs whose texture units have their own cache (Adreno, Mali);
//! - [`conv2d`]: direct 2D convolution with bias, stride and zero padding, CHW layout;
//! - [`conv2d_nhwc`]: 2D convolution as an implicit GEMM, channels-last, every GEMM variant;
//! - [`conv2d_dw_nhwc`]: depthwise 2D convolution, channels-last ([`Conv2dDwShape`]).
//!
//! [`GemmConfig`] chooses the tiles of the GEMM-shaped kernels; [`tuning`] chooses them per
//! device: a table keyed by vendor / architecture ([`DeviceClass`]) and [`GemmTuner`], which
//! measures on first use and caches the choice beside the pipeline cache.

mod depthwise;
pub mod tuning;
pub use depthwise::{conv2d_dw_nhwc, Conv2dDwShape};
pub use tuning::{DeviceClass, GemmKernel, GemmTuner};

vkprism::compute_shader! {
    /// y = f(x) over vec4s; `op` (constant 0): 0 relu, 1 leaky relu (slope `alpha`), 2 sigmoid,
    /// 3 tanh, 4 hardswish. `n` (constant 1, or the push constant) counts vec4s.
    ///
    /// Any grid covers all n: invocation g of G dispatched takes vec4s g, g + G, g + 2G, ...,
    /// two per loop (both loads in flight before either store). One invocation per vec4 is the
    /// simplest grid; half as many ([`activation_grid`]) keeps two loads in flight in each,
    /// which 8-byte quads (16-bit formats) need to reach the memory's bandwidth (H100, relu fp16
    /// 1 GiB: 2.83 TB/s at one quad per invocation, 0.96× PyTorch's; 2.97 at half). It reads
    /// `gl_NumWorkGroups`, so a grid over `maxComputeWorkGroupCount` workgroups is refused,
    /// not split: dispatch fewer invocations (any number covers all n).
    pub mod activation,
    src: r#"
#version 450
layout (constant_id = 0) const int op = 0;
layout (constant_id = 1) const int n = 0;
layout (binding = 0) readonly buffer x_blob { sfpvec4 x_data[]; };
layout (binding = 1) writeonly buffer y_blob { sfpvec4 y_data[]; };
layout (push_constant) uniform parameter { int n; float alpha; } p;
afpvec4 f(afpvec4 v) {
    if (op == 0) {
        return max(v, afpvec4(0));
    } else if (op == 1) {
        return mix(v * afp(p.alpha), v, greaterThan(v, afpvec4(0)));
    } else if (op == 2) {
        // sigmoid in fp32: exp overflows fp16 for |x| > 11
        return afpvec4(1.0 / (1.0 + exp(-vec4(v))));
    } else if (op == 3) {
        return afpvec4(tanh(vec4(v)));
    }
    return v * clamp(v + afp(3), afpvec4(0), afpvec4(6)) / afp(6);
}
void main() {
    const int grid = int(gl_NumWorkGroups.x * gl_WorkGroupSize.x);
    for (int i = int(gl_GlobalInvocationID.x); i < psc(n); i += 2 * grid) {
        const int j = i + grid;
        const afpvec4 v = buffer_ld4(x_data, i);
        afpvec4 w = afpvec4(0);
        if (j < psc(n)) w = buffer_ld4(x_data, j);
        buffer_st4(y_data, i, f(v));
        if (j < psc(n)) buffer_st4(y_data, j, f(w));
    }
}
"#,
}

/// The invocations [`activation`] is dispatched with for `n` vec4s: half of them, rounded up
/// (two in flight in each; any grid is correct).
pub fn activation_grid(n: usize) -> [u32; 3] {
    [n.div_ceil(2) as u32, 1, 1]
}

vkprism::compute_shader! {
    /// out = a op b over vec4s; `op` (constant 0): 0 add, 1 sub, 2 mul, 3 div, 4 max, 5 min.
    pub mod binary_op,
    src: r#"
#version 450
layout (constant_id = 0) const int op = 0;
layout (binding = 0) readonly buffer a_blob { sfpvec4 a_data[]; };
layout (binding = 1) readonly buffer b_blob { sfpvec4 b_data[]; };
layout (binding = 2) writeonly buffer out_blob { sfpvec4 out_data[]; };
layout (push_constant) uniform parameter { int n; } p;
void main() {
    const int i = int(gl_GlobalInvocationID.x);
    if (i >= p.n) return;
    afpvec4 a = buffer_ld4(a_data, i);
    afpvec4 b = buffer_ld4(b_data, i);
    afpvec4 r;
    if (op == 0) r = a + b;
    else if (op == 1) r = a - b;
    else if (op == 2) r = a * b;
    else if (op == 3) r = a / b;
    else if (op == 4) r = max(a, b);
    else r = min(a, b);
    buffer_st4(out_data, i, r);
}
"#,
}

vkprism::compute_shader! {
    /// `C = act(alpha · op(A) · op(B) + bias)`, row-major vec4 operands, fp32 accumulation: a
    /// register-tiled GEMM (8×8 outputs per invocation, 128×128 per 16×16 workgroup), staged
    /// through shared memory where `NCNN_shader_local_memory` is on. Specialization constants:
    /// `transpose_a` (A stored K×M), `transpose_b` (B stored N×K), `bias_term` (add `bias[n]`),
    /// `activation` (0 none, 1 relu, 2 leaky relu with `slope`, 3 sigmoid), `BK` (step depth, a
    /// multiple of 4). The stored rows must be multiples of 4 elements long; M, N and K need not be
    /// multiples of the tile. Dispatch `[ceil(N / BN) · local_x, ceil(M / BM) · local_y, 1]`
    /// invocations ([`GemmConfig::grid`]; [`GemmConfig::for_gemm`] chooses the workgroup and tiles).
    ///
    /// `_cm` variants (fp16 or bf16 storage or packing) multiply 16×16×16 fp16 (bf16)
    /// cooperative matrices into fp32 accumulators (tensor cores on NVIDIA; bf16 needs
    /// `VK_KHR_shader_bfloat16`'s `shaderBFloat16CooperativeMatrix` and the device's bf16
    /// shapes); they always stage through shared memory, so
    /// only `_lm_cm` variants are built. Their tiles (`cm_wfm`, `cm_wfn`, `cm_warps_n`), load
    /// width (`vec8`) and `subgroup_size` (the device's) come from [`GemmConfig`]. They read A
    /// and B as 16-byte octets of halves, so each must hold a multiple of 8 elements (a
    /// dispatch with another size is refused with `PartialElement`).
    pub mod gemm,
    path: "gemm.comp",
    variants: [
        fp32_lm_nocm, fp32_nolm_nocm, bf16p_lm_cm, bf16p_lm_nocm, bf16p_nolm_nocm, bf16s_lm_cm,
        bf16s_lm_nocm, bf16s_nolm_nocm,
        fp16p_lm_cm, fp16p_lm_nocm, fp16p_nolm_nocm, fp16pa_lm_cm, fp16pa_lm_nocm, fp16pa_nolm_nocm,
        fp16s_lm_cm, fp16s_lm_nocm, fp16s_nolm_nocm, fp16sa_lm_cm, fp16sa_lm_nocm, fp16sa_nolm_nocm,
    ],
}

vkprism::compute_shader! {
    /// [`gemm`] split along K, the first of two passes for problems whose grid of tiles is too
    /// small to fill the GPU (a tall, thin C over a long K): workgroup z of `split_k` multiplies
    /// one share of K (whole `BK` steps) and writes its fp32 sums to `partial` (`[split_k][M][N]`
    /// F32, [`GemmConfig::partial_shape`]); [`gemm_split_reduce`] then adds the shares and
    /// applies `alpha`, the bias, the activation and C's format. Same variants, tiles,
    /// specialization constants (plus `split_k`, [`GemmConfig::gemm_split_spec`]) and
    /// requirements as [`gemm`]; dispatch [`GemmConfig::grid`], whose z is `split_k`.
    /// [`GemmConfig::split_for`] says when to split and how many ways.
    pub mod gemm_split,
    path: "gemm.comp",
    define: [("VKPRISM_SPLIT_K", "1")],
    variants: [
        fp32_lm_nocm, fp32_nolm_nocm, bf16p_lm_cm, bf16p_lm_nocm, bf16p_nolm_nocm, bf16s_lm_cm,
        bf16s_lm_nocm, bf16s_nolm_nocm,
        fp16p_lm_cm, fp16p_lm_nocm, fp16p_nolm_nocm, fp16pa_lm_cm, fp16pa_lm_nocm, fp16pa_nolm_nocm,
        fp16s_lm_cm, fp16s_lm_nocm, fp16s_nolm_nocm, fp16sa_lm_cm, fp16sa_lm_nocm, fp16sa_nolm_nocm,
    ],
}

vkprism::compute_shader! {
    /// The second pass of [`gemm_split`] and [`conv2d_nhwc_split`]: `C = act(alpha · Σ_z
    /// partial[z] + bias)` in the variant's format (load the variant of the same float mode as
    /// the first pass, e.g. `fp16s` after `fp16s_lm_cm`). Specialization constants `splits`,
    /// `bias_term`, `activation` ([`GemmConfig::reduce_spec`]); push constants M, N, alpha,
    /// slope; dispatch [`GemmConfig::reduce_grid`] invocations (256 per workgroup).
    pub mod gemm_split_reduce,
    path: "gemm_split_reduce.comp",
}

vkprism::compute_shader! {
    /// `C = act(alpha · A · B + bias)` with B read through the **sampled-image path** (seed 001,
    /// Qualcomm's Adreno SGEMM): A is M×K row-major in a buffer, B a 2D image of width N/4 and
    /// height K whose rgba texel (x, k) holds `B[k][4x..4x+4]` (upload B's row-major K×N values
    /// to an `Image::new(ctx, 2, [N / 4, K, 1], 4, format)`), C M×N row-major. K and N must be
    /// multiples of 4, M need not be; K must fit the device's `max_image_dimension_2d`. Each
    /// invocation owns an 8×8 register micro-tile, fp32 accumulation (fp16-arithmetic variants
    /// form 4-term partial products in fp16). Specialization constants `bias_term` and
    /// `activation` as in [`gemm`]. Image-only: its variants are `fp32_image`, `fp16p_image`,
    /// `fp16pa_image`, `fp16s_image`, `fp16sa_image` (no bf16 image format), bound through
    /// `ImageBindings`; chosen by `ctx.load` only with `Options::use_image_storage`. Dispatch
    /// [`gemm_image_grid`] invocations with any workgroup (8×8 by default).
    pub mod gemm_image,
    path: "gemm_image.comp",
}

/// The rows and columns of C one [`gemm_image`] invocation computes (its micro-tile).
pub const GEMM_IMAGE_MICRO_TILE: (usize, usize) = (8, 8);

/// The invocation grid of [`gemm_image`] for an M×N result: one invocation per micro-tile.
pub fn gemm_image_grid(m: usize, n: usize) -> [u32; 3] {
    let (tm, tn) = GEMM_IMAGE_MICRO_TILE;
    [n.div_ceil(tn) as u32, m.div_ceil(tm) as u32, 1]
}

vkprism::compute_shader! {
    /// `C = A · B` over int8 with exact int32 results (as `torch._int_mm`): A (M×K) and B (K×N)
    /// row-major int8 tensors, C an M×N I32 tensor; K and N multiples of 4. Each invocation owns
    /// 8×8 of C; `_cm` variants (int8 arithmetic) multiply 16×16×32 int8 cooperative matrices
    /// into int32 accumulators (tensor cores on NVIDIA), with the GEMM's structure and
    /// [`GemmConfig::for_gemm_int8`]'s tiles, and read A and B as lines of 16 int8, so each must
    /// hold a multiple of 16 elements there (another size is refused with `PartialElement`).
    pub mod gemm_int8,
    path: "gemm_int8.comp",
}

vkprism::compute_shader! {
    /// 2D convolution as an implicit GEMM, channels-last (NHWC input and output, weights
    /// `[kh][kw][c][outc]`, bias per output channel), with the GEMM's tiles, variants, bias and
    /// activation: `out = act(alpha · conv(in, w) + bias)`. `c` and `outc` must be multiples of
    /// 4. Push constants: the GEMM's `M = batch·outh·outw`, `N = outc`, `K = kh·kw·c`, `alpha`,
    /// `slope`, then `h, w, c, outh, outw, kh, kw, stride, pad` ([`Conv2dShape::push`] fills
    /// them). Dispatch and workgroups as for [`gemm`] ([`GemmConfig::for_conv`]); in `_cm`
    /// variants the input and the weights must each hold a multiple of 8 elements.
    pub mod conv2d_nhwc,
    path: "conv2d_nhwc.comp",
    variants: [
        fp32_lm_nocm, fp32_nolm_nocm, bf16p_lm_cm, bf16p_lm_nocm, bf16p_nolm_nocm, bf16s_lm_cm,
        bf16s_lm_nocm, bf16s_nolm_nocm,
        fp16p_lm_cm, fp16p_lm_nocm, fp16p_nolm_nocm, fp16pa_lm_cm, fp16pa_lm_nocm, fp16pa_nolm_nocm,
        fp16s_lm_cm, fp16s_lm_nocm, fp16s_nolm_nocm, fp16sa_lm_cm, fp16sa_lm_nocm, fp16sa_nolm_nocm,
    ],
}

vkprism::compute_shader! {
    /// [`conv2d_nhwc`] split along K (`kh·kw·c`), the first of two passes as for
    /// [`gemm_split`]: fp32 partial sums `[split_k][M][N]` (M output pixels, N = outc), then
    /// [`gemm_split_reduce`]. Same variants, push constants and specialization constants (plus
    /// `split_k`, [`GemmConfig::conv_split_spec`]) as [`conv2d_nhwc`]; binding 2 is `partial`.
    pub mod conv2d_nhwc_split,
    path: "conv2d_nhwc.comp",
    define: [("VKPRISM_SPLIT_K", "1")],
    variants: [
        fp32_lm_nocm, fp32_nolm_nocm, bf16p_lm_cm, bf16p_lm_nocm, bf16p_nolm_nocm, bf16s_lm_cm,
        bf16s_lm_nocm, bf16s_nolm_nocm,
        fp16p_lm_cm, fp16p_lm_nocm, fp16p_nolm_nocm, fp16pa_lm_cm, fp16pa_lm_nocm, fp16pa_nolm_nocm,
        fp16s_lm_cm, fp16s_lm_nocm, fp16s_nolm_nocm, fp16sa_lm_cm, fp16sa_lm_nocm, fp16sa_nolm_nocm,
    ],
}

/// The shape of a channels-last convolution for [`conv2d_nhwc`].
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Conv2dShape {
    pub batch: usize,
    pub h: usize,
    pub w: usize,
    /// Input channels, a multiple of 4.
    pub c: usize,
    /// Output channels, a multiple of 4.
    pub outc: usize,
    pub kh: usize,
    pub kw: usize,
    pub stride: usize,
    pub pad: usize,
}

impl Conv2dShape {
    /// Output height.
    pub fn outh(&self) -> usize {
        (self.h + 2 * self.pad - self.kh) / self.stride + 1
    }
    /// Output width.
    pub fn outw(&self) -> usize {
        (self.w + 2 * self.pad - self.kw) / self.stride + 1
    }
    /// The GEMM's (M, N, K).
    pub fn gemm_mnk(&self) -> (usize, usize, usize) {
        (
            self.batch * self.outh() * self.outw(),
            self.outc,
            self.kh * self.kw * self.c,
        )
    }
    /// The push constants for this shape.
    pub fn push(&self, alpha: f32, slope: f32) -> conv2d_nhwc::PushConstants {
        let (m, n, k) = self.gemm_mnk();
        let i = |v: usize| v as i32;
        conv2d_nhwc::PushConstants {
            M: i(m),
            N: i(n),
            K: i(k),
            alpha,
            slope,
            h: i(self.h),
            w: i(self.w),
            c: i(self.c),
            outh: i(self.outh()),
            outw: i(self.outw()),
            kh: i(self.kh),
            kw: i(self.kw),
            stride: i(self.stride),
            pad: i(self.pad),
        }
    }

    /// The push constants of [`conv2d_nhwc_split`] for this shape (the same values; alpha is
    /// applied by [`gemm_split_reduce`]).
    pub fn split_push(&self) -> conv2d_nhwc_split::PushConstants {
        let p = self.push(1.0, 0.0);
        conv2d_nhwc_split::PushConstants {
            M: p.M,
            N: p.N,
            K: p.K,
            alpha: p.alpha,
            slope: p.slope,
            h: p.h,
            w: p.w,
            c: p.c,
            outh: p.outh,
            outw: p.outw,
            kh: p.kh,
            kw: p.kw,
            stride: p.stride,
            pad: p.pad,
        }
    }
}

/// A GEMM-shaped kernel's `SpecConstants` (`$ty`, generated per kernel: no shared trait) with
/// `cfg`'s `BK`, `subgroup_size`, `cm_*` and `vec8`, and the fields given.
macro_rules! with_tiles {
    ($cfg:expr, $ty:path { $($field:ident),* $(,)? ..$rest:expr }) => {{
        let cfg: &GemmConfig = $cfg;
        let [cm_wfm, cm_wfn, cm_warps_n] = cfg.cm_tiles.map(|v| v as i32);
        $ty {
            BK: cfg.bk,
            subgroup_size: cfg.subgroup_size as i32,
            cm_wfm,
            cm_wfn,
            cm_warps_n,
            vec8: cfg.wide_loads as i32,
            $($field,)*
            ..$rest
        }
    }};
}

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
    /// [`gemm_int8`]): the `vec8` / `vec16` constant, aligned loads with cooperative matrices.
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
    /// for long K; every choice within 48 KiB of shared memory.
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
        let vec8 = m.is_multiple_of(8) && n.is_multiple_of(8) && k.is_multiple_of(8);
        GemmConfig::choose(variant, subgroup_size, (m, n, k), vec8, GemmKernel::Gemm)
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
        let wide = k.is_multiple_of(16) && n.is_multiple_of(16);
        let mut cfg = GemmConfig::choose(
            variant,
            subgroup_size,
            (m, n, k),
            wide,
            GemmKernel::GemmInt8,
        );
        if cfg.coopmat {
            cfg.bk *= 2;
        }
        cfg
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
        let vec8 = shape.c.is_multiple_of(8) && shape.outc.is_multiple_of(8);
        let mnk = shape.gemm_mnk();
        GemmConfig::choose(variant, subgroup_size, mnk, vec8, GemmKernel::Conv2dNhwc)
    }

    fn choose(
        variant: &vkprism::VariantKey,
        subgroup_size: u32,
        (m, n, k): (usize, usize, usize),
        vec8: bool,
        kernel: GemmKernel,
    ) -> GemmConfig {
        let tiles = m.div_ceil(128) * n.div_ceil(128);
        let coopmat = variant.coopmat == Some(true);
        let base = GemmConfig {
            local: [16, 16],
            bk: 16,
            coopmat,
            subgroup_size,
            cm_tiles: [4, 4, 2],
            wide_loads: coopmat && vec8,
            split_k: 1,
        };
        if coopmat {
            let gathers = kernel == GemmKernel::Conv2dNhwc;
            let (subgroups, cm_tiles, bk) = coopmat_tiles((m, n, k), tiles, gathers);
            return GemmConfig {
                local: [subgroup_size, subgroups],
                bk,
                cm_tiles,
                ..base
            };
        }
        // Grids of few 128×128 tiles get 64×64 ones so every SM has work: at 1024³ fp32
        // 17.0 → 25.7 TFLOP/s; at 4096×512×14336 the 16-bit storage variants 24 → 34 while
        // fp32 lost 6% (hence its lower threshold).
        let enough = if variant.float == vkprism::FloatMode::Fp32 {
            128
        } else {
            256
        };
        if tiles < enough {
            GemmConfig {
                local: [8, 8],
                ..base
            }
        } else {
            base
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
    /// large GPU (cooperative matrices only; `split_k` stays 1 otherwise). A K longer than M and
    /// N (and N over 64) first gets the most efficient tiles, 128×256 of 8 subgroups; then a
    /// grid of fewer than [`SPLIT_K_WORKGROUPS`] workgroups over a K of at least 512 gets enough
    /// shares of K to reach that many (at most 8, each at least two 32-deep steps), 48-deep
    /// steps where a share is 2048 or more. Every choice fits in 48 KiB of shared memory
    /// ([`tuning::shared_memory_bytes`]; NVIDIA's limit, the smallest of the desktop GPUs'):
    /// 64-deep steps of 128×256 tiles would need 60,416 bytes. Measured on the H100 (fp16p,
    /// TFLOP/s, one-pass against split): 4096×512×14336 178 → 202–206 (2 shares); a 3×3
    /// convolution, batch 8, 14×14, 256 channels 25.6 → 61.5 (8 shares), 64 channels 5.3 →
    /// 7.4. A configuration with
    /// `split_k` > 1 is for [`gemm_split`] / [`conv2d_nhwc_split`] and [`gemm_split_reduce`].
    pub fn split_for(self, (m, n, k): (usize, usize, usize)) -> GemmConfig {
        if !self.coopmat {
            return self;
        }
        let wide = GemmConfig {
            local: [self.subgroup_size, 8],
            bk: 32,
            cm_tiles: [4, 4, 4],
            ..self
        };
        let base = if n > 64 && k > m.max(n) { wide } else { self };
        let (bm, bn) = base.tile();
        let workgroups = m.div_ceil(bm) * n.div_ceil(bn);
        if workgroups >= SPLIT_K_WORKGROUPS || k < 512 {
            return self;
        }
        let split = SPLIT_K_WORKGROUPS.div_ceil(workgroups).min(8).min(k / 64);
        if split <= 1 {
            return self;
        }
        GemmConfig {
            split_k: split as u32,
            bk: if k / split >= 2048 { 48 } else { 32 },
            ..base
        }
    }

    /// The shape of [`gemm_split`]'s fp32 partial sums for an M×N result: `[split_k, M, N]`.
    pub fn partial_shape(&self, m: usize, n: usize) -> [usize; 3] {
        [self.split_k as usize, m, n]
    }

    /// The invocation grid of [`gemm_split_reduce`] for an M×N result (one per 4 elements).
    pub fn reduce_grid(&self, m: usize, n: usize) -> [u32; 3] {
        [(m * n.div_ceil(4)) as u32, 1, 1]
    }

    /// [`gemm_split_reduce`]'s constants for this configuration, with `bias_term` and
    /// `activation` as given to the one-pass kernel.
    pub fn reduce_spec(
        &self,
        bias_term: bool,
        activation: i32,
    ) -> gemm_split_reduce::SpecConstants {
        gemm_split_reduce::SpecConstants {
            splits: self.split_k as i32,
            bias_term: bias_term as i32,
            activation,
        }
    }

    /// `spec` with this configuration's constants (`BK`, `subgroup_size`, `cm_*`, `vec8`).
    pub fn gemm_spec(&self, spec: gemm::SpecConstants) -> gemm::SpecConstants {
        with_tiles!(self, gemm::SpecConstants { ..spec })
    }

    /// The specialization constants of [`gemm_int8`] for this configuration.
    pub fn int8_spec(&self) -> gemm_int8::SpecConstants {
        let [cm_wfm, cm_wfn, cm_warps_n] = self.cm_tiles.map(|v| v as i32);
        gemm_int8::SpecConstants {
            BK: self.bk,
            subgroup_size: self.subgroup_size as i32,
            cm_wfm,
            cm_wfn,
            cm_warps_n,
            vec16: self.wide_loads as i32,
        }
    }

    /// As [`GemmConfig::gemm_spec`], for [`gemm_split`] (with `split_k`).
    pub fn gemm_split_spec(&self, spec: gemm_split::SpecConstants) -> gemm_split::SpecConstants {
        let split_k = self.split_k as i32;
        with_tiles!(self, gemm_split::SpecConstants { split_k, ..spec })
    }

    /// As [`GemmConfig::gemm_spec`], for [`conv2d_nhwc_split`] (with `split_k`).
    pub fn conv_split_spec(
        &self,
        spec: conv2d_nhwc_split::SpecConstants,
    ) -> conv2d_nhwc_split::SpecConstants {
        let split_k = self.split_k as i32;
        with_tiles!(self, conv2d_nhwc_split::SpecConstants { split_k, ..spec })
    }

    /// As [`GemmConfig::gemm_spec`], for [`conv2d_nhwc`].
    pub fn conv_spec(&self, spec: conv2d_nhwc::SpecConstants) -> conv2d_nhwc::SpecConstants {
        with_tiles!(self, conv2d_nhwc::SpecConstants { ..spec })
    }
}

/// The workgroups [`GemmConfig::split_for`] aims at: about one per SM of an H100 (132).
pub const SPLIT_K_WORKGROUPS: usize = 128;

/// Cooperative-matrix tiles for an M×N×K problem with `tiles` 128×128 tiles: (subgroups per
/// workgroup, `cm_tiles`, `BK`). Measured on the H100, fp16p (TFLOP/s, this choice against the
/// runner-up, BENCHMARKS.md):
/// - N ≤ 64 with many tiles (convolutions with 64 channels): 64×64 tiles of 4 subgroups
///   (56² × 64 ch 3×3: 50 against 29);
/// - a tiny grid over a long K: the same 64×64 tiles (14² × 256 ch: 20 against 17);
/// - few tiles over a long K: 128×128 tiles, 8 subgroups of 64×32 and a 64-deep step, fewer
///   barriers per multiply-add (4096×512×14336: 178 against 132);
/// - few tiles otherwise: 64×128 tiles so every SM has work (1024³: 81 against 61);
/// - else 128×256 tiles, 8 subgroups of 64×64, a 32-deep step, 48-deep where K ≥ 2048
///   (4096³: 269 against 229 at 32; 2048³: 236 against 226). 48 is the deepest step of these
///   tiles within the 48 KiB of shared memory a workgroup may have on NVIDIA GPUs (39,680
///   bytes; 64 would need 52,224);
/// - except for a convolution (`gathers`: its A loads compute an input address per octet),
///   which gets 96×256 tiles of 12 subgroups of 32×64 (3 along M) and a 48-deep step (b8 56² ×
///   256 ch 3×3: 193–199 against 165 for 64×256 tiles of 8 subgroups and 64-deep steps, which
///   had beaten 128×256's 137; 392 → 262 workgroups, 2.97 → 1.98 waves of 132 SMs, with 12
///   subgroups an SM instead of 8 at 168 registers: the 12-subgroup 192×256 tiles spill at that
///   cap and run 87–131; a GEMM loses with 32×64 subgroup tiles, 4096³ 162 against 271).
fn coopmat_tiles(
    (m, n, k): (usize, usize, usize),
    tiles: usize,
    gathers: bool,
) -> (u32, [u32; 3], i32) {
    let tiles64 = m.div_ceil(64) * n.div_ceil(64);
    if (n <= 64 && tiles64 >= 256) || (tiles < 64 && k >= 2048) {
        (4, [2, 2, 2], 32)
    } else if tiles < 256 && k >= 2048 {
        (8, [4, 2, 4], 64)
    } else if tiles < 128 {
        (8, [2, 2, 4], 32)
    } else if gathers {
        (12, [2, 4, 4], 48)
    } else {
        (8, [4, 4, 4], if k >= 2048 { 48 } else { 32 })
    }
}

vkprism::compute_shader! {
    /// `out[o][y][x] = bias[o] + sum_{c,ky,kx} w[o][c][ky][kx] * in[c][y*stride+ky-pad][x*stride+kx-pad]`
    /// (zero outside the input), CHW scalars, fp32 accumulation; the kernel size is a
    /// specialization constant (default 3). One invocation per output element.
    pub mod conv2d,
    src: r#"
#version 450
layout (constant_id = 0) const int ksize = 3;
layout (local_size_x = 8, local_size_y = 8, local_size_z = 1) in;
layout (binding = 0) readonly buffer in_blob { sfp in_data[]; };
layout (binding = 1) readonly buffer w_blob { sfp w_data[]; };
layout (binding = 2) readonly buffer b_blob { sfp b_data[]; };
layout (binding = 3) writeonly buffer out_blob { sfp out_data[]; };
layout (push_constant) uniform parameter { int c; int h; int w; int outc; int outh; int outw; int stride; int pad; } p;
void main() {
    const int x = int(gl_GlobalInvocationID.x);
    const int y = int(gl_GlobalInvocationID.y);
    const int o = int(gl_GlobalInvocationID.z);
    if (x >= p.outw || y >= p.outh || o >= p.outc) return;
    float acc = float(buffer_ld1(b_data, o));
    for (int c = 0; c < p.c; c++) {
        for (int ky = 0; ky < ksize; ky++) {
            const int iy = y * p.stride + ky - p.pad;
            if (iy < 0 || iy >= p.h) continue;
            for (int kx = 0; kx < ksize; kx++) {
                const int ix = x * p.stride + kx - p.pad;
                if (ix < 0 || ix >= p.w) continue;
                acc += float(buffer_ld1(in_data, (c * p.h + iy) * p.w + ix))
                     * float(buffer_ld1(w_data, ((o * p.c + c) * ksize + ky) * ksize + kx));
            }
        }
    }
    buffer_st1(out_data, (o * p.outh + y) * p.outw + x, afp(acc));
}
"#,
}

/// CPU references for the kernels, on `f32`.
pub mod reference {
    /// The activation with the same `op` numbering as the kernel.
    pub fn activation(op: i32, alpha: f32, x: &[f32]) -> Vec<f32> {
        x.iter()
            .map(|&v| match op {
                0 => v.max(0.0),
                1 => {
                    if v > 0.0 {
                        v
                    } else {
                        v * alpha
                    }
                }
                2 => 1.0 / (1.0 + (-v).exp()),
                3 => v.tanh(),
                _ => v * (v + 3.0).clamp(0.0, 6.0) / 6.0,
            })
            .collect()
    }

    /// The binary op with the same `op` numbering as the kernel.
    pub fn binary_op(op: i32, a: &[f32], b: &[f32]) -> Vec<f32> {
        a.iter()
            .zip(b)
            .map(|(&a, &b)| match op {
                0 => a + b,
                1 => a - b,
                2 => a * b,
                3 => a / b,
                4 => a.max(b),
                _ => a.min(b),
            })
            .collect()
    }

    /// The shape of a 2D convolution.
    #[derive(Copy, Clone, Debug)]
    pub struct Conv2d {
        pub c: usize,
        pub h: usize,
        pub w: usize,
        pub outc: usize,
        pub k: usize,
        pub stride: usize,
        pub pad: usize,
    }

    impl Conv2d {
        pub fn out_h(&self) -> usize {
            (self.h + 2 * self.pad - self.k) / self.stride + 1
        }
        pub fn out_w(&self) -> usize {
            (self.w + 2 * self.pad - self.k) / self.stride + 1
        }
    }

    /// The convolution as the kernel computes it, in f64; also returns sum |w·x| + |bias| per
    /// output (the scale of the rounding error).
    pub fn conv2d(s: Conv2d, input: &[f32], weight: &[f32], bias: &[f32]) -> (Vec<f32>, Vec<f32>) {
        let (oh, ow) = (s.out_h(), s.out_w());
        let mut out = vec![0f32; s.outc * oh * ow];
        let mut scale = vec![0f32; s.outc * oh * ow];
        for o in 0..s.outc {
            for y in 0..oh {
                for x in 0..ow {
                    let (mut acc, mut mag) = (bias[o] as f64, bias[o].abs() as f64);
                    for c in 0..s.c {
                        for ky in 0..s.k {
                            for kx in 0..s.k {
                                let iy = (y * s.stride + ky) as isize - s.pad as isize;
                                let ix = (x * s.stride + kx) as isize - s.pad as isize;
                                if iy < 0 || ix < 0 || iy >= s.h as isize || ix >= s.w as isize {
                                    continue;
                                }
                                let v = input[(c * s.h + iy as usize) * s.w + ix as usize] as f64
                                    * weight[((o * s.c + c) * s.k + ky) * s.k + kx] as f64;
                                acc += v;
                                mag += v.abs();
                            }
                        }
                    }
                    out[(o * oh + y) * ow + x] = acc as f32;
                    scale[(o * oh + y) * ow + x] = mag as f32;
                }
            }
        }
        (out, scale)
    }

    /// The options of a GEMM, as the kernel's specialization and push constants give them.
    #[derive(Copy, Clone, Debug, Default)]
    pub struct Gemm {
        /// A is stored K×M.
        pub transpose_a: bool,
        /// B is stored N×K.
        pub transpose_b: bool,
        /// Scale of the product.
        pub alpha: f32,
        /// 0 none, 1 relu, 2 leaky relu with `slope`, 3 sigmoid.
        pub activation: i32,
        /// Leaky relu's slope.
        pub slope: f32,
    }

    /// The channels-last convolution as `conv2d_nhwc` computes it, in f64 (no activation, alpha
    /// 1), and the error scale sum |w·x| + |bias| per output.
    pub fn conv2d_nhwc(
        s: crate::Conv2dShape,
        input: &[f32],
        weight: &[f32],
        bias: &[f32],
    ) -> (Vec<f32>, Vec<f32>) {
        let (oh, ow) = (s.outh(), s.outw());
        let len = s.batch * oh * ow * s.outc;
        let (mut out, mut scale) = (vec![0f32; len], vec![0f32; len]);
        for b in 0..s.batch {
            for y in 0..oh {
                for x in 0..ow {
                    for (o, &beta) in bias.iter().enumerate().take(s.outc) {
                        let (mut acc, mut mag) = (beta as f64, beta.abs() as f64);
                        for ky in 0..s.kh {
                            for kx in 0..s.kw {
                                let iy = (y * s.stride + ky) as isize - s.pad as isize;
                                let ix = (x * s.stride + kx) as isize - s.pad as isize;
                                if iy < 0 || ix < 0 || iy >= s.h as isize || ix >= s.w as isize {
                                    continue;
                                }
                                let px = ((b * s.h + iy as usize) * s.w + ix as usize) * s.c;
                                for c in 0..s.c {
                                    let wi = ((ky * s.kw + kx) * s.c + c) * s.outc + o;
                                    let v = input[px + c] as f64 * weight[wi] as f64;
                                    acc += v;
                                    mag += v.abs();
                                }
                            }
                        }
                        let i = ((b * oh + y) * ow + x) * s.outc + o;
                        out[i] = acc as f32;
                        scale[i] = mag as f32;
                    }
                }
            }
        }
        (out, scale)
    }

    /// The depthwise convolution as `conv2d_dw_nhwc` computes it, in f64 (no activation), and
    /// the error scale sum |w·x| + |bias| per output.
    pub fn conv2d_dw_nhwc(
        s: crate::Conv2dDwShape,
        input: &[f32],
        weight: &[f32],
        bias: &[f32],
    ) -> (Vec<f32>, Vec<f32>) {
        let (oh, ow) = (s.outh(), s.outw());
        let (mut out, mut scale) = (vec![0f32; s.pixels() * s.c], vec![0f32; s.pixels() * s.c]);
        for (m, (out_px, scale_px)) in out.chunks_mut(s.c).zip(scale.chunks_mut(s.c)).enumerate() {
            let (x, y, b) = (m % ow, (m / ow) % oh, m / (ow * oh));
            for c in 0..s.c {
                let (mut acc, mut mag) = (bias[c] as f64, bias[c].abs() as f64);
                for ky in 0..s.kh {
                    for kx in 0..s.kw {
                        let iy = (y * s.stride + ky) as isize - s.pad as isize;
                        let ix = (x * s.stride + kx) as isize - s.pad as isize;
                        if iy < 0 || ix < 0 || iy >= s.h as isize || ix >= s.w as isize {
                            continue;
                        }
                        let px = (b * s.h + iy as usize) * s.w + ix as usize;
                        let v =
                            input[px * s.c + c] as f64 * weight[(ky * s.kw + kx) * s.c + c] as f64;
                        acc += v;
                        mag += v.abs();
                    }
                }
                out_px[c] = acc as f32;
                scale_px[c] = mag as f32;
            }
        }
        (out, scale)
    }

    /// Row-major C = A × B, accumulated in f64; also returns sum |A||B| per element (the scale
    /// of the rounding error a precision can make).
    pub fn gemm(m: usize, n: usize, k: usize, a: &[f32], b: &[f32]) -> (Vec<f32>, Vec<f32>) {
        let o = Gemm {
            alpha: 1.0,
            ..Default::default()
        };
        gemm_with(o, m, n, k, a, b, None)
    }

    /// `act(alpha · op(A) · op(B) + bias)` as the kernel computes it, accumulated in f64, and the
    /// error scale `|alpha| · sum |A||B| + |bias|` per element.
    pub fn gemm_with(
        o: Gemm,
        m: usize,
        n: usize,
        k: usize,
        a: &[f32],
        b: &[f32],
        bias: Option<&[f32]>,
    ) -> (Vec<f32>, Vec<f32>) {
        let at = |i: usize, l: usize| {
            if o.transpose_a {
                a[l * m + i]
            } else {
                a[i * k + l]
            }
        };
        let bt = |l: usize, j: usize| {
            if o.transpose_b {
                b[j * k + l]
            } else {
                b[l * n + j]
            }
        };
        let mut c = vec![0f32; m * n];
        let mut scale = vec![0f32; m * n];
        for i in 0..m {
            for j in 0..n {
                let (mut s, mut t) = (0f64, 0f64);
                for l in 0..k {
                    let p = at(i, l) as f64 * bt(l, j) as f64;
                    s += p;
                    t += p.abs();
                }
                let beta = bias.map_or(0.0, |b| b[j] as f64);
                let v = o.alpha as f64 * s + beta;
                let v = match o.activation {
                    1 => v.max(0.0),
                    2 => {
                        if v > 0.0 {
                            v
                        } else {
                            v * o.slope as f64
                        }
                    }
                    3 => 1.0 / (1.0 + (-v).exp()),
                    _ => v,
                };
                c[i * n + j] = v as f32;
                scale[i * n + j] = (o.alpha.abs() as f64 * t + beta.abs()) as f32;
            }
        }
        (c, scale)
    }
}
