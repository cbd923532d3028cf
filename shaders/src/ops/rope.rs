//! Rotary position embedding: [`Ops::rope`] with its options, [`Rope`] and [`RopeStyle`];
//! [`Ops::rope_qkv`], a decoder's fused projection rotated and placed in its KV cache, and
//! [`Ops::rope_qkv_normed`], the same with each query and key head normalized first.

use super::check::{
    float_format, kv_cache_shape, placed_apart, position_buffer, same_format, shape_is,
};
use super::{pipeline, recorded, OpError, Ops};
use crate::{
    rope, rope_qkv, rope_qkv4, rope_qkv_norm, rope_qkv_norm4, RopeFrequencies, RopeQkvShape,
    RopeScaling, RopeShape,
};
use vkprism::{CommandList, Tensor, TensorFormat};

/// Which two values of a head one rotation turns.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum RopeStyle {
    /// Pairs `(i, i + dim/2)`: Llama's and Hugging Face's `rotate_half`.
    Half,
    /// Pairs `(2i, 2i + 1)`: GPT-J's and the original RoFormer's.
    Interleaved,
}

/// Rotary position embedding: what [`Ops::rope`] applies. Pair i of a head of the token at
/// position `pos` is rotated by `pos · theta_base^(-2i/dim)`, the frequencies scaled as
/// `scaling` says. Built with [`Rope::new`] and the `with_*` setters.
#[derive(Copy, Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct Rope {
    /// The frequency base (10000 by default; Llama 3 uses 500000).
    pub theta_base: f32,
    /// The position of each sequence's first token: the length of the KV cache before it when
    /// decoding. A push constant: changing it makes no new pipeline.
    pub position_offset: usize,
    /// Which values form the pairs.
    pub style: RopeStyle,
    /// How the frequencies are scaled past the context the model was first trained on.
    pub scaling: RopeScaling,
}

impl Default for Rope {
    fn default() -> Self {
        Rope::new()
    }
}

impl Rope {
    /// Base 10000, positions from 0, [`RopeStyle::Half`], no scaling.
    pub fn new() -> Rope {
        Rope {
            theta_base: 10000.0,
            position_offset: 0,
            style: RopeStyle::Half,
            scaling: RopeScaling::None,
        }
    }
    /// This embedding with frequency base `theta_base`.
    pub fn with_theta_base(mut self, theta_base: f32) -> Rope {
        self.theta_base = theta_base;
        self
    }
    /// This embedding with the first token at position `offset`.
    pub fn with_position_offset(mut self, offset: usize) -> Rope {
        self.position_offset = offset;
        self
    }
    /// This embedding with pairs of `style`.
    pub fn with_style(mut self, style: RopeStyle) -> Rope {
        self.style = style;
        self
    }
    /// This embedding with its frequencies scaled as `scaling` says.
    pub fn with_scaling(mut self, scaling: RopeScaling) -> Rope {
        self.scaling = scaling;
        self
    }
    /// The frequencies the kernels take: the base and the scaling.
    pub fn frequencies(&self) -> RopeFrequencies {
        RopeFrequencies::new(self.theta_base).with_scaling(self.scaling)
    }
}

impl Ops {
    /// Records rotary position embedding of `x` into `y` in `list`: `x` `[seq, heads,
    /// head_dim]` or `[batch, seq, heads, head_dim]` (head_dim even), the tokens of each
    /// sequence at positions `op.position_offset ..`; `y` of `x`'s shape and float format (F32,
    /// F16 or Bf16); `y` may be `x` (in place). Angles in fp32, as Hugging Face computes them.
    /// Nothing is recorded when a check fails.
    pub fn rope(
        &self,
        list: &mut CommandList,
        x: &Tensor,
        y: &Tensor,
        op: &Rope,
    ) -> Result<(), OpError> {
        const OP: &str = "rope";
        let s = rope_shape(x)?;
        shape_is(OP, "y", y, x.shape(), "x's shape")?;
        let format = float_format(OP, "x", x)?;
        same_format(OP, "y", Some(y), format)?;
        let offset = check_rope(OP, &s, op)?;
        let kernel = self.kernel_for::<rope::Kernel>(OP, "x_blob", format, false)?;
        let spec = rope::SpecConstants {
            interleaved: (op.style == RopeStyle::Interleaved) as i32,
        };
        let pipe = pipeline(OP, &kernel, &spec, Some(s.local_size()))?;
        let bindings = rope::BufferBindings {
            x_blob: x,
            y_blob: y,
        };
        let push = s.push(offset, &op.frequencies());
        recorded(OP, list.dispatch(&pipe, &bindings, &push, s.grid()))
    }
}

