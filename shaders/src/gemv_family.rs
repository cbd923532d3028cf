//! The matrix-vector products of decoding, `y = W · x (+ bias)` with W row-major `[N, K]`
//! (PyTorch's Linear layout) and x one to eight rows of K ([`GemvShape`]): [`gemv`] and
//! [`gemv_scalar`] on float weights, [`gemv_int8`] and [`gemv_int8_scalar`] on int8 weights
//! with a scale per row (dequantization fused). All from `gemv.comp`: one workgroup per 4 rows of
//! W, its invocations walking K, partial sums added across the workgroup through subgroup
//! arithmetic (`_sg`) or shared memory alone (`_nosg`); fp32 throughout.

vkprism::compute_shader! {
    /// The GEMV kernels, one module each (re-exported at the crate's root), sharing
    /// [`gemv`]'s constants types.
    pub mod gemv_kernels,
    shaders: {
    /// `y[b][n] = Σ_k W[n][k] · x[b][k] (+ bias[n])`, W `[N, K]`, x `[batch, K]`, y
    /// `[batch, N]`, all in the variant's format, read in 16-byte chunks (4 fp32 or 8 fp16 /
    /// bf16 values): K must be a multiple of the chunk ([`GemvShape::wide`](crate::GemvShape::wide)). Constants `batch`
    /// (1 to 8), `bias_term` (add `bias[n]`) and the fused epilogue (gemv.glsl: `activation`,
    /// `gated`, `accumulate`, `rms_input`, `rope_qkv` with the KV cache `k`, `v` and the
    /// position `pos`, bindings 4 to 6, unused otherwise); push constants N, K, eps, slope and
    /// the rotation's d, hq, hkv, rows, offset and frequencies
    /// ([`RopeFrequencies::pushed`](crate::RopeFrequencies::pushed)); workgroup and grid from
    /// [`GemvShape`](crate::GemvShape). Variants `fp32`, `fp16s`, `fp16sa`, `bf16s`, each `_sg` and `_nosg`.
        gemv: {
            path: "gemv.comp",
            define: [("GEMV_WIDE", "1")],
            variants: [fp32_sg, fp32_nosg, fp16s_sg, fp16s_nosg, fp16sa_sg, fp16sa_nosg, bf16s_sg, bf16s_nosg],
        },
    /// As [`gemv`](crate::gemv), reading single values: any K. Same constants, bindings and variants.
        gemv_scalar: {
            path: "gemv.comp",
            define: [("GEMV_WIDE", "0")],
            variants: [fp32_sg, fp32_nosg, fp16s_sg, fp16s_nosg, fp16sa_sg, fp16sa_nosg, bf16s_sg, bf16s_nosg],
            share: [gemv::SpecConstants, gemv::PushConstants],
        },
    /// `y[b][n] = scale[n] · Σ_k W[n][k] · x[b][k]`: W an I8 `[N, K]` tensor read sixteen
    /// values (one uvec4) at a time, so K must be a multiple of 16; `scale` F32 `[N]` (one per
    /// output channel); x `[batch, K]` and y `[batch, N]` in the variant's float format.
    /// Constants and push constants as [`gemv`](crate::gemv) (`bias_term` adds `bias[n]`, binding
    /// 7 in x's format, after the scale). Variants: packed int8
    /// (no 8-bit storage needed) with `fp32`, `fp16s` or `bf16s` x and y, each `_sg` and
    /// `_nosg`.
        gemv_int8: {
            path: "gemv_int8.comp",
            define: [("GEMV_WIDE", "1")],
            variants: [
                fp32_int8p_sg, fp32_int8p_nosg, fp16s_int8p_sg, fp16s_int8p_nosg, bf16s_int8p_sg,
                bf16s_int8p_nosg,
            ],
            share: [gemv::SpecConstants, gemv::PushConstants],
        },
    /// As [`gemv_int8`](crate::gemv_int8), reading single values: any K. Packed int8 variants bind W as 32-bit
    /// words, so W's size must be a multiple of 4 bytes there; `int8s` variants (8-bit storage)
    /// take any size.
        gemv_int8_scalar: {
            path: "gemv_int8.comp",
            define: [("GEMV_WIDE", "0")],
            variants: [
                fp32_int8p_sg, fp32_int8p_nosg, fp32_int8s_sg, fp32_int8s_nosg, fp16s_int8p_sg,
                fp16s_int8p_nosg, fp16s_int8s_sg, fp16s_int8s_nosg, bf16s_int8p_sg,
                bf16s_int8p_nosg, bf16s_int8s_sg, bf16s_int8s_nosg,
            ],
            share: [gemv::SpecConstants, gemv::PushConstants],
        },
    },
}

