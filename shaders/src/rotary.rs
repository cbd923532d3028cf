//! Rotary position embedding: [`rope`] and its shape, [`RopeShape`]; [`rope_qkv`], a fused
//! projection's heads rotated and placed in a KV cache, and its shape, [`RopeQkvShape`].

vkprism::compute_shader! {
    /// Rotary position embedding on x `[tokens, heads, dim]` (tokens = batch · seq): token t at
    /// position `t % seq + offset`, pair i of each head rotated by `pos · base^(-2i/dim)`;
    /// pairs `(i, i + dim/2)` (`interleaved` 0: Llama / Hugging Face's `rotate_half`) or
    /// `(2i, 2i + 1)` (`interleaved` 1). Angles in fp32 (as Hugging Face), reduced to [-π, π]
    /// before sin and cos. Push constants: `tokens`, `seq`, `heads`, `dim` (even), `offset`,
    /// `log2_base` ([`RopeShape::push`](crate::RopeShape::push)); y may be x. Any grid covers every pair. Variants
    /// `fp32`, `fp16s`, `fp16sa`, `bf16s`.
    pub mod rope,
    path: "rope.comp",
}

vkprism::compute_shader! {
    /// The fused projection's placement, one module per width of work an invocation takes
    /// (re-exported at the crate's root), sharing one set of constants types.
    pub mod rope_qkv_kernels,
    variants: [fp32, fp16s, fp16sa, bf16s],
    shaders: {
    /// A fused query/key/value projection `[tokens, (hq + 2·hkv) · dim]` split and placed:
    /// query heads rotated into q `[tokens, hq, dim]`, key heads rotated and value heads copied
    /// into the cache's rows k, v `[rows, hkv, dim]` at the tokens' positions `offset + t`
    /// (plus `pos[0]` with `position_in_buffer`: a recorded step replayed at any position;
    /// positions at or past `rows` write no key or value). Rotation as [`rope`](crate::rope)
    /// (constant `interleaved`). Push constants from
    /// [`RopeQkvShape::push`](crate::RopeQkvShape::push); one pair an invocation, grid
    /// [`RopeQkvShape::grid`](crate::RopeQkvShape::grid). Variants `fp32`, `fp16s`, `fp16sa`,
    /// `bf16s`.
        rope_qkv: { path: "rope_qkv.comp" },
    /// [`rope_qkv`](crate::rope_qkv) four pairs an invocation, their values loaded and stored
    /// as quads: `dim` a multiple of 8. The same constants types and variants; grid
    /// [`RopeQkvShape::quads_grid`](crate::RopeQkvShape::quads_grid).
        rope_qkv4: {
            path: "rope_qkv.comp",
            define: [("VKPRISM_QUADS", "1")],
            share: [rope_qkv::SpecConstants, rope_qkv::PushConstants],
        },
    },
}

pub use rope_qkv_kernels::{rope_qkv, rope_qkv4};

/// The invocations per workgroup of [`rope`].
const LOCAL: usize = 256;

/// Workgroups at most along x: a grid-stride loop takes the rest.
const MAX_GROUPS: usize = 65535;

/// The shape of a [`rope`] dispatch.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct RopeShape {
    /// Sequences.
    pub batch: usize,
    /// Tokens per sequence (consecutive positions).
    pub seq: usize,
    /// Heads per token.
    pub heads: usize,
    /// Values per head, even.
    pub dim: usize,
}

impl RopeShape {
    /// Pairs rotated: one per two values.
    pub fn pairs(&self) -> usize {
        self.batch * self.seq * self.heads * self.dim / 2
    }

    /// The workgroup.
    pub fn local_size(&self) -> [u32; 3] {
        [LOCAL as u32, 1, 1]
    }

    /// The invocation grid: one per pair, at most 65,535 workgroups (each invocation then
    /// takes several pairs).
    pub fn grid(&self) -> [u32; 3] {
        let groups = self.pairs().div_ceil(LOCAL).clamp(1, MAX_GROUPS);
        [(groups * LOCAL) as u32, 1, 1]
    }

    /// The push constants: the first token's position `offset` and the frequency base
    /// `theta_base` (its log2 taken in double precision).
    pub fn push(&self, offset: i32, theta_base: f32) -> rope::PushConstants {
        rope::PushConstants {
            tokens: (self.batch * self.seq) as i32,
            seq: self.seq as i32,
            heads: self.heads as i32,
            dim: self.dim as i32,
            offset,
            log2_base: (theta_base as f64).log2() as f32,
        }
    }
}

/// The shape of a [`rope_qkv`] dispatch.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct RopeQkvShape {
    /// Tokens of the step (consecutive positions).
    pub tokens: usize,
    /// Query heads.
    pub hq: usize,
    /// Key (and value) heads.
    pub hkv: usize,
    /// Values per head, even.
    pub dim: usize,
    /// Rows of the KV cache.
    pub rows: usize,
}

impl RopeQkvShape {
    /// Values in a token's row of the fused projection: `(hq + 2·hkv) · dim`.
    pub fn width(&self) -> usize {
        (self.hq + 2 * self.hkv) * self.dim
    }

    /// Pairs read: one per two values of the projection.
    pub fn pairs(&self) -> usize {
        self.tokens * self.width() / 2
    }

    /// The invocation grid (workgroups of 256): one per pair, at most 65,535 workgroups.
    pub fn grid(&self) -> [u32; 3] {
        let groups = self.pairs().div_ceil(LOCAL).clamp(1, MAX_GROUPS);
        [(groups * LOCAL) as u32, 1, 1]
    }

    /// The invocation grid of [`rope_qkv4`] (workgroups of 256): one per 4 pairs, at most
    /// 65,535 workgroups.
    pub fn quads_grid(&self) -> [u32; 3] {
        let groups = (self.pairs() / 4).div_ceil(LOCAL).clamp(1, MAX_GROUPS);
        [(groups * LOCAL) as u32, 1, 1]
    }

    /// The push constants: the first token's position `offset` (before the buffer's, where
    /// read) and the frequency base `theta_base`.
    pub fn push(&self, offset: i32, theta_base: f32) -> rope_qkv::PushConstants {
        rope_qkv::PushConstants {
            tokens: self.tokens as i32,
            hq: self.hq as i32,
            hkv: self.hkv as i32,
            dim: self.dim as i32,
            rows: self.rows as i32,
            offset,
            log2_base: (theta_base as f64).log2() as f32,
        }
    }
}