impl Ops {
    /// Records the placement of a decoder step's fused projection into `list`: `qkv`
    /// `[tokens, (hq + 2·hkv) · head_dim]` (each row hq query heads, then hkv key heads, then
    /// hkv value heads); its query heads rotated into `q` `[tokens, hq, head_dim]`, its key
    /// heads rotated and its value heads copied into rows `pos .. pos + tokens` of the cache
    /// `k_cache`, `v_cache` `[rows, hkv, head_dim]`. Token t sits at position
    /// `pos = op.position_offset + t`, plus the I32 value in `position` (`[1]`) where given: a
    /// recorded decode step replays at any position, written there before each run (a
    /// position at or past `rows` then writes no key or value; one known now must fit). One
    /// float format; no output may be another operand. Nothing is recorded when a check fails.
    #[allow(clippy::too_many_arguments)]
    pub fn rope_qkv(
        &self,
        list: &mut CommandList,
        qkv: &Tensor,
        q: &Tensor,
        k_cache: &Tensor,
        v_cache: &Tensor,
        op: &Rope,
        position: Option<&Tensor>,
    ) -> Result<(), OpError> {
        const OP: &str = "rope_qkv";
        let placed = [q, k_cache, v_cache];
        let (s, format, offset) = check_rope_qkv(OP, qkv, placed, &[], op, position)?;
        let spec = rope_qkv::SpecConstants {
            interleaved: (op.style == RopeStyle::Interleaved) as i32,
            position_in_buffer: position.is_some() as i32,
        };
        let pos_blob = self.position_or_unread(OP, position)?;
        let push = s.push(offset, &op.frequencies());
        // Four pairs an invocation where a head's values come in whole quads of pairs.
        if s.dim.is_multiple_of(8) {
            let kernel = self.kernel_for::<rope_qkv4::Kernel>(OP, "qkv_blob", format, false)?;
            let pipe = pipeline(OP, &kernel, &spec, Some([256, 1, 1]))?;
            let bindings = rope_qkv4::BufferBindings {
                qkv_blob: qkv,
                q_blob: q,
                k_blob: k_cache,
                v_blob: v_cache,
                pos_blob,
            };
            return recorded(OP, list.dispatch(&pipe, &bindings, &push, s.quads_grid()));
        }
        let kernel = self.kernel_for::<rope_qkv::Kernel>(OP, "qkv_blob", format, false)?;
        let pipe = pipeline(OP, &kernel, &spec, Some([256, 1, 1]))?;
        let bindings = rope_qkv::BufferBindings {
            qkv_blob: qkv,
            q_blob: q,
            k_blob: k_cache,
            v_blob: v_cache,
            pos_blob,
        };
        recorded(OP, list.dispatch(&pipe, &bindings, &push, s.grid()))
    }
}

/// Each query and key head of a fused projection RMS-normalized over its own `head_dim` values
/// and scaled by a weight of as many values before it turns: Qwen3's `q_norm` and `k_norm`
/// ([`Ops::rope_qkv_normed`]).
#[derive(Copy, Clone, Debug)]
pub struct HeadNorm<'a> {
    /// `[head_dim]`, scaling every query head.
    pub q_weight: &'a Tensor,
    /// `[head_dim]`, scaling every key head.
    pub k_weight: &'a Tensor,
    /// Added to each head's mean square before its root.
    pub eps: f32,
}

/// The largest head [`Ops::rope_qkv_normed`] takes: a head's pairs on at most `head_dim / 2`
/// invocations of one workgroup, within the 1024 every Vulkan device offers.
const NORMED_HEAD_MAX: usize = 2048;

