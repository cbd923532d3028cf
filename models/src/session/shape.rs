//! Shape inference: every value's shape from the input's, node by node, each node's rule
//! checking its operands first, so that a mismatch is an error naming the node and what
//! mismatched rather than a failed recording deep in the operation layer.

use super::graph::{Constant, Conv, Dim, Graph, Linear, Node, Op};
use super::SessionError;
use vkprism_shaders::ops::{broadcast_shape, Pool2d};

/// Each value's shape (the input's, then each node's output) for input shape `input`.
pub(crate) fn infer(graph: &Graph, input: &[usize]) -> Result<Vec<Vec<usize>>, SessionError> {
    check_input(graph, input)?;
    let mut shapes = vec![input.to_vec()];
    for node in &graph.nodes {
        let operands: Vec<&[usize]> = node.inputs.iter().map(|v| &shapes[v.0][..]).collect();
        let out = node_shape(graph, node, &operands).map_err(|why| SessionError::Shape {
            node: node.name.clone(),
            why,
        })?;
        shapes.push(out);
    }
    Ok(shapes)
}

/// `shape` fits the input's declaration: its rank, each fixed size, one size per variable,
/// nothing 0.
fn check_input(graph: &Graph, shape: &[usize]) -> Result<(), SessionError> {
    let (name, dims) = graph.input.as_ref().expect("a checked graph has an input");
    let error = |why: String| SessionError::InputShape {
        input: name.clone(),
        why,
    };
    if shape.len() != dims.len() {
        let declared: Vec<String> = dims.iter().map(Dim::to_string).collect();
        let (rank, declared) = (shape.len(), declared.join(", "));
        let why = format!("shape {shape:?} has {rank} dims, [{declared}] expected");
        return Err(error(why));
    }
    for (i, (&size, dim)) in shape.iter().zip(dims).enumerate() {
        let why = match *dim {
            _ if size == 0 => format!("shape {shape:?}: dim {i} is 0"),
            Dim::Fixed(want) if size != want => {
                format!("shape {shape:?}: dim {i} is {size}, the graph takes {want}")
            }
            Dim::Var(var) if !same_var_same_size(dims, shape, var, size) => {
                format!("shape {shape:?}: `{var}` is given two sizes")
            }
            _ => continue,
        };
        return Err(error(why));
    }
    Ok(())
}

/// Every dim of `dims` named `var` has `size` in `shape`.
fn same_var_same_size(dims: &[Dim], shape: &[usize], var: &'static str, size: usize) -> bool {
    dims.iter()
        .zip(shape)
        .all(|(d, &s)| *d != Dim::Var(var) || s == size)
}

/// `node`'s output shape from its operands' shapes, or what mismatched.
fn node_shape(graph: &Graph, node: &Node, operands: &[&[usize]]) -> Result<Vec<usize>, String> {
    let arity = node.op.arity();
    if operands.len() != arity {
        return Err(format!("takes {arity} inputs, given {}", operands.len()));
    }
    let x = operands[0];
    let constant = |c: Constant| &graph.constants[c.0].shape[..];
    match &node.op {
        Op::Conv2d(conv) => conv_shape(x, conv, constant),
        Op::Conv2dResidual(conv) => {
            let out = conv_shape(x, conv, constant)?;
            if operands[1] != out {
                return Err(format!(
                    "the residual {:?} is not the convolution's output shape {out:?}",
                    operands[1]
                ));
            }
            Ok(out)
        }
        Op::DepthwiseConv2d(conv) => depthwise_shape(x, conv, constant),
        Op::MaxPool(window) | Op::AvgPool(window) => pool_shape(x, window),
        Op::GlobalAvgPool => nhwc(x).map(|[b, _, _, c]| vec![b, c]),
        Op::Binary { .. } => broadcast_shape(x, operands[1])
            .ok_or_else(|| format!("shapes {x:?} and {:?} do not broadcast", operands[1])),
        Op::Unary(_) | Op::Softmax(_) => nonempty(x),
        Op::Linear(linear) => linear_shape(x, linear, constant),
        Op::LayerNorm { gamma, beta, .. } => {
            per_column(x, &[("gamma", *gamma), ("beta", *beta)], constant)
        }
        Op::RmsNorm { gamma, .. } => per_column(x, &[("gamma", *gamma)], constant),
    }
}

/// `x` as `[batch, h, w, c]`.
fn nhwc(x: &[usize]) -> Result<[usize; 4], String> {
    x.try_into()
        .map_err(|_| format!("input {x:?}: [batch, h, w, c] expected"))
}

/// `x`, where it has a dim.
fn nonempty(x: &[usize]) -> Result<Vec<usize>, String> {
    if x.is_empty() {
        return Err("input of no dims".into());
    }
    Ok(x.to_vec())
}

