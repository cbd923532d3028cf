//! How each node records itself through the operation layer ([`Ops`]), over the tensors of
//! its values (views of the plan's buffers) and the uploaded constants.

use super::graph::{Constant, Conv, Linear, Node, Op};
use vkprism::{CommandList, Tensor};
use vkprism_shaders::ops::{Conv2d, DepthwiseConv2d, Gemm, Gemv, OpError, Ops};
use vkprism_shaders::{Conv2dDwShape, Conv2dShape, GEMV_MAX_BATCH};

/// The tensors a node records over: every value's, every constant's.
pub(crate) struct Operands<'a> {
    /// Each value's tensor, by index.
    pub values: &'a [Tensor],
    /// Each constant's tensor, by index.
    pub constants: &'a [Tensor],
}

impl Operands<'_> {
    fn constant(&self, c: Constant) -> &Tensor {
        &self.constants[c.0]
    }

    fn optional(&self, c: Option<Constant>) -> Option<&Tensor> {
        c.map(|c| self.constant(c))
    }
}

/// Records `node` into `list`.
pub(crate) fn record(
    ops: &Ops,
    list: &mut CommandList,
    node: &Node,
    t: &Operands<'_>,
) -> Result<(), OpError> {
    let x = &t.values[node.inputs[0].0];
    let y = &t.values[node.output.0];
    match &node.op {
        Op::Conv2d(conv) => record_conv(ops, list, conv, x, y, None, t),
        Op::Conv2dResidual(conv) => {
            let shortcut = &t.values[node.inputs[1].0];
            record_conv(ops, list, conv, x, y, Some(shortcut), t)
        }
        Op::DepthwiseConv2d(conv) => record_depthwise(ops, list, conv, x, y, t),
        Op::MaxPool(window) => ops.max_pool2d(list, x, y, window),
        Op::AvgPool(window) => ops.avg_pool2d(list, x, y, window),
        Op::GlobalAvgPool => ops.global_avg_pool(list, x, y),
        Op::Binary { op, then } => {
            ops.binary(list, x, &t.values[node.inputs[1].0], y, *op)?;
            match then {
                Some(f) => ops.unary(list, y, y, *f),
                None => Ok(()),
            }
        }
        Op::Unary(f) => ops.unary(list, x, y, *f),
        Op::Linear(linear) => record_linear(ops, list, linear, x, y, t),
        Op::Softmax(op) => ops.softmax(list, x, y, op),
        Op::LayerNorm { gamma, beta, eps } => {
            ops.layer_norm(list, x, t.optional(*gamma), t.optional(*beta), y, *eps)
        }
        Op::RmsNorm { gamma, eps } => ops.rms_norm(list, x, t.optional(*gamma), y, *eps),
    }
}

/// A convolution of `x` into `y`, its shape from theirs and the weight's; `shortcut` added
/// before the activation where there is one (copied into `y` first unless `y` is written over
/// it).
fn record_conv(
    ops: &Ops,
    list: &mut CommandList,
    conv: &Conv,
    x: &Tensor,
    y: &Tensor,
    shortcut: Option<&Tensor>,
    t: &Operands<'_>,
) -> Result<(), OpError> {
    let weight = t.constant(conv.weight);
    let (xs, ws) = (x.shape(), weight.shape());
    let shape = Conv2dShape {
        batch: xs[0],
        h: xs[1],
        w: xs[2],
        c: xs[3],
        outc: ws[3],
        kh: ws[0],
        kw: ws[1],
        stride: conv.stride,
        pad: conv.pad,
    };
    if let Some(s) = shortcut {
        let in_place = s.raw_buffer() == y.raw_buffer() && s.offset_bytes() == y.offset_bytes();
        if !in_place {
            list.copy(s, y).map_err(|source| OpError::Record {
                op: "conv2d",
                source,
            })?;
        }
    }
    let op = Conv2d::new(shape)
        .with_activation(conv.activation)
        .with_residual(shortcut.is_some());
    ops.conv2d(list, x, weight, t.optional(conv.bias), y, &op)
}

/// A depthwise convolution of `x` into `y`, its shape from theirs and the weight's.
fn record_depthwise(
    ops: &Ops,
    list: &mut CommandList,
    conv: &Conv,
    x: &Tensor,
    y: &Tensor,
    t: &Operands<'_>,
) -> Result<(), OpError> {
    let weight = t.constant(conv.weight);
    let (xs, ws) = (x.shape(), weight.shape());
    let shape = Conv2dDwShape {
        batch: xs[0],
        h: xs[1],
        w: xs[2],
        c: xs[3],
        kh: ws[0],
        kw: ws[1],
        stride: conv.stride,
        pad: conv.pad,
    };
    let op = DepthwiseConv2d::new(shape).with_activation(conv.activation);
    ops.conv2d_depthwise(list, x, weight, t.optional(conv.bias), y, &op)
}

/// `y = x · weightᵀ + bias` with every leading dim of `x` and `y` taken as rows of one matrix.
fn record_linear(
    ops: &Ops,
    list: &mut CommandList,
    linear: &Linear,
    x: &Tensor,
    y: &Tensor,
    t: &Operands<'_>,
) -> Result<(), OpError> {
    let (k, n) = (
        x.shape()[x.shape().len() - 1],
        y.shape()[y.shape().len() - 1],
    );
    let rows = x.len() / k;
    let matrix = |t: &Tensor, cols| {
        t.view(0, &[rows, cols]).map_err(|e| OpError::Unsupported {
            op: "linear",
            why: e.to_string(),
        })
    };
    let (x2, y2) = (matrix(x, k)?, matrix(y, n)?);
    let weight = t.constant(linear.weight);
    let bias = t.optional(linear.bias);
    // Up to 8 rows (a classifier's batch, a decode step): the GEMV, which reads each weight
    // once and takes any N and K; more rows: the GEMM.
    if rows <= GEMV_MAX_BATCH {
        let op = Gemv::new().with_activation(linear.activation);
        return ops.gemv_with(list, weight, &x2, bias, &y2, &op);
    }
    let op = Gemm::new()
        .with_transpose_b(true)
        .with_activation(linear.activation);
    ops.gemm(list, &x2, weight, bias, &y2, &op)
}