impl Ops {
    /// [`Ops::rope_qkv`] with each query and key head normalized first as `norm` says (value
    /// heads copied as they are): `x / sqrt(mean(x²) + eps) · weight` over the head's values
    /// in fp32, the weights `[head_dim]` in the projection's format and in the order its heads
    /// hold their values. Heads of at most 2048 values. Nothing is recorded when a check fails.
    #[allow(clippy::too_many_arguments)]
    pub fn rope_qkv_normed(
        &self,
        list: &mut CommandList,
        qkv: &Tensor,
        norm: HeadNorm<'_>,
        q: &Tensor,
        k_cache: &Tensor,
        v_cache: &Tensor,
        op: &Rope,
        position: Option<&Tensor>,
    ) -> Result<(), OpError> {
        const OP: &str = "rope_qkv_normed";
        let weights = [
            ("q_weight", Some(norm.q_weight)),
            ("k_weight", Some(norm.k_weight)),
        ];
        let placed = [q, k_cache, v_cache];
        let (s, format, offset) = check_rope_qkv(OP, qkv, placed, &weights, op, position)?;
        for (operand, w) in weights {
            shape_is(OP, operand, w.expect("given"), &[s.dim], "[head_dim]")?;
        }
        if s.dim > NORMED_HEAD_MAX {
            let why = format!(
                "heads of {} values: at most {NORMED_HEAD_MAX} are normed",
                s.dim
            );
            return Err(OpError::Unsupported { op: OP, why });
        }
        let spec = rope_qkv::SpecConstants {
            interleaved: (op.style == RopeStyle::Interleaved) as i32,
            position_in_buffer: position.is_some() as i32,
        };
        let push = s.norm_push(offset, &op.frequencies(), norm.eps);
        let pos_blob = self.position_or_unread(OP, position)?;
        // Four pairs an invocation where a head's values come in whole quads of pairs.
        let quads = s.dim.is_multiple_of(8);
        let (grid, local) = s.heads_grid(quads);
        if quads {
            let kernel =
                self.kernel_for::<rope_qkv_norm4::Kernel>(OP, "qkv_blob", format, false)?;
            let pipe = pipeline(OP, &kernel, &spec, Some(local))?;
            let bindings = rope_qkv_norm4::BufferBindings {
                qkv_blob: qkv,
                q_blob: q,
                k_blob: k_cache,
                v_blob: v_cache,
                pos_blob,
                q_norm_blob: norm.q_weight,
                k_norm_blob: norm.k_weight,
            };
            return recorded(OP, list.dispatch(&pipe, &bindings, &push, grid));
        }
        let kernel = self.kernel_for::<rope_qkv_norm::Kernel>(OP, "qkv_blob", format, false)?;
        let pipe = pipeline(OP, &kernel, &spec, Some(local))?;
        let bindings = rope_qkv_norm::BufferBindings {
            qkv_blob: qkv,
            q_blob: q,
            k_blob: k_cache,
            v_blob: v_cache,
            pos_blob,
            q_norm_blob: norm.q_weight,
            k_norm_blob: norm.k_weight,
        };
        let push = s.norm_push(offset, &op.frequencies(), norm.eps);
        recorded(OP, list.dispatch(&pipe, &bindings, &push, grid))
    }
}

