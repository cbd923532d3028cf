//! The data-movement operations: [`Ops::permute`], [`Ops::transpose`], [`Ops::slice`],
//! [`Ops::concat`], [`Ops::pad`] and [`Ops::embedding`]. Each copies values as stored
//! (bit-exact) in any float format, through one strided copy ([`CopyShape`]) or its padding
//! and tiled-transpose siblings, for tensors of up to [`MAX_RANK`] dimensions (the kernels'
//! limit; a [`Tensor`] itself holds at most 4 today).

use super::check::{float_format, nonempty, not_aliased, same_format, shape_is};
use super::{pipeline, recorded, OpError, Ops};
use crate::{
    contiguous_strides, embedding, flat_grid, pad_copy, strided_copy, transpose_grid,
    transpose_tiled, CopyShape, PadShape, MAX_RANK, MOVE_LOCAL,
};
use vkprism::{CommandList, Tensor, TensorFormat};

/// The workgroup of [`transpose_tiled`]: 32 × 32 tiles, 8 rows of invocations.
const TILE_LOCAL: [u32; 3] = [32, 8, 1];

impl Ops {
    /// Records `y = x` with its dimensions reordered into `list`: y's dimension d is x's
    /// dimension `perm[d]` (`y.shape()[d] == x.shape()[perm[d]]`). Up to [`MAX_RANK`]
    /// dimensions, one float format, `y` a tensor of its own. A swap of the last two
    /// (merged) dimensions goes through shared-memory tiles; any other order through the
    /// strided copy. Nothing is recorded when a check fails.
    pub fn permute(
        &self,
        list: &mut CommandList,
        x: &Tensor,
        perm: &[usize],
        y: &Tensor,
    ) -> Result<(), OpError> {
        const OP: &str = "permute";
        let format = movable(OP, x, y)?;
        let xs = x.shape();
        let mut seen = vec![false; xs.len()];
        let is_perm = perm.len() == xs.len()
            && perm
                .iter()
                .all(|&p| p < xs.len() && !std::mem::replace(&mut seen[p], true));
        if !is_perm {
            return Err(OpError::Unsupported {
                op: OP,
                why: format!(
                    "{perm:?} is not a permutation of the {} dimensions of x",
                    xs.len()
                ),
            });
        }
        let out: Vec<usize> = perm.iter().map(|&p| xs[p]).collect();
        shape_is(OP, "y", y, &out, "x's dimensions in `perm`'s order")?;
        let strides = contiguous_strides(xs);
        let copy = CopyShape {
            dims: out.clone(),
            src_stride: perm.iter().map(|&p| strides[p]).collect(),
            dst_stride: contiguous_strides(&out),
            src_off: 0,
            dst_off: 0,
        };
        self.copy(OP, list, x, y, format, &copy)
    }

    /// Records `y = x` with its last two dimensions swapped (`[.., r, c]` into `[.., c, r]`)
    /// into `list`: [`Ops::permute`] with that order, at least 2 dimensions.
    pub fn transpose(&self, list: &mut CommandList, x: &Tensor, y: &Tensor) -> Result<(), OpError> {
        let rank = x.shape().len();
        if rank < 2 {
            return Err(OpError::Shape {
                op: "transpose",
                operand: "x",
                got: x.shape().to_vec(),
                want: "at least 2 dimensions".into(),
            });
        }
        let mut perm: Vec<usize> = (0..rank).collect();
        perm.swap(rank - 2, rank - 1);
        self.permute(list, x, &perm, y)
    }