/// A convolution's output over `x`: the weight `[kh, kw, c, outc]` with `x`'s channels, the
/// bias `[outc]`, the padded input at least the kernel.
fn conv_shape<'a>(
    x: &[usize],
    conv: &Conv,
    constant: impl Fn(Constant) -> &'a [usize],
) -> Result<Vec<usize>, String> {
    let [_, _, _, c] = nhwc(x)?;
    let [kh, kw, wc, outc]: [usize; 4] = constant(conv.weight).try_into().map_err(|_| {
        format!(
            "weight {:?}: [kh, kw, c, outc] expected",
            constant(conv.weight)
        )
    })?;
    if wc != c {
        return Err(format!(
            "input {x:?} has {c} channels, the weight [{kh}, {kw}, {wc}, {outc}] takes {wc}"
        ));
    }
    conv_out(x, conv, [kh, kw, outc], constant)
}

/// A depthwise convolution's output over `x`: the weight `[kh, kw, c]` with `x`'s channels,
/// the bias `[c]`, the padded input at least the kernel.
fn depthwise_shape<'a>(
    x: &[usize],
    conv: &Conv,
    constant: impl Fn(Constant) -> &'a [usize],
) -> Result<Vec<usize>, String> {
    let [_, _, _, c] = nhwc(x)?;
    let [kh, kw, wc]: [usize; 3] = constant(conv.weight)
        .try_into()
        .map_err(|_| format!("weight {:?}: [kh, kw, c] expected", constant(conv.weight)))?;
    if wc != c {
        return Err(format!(
            "input {x:?} has {c} channels, the weight [{kh}, {kw}, {wc}] takes {wc}"
        ));
    }
    conv_out(x, conv, [kh, kw, c], constant)
}

/// The output `[batch, outh, outw, outc]` of a `kh × kw` kernel over `x` with `conv`'s stride
/// and padding, after checking the bias `[outc]`, the stride and that the padded input holds
/// the kernel.
fn conv_out<'a>(
    x: &[usize],
    conv: &Conv,
    [kh, kw, outc]: [usize; 3],
    constant: impl Fn(Constant) -> &'a [usize],
) -> Result<Vec<usize>, String> {
    let [b, h, w, _] = nhwc(x)?;
    if let Some(bias) = conv.bias.map(&constant).filter(|s| *s != [outc]) {
        return Err(format!("bias {bias:?}: [{outc}] expected"));
    }
    if conv.stride == 0 {
        return Err("stride 0".into());
    }
    let (ph, pw) = (h + 2 * conv.pad, w + 2 * conv.pad);
    if ph < kh || pw < kw {
        return Err(format!(
            "input {x:?} padded to {ph}x{pw} is smaller than the {kh}x{kw} kernel"
        ));
    }
    let out = |size: usize, k: usize| (size - k) / conv.stride + 1;
    Ok(vec![b, out(ph, kh), out(pw, kw), outc])
}

/// A pooling's output over `x` (sizes rounded down, as PyTorch's `ceil_mode=False`).
fn pool_shape(x: &[usize], window: &Pool2d) -> Result<Vec<usize>, String> {
    let [b, h, w, c] = nhwc(x)?;
    let ((kh, kw), (sh, sw), (ph, pw)) = (window.kernel, window.stride, window.padding);
    if sh == 0 || sw == 0 || kh == 0 || kw == 0 {
        return Err(format!("window {window:?}: a size or stride of 0"));
    }
    if h + 2 * ph < kh || w + 2 * pw < kw {
        return Err(format!("input {x:?} is smaller than the {kh}x{kw} window"));
    }
    Ok(vec![
        b,
        (h + 2 * ph - kh) / sh + 1,
        (w + 2 * pw - kw) / sw + 1,
        c,
    ])
}

/// A linear layer's output over `x` `[..., k]`: the weight `[n, k]`, the bias `[n]`.
fn linear_shape<'a>(
    x: &[usize],
    linear: &Linear,
    constant: impl Fn(Constant) -> &'a [usize],
) -> Result<Vec<usize>, String> {
    let k = *x.last().ok_or("input of no dims")?;
    let weight = constant(linear.weight);
    let &[n, wk] = weight else {
        return Err(format!("weight {weight:?}: [n, k] expected"));
    };
    if wk != k {
        return Err(format!(
            "input {x:?} has {k} features, the weight {weight:?} takes {wk}"
        ));
    }
    if let Some(bias) = linear.bias.map(&constant).filter(|s| *s != [n]) {
        return Err(format!("bias {bias:?}: [{n}] expected"));
    }
    let mut out = x.to_vec();
    *out.last_mut().expect("x has a dim") = n;
    Ok(out)
}

/// A norm's output over `x`: `x`'s shape, each parameter one value per column.
fn per_column<'a>(
    x: &[usize],
    params: &[(&str, Option<Constant>)],
    constant: impl Fn(Constant) -> &'a [usize],
) -> Result<Vec<usize>, String> {
    let cols = *x.last().ok_or("input of no dims")?;
    for (name, c) in params {
        if let Some(shape) = c.map(&constant).filter(|s| *s != [cols]) {
            return Err(format!(
                "{name} {shape:?}: [{cols}] expected for input {x:?}"
            ));
        }
    }
    Ok(x.to_vec())
}
