//! The element-wise operations: [`Ops::unary`] (one function of one tensor, [`UnaryOp`]) and
//! [`Ops::binary`] (two tensors with numpy broadcasting, [`BinaryOp`]). Each checks its operands
//! and records one dispatch: over vec4s where the sizes allow ([`unary`], [`binary_bcast4`]),
//! over single elements otherwise ([`unary_scalar`], [`binary_bcast`]). [`Ops::glu`]: a gated
//! unit over interleaved gate/up pairs ([`glu`]).

use super::check::{float_format, kernel_takes, not_aliased, same_format, shape_is};
use super::{pipeline, recorded, Activation, OpError, Ops};
use crate::{binary_bcast, binary_bcast4, glu, unary, unary_scalar};
use std::sync::Arc;
use vkprism::{CommandList, LoadedKernel, Tensor, TensorFormat};

/// The invocations per workgroup of the element-wise kernels.
const LOCAL: u32 = 256;

/// A function of one tensor, element by element: what [`Ops::unary`] computes. Every one is
/// computed in fp32, whatever the tensors' format (then stored in it).
#[derive(Copy, Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum UnaryOp {
    /// max(x, 0).
    Relu,
    /// x, or x · slope below 0.
    LeakyRelu(f32),
    /// x clamped to [min, max] (min first: max wins where min > max).
    Clip {
        /// The lower bound.
        min: f32,
        /// The upper bound.
        max: f32,
    },
    /// 1 / (1 + e^-x).
    Sigmoid,
    /// tanh(x).
    Tanh,
    /// GELU, erf form: x · Φ(x) = x/2 · (1 + erf(x/√2)) (erf to 1.5e-7).
    Gelu,
    /// GELU, tanh form: x/2 · (1 + tanh(√(2/π) · (x + 0.044715 x³))).
    GeluTanh,
    /// SiLU (swish): x · sigmoid(x).
    Silu,
    /// x · clamp(x + 3, 0, 6) / 6.
    HardSwish,
    /// x · tanh(ln(1 + e^x)).
    Mish,
    /// e^x.
    Exp,
    /// ln x (NaN below 0).
    Log,
    /// √x (NaN below 0).
    Sqrt,
    /// 1 / √x.
    Rsqrt,
    /// |x|.
    Abs,
    /// -x.
    Neg,
}

impl UnaryOp {
    /// The kernels' `op` constant and `a`, `b` push constants ([`unary`]'s numbering).
    pub fn code(self) -> (i32, f32, f32) {
        match self {
            UnaryOp::Relu => (0, 0.0, 0.0),
            UnaryOp::LeakyRelu(slope) => (1, slope, 0.0),
            UnaryOp::Clip { min, max } => (2, min, max),
            UnaryOp::Sigmoid => (3, 0.0, 0.0),
            UnaryOp::Tanh => (4, 0.0, 0.0),
            UnaryOp::Gelu => (5, 0.0, 0.0),
            UnaryOp::GeluTanh => (6, 0.0, 0.0),
            UnaryOp::Silu => (7, 0.0, 0.0),
            UnaryOp::HardSwish => (8, 0.0, 0.0),
            UnaryOp::Mish => (9, 0.0, 0.0),
            UnaryOp::Exp => (10, 0.0, 0.0),
            UnaryOp::Log => (11, 0.0, 0.0),
            UnaryOp::Sqrt => (12, 0.0, 0.0),
            UnaryOp::Rsqrt => (13, 0.0, 0.0),
            UnaryOp::Abs => (14, 0.0, 0.0),
            UnaryOp::Neg => (15, 0.0, 0.0),
        }
    }
}

/// A function of two tensors, element by element with numpy broadcasting: what [`Ops::binary`]
/// computes, in fp32 whatever the tensors' format.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum BinaryOp {
    /// a + b.
    Add,
    /// a - b.
    Sub,
    /// a · b.
    Mul,
    /// a / b.
    Div,
    /// max(a, b).
    Max,
    /// min(a, b).
    Min,
    /// a^b (NaN for a negative base; GLSL's `pow`).
    Pow,
}