    /// Records `y = x[starts[0]..ends[0], starts[1]..ends[1], ...]` into `list` (steps of 1):
    /// one start and end per dimension, `start < end <= dimension`; y of shape `ends - starts`
    /// in x's float format, a tensor of its own. Nothing is recorded when a check fails.
    pub fn slice(
        &self,
        list: &mut CommandList,
        x: &Tensor,
        starts: &[usize],
        ends: &[usize],
        y: &Tensor,
    ) -> Result<(), OpError> {
        const OP: &str = "slice";
        let format = movable(OP, x, y)?;
        let xs = x.shape();
        let within = starts.len() == xs.len()
            && ends.len() == xs.len()
            && (0..xs.len()).all(|d| starts[d] < ends[d] && ends[d] <= xs[d]);
        if !within {
            return Err(OpError::Unsupported {
                op: OP,
                why: format!(
                    "starts {starts:?} and ends {ends:?} are not a non-empty block of x's shape {xs:?} (one start < end <= dimension each)"
                ),
            });
        }
        let out: Vec<usize> = (0..xs.len()).map(|d| ends[d] - starts[d]).collect();
        shape_is(OP, "y", y, &out, "ends - starts")?;
        let strides = contiguous_strides(xs);
        let copy = CopyShape {
            dims: out.clone(),
            src_off: starts.iter().zip(&strides).map(|(s, t)| s * t).sum(),
            src_stride: strides,
            dst_stride: contiguous_strides(&out),
            dst_off: 0,
        };
        self.copy(OP, list, x, y, format, &copy)
    }

    /// Records `y = inputs` joined along dimension `axis` into `list`: every input of one rank
    /// (up to [`MAX_RANK`]) and one float format, equal dimensions but `axis`; y's `axis` the
    /// sum of theirs; y none of the inputs. One copy per input, into its block of y. Nothing is
    /// recorded when a check fails.
    pub fn concat(
        &self,
        list: &mut CommandList,
        inputs: &[&Tensor],
        axis: usize,
        y: &Tensor,
    ) -> Result<(), OpError> {
        const OP: &str = "concat";
        let (format, out) = check_concat(inputs, axis, y)?;
        let y_strides = contiguous_strides(&out);
        let mut at = 0;
        let mut copies = Vec::with_capacity(inputs.len());
        for t in inputs {
            copies.push(CopyShape {
                dims: t.shape().to_vec(),
                src_stride: contiguous_strides(t.shape()),
                dst_stride: y_strides.clone(),
                src_off: 0,
                dst_off: at * y_strides[axis],
            });
            at += t.shape()[axis];
        }
        // Loaded (and every check passed) before the first dispatch: all or nothing.
        let kernel = self.kernel_for::<strided_copy::Kernel>(OP, "x_blob", format, false)?;
        let pipe = pipeline(
            OP,
            &kernel,
            &strided_copy::SpecConstants {},
            Some(MOVE_LOCAL),
        )?;
        for (t, copy) in inputs.iter().zip(&copies) {
            let c = copy.collapsed();
            let bindings = strided_copy::BufferBindings {
                x_blob: t,
                y_blob: y,
            };
            recorded(
                OP,
                list.dispatch(&pipe, &bindings, &c.push(), c.grid(MOVE_LOCAL)),
            )?;
        }
        Ok(())
    }

    /// Records `y = x` padded with `value` into `list`: `before[d]` values before and
    /// `after[d]` after x along each dimension d (constant mode); `value` rounded to the
    /// format. Up to [`MAX_RANK`] dimensions, one float format, y a tensor of its own. Nothing
    /// is recorded when a check fails.
    pub fn pad(
        &self,
        list: &mut CommandList,
        x: &Tensor,
        before: &[usize],
        after: &[usize],
        value: f32,
        y: &Tensor,
    ) -> Result<(), OpError> {
        const OP: &str = "pad";
        let format = movable(OP, x, y)?;
        let xs = x.shape();
        if before.len() != xs.len() || after.len() != xs.len() {
            return Err(OpError::Unsupported {
                op: OP,
                why: format!(
                    "{} values before and {} after for {} dimensions",
                    before.len(),
                    after.len(),
                    xs.len()
                ),
            });
        }
        let out: Vec<usize> = (0..xs.len())
            .map(|d| before[d] + xs[d] + after[d])
            .collect();
        shape_is(OP, "y", y, &out, "before + x's shape + after")?;
        fits_i32(OP, y)?;
        let s = PadShape {
            dims: out,
            src_dims: xs.to_vec(),
            before: before.to_vec(),
        };
        let kernel = self.kernel_for::<pad_copy::Kernel>(OP, "x_blob", format, false)?;
        let pipe = pipeline(OP, &kernel, &pad_copy::SpecConstants {}, Some(MOVE_LOCAL))?;
        let bindings = pad_copy::BufferBindings {
            x_blob: x,
            y_blob: y,
        };
        recorded(
            OP,
            list.dispatch(&pipe, &bindings, &s.push(value), s.grid(MOVE_LOCAL)),
        )
    }

