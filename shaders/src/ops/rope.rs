//! Rotary position embedding: [`Ops::rope`] with its options, [`Rope`] and [`RopeStyle`].

use super::check::{float_format, same_format, shape_is};
use super::{pipeline, recorded, OpError, Ops};
use crate::{rope, RopeShape};
use vkprism::{CommandList, Tensor};

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
/// position `pos` is rotated by `pos · theta_base^(-2i/dim)`. Built with [`Rope::new`] and the
/// `with_*` setters.
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
}

impl Default for Rope {
    fn default() -> Self {
        Rope::new()
    }
}

impl Rope {
    /// Base 10000, positions from 0, [`RopeStyle::Half`].
    pub fn new() -> Rope {
        Rope {
            theta_base: 10000.0,
            position_offset: 0,
            style: RopeStyle::Half,
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
        let offset = check_rope(&s, op)?;
        let kernel = self.kernel_for::<rope::Kernel>(OP, "x_blob", format, false)?;
        let spec = rope::SpecConstants {
            interleaved: (op.style == RopeStyle::Interleaved) as i32,
        };
        let pipe = pipeline(OP, &kernel, &spec, Some(s.local_size()))?;
        let bindings = rope::BufferBindings {
            x_blob: x,
            y_blob: y,
        };
        let push = s.push(offset, op.theta_base);
        recorded(OP, list.dispatch(&pipe, &bindings, &push, s.grid()))
    }
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

/// An even head, a finite positive base, positions within the kernel's `int`; the offset as
/// the kernel takes it.
fn check_rope(s: &RopeShape, op: &Rope) -> Result<i32, OpError> {
    let unsupported = |why: String| Err(OpError::Unsupported { op: "rope", why });
    if !s.dim.is_multiple_of(2) {
        return unsupported(format!("head_dim {} is odd: values rotate in pairs", s.dim));
    }
    if !(op.theta_base.is_finite() && op.theta_base > 0.0) {
        return unsupported(format!(
            "theta_base {} is not a positive number",
            op.theta_base
        ));
    }
    match i32::try_from(op.position_offset + s.seq) {
        Ok(_) => Ok(op.position_offset as i32),
        Err(_) => unsupported(format!(
            "positions up to {} are past 2^31",
            op.position_offset + s.seq
        )),
    }
}