impl BinaryOp {
    /// The kernels' `op` constant ([`binary_bcast`]'s numbering).
    pub fn code(self) -> i32 {
        match self {
            BinaryOp::Add => 0,
            BinaryOp::Sub => 1,
            BinaryOp::Mul => 2,
            BinaryOp::Div => 3,
            BinaryOp::Max => 4,
            BinaryOp::Min => 5,
            BinaryOp::Pow => 6,
        }
    }
}

/// The shape numpy broadcasts `a` and `b` to: right-aligned, each pair of dims equal or one of
/// them 1 (which stretches); `None` where a pair differs otherwise.
pub fn broadcast_shape(a: &[usize], b: &[usize]) -> Option<Vec<usize>> {
    let rank = a.len().max(b.len());
    let dim = |s: &[usize], i: usize| {
        let lead = rank - s.len();
        if i < lead {
            1
        } else {
            s[i - lead]
        }
    };
    (0..rank)
        .map(|i| match (dim(a, i), dim(b, i)) {
            (x, y) if x == y => Some(x),
            (1, y) => Some(y),
            (x, 1) => Some(x),
            _ => None,
        })
        .collect()
}

/// How a broadcast binary operation is dispatched: out as `[d0, d1, d2, d3]` and each
/// operand's strides, in vec4s (`vec4`) or elements.
#[derive(Debug, PartialEq)]
struct Plan {
    vec4: bool,
    contiguous: bool,
    /// Elements (or vec4s) of out.
    n: usize,
    dims: [usize; 4],
    a: [usize; 4],
    b: [usize; 4],
}

/// The dispatch of `a op b` for `out_shape`: out's dims of size 1 dropped, neighbouring dims
/// along which each operand is broadcast alike merged (so a rank above 4 fits where it
/// collapses to 4), over vec4s where the innermost merged dim is a multiple of 4 and neither
/// operand is broadcast along it. `None` where more than 4 dims remain.
fn plan(a: &[usize], b: &[usize], out_shape: &[usize]) -> Option<Plan> {
    let rank = out_shape.len();
    let pad = |s: &[usize], i: usize| {
        let lead = rank - s.len();
        if i < lead {
            1
        } else {
            s[i - lead]
        }
    };
    // (size, a present, b present), outermost first.
    let mut dims: Vec<(usize, bool, bool)> = Vec::new();
    for (i, &d) in out_shape.iter().enumerate() {
        if d == 1 {
            continue;
        }
        let (ha, hb) = (pad(a, i) == d, pad(b, i) == d);
        match dims.last_mut() {
            Some(last) if last.1 == ha && last.2 == hb => last.0 *= d,
            _ => dims.push((d, ha, hb)),
        }
    }
    if dims.len() > 4 {
        return None;
    }
    let n: usize = dims.iter().map(|d| d.0).product();
    let contiguous = dims.len() <= 1 && dims.iter().all(|d| d.1 && d.2);
    let vec4 = dims
        .last()
        .is_some_and(|&(s, ha, hb)| ha && hb && s % 4 == 0);
    let unit = if vec4 { 4 } else { 1 };
    while dims.len() < 4 {
        dims.insert(0, (1, false, false));
    }
    let strides = |present: fn(&(usize, bool, bool)) -> bool| {
        let mut out = [0usize; 4];
        let mut stride = 1;
        for i in (0..4).rev() {
            if present(&dims[i]) {
                out[i] = stride / if i == 3 { 1 } else { unit };
                stride *= dims[i].0;
            }
        }
        out
    };
    let sa = strides(|d| d.1);
    let sb = strides(|d| d.2);
    let mut d = [dims[0].0, dims[1].0, dims[2].0, dims[3].0];
    d[3] /= unit;
    let (mut sa, mut sb) = (sa, sb);
    if vec4 {
        // The innermost stride is one vec4.
        sa[3] = 1;
        sb[3] = 1;
    }
    Some(Plan {
        vec4,
        contiguous,
        n: n / unit,
        dims: d,
        a: sa,
        b: sb,
    })
}

