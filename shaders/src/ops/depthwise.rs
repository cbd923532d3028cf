//! [`Ops::conv2d_depthwise`]: the depthwise convolution, channels-last (MobileNet's), on
//! [`conv2d_dw_nhwc`](crate::conv2d_dw_nhwc).

use super::check::{conv_operands, kernel_fits, shape_is};
use super::{pipeline, recorded, Activation, OpError, Ops};
use crate::{conv2d_dw_nhwc, Conv2dDwShape};
use vkprism::{CommandList, Tensor, TensorFormat};

const OP: &str = "conv2d_depthwise";

/// Workgroups Vulkan guarantees along a grid's dimension.
const MAX_WORKGROUPS: usize = 65_535;

/// `out = act(conv(input, weight) + bias)` with every channel convolved by its own kernel
/// (`F.conv2d(x, w, groups=c)`): what [`Ops::conv2d_depthwise`] computes. Built with
/// [`DepthwiseConv2d::new`] and [`DepthwiseConv2d::with_activation`].
#[derive(Copy, Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct DepthwiseConv2d {
    /// The input, kernel, stride and padding.
    pub shape: Conv2dDwShape,
    /// The function applied last.
    pub activation: Activation,
}

impl DepthwiseConv2d {
    /// The plain depthwise convolution of `shape`.
    pub fn new(shape: Conv2dDwShape) -> DepthwiseConv2d {
        DepthwiseConv2d {
            shape,
            activation: Activation::None,
        }
    }
    /// This convolution followed by `activation`.
    pub fn with_activation(mut self, activation: Activation) -> DepthwiseConv2d {
        self.activation = activation;
        self
    }
}

impl Ops {
    /// Records the depthwise convolution `out = act(conv(input, weight) + bias)` of `op.shape`
    /// into `list`: `input` `[batch, h, w, c]`, `weight` `[kh, kw, c]` (PyTorch's `[c, 1, kh,
    /// kw]` with its channel axis last), `bias` `[c]`, `out` `[batch, outh, outw, c]`, one float
    /// format, `c` a multiple of 4; `out` none of the others. F16 sums in fp16 where the device
    /// has fp16 arithmetic (the kernel's `fp16sa` / `fp16pa` variants, its fastest), else in
    /// fp32. Nothing is recorded when a check fails.
    pub fn conv2d_depthwise(
        &self,
        list: &mut CommandList,
        input: &Tensor,
        weight: &Tensor,
        bias: Option<&Tensor>,
        out: &Tensor,
        op: &DepthwiseConv2d,
    ) -> Result<(), OpError> {
        let s = op.shape;
        let format = check_depthwise(input, weight, bias, out, &s)?;
        let kernel = self.kernel_for::<conv2d_dw_nhwc::Kernel>(OP, "in_blob", format, false)?;
        let (activation, slope) = op.activation.code();
        let spec = s.spec(bias.is_some(), activation);
        let local = s.local_size();
        let pipe = pipeline(OP, &kernel, &spec, Some(local))?;
        let bindings = conv2d_dw_nhwc::BufferBindings {
            in_blob: input,
            w_blob: weight,
            // Unread without a bias, but bound.
            bias_blob: bias.unwrap_or(weight),
            out_blob: out,
        };
        recorded(
            OP,
            list.dispatch(&pipe, &bindings, &s.push(slope), s.grid()),
        )
    }
}

/// The operands' one float format, or the located mismatch: a kernel that fits the padded
/// input, shapes as `s` says, `c` a multiple of 4, a grid within Vulkan's guaranteed
/// workgroups, `out` not aliasing the others.
fn check_depthwise(
    input: &Tensor,
    weight: &Tensor,
    bias: Option<&Tensor>,
    out: &Tensor,
    s: &Conv2dDwShape,
) -> Result<TensorFormat, OpError> {
    kernel_fits(OP, s, (s.h, s.w), (s.kh, s.kw), s.stride, s.pad)?;
    shape_is(
        OP,
        "input",
        input,
        &[s.batch, s.h, s.w, s.c],
        "[batch, h, w, c]",
    )?;
    shape_is(OP, "weight", weight, &[s.kh, s.kw, s.c], "[kh, kw, c]")?;
    let out_shape = [s.batch, s.outh(), s.outw(), s.c];
    shape_is(OP, "out", out, &out_shape, "[batch, outh, outw, c]")?;
    if let Some(bias) = bias {
        shape_is(OP, "bias", bias, &[s.c], "[c]")?;
    }
    let format = conv_operands(OP, [input, weight, out], bias, &[("input", s.c)])?;
    let per_workgroup = s.local_size()[1] as usize;
    if s.cells().div_ceil(per_workgroup) > MAX_WORKGROUPS {
        return Err(OpError::Unsupported {
            op: OP,
            why: format!(
                "{} cells of output pixels: at most {} ({per_workgroup} a workgroup, {MAX_WORKGROUPS} workgroups)",
                s.cells(),
                per_workgroup * MAX_WORKGROUPS
            ),
        });
    }
    Ok(format)
}
