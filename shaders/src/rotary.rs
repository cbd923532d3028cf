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
    /// A fused query/key/value projection `[tokens, (hq + 2·hkv) · dim]` split and placed:
    /// query heads rotated into q `[tokens, hq, dim]`, key heads rotated and value heads copied
    /// into the cache's rows k, v `[rows, hkv, dim]` at the tokens' positions `offset + t`
    /// (plus `pos[0]` with `position_in_buffer`: a recorded step replayed at any position;
    /// positions at or past `rows` write no key or value). Rotation as [`rope`](crate::rope)
    /// (constant `interleaved`). Push constants from
    /// [`RopeQkvShape::push`](crate::RopeQkvShape::push). Variants `fp32`, `fp16s`, `fp16sa`,
    /// `bf16s`.
    pub mod rope_qkv,
    path: "rope_qkv.comp",
}

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
    /// Pairs read: one per two values of the projection.
    pub fn pairs(&self) -> usize {
        self.tokens * (self.hq + 2 * self.hkv) * self.dim / 2
    }

    /// The invocation grid (workgroups of 256): one per pair, at most 65,535 workgroups.
    pub fn grid(&self) -> [u32; 3] {
        let groups = self.pairs().div_ceil(LOCAL).clamp(1, MAX_GROUPS);
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
