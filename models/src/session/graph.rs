//! [`Graph`]: a network as data, built in Rust before any device work: one input of a
//! partly symbolic shape, constant weights (host values, uploaded once by the session), and
//! nodes, each one operation ([`Op`]) of earlier values making one new value.

use vkprism_shaders::ops::{Activation, BinaryOp, Pool2d, Softmax, UnaryOp};

/// A value of a graph: its input or a node's output.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct Value(pub(crate) usize);

impl Value {
    /// Its index among the graph's values (the input is 0, then each node's output in order).
    pub fn index(self) -> usize {
        self.0
    }
}

/// A constant of a graph: weights a node reads.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct Constant(pub(crate) usize);

/// One dimension of the input's declared shape.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Dim {
    /// Given with the input at prepare or resize (its name says what it is in errors; one name
    /// used twice must be given one size).
    Var(&'static str),
    /// Always this size.
    Fixed(usize),
}

impl std::fmt::Display for Dim {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Dim::Var(name) => f.write_str(name),
            Dim::Fixed(size) => write!(f, "{size}"),
        }
    }
}

/// A convolution's weights and settings: what [`Op::Conv2d`] applies.
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct Conv {
    /// `[kh, kw, c, outc]` (channels-last, as [`vkprism_shaders::ops::Ops::conv2d`]'s).
    pub weight: Constant,
    /// `[outc]`, added to every output pixel.
    pub bias: Option<Constant>,
    /// Stride, both directions.
    pub stride: usize,
    /// Zero padding on every side.
    pub pad: usize,
    /// Applied last.
    pub activation: Activation,
}

/// A fully connected layer's weights: what [`Op::Linear`] applies.
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct Linear {
    /// `[n, k]` (PyTorch's `nn.Linear` layout: one row per output feature).
    pub weight: Constant,
    /// `[n]`.
    pub bias: Option<Constant>,
    /// Applied last.
    pub activation: Activation,
}

/// What a node computes from its inputs. Every kind the session can record is one variant;
/// adding an operation is a variant here, its shape rule (`shape.rs`) and its recording
/// (`record.rs`).
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum Op {
    /// Channels-last convolution of `[batch, h, w, c]`, bias and activation fused.
    Conv2d(Conv),
    /// [`Op::Conv2d`] of the first input with the second (the output's shape) added before the
    /// activation: a residual block's last convolution and its sum in one pass, written over
    /// the second input where the plan lets it (else over a copy of it).
    Conv2dResidual(Conv),
    /// Depthwise convolution of `[batch, h, w, c]` (every channel by its own kernel), bias and
    /// activation fused; the [`Conv`]'s weight is `[kh, kw, c]` (as
    /// [`vkprism_shaders::ops::Ops::conv2d_depthwise`]'s), its bias `[c]`.
    DepthwiseConv2d(Conv),
    /// Max pooling of `[batch, h, w, c]`.
    MaxPool(Pool2d),
    /// Average pooling of `[batch, h, w, c]` (padding counted as zeros).
    AvgPool(Pool2d),
    /// The mean over each image's pixels: `[batch, h, w, c]` to `[batch, c]`.
    GlobalAvgPool,
    /// `then(a op b)` of two values, numpy broadcasting.
    Binary {
        /// The operation.
        op: BinaryOp,
        /// A function applied to the result, where there is one (a residual sum's ReLU).
        then: Option<UnaryOp>,
    },
    /// A function of each element.
    Unary(UnaryOp),
    /// `x · weightᵀ + bias` over the last axis of `[..., k]`.
    Linear(Linear),
    /// Softmax along the last axis.
    Softmax(Softmax),
    /// Layer norm over the last axis, `gamma` and `beta` one value per column.
    LayerNorm {
        /// The scale, where there is one.
        gamma: Option<Constant>,
        /// The shift, where there is one.
        beta: Option<Constant>,
        /// Added to the variance.
        eps: f32,
    },
    /// RMS norm over the last axis, `gamma` one value per column.
    RmsNorm {
        /// The scale, where there is one.
        gamma: Option<Constant>,
        /// Added to the mean square.
        eps: f32,
    },
}

