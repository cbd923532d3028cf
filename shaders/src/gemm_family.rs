//! The GEMM-shaped kernels: [`gemm`], [`conv2d_nhwc`] and [`gemm_int8`], the split-K first
//! passes [`gemm_split`] and [`conv2d_nhwc_split`] with their second pass [`gemm_split_reduce`],
//! and [`gemm_image`]. The first five are one `compute_shader!` invocation so that they share
//! one `SpecConstants` type (declared once in `gemm_constants.glsl`), which
//! [`GemmConfig::spec`](crate::GemmConfig::spec) fills, and each split kernel its one-pass
//! kernel's `PushConstants`.

#[cfg(doc)]
use crate::{Conv2dShape, GemmConfig};

vkprism::compute_shader! {
    /// The GEMM-shaped kernels, one module each (re-exported at the crate's root).
    pub mod gemm_kernels,
    // `_cm` variants always stage through shared memory: no `_nolm_cm`.
    variants: [
        fp32_lm_nocm, fp32_nolm_nocm, bf16p_lm_cm, bf16p_lm_nocm, bf16p_nolm_nocm, bf16s_lm_cm,
        bf16s_lm_nocm, bf16s_nolm_nocm,
        fp16p_lm_cm, fp16p_lm_nocm, fp16p_nolm_nocm, fp16pa_lm_cm, fp16pa_lm_nocm, fp16pa_nolm_nocm,
        fp16s_lm_cm, fp16s_lm_nocm, fp16s_nolm_nocm, fp16sa_lm_cm, fp16sa_lm_nocm, fp16sa_nolm_nocm,
    ],
    shaders: {
    /// `C = act(alpha · op(A) · op(B) + bias)`, row-major vec4 operands, fp32 accumulation: a
    /// register-tiled GEMM (8×8 outputs per invocation, 128×128 per 16×16 workgroup), staged
    /// through shared memory where `NCNN_shader_local_memory` is on. Specialization constants:
    /// `transpose_a` (A stored K×M), `transpose_b` (B stored N×K), `bias_term` (add `bias[n]`),
    /// `activation` (0 none, 1 relu, 2 leaky relu with `slope`, 3 sigmoid), `BK` (step depth, a
    /// multiple of 4). The stored rows must be multiples of 4 elements long; M, N and K need not be
    /// multiples of the tile. Dispatch `[ceil(N / BN) · local_x, ceil(M / BM) · local_y, 1]`
    /// invocations ([`GemmConfig::grid`](crate::GemmConfig::grid); [`GemmConfig::for_gemm`](crate::GemmConfig::for_gemm) chooses the workgroup and tiles).
    ///
    /// `_cm` variants (fp16 or bf16 storage or packing) multiply 16×16×16 fp16 (bf16)
    /// cooperative matrices into fp32 accumulators (tensor cores on NVIDIA; bf16 needs
    /// `VK_KHR_shader_bfloat16`'s `shaderBFloat16CooperativeMatrix` and the device's bf16
    /// shapes); they always stage through shared memory, so
    /// only `_lm_cm` variants are built. Their tiles (`cm_wfm`, `cm_wfn`, `cm_warps_n`), load
    /// width (`wide_loads`) and `subgroup_size` (the device's) come from [`GemmConfig`](crate::GemmConfig). They read A
    /// and B as 16-byte octets of halves, so each must hold a multiple of 8 elements (a
    /// dispatch with another size is refused with `PartialElement`).
        gemm: { path: "gemm.comp" },
    /// [`gemm`](crate::gemm) split along K, the first of two passes for problems whose grid of tiles is too
    /// small to fill the GPU (a tall, thin C over a long K): workgroup z of `split_k` multiplies
    /// one share of K (whole `BK` steps) and writes its fp32 sums to `partial` (`[split_k][M][N]`
    /// F32, [`GemmConfig::partial_shape`](crate::GemmConfig::partial_shape)); [`gemm_split_reduce`](crate::gemm_split_reduce) then adds the shares and
    /// applies `alpha`, the bias, the activation and C's format. Same variants, tiles,
    /// specialization constants (the same types: `split_k` is set by [`GemmConfig::spec`](crate::GemmConfig::spec)) and
    /// requirements as [`gemm`](crate::gemm); dispatch [`GemmConfig::grid`](crate::GemmConfig::grid), whose z is `split_k`.
    /// [`GemmConfig::split_for`](crate::GemmConfig::split_for) says when to split and how many ways.
        gemm_split: {
            path: "gemm.comp",
            define: [("VKPRISM_SPLIT_K", "1")],
            share: [gemm::SpecConstants, gemm::PushConstants],
        },
    /// 2D convolution as an implicit GEMM, channels-last (NHWC input and output, weights
    /// `[kh][kw][c][outc]`, bias per output channel), with the GEMM's tiles, variants, bias and
    /// activation: `out = act(alpha · conv(in, w) + bias)`. `c` and `outc` must be multiples of
    /// 4. Push constants: the GEMM's `M = batch·outh·outw`, `N = outc`, `K = kh·kw·c`, `alpha`,
    /// `slope`, then `h, w, c, outh, outw, kh, kw, stride, pad` ([`Conv2dShape::push`](crate::Conv2dShape::push) fills
    /// them). Dispatch and workgroups as for [`gemm`](crate::gemm) ([`GemmConfig::for_conv`](crate::GemmConfig::for_conv)); in `_cm`
    /// variants the input and the weights must each hold a multiple of 8 elements.
        conv2d_nhwc: { path: "conv2d_nhwc.comp", share: [gemm::SpecConstants] },
    /// [`conv2d_nhwc`](crate::conv2d_nhwc) split along K (`kh·kw·c`), the first of two passes as for
    /// [`gemm_split`](crate::gemm_split): fp32 partial sums `[split_k][M][N]` (M output pixels, N = outc), then
    /// [`gemm_split_reduce`](crate::gemm_split_reduce). Same variants, push constants and specialization constants (the same types;
    /// [`GemmConfig::spec`](crate::GemmConfig::spec) sets `split_k`) as [`conv2d_nhwc`](crate::conv2d_nhwc); binding 2 is `partial`.
        conv2d_nhwc_split: {
            path: "conv2d_nhwc.comp",
            define: [("VKPRISM_SPLIT_K", "1")],
            share: [gemm::SpecConstants, conv2d_nhwc::PushConstants],
        },
    /// `C = A · B` over int8 with exact int32 results (as `torch._int_mm`): A (M×K) and B (K×N)
    /// row-major int8 tensors, C an M×N I32 tensor; K and N multiples of 4. Each invocation owns
    /// 8×8 of C; `_cm` variants (int8 arithmetic) multiply 16×16×32 int8 cooperative matrices
    /// into int32 accumulators (tensor cores on NVIDIA), with the GEMM's structure and
    /// [`GemmConfig::for_gemm_int8`](crate::GemmConfig::for_gemm_int8)'s tiles, and read A and B as lines of 16 int8, so each must
    /// hold a multiple of 16 elements there (another size is refused with `PartialElement`).
        gemm_int8: {
            path: "gemm_int8.comp",
            variants: [fp32_int8p_nocm, fp32_int8s_nocm, fp32_int8a_nocm, fp32_int8a_cm],
            share: [gemm::SpecConstants],
        },
    /// [`gemm_int8`](crate::gemm_int8) dequantized as it is stored: `C = row_scale[m] ·
    /// col_scale[n] · (A · B)[m][n] + bias[n]` into an M×N F32 tensor (A quantized per row, B
    /// per column; scales and bias F32, the bias read where `bias_term` is 1). The same
    /// variants, tiles, requirements and push constants as [`gemm_int8`](crate::gemm_int8).
        gemm_int8_dequant: {
            path: "gemm_int8.comp",
            define: [("VKPRISM_DEQUANT", "1")],
            variants: [fp32_int8p_nocm, fp32_int8s_nocm, fp32_int8a_nocm, fp32_int8a_cm],
            share: [gemm::SpecConstants, gemm_int8::PushConstants],
        },
    },
}

