//! Reductions along one axis: [`Ops::reduce`] with a [`ReduceOp`]; and the checks the row
//! operations share (`norm.rs` uses them too).

use super::check::{float_format, nonempty, not_aliased};
use super::{pipeline, recorded, scratch, OpError, Ops};
use crate::{argmax, argmax_parts, reduce, ArgmaxParts, ReduceShape};
use vkprism::{CommandList, Tensor, TensorFormat};

/// What [`Ops::reduce`] computes along its axis.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ReduceOp {
    /// The sum (a tree in fp32).
    Sum,
    /// The sum divided by the axis's length.
    Mean,
    /// The largest value.
    Max,
    /// The smallest value.
    Min,
    /// The index of the largest value, the first on ties, into an I32 tensor.
    ArgMax,
}

impl ReduceOp {
    /// The [`reduce`] kernel's `op` constant (none for [`ReduceOp::ArgMax`], its own kernel).
    fn code(self) -> Option<i32> {
        match self {
            ReduceOp::Sum => Some(0),
            ReduceOp::Mean => Some(1),
            ReduceOp::Max => Some(2),
            ReduceOp::Min => Some(3),
            ReduceOp::ArgMax => None,
        }
    }
}

impl Ops {
    /// Records `out = op(x)` along dimension `axis` of `x` into `list`: `out`'s shape is
    /// `x`'s with that dimension removed, or set to 1 (kept); one float format for both (F32,
    /// F16 or Bf16), except [`ReduceOp::ArgMax`], whose `out` is I32. Any shape, any axis
    /// (`x` is viewed as `[outer, axis, inner]`); one dispatch, a workgroup per output where
    /// the outputs are few and far apart, an invocation per output where they are neighbours
    /// ([`ReduceShape::per_invocation`]) — but an argmax of a few long rows, two: the rows
    /// taken in parts side by side, then the parts' best ([`ArgmaxParts`]). Nothing is
    /// recorded when a check fails.
    pub fn reduce(
        &self,
        list: &mut CommandList,
        x: &Tensor,
        out: &Tensor,
        axis: usize,
        op: ReduceOp,
    ) -> Result<(), OpError> {
        const OP: &str = "reduce";
        let format = check_reduce(x, out, axis, op)?;
        not_aliased(OP, out, "out", &[("x", Some(x))])?;
        let s = ReduceShape::of(x.shape(), axis);
        if let (None, Some(parts)) = (op.code(), ArgmaxParts::of(&s)) {
            return self.argmax_in_parts(list, x, out, &parts, format);
        }
        let local = self.reduce_workgroup(&s);
        match op.code() {
            Some(code) => {
                let kernel = self.kernel_for::<reduce::Kernel>(OP, "x_blob", format, false)?;
                let pipe = pipeline(OP, &kernel, &s.spec(code), Some(local))?;
                let bindings = reduce::BufferBindings {
                    x_blob: x,
                    out_blob: out,
                };
                recorded(
                    OP,
                    list.dispatch(&pipe, &bindings, &s.push(), s.grid(local)),
                )
            }
            None => {
                let kernel = self.kernel_for::<argmax::Kernel>(OP, "x_blob", format, false)?;
                let spec = argmax::SpecConstants {
                    op: 0,
                    per_invocation: s.per_invocation() as i32,
                };
                let pipe = pipeline(OP, &kernel, &spec, Some(local))?;
                let bindings = argmax::BufferBindings {
                    x_blob: x,
                    out_blob: out,
                };
                let push = s.argmax_push();
                recorded(OP, list.dispatch(&pipe, &bindings, &push, s.grid(local)))
            }
        }
    }
}

impl Ops {
    /// [`ReduceShape::local_size_within`] this device's largest workgroup.
    pub(super) fn reduce_workgroup(&self, s: &ReduceShape) -> [u32; 3] {
        let limits = &self.ctx.features().limits;
        s.local_size_within(limits.max_compute_work_group_invocations)
    }

    /// The argmax of x's rows in `parts` (checked by [`Ops::reduce`]): each part's own into
    /// a scratch tensor, then the rows' from those.
    fn argmax_in_parts(
        &self,
        list: &mut CommandList,
        x: &Tensor,
        out: &Tensor,
        parts: &ArgmaxParts,
        format: TensorFormat,
    ) -> Result<(), OpError> {
        const OP: &str = "reduce";
        let first = parts.first_pass();
        // Both pipelines before anything is recorded.
        let kernel = self.kernel_for::<argmax::Kernel>(OP, "x_blob", format, false)?;
        let spec = argmax::SpecConstants {
            op: 0,
            per_invocation: 0,
        };
        let local = self.reduce_workgroup(&first);
        let parts_pipe = pipeline(OP, &kernel, &spec, Some(local))?;
        let kernel = self.kernel_for::<argmax_parts::Kernel>(OP, "x_blob", format, false)?;
        let (grid, rows_local) = parts.grid();
        let rows_pipe = pipeline(OP, &kernel, &Default::default(), Some(rows_local))?;
        let part_index = scratch(list, &self.ctx, OP, &[first.outer], TensorFormat::I32, &[x])?;
        let bindings = argmax::BufferBindings {
            x_blob: x,
            out_blob: &part_index,
        };
        let push = first.argmax_push();
        recorded(
            OP,
            list.dispatch(&parts_pipe, &bindings, &push, first.grid(local)),
        )?;
        let bindings = argmax_parts::BufferBindings {
            x_blob: x,
            part_blob: &part_index,
            out_blob: out,
        };
        recorded(
            OP,
            list.dispatch(&rows_pipe, &bindings, &parts.push(), grid),
        )
    }
}

/// `x`'s float format, where `axis` is one of x's, x is not empty, and `out` has x's shape
/// without that axis (removed, or kept as 1) in x's format (I32 for [`ReduceOp::ArgMax`]).
fn check_reduce(
    x: &Tensor,
    out: &Tensor,
    axis: usize,
    op: ReduceOp,
) -> Result<TensorFormat, OpError> {
    const OP: &str = "reduce";
    let xs = x.shape();
    if axis >= xs.len() {
        return Err(OpError::Unsupported {
            op: OP,
            why: format!("axis {axis} of a tensor of shape {xs:?}"),
        });
    }
    nonempty(OP, "x", x)?;
    let mut kept = xs.to_vec();
    kept[axis] = 1;
    let mut removed = xs.to_vec();
    removed.remove(axis);
    if out.shape() != kept && (removed.is_empty() || out.shape() != removed) {
        return Err(OpError::Shape {
            op: OP,
            operand: "out",
            got: out.shape().to_vec(),
            want: format!("x's shape without axis {axis}: {removed:?} or {kept:?}"),
        });
    }
    let format = float_format(OP, "x", x)?;
    let want = if op == ReduceOp::ArgMax {
        TensorFormat::I32
    } else {
        format
    };
    if out.format() != want {
        return Err(OpError::Format {
            op: OP,
            operand: "out",
            got: out.format(),
            want: format!("{want:?}"),
        });
    }
    Ok(format)
}