impl Op {
    /// Whether the output may be written over input `i` of `inputs` (the kernel reads each
    /// element of it before writing it), where the two have one shape. A convolution reads its
    /// first input all over while it writes: never over that value.
    pub(crate) fn in_place(&self, i: usize, inputs: &[Value]) -> bool {
        match self {
            Op::Conv2dResidual(_) => i == 1 && inputs[0] != inputs[1],
            _ => matches!(
                self,
                Op::Binary { .. }
                    | Op::Unary(_)
                    | Op::Softmax(_)
                    | Op::LayerNorm { .. }
                    | Op::RmsNorm { .. }
            ),
        }
    }

    /// How many inputs it reads.
    pub(crate) fn arity(&self) -> usize {
        match self {
            Op::Binary { .. } | Op::Conv2dResidual(_) => 2,
            _ => 1,
        }
    }

    /// The constants it reads.
    pub(crate) fn constants(&self) -> Vec<Constant> {
        match self {
            Op::Conv2d(c) | Op::Conv2dResidual(c) | Op::DepthwiseConv2d(c) => {
                [Some(c.weight), c.bias].into_iter().flatten().collect()
            }
            Op::Linear(l) => [Some(l.weight), l.bias].into_iter().flatten().collect(),
            Op::LayerNorm { gamma, beta, .. } => [*gamma, *beta].into_iter().flatten().collect(),
            Op::RmsNorm { gamma, .. } => gamma.iter().copied().collect(),
            _ => Vec::new(),
        }
    }

    /// The most dispatches it records (a split-K product takes two, a fused function after a
    /// binary operation one more): the room per-node timing needs.
    pub(crate) fn max_dispatches(&self) -> u32 {
        match self {
            Op::Conv2d(_)
            | Op::Conv2dResidual(_)
            | Op::Linear(_)
            | Op::Binary { then: Some(_), .. } => 2,
            _ => 1,
        }
    }
}

/// One operation of the graph.
#[derive(Clone, Debug, PartialEq)]
pub struct Node {
    /// Its name: in errors, the memory plan and per-node times.
    pub name: String,
    /// What it computes.
    pub op: Op,
    /// The values it reads, in the operation's order.
    pub inputs: Vec<Value>,
    /// The value it makes.
    pub output: Value,
}

/// A weight tensor of the graph, on the host until a session uploads it.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct ConstantData {
    /// Its name, in errors.
    pub name: String,
    /// Its shape.
    pub shape: Vec<usize>,
    /// Its values, row-major (emptied once uploaded).
    pub data: Vec<f32>,
}

/// A network to run in a [`super::Session`]: built with [`Graph::input`], [`Graph::constant`],
/// the node methods ([`Graph::conv2d`], [`Graph::add`], [`Graph::node`] for any [`Op`], ...) and
/// [`Graph::output`]. Nothing is checked while building; the session checks the structure when
/// created and every node's shapes at each input shape.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Graph {
    /// The input's name and declared shape.
    pub(crate) input: Option<(String, Vec<Dim>)>,
    pub(crate) constants: Vec<ConstantData>,
    pub(crate) nodes: Vec<Node>,
    pub(crate) output: Option<Value>,
}

impl Graph {
    /// An empty graph.
    pub fn new() -> Graph {
        Graph::default()
    }

    /// Declares the graph's one input, `name` of shape `dims`; it is value 0. Declaring it
    /// again replaces the declaration.
    pub fn input(&mut self, name: &str, dims: &[Dim]) -> Value {
        self.input = Some((name.into(), dims.to_vec()));
        Value(0)
    }

    /// A constant `name` of `shape` holding `data` (row-major, the product of `shape` values),
    /// uploaded once in the session's format.
    pub fn constant(&mut self, name: &str, shape: &[usize], data: Vec<f32>) -> Constant {
        self.constants.push(ConstantData {
            name: name.into(),
            shape: shape.to_vec(),
            data,
        });
        Constant(self.constants.len() - 1)
    }

    /// Adds node `name` computing `op` of `inputs`; returns its output.
    pub fn node(&mut self, name: &str, op: Op, inputs: &[Value]) -> Value {
        let output = Value(self.nodes.len() + 1);
        self.nodes.push(Node {
            name: name.into(),
            op,
            inputs: inputs.to_vec(),
            output,
        });
        output
    }

    /// Makes `v` the graph's output, read back after each run.
    pub fn output(&mut self, v: Value) {
        self.output = Some(v);
    }

    /// A convolution of `x` ([`Op::Conv2d`]).
    pub fn conv2d(&mut self, name: &str, x: Value, conv: Conv) -> Value {
        self.node(name, Op::Conv2d(conv), &[x])
    }

