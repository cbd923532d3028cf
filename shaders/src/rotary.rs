//! Rotary position embedding: [`rope`] and its shape, [`RopeShape`]; [`rope_qkv`], a fused
//! projection's heads rotated and placed in a KV cache, and its shape, [`RopeQkvShape`]; the
//! frequencies every rotating kernel takes, [`RopeFrequencies`] and [`RopeScaling`].

vkprism::compute_shader! {
    /// Rotary position embedding on x `[tokens, heads, dim]` (tokens = batch · seq): token t at
    /// position `t % seq + offset`, pair i of each head rotated by `pos · base^(-2i/dim)`;
    /// pairs `(i, i + dim/2)` (`interleaved` 0: Llama / Hugging Face's `rotate_half`) or
    /// `(2i, 2i + 1)` (`interleaved` 1). Angles in fp32 (as Hugging Face), reduced to [-π, π]
    /// before sin and cos; the frequencies scaled as [`RopeScaling`](crate::RopeScaling) says.
    /// Push constants: `tokens`, `seq`, `heads`, `dim` (even), `offset` and the frequencies
    /// ([`RopeShape::push`](crate::RopeShape::push)); y may be x. Any grid covers every pair.
    /// Variants `fp32`, `fp16s`, `fp16sa`, `bf16s`.
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
    /// [`rope_qkv`](crate::rope_qkv) with each query and key head RMS-normalized over its
    /// `dim` values and scaled by a weight of `dim` values before it turns (Qwen3's `q_norm`
    /// and `k_norm`: `q_norm` bound for every query head, `k_norm` for every key head), one
    /// pair an invocation. A workgroup of whole heads (`dim / 2` invocations each), grid and
    /// workgroup from [`RopeQkvShape::heads_grid`](crate::RopeQkvShape::heads_grid); push
    /// constants from [`RopeQkvShape::norm_push`](crate::RopeQkvShape::norm_push) (the norm's
    /// `eps` last); [`rope_qkv`](crate::rope_qkv)'s specialization constants.
        rope_qkv_norm: {
            path: "rope_qkv_norm.comp",
            share: [rope_qkv::SpecConstants],
        },
    /// [`rope_qkv_norm`](crate::rope_qkv_norm) four pairs an invocation, loaded and stored as
    /// quads: `dim` a multiple of 8 (`dim / 8` invocations a head). The same constants types.
        rope_qkv_norm4: {
            path: "rope_qkv_norm.comp",
            define: [("VKPRISM_QUADS", "1")],
            share: [rope_qkv::SpecConstants, rope_qkv_norm::PushConstants],
        },
    },
}

pub use rope_qkv_kernels::{rope_qkv, rope_qkv4, rope_qkv_norm, rope_qkv_norm4};

/// The invocations per workgroup of [`rope`].
const LOCAL: usize = 256;