pub use gemm_kernels::{
    conv2d_nhwc, conv2d_nhwc_split, gemm, gemm_int8, gemm_int8_dequant, gemm_split,
};

vkprism::compute_shader! {
    /// The split GEMM's second passes, one module each (re-exported at the crate's root),
    /// sharing one `SpecConstants` type.
    pub mod split_reduce_kernels,
    variants: [fp32, fp16p, fp16pa, fp16s, fp16sa, bf16p, bf16s],
    shaders: {
    /// The second pass of [`gemm_split`](crate::gemm_split) and
    /// [`conv2d_nhwc_split`](crate::conv2d_nhwc_split): `C = act(alpha · Σ_z partial[z] + beta
    /// · C + bias)` in the variant's format (load the variant of the same float mode as the
    /// first pass, e.g. `fp16s` after `fp16s_lm_cm`). Specialization constants `splits`,
    /// `bias_term`, `activation`, `beta_term` (C read first;
    /// [`GemmConfig::reduce_spec`](crate::GemmConfig::reduce_spec)); push constants M, N,
    /// alpha, slope, beta; dispatch [`GemmConfig::reduce_grid`](crate::GemmConfig::reduce_grid)
    /// invocations (256 per workgroup).
        gemm_split_reduce: { path: "gemm_split_reduce.comp" },
    /// [`gemm_split_reduce`](crate::gemm_split_reduce) that also writes each row of C
    /// normalized: `h = C / sqrt(mean(C²) + eps)` row by row (RMS norm without a weight, of C's
    /// values as stored; binding 3, C's shape and format) — a decoder's residual stream and its
    /// next layer's normed input in one pass. The same variants and specialization constants;
    /// push constants as [`gemm_split_reduce`](crate::gemm_split_reduce)'s and `eps`; one
    /// workgroup (256 invocations) per row of C: dispatch
    /// [`split_reduce_rms_grid`](crate::split_reduce_rms_grid).
        gemm_split_reduce_rms: {
            path: "gemm_split_reduce.comp",
            define: [("VKPRISM_ROW_RMS", "1")],
            share: [gemm_split_reduce::SpecConstants],
        },
    },
}

pub use split_reduce_kernels::{gemm_split_reduce, gemm_split_reduce_rms};

vkprism::compute_shader! {
    /// `C = act(alpha · A · B + bias)` with B read through the **sampled-image path** (as in V.
    /// Shimanskiy, "Matrix Multiply on Adreno GPUs"): A is M×K row-major in a buffer, B a 2D image of width N/4 and
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