/// The invocations covering `n` items with one item per invocation, at most the device's
/// workgroups (the kernels loop a grid apart).
fn grid(ops: &Ops, n: usize) -> [u32; 3] {
    let max_groups = ops.context().features().limits.max_compute_work_group_count[0] as usize;
    let n = n.clamp(1, max_groups * LOCAL as usize);
    [n as u32, 1, 1]
}

impl Ops {
    /// Records a gated linear unit into `list`: `x` `[.., 2m]` holds each output's gate and up
    /// values side by side (a SwiGLU MLP's projection through interleaved weight rows), `y`
    /// `[.., m]` (x's shape, the last dimension halved) gets `act(gate) · up`; one float format,
    /// fp32 arithmetic. `y` may not be `x`. Nothing is recorded when a check fails.
    pub fn glu(
        &self,
        list: &mut CommandList,
        x: &Tensor,
        y: &Tensor,
        act: Activation,
    ) -> Result<(), OpError> {
        const OP: &str = "glu";
        let mut want = x.shape().to_vec();
        match want.last_mut() {
            Some(last) if last.is_multiple_of(2) => *last /= 2,
            _ => {
                return Err(OpError::Shape {
                    op: OP,
                    operand: "x",
                    got: x.shape().to_vec(),
                    want: "[.., 2m]: gate/up pairs".into(),
                })
            }
        }
        shape_is(OP, "y", y, &want, "x's shape, the last dimension halved")?;
        let format = float_format(OP, "x", x)?;
        same_format(OP, "y", Some(y), format)?;
        not_aliased(OP, y, "y", &[("x", Some(x))])?;
        fits_int(OP, x.len())?;
        let kernel = self.kernel_for::<glu::Kernel>(OP, "x_blob", format, false)?;
        let (code, slope) = act.code();
        let spec = glu::SpecConstants { activation: code };
        let pipe = pipeline(OP, &kernel, &spec, Some([LOCAL, 1, 1]))?;
        let bindings = glu::BufferBindings {
            x_blob: x,
            y_blob: y,
        };
        let push = glu::PushConstants {
            n: y.len() as i32,
            slope,
        };
        recorded(
            OP,
            list.dispatch(&pipe, &bindings, &push, grid(self, y.len())),
        )
    }
}

/// The largest count the kernels index with `int`.
fn fits_int(op: &'static str, len: usize) -> Result<(), OpError> {
    if len <= i32::MAX as usize {
        return Ok(());
    }
    Err(OpError::Unsupported {
        op,
        why: format!("{len} elements: more than the kernels' int indices reach"),
    })
}

impl Ops {
    /// Records `y = f(x)` element by element into `list`: `x` and `y` of one shape and one
    /// float format (F32, F16 or Bf16); `y` may be `x` (in place: each element is read before
    /// it is written, by the invocation writing it). One dispatch: [`unary`] over vec4s where
    /// the length is a multiple of 4, [`unary_scalar`] otherwise (which has no packed
    /// variants: F16 and Bf16 tensors of such a length need 16-bit storage, else
    /// [`OpError::FormatUnsupported`]). Nothing is recorded when a check fails.
    pub fn unary(
        &self,
        list: &mut CommandList,
        x: &Tensor,
        y: &Tensor,
        op: UnaryOp,
    ) -> Result<(), OpError> {
        let format = check_unary(x, y)?;
        if x.len().is_multiple_of(4) {
            let kernel = self.kernel_for::<unary::Kernel>(OP_UNARY, "x_blob", format, false)?;
            self.unary_with(list, &kernel, x, y, op)
        } else {
            let kernel =
                self.kernel_for::<unary_scalar::Kernel>(OP_UNARY, "x_blob", format, false)?;
            self.unary_scalar_with(list, &kernel, x, y, op)
        }
    }