pub use gemv_kernels::{gemv, gemv_int8, gemv_int8_scalar, gemv_scalar};

/// Rows of W per workgroup (`4 * block` in gemv.comp).
pub const GEMV_ROWS: usize = 4;

/// Rows from which [`GemvShape::local_size`] takes at most 128 invocations: 2048 workgroups of
/// [`GEMV_ROWS`], many waves of them on any GPU.
pub const GEMV_MANY_ROWS: usize = 8192;

/// Blocks of rows per z slice of the grid (`GEMV_Y` in gemv.comp).
const GEMV_Y: usize = 32768;

/// The most rows of x one dispatch takes.
pub const GEMV_MAX_BATCH: usize = 8;

/// A matrix-vector product `[batch, K] · [N, K]ᵀ → [batch, N]`: the constants, workgroup, grid
/// and push constants of the GEMV kernels.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct GemvShape {
    /// Rows of x and y, 1 to [`GEMV_MAX_BATCH`].
    pub batch: usize,
    /// Rows of W (outputs per row of x).
    pub n: usize,
    /// Columns of W (the length of a row of x).
    pub k: usize,
}

impl GemvShape {
    /// Elements per 16-byte chunk of W in a wide kernel for weights of `bytes` bytes each
    /// (4 fp32, 8 fp16 or bf16, 16 int8).
    pub fn chunk(bytes: usize) -> usize {
        16 / bytes
    }

    /// Whether the wide kernel ([`gemv`], [`gemv_int8`]) takes this shape for weights of
    /// `bytes` bytes each: K a multiple of the chunk.
    pub fn wide(&self, bytes: usize) -> bool {
        self.k.is_multiple_of(Self::chunk(bytes))
    }

    /// The workgroup for chunks of `chunk` elements: the chunks of a row rounded up to a power
    /// of two, from 64 to 256 invocations — but 128 instead of 256 over [`GEMV_MANY_ROWS`] rows
    /// or more, each invocation reading two chunks of a row (a decoder's gate/up and vocabulary
    /// projections: faster so on the H200, BENCHMARKS.md).
    pub fn local_size(&self, chunk: usize) -> [u32; 3] {
        let chunks = self.k.div_ceil(chunk);
        let local = chunks.next_power_of_two().clamp(64, 256);
        let local = if self.n >= GEMV_MANY_ROWS {
            local.min(128)
        } else {
            local
        };
        [local as u32, 1, 1]
    }

    /// The invocation grid for workgroup `local`: a workgroup per [`GEMV_ROWS`] rows of W,
    /// spread over y and z.
    pub fn grid(&self, local: [u32; 3]) -> [u32; 3] {
        let blocks = self.n.div_ceil(GEMV_ROWS);
        [
            local[0],
            blocks.min(GEMV_Y) as u32,
            blocks.div_ceil(GEMV_Y).max(1) as u32,
        ]
    }

    /// The specialization constants, with a bias or not and nothing fused (the epilogue's
    /// constants, `activation`, `gated`, `accumulate` and `rms_input`, all 0).
    pub fn spec(&self, bias: bool) -> gemv::SpecConstants {
        gemv::SpecConstants {
            batch: self.batch as i32,
            bias_term: bias as i32,
            activation: 0,
            gated: 0,
            accumulate: 0,
            rms_input: 0,
            rope_qkv: 0,
        }
    }

    /// The push constants (the epilogue's 0: read only by a fused norm, leaky ReLU or
    /// rotation).
    pub fn push(&self) -> gemv::PushConstants {
        gemv::PushConstants {
            N: self.n as i32,
            K: self.k as i32,
            ..Default::default()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn many_rows_take_at_most_128_invocations() {
        let local = |n, k, chunk| GemvShape { batch: 1, n, k }.local_size(chunk)[0];
        // TinyLlama's decode step in fp16 (chunks of 8): Q/K/V, O and down keep a row's
        // chunks (at most 256); gate/up and the vocabulary take 128.
        assert_eq!(local(2560, 2048, 8), 256);
        assert_eq!(local(2048, 2048, 8), 256);
        assert_eq!(local(2048, 5632, 8), 256);
        assert_eq!(local(11264, 2048, 8), 128);
        assert_eq!(local(32000, 2048, 8), 128);
        // int8 (chunks of 16) over K 2048 already takes 128; few chunks keep 64.
        assert_eq!(local(11264, 2048, 16), 128);
        assert_eq!(local(GEMV_MANY_ROWS, 256, 8), 64);
    }
}