    /// A depthwise convolution of `x` ([`Op::DepthwiseConv2d`]).
    pub fn depthwise_conv2d(&mut self, name: &str, x: Value, conv: Conv) -> Value {
        self.node(name, Op::DepthwiseConv2d(conv), &[x])
    }

    /// `act(conv(x) + bias + shortcut)` ([`Op::Conv2dResidual`]).
    pub fn conv2d_residual(&mut self, name: &str, x: Value, shortcut: Value, conv: Conv) -> Value {
        self.node(name, Op::Conv2dResidual(conv), &[x, shortcut])
    }

    /// Max pooling of `x` over `window`.
    pub fn max_pool(&mut self, name: &str, x: Value, window: Pool2d) -> Value {
        self.node(name, Op::MaxPool(window), &[x])
    }

    /// Average pooling of `x` over `window`.
    pub fn avg_pool(&mut self, name: &str, x: Value, window: Pool2d) -> Value {
        self.node(name, Op::AvgPool(window), &[x])
    }

    /// The mean of `x` over each image's pixels.
    pub fn global_avg_pool(&mut self, name: &str, x: Value) -> Value {
        self.node(name, Op::GlobalAvgPool, &[x])
    }

    /// `a + b`, then ReLU where `relu`.
    pub fn add(&mut self, name: &str, a: Value, b: Value, relu: bool) -> Value {
        let then = relu.then_some(UnaryOp::Relu);
        let op = Op::Binary {
            op: BinaryOp::Add,
            then,
        };
        self.node(name, op, &[a, b])
    }

    /// `f(x)` element by element.
    pub fn unary(&mut self, name: &str, x: Value, f: UnaryOp) -> Value {
        self.node(name, Op::Unary(f), &[x])
    }

    /// A fully connected layer over `x`'s last axis ([`Op::Linear`]).
    pub fn linear(&mut self, name: &str, x: Value, linear: Linear) -> Value {
        self.node(name, Op::Linear(linear), &[x])
    }

    /// Softmax of `x` along its last axis.
    pub fn softmax(&mut self, name: &str, x: Value, op: Softmax) -> Value {
        self.node(name, Op::Softmax(op), &[x])
    }

    /// The value read back after each run, once declared.
    pub fn output_value(&self) -> Option<Value> {
        self.output
    }

    /// Its nodes in order.
    pub fn nodes(&self) -> &[Node] {
        &self.nodes
    }

    /// Values: the input and each node's output.
    pub fn value_count(&self) -> usize {
        self.nodes.len() + 1
    }

    /// Value `v`'s name: the input's, or the node's that makes it.
    pub fn value_name(&self, v: Value) -> &str {
        match v.0 {
            0 => self.input.as_ref().map_or("input", |(name, _)| name),
            i => &self.nodes[i - 1].name,
        }
    }

    /// Checks what can be checked without shapes: an input and an output declared, every
    /// node reading earlier values and existing constants, each constant's data filling its
    /// shape, node names unique.
    pub(crate) fn check(&self) -> Result<(), String> {
        if self.input.is_none() {
            return Err("no input declared".into());
        }
        match self.output {
            None => return Err("no output declared".into()),
            Some(v) if v.0 >= self.value_count() => {
                return Err(format!("the output is value {} of another graph", v.0))
            }
            Some(_) => {}
        }
        for c in &self.constants {
            let want: usize = c.shape.iter().product();
            if c.data.len() != want {
                let (name, shape, n) = (&c.name, &c.shape, c.data.len());
                return Err(format!(
                    "constant `{name}` of shape {shape:?} has {n} values"
                ));
            }
        }
        for (i, node) in self.nodes.iter().enumerate() {
            self.check_node(i, node)?;
        }
        Ok(())
    }

    /// Node `i` reads only values made before it and constants of this graph, and no earlier
    /// node has its name.
    fn check_node(&self, i: usize, node: &Node) -> Result<(), String> {
        let name = &node.name;
        if let Some(v) = node.inputs.iter().find(|v| v.0 > i) {
            return Err(format!(
                "node `{name}` reads value {}, not made before it",
                v.0
            ));
        }
        if let Some(c) = node
            .op
            .constants()
            .iter()
            .find(|c| c.0 >= self.constants.len())
        {
            return Err(format!(
                "node `{name}` reads constant {} of another graph",
                c.0
            ));
        }
        if self.nodes[..i].iter().any(|n| n.name == node.name) {
            return Err(format!("two nodes are named `{name}`"));
        }
        Ok(())
    }
}