    /// As [`Ops::unary`] with [`unary`] in `kernel`'s variant (whose format must be the
    /// tensors'); the length must be a multiple of 4.
    pub fn unary_with(
        &self,
        list: &mut CommandList,
        kernel: &Arc<LoadedKernel<unary::Kernel>>,
        x: &Tensor,
        y: &Tensor,
        op: UnaryOp,
    ) -> Result<(), OpError> {
        let format = check_unary(x, y)?;
        kernel_takes(OP_UNARY, kernel.format_of("x_blob"), format)?;
        if !x.len().is_multiple_of(4) {
            return Err(OpError::Unsupported {
                op: OP_UNARY,
                why: format!("{} elements: `unary` takes a multiple of 4", x.len()),
            });
        }
        let (code, a, b) = op.code();
        let pipe = pipeline(
            OP_UNARY,
            kernel,
            &unary::SpecConstants { op: code },
            Some([LOCAL, 1, 1]),
        )?;
        let n = x.len() / 4;
        let bindings = unary::BufferBindings {
            x_blob: x,
            y_blob: y,
        };
        let push = unary::PushConstants { n: n as i32, a, b };
        // `unary` takes its vec4s as `activation` does, two an invocation a loop.
        let invocations = crate::elementwise_grid(n)[0] as usize;
        recorded(
            OP_UNARY,
            list.dispatch(&pipe, &bindings, &push, grid(self, invocations)),
        )
    }

    /// As [`Ops::unary`] with [`unary_scalar`] in `kernel`'s variant (whose format must be the
    /// tensors'), any length.
    pub fn unary_scalar_with(
        &self,
        list: &mut CommandList,
        kernel: &Arc<LoadedKernel<unary_scalar::Kernel>>,
        x: &Tensor,
        y: &Tensor,
        op: UnaryOp,
    ) -> Result<(), OpError> {
        let format = check_unary(x, y)?;
        kernel_takes(OP_UNARY, kernel.format_of("x_blob"), format)?;
        let (code, a, b) = op.code();
        let pipe = pipeline(
            OP_UNARY,
            kernel,
            &unary_scalar::SpecConstants { op: code },
            Some([LOCAL, 1, 1]),
        )?;
        let n = x.len();
        let bindings = unary_scalar::BufferBindings {
            x_blob: x,
            y_blob: y,
        };
        let push = unary_scalar::PushConstants { n: n as i32, a, b };
        recorded(
            OP_UNARY,
            list.dispatch(&pipe, &bindings, &push, grid(self, n.div_ceil(4))),
        )
    }

    /// Records `out = a op b` element by element with numpy broadcasting into `list`: `a`'s and
    /// `b`'s shapes broadcast (right-aligned; each pair of dims equal or one of them 1, which
    /// stretches) to `out`'s shape ([`broadcast_shape`]), all of one float format (F32, F16 or
    /// Bf16). `out` may be `a` or `b` (it then has that operand's shape, indexed as `out`: in
    /// place). One dispatch: [`binary_bcast4`] over vec4s where out's innermost dim (after
    /// merging the dims broadcast alike) is a multiple of 4 along which neither operand is
    /// broadcast (same shapes, a row or per-channel vector in channels-last layout),
    /// [`binary_bcast`] otherwise (no packed variants: F16 and Bf16 need 16-bit storage there,
    /// else [`OpError::FormatUnsupported`]). Shapes must collapse to at most 4 dims. Nothing
    /// is recorded when a check fails.
    pub fn binary(
        &self,
        list: &mut CommandList,
        a: &Tensor,
        b: &Tensor,
        out: &Tensor,
        op: BinaryOp,
    ) -> Result<(), OpError> {
        let (format, plan) = check_binary(a, b, out)?;
        if plan.vec4 {
            let kernel =
                self.kernel_for::<binary_bcast4::Kernel>(OP_BINARY, "a_blob", format, false)?;
            self.binary_with(list, &kernel, a, b, out, op)
        } else {
            let kernel =
                self.kernel_for::<binary_bcast::Kernel>(OP_BINARY, "a_blob", format, false)?;
            self.binary_scalar_with(list, &kernel, a, b, out, op)
        }
    }

