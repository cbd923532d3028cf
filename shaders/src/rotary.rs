//! Rotary position embedding: [`rope`] and its shape, [`RopeShape`].

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