/// The placement `name` of `qkv` into `[q, k_cache, v_cache]` under `op` checked (shapes, one
/// float format over them and the `inputs` beside `qkv`, no output another operand, the
/// position buffer): its shape, format and the offset as the kernel takes it.
fn check_rope_qkv(
    name: &'static str,
    qkv: &Tensor,
    [q, k, v]: [&Tensor; 3],
    inputs: &[(&'static str, Option<&Tensor>)],
    op: &Rope,
    position: Option<&Tensor>,
) -> Result<(RopeQkvShape, TensorFormat, i32), OpError> {
    let s = placement_shape(name, q, k, v)?;
    let want = "[tokens, (hq + 2·hkv) · head_dim]";
    shape_is(name, "qkv", qkv, &[s.tokens, s.width()], want)?;
    let format = float_format(name, "qkv", qkv)?;
    let operands = [("q", Some(q)), ("k_cache", Some(k)), ("v_cache", Some(v))];
    for (operand, t) in operands.iter().chain(inputs) {
        same_format(name, operand, *t, format)?;
    }
    let read: Vec<_> = [("qkv", Some(qkv))]
        .into_iter()
        .chain(inputs.iter().copied())
        .collect();
    placed_apart(name, [q, k, v], &read)?;
    let offset = check_placement(name, &s, op, position.is_none())?;
    position_buffer(name, position)?;
    Ok((s, format, offset))
}

/// [`check_rope`] for a step's placement of shape `s` under `op`, and, where the position is
/// `known` now (not read from a buffer at run time), its tokens within the cache's rows: the
/// offset as the kernel takes it.
pub(super) fn check_placement(
    name: &'static str,
    s: &RopeQkvShape,
    op: &Rope,
    known: bool,
) -> Result<i32, OpError> {
    let shape = RopeShape {
        batch: 1,
        seq: s.tokens,
        heads: s.hq,
        dim: s.dim,
    };
    let offset = check_rope(name, &shape, op)?;
    if known && op.position_offset + s.tokens > s.rows {
        return Err(OpError::Unsupported {
            op: name,
            why: format!(
                "positions {} .. {} are past the cache's {} rows",
                op.position_offset,
                op.position_offset + s.tokens,
                s.rows
            ),
        });
    }
    Ok(offset)
}

/// The shape of a step's placed outputs, q `[tokens, hq, head_dim]` and the caches `[rows, hkv,
/// head_dim]`, for operation `op`, or the located mismatch.
pub(super) fn placement_shape(
    op: &'static str,
    q: &Tensor,
    k: &Tensor,
    v: &Tensor,
) -> Result<RopeQkvShape, OpError> {
    let [tokens, hq, dim] = *q.shape() else {
        return Err(OpError::Shape {
            op,
            operand: "q",
            got: q.shape().to_vec(),
            want: "[tokens, hq, head_dim]".into(),
        });
    };
    let [rows, hkv, kd] = kv_cache_shape(op, k, v)?;
    if kd != dim || hkv == 0 {
        return Err(OpError::Shape {
            op,
            operand: "k_cache",
            got: k.shape().to_vec(),
            want: format!("[rows, hkv, {dim}] with hkv at least 1"),
        });
    }
    Ok(RopeQkvShape {
        tokens,
        hq,
        hkv,
        dim,
        rows,
    })
}

/// x's `[batch, seq, heads, head_dim]` (batch 1 for rank 3).
fn rope_shape(x: &Tensor) -> Result<RopeShape, OpError> {
    let (batch, seq, heads, dim) = match *x.shape() {
        [s, h, d] => (1, s, h, d),
        [b, s, h, d] => (b, s, h, d),
        _ => {
            return Err(OpError::Shape {
                op: "rope",
                operand: "x",
                got: x.shape().to_vec(),
                want: "[seq, heads, head_dim] or [batch, seq, heads, head_dim]".into(),
            })
        }
    };
    Ok(RopeShape {
        batch,
        seq,
        heads,
        dim,
    })
}

/// An even head, frequencies a kernel can take, positions within the kernel's `int`; the
/// offset as the kernel takes it.
fn check_rope(name: &'static str, s: &RopeShape, op: &Rope) -> Result<i32, OpError> {
    let unsupported = |why: String| Err(OpError::Unsupported { op: name, why });
    if !s.dim.is_multiple_of(2) {
        return unsupported(format!("head_dim {} is odd: values rotate in pairs", s.dim));
    }
    if let Some(why) = op.frequencies().problem() {
        return unsupported(why);
    }
    match i32::try_from(op.position_offset + s.seq) {
        Ok(_) => Ok(op.position_offset as i32),
        Err(_) => unsupported(format!(
            "positions up to {} are past 2^31",
            op.position_offset + s.seq
        )),
    }
}