    /// As [`Ops::binary`] with [`binary_bcast4`] in `kernel`'s variant (whose format must be
    /// the tensors'); the shapes must allow vec4s (an `Unsupported` error otherwise).
    pub fn binary_with(
        &self,
        list: &mut CommandList,
        kernel: &Arc<LoadedKernel<binary_bcast4::Kernel>>,
        a: &Tensor,
        b: &Tensor,
        out: &Tensor,
        op: BinaryOp,
    ) -> Result<(), OpError> {
        let (format, plan) = check_binary(a, b, out)?;
        kernel_takes(OP_BINARY, kernel.format_of("a_blob"), format)?;
        if !plan.vec4 {
            return Err(OpError::Unsupported {
                op: OP_BINARY,
                why: format!(
                    "{:?} op {:?}: out's innermost dim is not a multiple of 4 along which \
                     neither operand is broadcast (`binary_bcast` takes any shapes)",
                    a.shape(),
                    b.shape()
                ),
            });
        }
        let spec = binary_bcast4::SpecConstants {
            op: op.code(),
            contiguous: plan.contiguous as i32,
        };
        let pipe = pipeline(OP_BINARY, kernel, &spec, Some([LOCAL, 1, 1]))?;
        let bindings = binary_bcast4::BufferBindings {
            a_blob: a,
            b_blob: b,
            out_blob: out,
        };
        let push = push_of(&plan);
        recorded(
            OP_BINARY,
            list.dispatch(&pipe, &bindings, &push, grid(self, plan.n)),
        )
    }

    /// As [`Ops::binary`] with [`binary_bcast`] in `kernel`'s variant (whose format must be the
    /// tensors'), any broadcasting shapes.
    pub fn binary_scalar_with(
        &self,
        list: &mut CommandList,
        kernel: &Arc<LoadedKernel<binary_bcast::Kernel>>,
        a: &Tensor,
        b: &Tensor,
        out: &Tensor,
        op: BinaryOp,
    ) -> Result<(), OpError> {
        let (format, plan) = check_binary(a, b, out)?;
        kernel_takes(OP_BINARY, kernel.format_of("a_blob"), format)?;
        // The element plan: the vec4 one's counts in elements.
        let plan = if plan.vec4 { scalar_plan(plan) } else { plan };
        let spec = binary_bcast::SpecConstants {
            op: op.code(),
            contiguous: plan.contiguous as i32,
        };
        let pipe = pipeline(OP_BINARY, kernel, &spec, Some([LOCAL, 1, 1]))?;
        let bindings = binary_bcast::BufferBindings {
            a_blob: a,
            b_blob: b,
            out_blob: out,
        };
        let push = push_of(&plan);
        recorded(
            OP_BINARY,
            list.dispatch(&pipe, &bindings, &push, grid(self, plan.n)),
        )
    }
}

const OP_UNARY: &str = "unary";
const OP_BINARY: &str = "binary";

/// A vec4 plan counted in elements.
fn scalar_plan(p: Plan) -> Plan {
    let scale = |s: [usize; 4]| [s[0] * 4, s[1] * 4, s[2] * 4, s[3]];
    Plan {
        vec4: false,
        n: p.n * 4,
        dims: [p.dims[0], p.dims[1], p.dims[2], p.dims[3] * 4],
        a: scale(p.a),
        b: scale(p.b),
        ..p
    }
}

/// The push constants of both binary kernels (one type: `binary_bcast` shares
/// `binary_bcast4`'s).
fn push_of(p: &Plan) -> binary_bcast4::PushConstants {
    let i = |v: usize| v as i32;
    binary_bcast4::PushConstants {
        n: i(p.n),
        d1: i(p.dims[1]),
        d2: i(p.dims[2]),
        d3: i(p.dims[3]),
        a0: i(p.a[0]),
        a1: i(p.a[1]),
        a2: i(p.a[2]),
        a3: i(p.a[3]),
        b0: i(p.b[0]),
        b1: i(p.b[1]),
        b2: i(p.b[2]),
        b3: i(p.b[3]),
    }
}