    /// Records `y[r] = table[ids[r]]` into `list`: table `[vocab, dim]` in a float format,
    /// ids I32 `[n]`, y `[n, dim]` in the table's format, a tensor of its own. The ids are on
    /// the GPU, so none is checked here: an id outside `[0, vocab)` gives a row of zeros (the
    /// kernel reads nothing for it). Nothing is recorded when a check fails.
    pub fn embedding(
        &self,
        list: &mut CommandList,
        table: &Tensor,
        ids: &Tensor,
        y: &Tensor,
    ) -> Result<(), OpError> {
        const OP: &str = "embedding";
        let &[vocab, dim] = table.shape() else {
            return Err(OpError::Shape {
                op: OP,
                operand: "table",
                got: table.shape().to_vec(),
                want: "[vocab, dim]".into(),
            });
        };
        nonempty(OP, "table", table)?;
        let &[n] = ids.shape() else {
            return Err(OpError::Shape {
                op: OP,
                operand: "ids",
                got: ids.shape().to_vec(),
                want: "[n], one id per row of y".into(),
            });
        };
        if ids.format() != TensorFormat::I32 {
            return Err(OpError::Format {
                op: OP,
                operand: "ids",
                got: ids.format(),
                want: "I32".into(),
            });
        }
        shape_is(OP, "y", y, &[n, dim], "[ids, table's dim]")?;
        let format = float_format(OP, "table", table)?;
        same_format(OP, "y", Some(y), format)?;
        not_aliased(OP, y, "y", &[("table", Some(table)), ("ids", Some(ids))])?;
        fits_i32(OP, y)?;
        fits_i32(OP, table)?;
        let kernel = self.kernel_for::<embedding::Kernel>(OP, "table_blob", format, false)?;
        let pipe = pipeline(OP, &kernel, &embedding::SpecConstants {}, Some(MOVE_LOCAL))?;
        let bindings = embedding::BufferBindings {
            table_blob: table,
            ids_blob: ids,
            y_blob: y,
        };
        let push = embedding::PushConstants {
            total: (n * dim) as i32,
            dim: dim as i32,
            vocab: vocab as i32,
        };
        recorded(
            OP,
            list.dispatch(&pipe, &bindings, &push, flat_grid(n * dim, MOVE_LOCAL)),
        )
    }

