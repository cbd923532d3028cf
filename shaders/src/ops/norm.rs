//! The row-wise operations: [`Ops::softmax`] ([`Softmax`]), [`Ops::layer_norm`],
//! [`Ops::rms_norm`] and [`Ops::group_norm`], one dispatch each, in place allowed (the kernels
//! read every value of a row before writing any, and each value is overwritten by the
//! invocation that read it).

use super::check::{float_format, nonempty, not_aliased, same_format, shape_is};
use super::{pipeline, recorded, OpError, Ops};
use crate::{norm, norm4, softmax, softmax4, NormShape, SoftmaxShape};
use vkprism::{CommandList, Tensor};

/// `y = softmax(scale · x)` along the last axis, optionally causal: what [`Ops::softmax`]
/// computes. Built with [`Softmax::new`] and the `with_*` setters.
#[derive(Copy, Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct Softmax {
    /// x is multiplied by it before the softmax (attention's 1/√d).
    pub scale: f32,
    /// A causal mask: row r of each `[rows, cols]` block (the last two dimensions) sees only
    /// columns `c <= r + offset` (the others are 0; a row that sees none is all 0). For a
    /// prefill block of `rows` queries at the end of `cols` keys, `offset = cols - rows`.
    pub causal: Option<i32>,
}

impl Default for Softmax {
    fn default() -> Self {
        Softmax::new()
    }
}

impl Softmax {
    /// The plain softmax: scale 1, no mask.
    pub fn new() -> Softmax {
        Softmax {
            scale: 1.0,
            causal: None,
        }
    }
    /// This softmax of `scale · x`.
    pub fn with_scale(mut self, scale: f32) -> Softmax {
        self.scale = scale;
        self
    }
    /// This softmax with the causal mask of `offset` (`None`: no mask).
    pub fn with_causal(mut self, offset: Option<i32>) -> Softmax {
        self.causal = offset;
        self
    }
}

impl Ops {
    /// Records `y = softmax(op.scale · x)` along the last axis of `x` into `list`, with
    /// `op.causal`'s mask: `y` of `x`'s shape and float format (F32, F16 or Bf16), any row
    /// length; `y` may be `x` (in place). One dispatch, a workgroup per row. Nothing is
    /// recorded when a check fails.
    pub fn softmax(
        &self,
        list: &mut CommandList,
        x: &Tensor,
        y: &Tensor,
        op: &Softmax,
    ) -> Result<(), OpError> {
        const OP: &str = "softmax";
        nonempty(OP, "x", x)?;
        shape_is(OP, "y", y, x.shape(), "x's shape")?;
        let format = float_format(OP, "x", x)?;
        same_format(OP, "y", Some(y), format)?;
        let s = SoftmaxShape::of(x.shape());
        let spec = softmax::SpecConstants {
            causal: op.causal.is_some() as i32,
        };
        let push = s.push(op.scale, op.causal.unwrap_or(0));
        if s.cols.is_multiple_of(4) {
            // Rows of quads: read and written as quads (a quarter of the loads).
            let kernel = self.kernel_for::<softmax4::Kernel>(OP, "x_blob", format, false)?;
            let local = s.local_size_quads();
            let pipe = pipeline(OP, &kernel, &spec, Some(local))?;
            let bindings = softmax4::BufferBindings {
                x_blob: x,
                y_blob: y,
            };
            return recorded(OP, list.dispatch(&pipe, &bindings, &push, s.grid(local)));
        }
        let kernel = self.kernel_for::<softmax::Kernel>(OP, "x_blob", format, false)?;
        let local = s.local_size();
        let pipe = pipeline(OP, &kernel, &spec, Some(local))?;
        let bindings = softmax::BufferBindings {
            x_blob: x,
            y_blob: y,
        };
        recorded(OP, list.dispatch(&pipe, &bindings, &push, s.grid(local)))
    }

    /// Records layer norm over the last dimension of `x` into `list`:
    /// `y = (x - mean) / sqrt(var + eps) · gamma + beta`, each row's mean and (biased)
    /// variance in fp32; `gamma` and `beta` (each optional) hold one value per column; `y` of
    /// `x`'s shape; one float format; `y` may be `x` (in place). Nothing is recorded when a
    /// check fails.
    pub fn layer_norm(
        &self,
        list: &mut CommandList,
        x: &Tensor,
        gamma: Option<&Tensor>,
        beta: Option<&Tensor>,
        y: &Tensor,
        eps: f32,
    ) -> Result<(), OpError> {
        let s = NormShape::rows(x.shape());
        self.norm("layer_norm", list, x, s, false, gamma, beta, y, eps)
    }