/// The unary operands checked: their one float format.
fn check_unary(x: &Tensor, y: &Tensor) -> Result<TensorFormat, OpError> {
    if y.shape() != x.shape() {
        return Err(OpError::Shape {
            op: OP_UNARY,
            operand: "y",
            got: y.shape().to_vec(),
            want: format!("x's shape {:?}", x.shape()),
        });
    }
    let format = float_format(OP_UNARY, "x", x)?;
    same_format(OP_UNARY, "y", Some(y), format)?;
    fits_int(OP_UNARY, x.len())?;
    Ok(format)
}

/// The binary operands checked: their one float format and the dispatch's plan. `out` may be
/// `a` or `b` (then it has that operand's shape: in place).
fn check_binary(a: &Tensor, b: &Tensor, out: &Tensor) -> Result<(TensorFormat, Plan), OpError> {
    let Some(shape) = broadcast_shape(a.shape(), b.shape()) else {
        return Err(OpError::Shape {
            op: OP_BINARY,
            operand: "b",
            got: b.shape().to_vec(),
            want: format!(
                "a shape that broadcasts with a's {:?} (right-aligned, each pair of dims equal \
                 or one of them 1)",
                a.shape()
            ),
        });
    };
    if out.shape() != shape.as_slice() {
        return Err(OpError::Shape {
            op: OP_BINARY,
            operand: "out",
            got: out.shape().to_vec(),
            want: format!(
                "the broadcast shape of {:?} and {:?}, {shape:?}",
                a.shape(),
                b.shape()
            ),
        });
    }
    let format = float_format(OP_BINARY, "a", a)?;
    same_format(OP_BINARY, "b", Some(b), format)?;
    same_format(OP_BINARY, "out", Some(out), format)?;
    fits_int(OP_BINARY, out.len())?;
    let plan = plan(a.shape(), b.shape(), &shape).ok_or_else(|| OpError::Unsupported {
        op: OP_BINARY,
        why: format!(
            "{:?} op {:?}: more than 4 dims remain after merging those broadcast alike",
            a.shape(),
            b.shape()
        ),
    })?;
    // Aliasing is in place whichever operand `out` is: a tensor is one shape, so an operand
    // that is `out` is indexed as `out`.
    Ok((format, plan))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shapes_broadcast_as_numpy() {
        assert_eq!(broadcast_shape(&[2, 3, 4], &[4]), Some(vec![2, 3, 4]));
        assert_eq!(broadcast_shape(&[2, 1, 4], &[3, 1]), Some(vec![2, 3, 4]));
        assert_eq!(broadcast_shape(&[1], &[5, 6]), Some(vec![5, 6]));
        assert_eq!(broadcast_shape(&[2, 3], &[3, 2]), None);
    }

    #[test]
    fn plans_merge_and_vectorize() {
        // Same shape: one contiguous vec4 dim.
        let p = plan(&[2, 3, 8], &[2, 3, 8], &[2, 3, 8]).unwrap();
        assert!(p.vec4 && p.contiguous && p.n == 12);
        // A row vector: b broadcast over the merged outer dims.
        let p = plan(&[2, 3, 8], &[8], &[2, 3, 8]).unwrap();
        assert!(p.vec4 && !p.contiguous);
        assert_eq!(
            (p.dims, p.a, p.b),
            ([1, 1, 6, 2], [0, 0, 2, 1], [0, 0, 0, 1])
        );
        // A column: scalar path.
        let p = plan(&[5, 3], &[5, 1], &[5, 3]).unwrap();
        assert!(!p.vec4);
        assert_eq!(
            (p.dims, p.a, p.b),
            ([1, 1, 5, 3], [0, 0, 3, 1], [0, 0, 1, 0])
        );
        // Six dims alternating: too many after merging.
        assert!(plan(&[2, 1, 2, 1, 2], &[1, 2, 1, 2, 1], &[2, 2, 2, 2, 2]).is_none());
    }
}