    /// Records one strided copy from `x` into `y`: through [`transpose_tiled`] where it is a
    /// swap of the last two dimensions, else [`strided_copy`].
    fn copy(
        &self,
        op: &'static str,
        list: &mut CommandList,
        x: &Tensor,
        y: &Tensor,
        format: TensorFormat,
        copy: &CopyShape,
    ) -> Result<(), OpError> {
        if let Some([batch, rows, cols]) = copy.as_transpose() {
            let kernel = self.kernel_for::<transpose_tiled::Kernel>(op, "x_blob", format, false)?;
            let pipe = pipeline(
                op,
                &kernel,
                &transpose_tiled::SpecConstants {},
                Some(TILE_LOCAL),
            )?;
            let bindings = transpose_tiled::BufferBindings {
                x_blob: x,
                y_blob: y,
            };
            let push = transpose_tiled::PushConstants {
                batch: batch as i32,
                rows: rows as i32,
                cols: cols as i32,
            };
            let grid = transpose_grid(batch, rows, cols, TILE_LOCAL);
            return recorded(op, list.dispatch(&pipe, &bindings, &push, grid));
        }
        let kernel = self.kernel_for::<strided_copy::Kernel>(op, "x_blob", format, false)?;
        let pipe = pipeline(
            op,
            &kernel,
            &strided_copy::SpecConstants {},
            Some(MOVE_LOCAL),
        )?;
        let bindings = strided_copy::BufferBindings {
            x_blob: x,
            y_blob: y,
        };
        let c = copy.collapsed();
        recorded(
            op,
            list.dispatch(&pipe, &bindings, &c.push(), c.grid(MOVE_LOCAL)),
        )
    }
}

/// The checks every copy makes of its source `x` and output `y`: x non-empty, of at most
/// [`MAX_RANK`] dimensions and fewer than 2^31 elements, in a float format y shares, y not x.
/// Returns the format.
fn movable(op: &'static str, x: &Tensor, y: &Tensor) -> Result<TensorFormat, OpError> {
    nonempty(op, "x", x)?;
    if x.shape().len() > MAX_RANK {
        return Err(OpError::Shape {
            op,
            operand: "x",
            got: x.shape().to_vec(),
            want: format!("at most {MAX_RANK} dimensions"),
        });
    }
    fits_i32(op, x)?;
    fits_i32(op, y)?;
    let format = float_format(op, "x", x)?;
    same_format(op, "y", Some(y), format)?;
    not_aliased(op, y, "y", &[("x", Some(x))])?;
    Ok(format)
}

/// `t` has fewer than 2^31 elements: the kernels index with `int`.
pub(super) fn fits_i32(op: &'static str, t: &Tensor) -> Result<(), OpError> {
    if t.len() <= i32::MAX as usize {
        return Ok(());
    }
    Err(OpError::Unsupported {
        op,
        why: format!("{} elements: the kernels index below 2^31", t.len()),
    })
}

/// The inputs' format and y's shape for [`Ops::concat`], where the inputs are not empty, of one
/// rank and format, equal but along `axis` (one of their dimensions), and y, none of them, is
/// that shape.
fn check_concat(
    inputs: &[&Tensor],
    axis: usize,
    y: &Tensor,
) -> Result<(TensorFormat, Vec<usize>), OpError> {
    const OP: &str = "concat";
    let Some(first) = inputs.first() else {
        return Err(OpError::Unsupported {
            op: OP,
            why: "no inputs".into(),
        });
    };
    let format = movable(OP, first, y)?;
    let rank = first.shape().len();
    if axis >= rank {
        return Err(OpError::Unsupported {
            op: OP,
            why: format!("axis {axis} of tensors of {rank} dimensions"),
        });
    }
    let mut out = first.shape().to_vec();
    out[axis] = 0;
    for t in inputs {
        nonempty(OP, "inputs", t)?;
        same_format(OP, "inputs", Some(t), format)?;
        not_aliased(OP, y, "y", &[("inputs", Some(t))])?;
        let fits = t.shape().len() == rank
            && (0..rank).all(|d| d == axis || t.shape()[d] == first.shape()[d]);
        if !fits {
            let mut want = first.shape().to_vec();
            want[axis] = t.shape().get(axis).copied().unwrap_or(0);
            return Err(OpError::Shape {
                op: OP,
                operand: "inputs",
                got: t.shape().to_vec(),
                want: format!("the first input's dimensions but `axis` {axis}: {want:?}"),
            });
        }
        out[axis] += t.shape()[axis];
    }
    shape_is(OP, "y", y, &out, "the inputs joined along `axis`")?;
    Ok((format, out))
}