/// Invocations [`RopeQkvShape::heads_grid`] fills with whole heads.
const HEADS_GROUP: usize = 64;

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

    /// The push constants: the first token's position `offset` and the frequencies `freqs`.
    pub fn push(&self, offset: i32, freqs: &RopeFrequencies) -> rope::PushConstants {
        let [log2_base, freq_factor, freq_low, freq_high] = freqs.pushed();
        rope::PushConstants {
            tokens: (self.batch * self.seq) as i32,
            seq: self.seq as i32,
            heads: self.heads as i32,
            dim: self.dim as i32,
            offset,
            log2_base,
            freq_factor,
            freq_low,
            freq_high,
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

    /// The grid and workgroup of [`rope_qkv_norm`] (`quads`: of [`rope_qkv_norm4`]): a head's
    /// pairs on `dim / 2` invocations (`dim / 8` with `quads`), as many whole heads a
    /// workgroup as fit 64 invocations (at least one), one workgroup per that many heads of
    /// the tokens, at most 65,535 (a grid-stride loop takes the rest).
    pub fn heads_grid(&self, quads: bool) -> ([u32; 3], [u32; 3]) {
        let lanes = (self.dim / if quads { 8 } else { 2 }).max(1);
        let per_group = (HEADS_GROUP / lanes).max(1);
        let heads = self.tokens * (self.hq + 2 * self.hkv);
        let groups = heads.div_ceil(per_group).clamp(1, MAX_GROUPS);
        let local = lanes * per_group;
        ([(groups * local) as u32, 1, 1], [local as u32, 1, 1])
    }

    /// [`RopeQkvShape::push`]'s constants for [`rope_qkv_norm`], its heads' norm taking `eps`.
    pub fn norm_push(
        &self,
        offset: i32,
        freqs: &RopeFrequencies,
        eps: f32,
    ) -> rope_qkv_norm::PushConstants {
        let p = self.push(offset, freqs);
        rope_qkv_norm::PushConstants {
            tokens: p.tokens,
            hq: p.hq,
            hkv: p.hkv,
            dim: p.dim,
            rows: p.rows,
            offset: p.offset,
            log2_base: p.log2_base,
            freq_factor: p.freq_factor,
            freq_low: p.freq_low,
            freq_high: p.freq_high,
            eps,
        }
    }

    /// The push constants: the first token's position `offset` (before the buffer's, where
    /// read) and the frequencies `freqs`.
    pub fn push(&self, offset: i32, freqs: &RopeFrequencies) -> rope_qkv::PushConstants {
        let [log2_base, freq_factor, freq_low, freq_high] = freqs.pushed();
        rope_qkv::PushConstants {
            tokens: self.tokens as i32,
            hq: self.hq as i32,
            hkv: self.hkv as i32,
            dim: self.dim as i32,
            rows: self.rows as i32,
            offset,
            log2_base,
            freq_factor,
            freq_low,
            freq_high,
        }
    }
}

/// How a rotary embedding's frequencies are scaled to reach past the context a model was
/// first trained on: Hugging Face's `rope_type` of the same name.
#[derive(Copy, Clone, Debug, Default, PartialEq)]
#[non_exhaustive]
pub enum RopeScaling {
    /// Every frequency as `theta_base` gives it (`default`).
    #[default]
    None,
    /// Every frequency divided by `factor` (`linear`).
    Linear {
        /// The divisor.
        factor: f32,
    },
    /// Llama 3's (`llama3`): frequencies whose wavelength is longer than
    /// `original_max_positions / low_freq_factor` divided by `factor`, those shorter than
    /// `original_max_positions / high_freq_factor` kept, those between blended linearly.
    Llama3 {
        /// The divisor of the low frequencies.
        factor: f32,
        /// Where the divided band ends, as the original context's count of wavelengths.
        low_freq_factor: f32,
        /// Where the kept band starts, the same way (above `low_freq_factor`).
        high_freq_factor: f32,
        /// The context the model was first trained on
        /// (`original_max_position_embeddings`).
        original_max_positions: usize,
    },
}

impl RopeScaling {
    /// Why these parameters scale no frequency sensibly (a factor that is not a positive
    /// number, bands out of order), or `None`.
    pub fn problem(&self) -> Option<String> {
        let positive = |name: &str, v: f32| {
            (!(v.is_finite() && v > 0.0)).then(|| format!("{name} {v} is not a positive number"))
        };
        match *self {
            RopeScaling::None => None,
            RopeScaling::Linear { factor } => positive("factor", factor),
            RopeScaling::Llama3 {
                factor,
                low_freq_factor,
                high_freq_factor,
                original_max_positions,
            } => positive("factor", factor)
                .or_else(|| positive("low_freq_factor", low_freq_factor))
                .or_else(|| positive("high_freq_factor", high_freq_factor))
                .or_else(|| {
                    (high_freq_factor <= low_freq_factor).then(|| {
                        format!(
                            "high_freq_factor {high_freq_factor} is not above low_freq_factor \
                             {low_freq_factor}"
                        )
                    })
                })
                .or_else(|| {
                    (original_max_positions == 0).then(|| "original_max_positions is 0".to_string())
                }),
        }
    }

    /// `inv_freq` scaled, in f64 (the references'), as Hugging Face computes it.
    pub fn scale(&self, inv_freq: f64) -> f64 {
        if let Some([factor, low, high, old]) = self.llama3() {
            let wavelen = std::f64::consts::TAU / inv_freq;
            return if wavelen < old / high {
                inv_freq
            } else if wavelen > old / low {
                inv_freq / factor
            } else {
                let smooth = (old / wavelen - low) / (high - low);
                (1.0 - smooth) * inv_freq / factor + smooth * inv_freq
            };
        }
        match *self {
            RopeScaling::Linear { factor } => inv_freq / factor as f64,
            _ => inv_freq,
        }
    }

    /// The kernels' (factor, low, high): `rope.glsl`'s bounds in frequencies, a wavelength
    /// `old / f` being the frequency `2π · f / old`.
    fn band(&self) -> [f32; 3] {
        if let Some([factor, low, high, old]) = self.llama3() {
            let per_position = std::f64::consts::TAU / old;
            return [
                factor as f32,
                (per_position * low) as f32,
                (per_position * high) as f32,
            ];
        }
        match *self {
            RopeScaling::Linear { factor } => [factor, f32::INFINITY, f32::INFINITY],
            _ => [1.0, 0.0, 0.0],
        }
    }

    /// Llama 3's factor, low and high bounds and original context in f64, where this is its
    /// scaling.
    fn llama3(&self) -> Option<[f64; 4]> {
        match *self {
            RopeScaling::Llama3 {
                factor,
                low_freq_factor,
                high_freq_factor,
                original_max_positions,
            } => Some([
                factor as f64,
                low_freq_factor as f64,
                high_freq_factor as f64,
                original_max_positions as f64,
            ]),
            _ => None,
        }
    }
}

/// A rotary embedding's frequencies: pair i of a head of `dim` values turns by
/// `theta_base^(-2i/dim)` a position, scaled as `scaling` says.
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct RopeFrequencies {
    /// The base (10000 for Llama 2; 500000 for Llama 3).
    pub theta_base: f32,
    /// How the frequencies are scaled.
    pub scaling: RopeScaling,
}

impl RopeFrequencies {
    /// The plain rotation of base `theta_base`.
    pub fn new(theta_base: f32) -> RopeFrequencies {
        RopeFrequencies {
            theta_base,
            scaling: RopeScaling::None,
        }
    }

    /// These frequencies scaled as `scaling` says.
    pub fn with_scaling(mut self, scaling: RopeScaling) -> RopeFrequencies {
        self.scaling = scaling;
        self
    }

    /// Why no kernel can take these (a base that is not a positive number, a scaling's
    /// problem), or `None`.
    pub fn problem(&self) -> Option<String> {
        if !(self.theta_base.is_finite() && self.theta_base > 0.0) {
            return Some(format!(
                "theta_base {} is not a positive number",
                self.theta_base
            ));
        }
        self.scaling.problem()
    }

    /// Pair i's frequency in f64, as the references compute it.
    pub fn inv_freq(&self, i: usize, dim: usize) -> f64 {
        let plain = (self.theta_base as f64).powf(-2.0 * i as f64 / dim as f64);
        self.scaling.scale(plain)
    }

    /// The push constants every rotating kernel takes: `log2_base` (the log taken in double
    /// precision), then `freq_factor`, `freq_low` and `freq_high` (`rope.glsl`).
    pub fn pushed(&self) -> [f32; 4] {
        let [factor, low, high] = self.scaling.band();
        [(self.theta_base as f64).log2() as f32, factor, low, high]
    }
}