    /// Records RMS norm over the last dimension of `x` into `list`:
    /// `y = x / sqrt(mean(x²) + eps) · gamma`, `gamma` (optional) one value per column, `y` of
    /// `x`'s shape, one float format, `y` may be `x`. Nothing is recorded when a check fails.
    pub fn rms_norm(
        &self,
        list: &mut CommandList,
        x: &Tensor,
        gamma: Option<&Tensor>,
        y: &Tensor,
        eps: f32,
    ) -> Result<(), OpError> {
        let s = NormShape::rows(x.shape());
        self.norm("rms_norm", list, x, s, true, gamma, None, y, eps)
    }

    /// Records group norm of a channels-last `x` (`[batch, h, w, c]`, as
    /// [`Ops::conv2d`]'s) into `list`: the `c` channels in `groups` groups (dividing `c`), each
    /// group of each image normalized by its mean and variance over `h · w · c / groups`
    /// values, then `· gamma[c] + beta[c]` (each optional, one value per channel); `y` of `x`'s
    /// shape, one float format, `y` may be `x`. Nothing is recorded when a check fails.
    #[allow(clippy::too_many_arguments)]
    pub fn group_norm(
        &self,
        list: &mut CommandList,
        x: &Tensor,
        groups: usize,
        gamma: Option<&Tensor>,
        beta: Option<&Tensor>,
        y: &Tensor,
        eps: f32,
    ) -> Result<(), OpError> {
        const OP: &str = "group_norm";
        let [batch, h, w, c] = *x.shape() else {
            return Err(OpError::Shape {
                op: OP,
                operand: "x",
                got: x.shape().to_vec(),
                want: "[batch, h, w, c] (channels-last)".into(),
            });
        };
        if groups == 0 || !c.is_multiple_of(groups) {
            return Err(OpError::Unsupported {
                op: OP,
                why: format!("{groups} groups don't divide {c} channels"),
            });
        }
        let s = NormShape {
            batch,
            hw: h * w,
            c,
            groups,
        };
        self.norm(OP, list, x, s, false, gamma, beta, y, eps)
    }

    /// The checks and the dispatch of every norm.
    #[allow(clippy::too_many_arguments)]
    fn norm(
        &self,
        op: &'static str,
        list: &mut CommandList,
        x: &Tensor,
        s: NormShape,
        rms: bool,
        gamma: Option<&Tensor>,
        beta: Option<&Tensor>,
        y: &Tensor,
        eps: f32,
    ) -> Result<(), OpError> {
        nonempty(op, "x", x)?;
        shape_is(op, "y", y, x.shape(), "x's shape")?;
        for (name, t) in [("gamma", gamma), ("beta", beta)] {
            if let Some(t) = t {
                shape_is(op, name, t, &[s.c], "[channels]")?;
            }
        }
        let format = float_format(op, "x", x)?;
        for (name, t) in [("y", Some(y)), ("gamma", gamma), ("beta", beta)] {
            same_format(op, name, t, format)?;
        }
        not_aliased(op, y, "y", &[("gamma", gamma), ("beta", beta)])?;
        let spec = norm::SpecConstants {
            rms: rms as i32,
            gamma_term: gamma.is_some() as i32,
            beta_term: beta.is_some() as i32,
        };
        let local = s.local_size();
        let (push, grid) = (s.push(eps), s.grid(local));
        // Unread without gamma or beta (their constants 0): any tensor of the format binds.
        let (gamma, beta) = (gamma.unwrap_or(x), beta.unwrap_or(x));
        if s.hw == 1 && s.groups == 1 && s.c.is_multiple_of(4) {
            // Rows of quads: every operand read as quads (a quarter of the loads).
            let kernel = self.kernel_for::<norm4::Kernel>(op, "x_blob", format, false)?;
            let pipe = pipeline(op, &kernel, &spec, Some(s.local_size_quads()))?;
            let bindings = norm4::BufferBindings {
                x_blob: x,
                gamma_blob: gamma,
                beta_blob: beta,
                y_blob: y,
            };
            let grid = s.grid(s.local_size_quads());
            return recorded(op, list.dispatch(&pipe, &bindings, &push, grid));
        }
        let kernel = self.kernel_for::<norm::Kernel>(op, "x_blob", format, false)?;
        let pipe = pipeline(op, &kernel, &spec, Some(local))?;
        let bindings = norm::BufferBindings {
            x_blob: x,
            gamma_blob: gamma,
            beta_blob: beta,
            y_blob: y,
        };
        recorded(op, list.dispatch(&pipe, &bindings, &push, grid))
    }
}
