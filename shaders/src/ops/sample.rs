//! [`Ops::sample`]: each row's index drawn on the GPU from softmax(x / T), cut as [`Draw`]
//! says — sampling without reading the logits back — by the Gumbel-max trick: on the argmax
//! kernels where nothing is cut, on `sample_top` (each cut's value found by narrowing a range
//! of the values' keys, then ranking the few left against each other) where something is.

use super::check::{float_format, nonempty, not_aliased, same_format, shape_is};
use super::{pipeline, recorded, scratch, OpError, Ops};
use crate::{sample, sample_parts, sample_top, ArgmaxParts, ReduceShape};
use std::sync::Arc;
use vkprism::{CommandList, LoadedKernel, Pipeline, PipelineError, Tensor, TensorFormat};

const OP: &str = "sample";

/// How [`Ops::sample`] draws, as `transformers`' sampling does: the logits divided by the
/// temperature, cut to the `top_k` largest (0: no cut; values tied with the `top_k`-th kept),
/// then to the largest whose probabilities reach `top_p` of what is left (1: no cut; values tied
/// with the last one kept), one drawn from what is left in proportion to its probability.
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct Draw {
    /// What the logits are divided by: finite, above 0.
    pub temperature: f32,
    /// The values kept by the first cut (0: all).
    pub top_k: usize,
    /// The share of the probability kept by the second cut, in (0, 1] (1: all).
    pub top_p: f32,
}

impl Draw {
    /// A draw at `temperature` from the whole distribution.
    pub fn new(temperature: f32) -> Draw {
        Draw {
            temperature,
            top_k: 0,
            top_p: 1.0,
        }
    }

    /// Cut first to the `top_k` largest (0: no cut).
    pub fn with_top_k(self, top_k: usize) -> Draw {
        Draw { top_k, ..self }
    }

    /// Then to the largest that reach `top_p` of the probability (1: no cut).
    pub fn with_top_p(self, top_p: f32) -> Draw {
        Draw { top_p, ..self }
    }

    /// Whether it cuts a row of `n` values.
    fn cuts(&self, n: usize) -> bool {
        (self.top_k > 0 && self.top_k < n) || self.top_p < 1.0
    }
}

/// The draw's constants: a workgroup a row (the rows are the last axis, inner 1).
const ROW_A_WORKGROUP: sample::SpecConstants = sample::SpecConstants {
    op: 0,
    per_invocation: 0,
};

impl Ops {
    /// Records into `list` a draw of one index from each row of `x` (`[.., n]`, F32, F16 or
    /// Bf16) along the last axis as `draw` says, into the I32 `out` (x's shape without its
    /// last axis, or with it as 1). The draw is the index of the largest x / T + g among the
    /// values the cuts keep, each g standard Gumbel noise made from the element's index and
    /// the 64-bit seed in the U32 `seed` `[2]` (low word first), read on the GPU when the list
    /// runs: write a new seed before each run for new draws; the same seed draws the same
    /// indices. `-inf` values are never drawn while a row holds a finite one; without cuts a
    /// NaN is drawn only where it is a row's first value and nothing after it is drawn (the
    /// argmax's rule), with cuts a NaN counts as `-inf`. [`OpError::Unsupported`] for a
    /// temperature that is not finite and above 0 (greedy decoding is
    /// [`ReduceOp::ArgMax`](crate::ReduceOp::ArgMax)) or a `top_p` outside (0, 1]; nothing is
    /// recorded when a check fails.
    pub fn sample(
        &self,
        list: &mut CommandList,
        x: &Tensor,
        out: &Tensor,
        draw: &Draw,
        seed: &Tensor,
    ) -> Result<(), OpError> {
        let format = check_sample(x, out, draw, seed)?;
        not_aliased(OP, out, "out", &[("x", Some(x)), ("seed", Some(seed))])?;
        let s = ReduceShape::of(x.shape(), x.shape().len() - 1);
        let inv_temperature = 1.0 / draw.temperature;
        if draw.cuts(s.axis) {
            return self.sample_cut(list, (x, seed), out, &s, draw, format);
        }
        if let Some(parts) = ArgmaxParts::of(&s) {
            return self.sample_in_parts(list, (x, seed), out, &parts, inv_temperature, format);
        }
        let kernel = self.kernel_for::<sample::Kernel>(OP, "x_blob", format, false)?;
        let local = self.reduce_workgroup(&s);
        let pipe = pipeline(OP, &kernel, &ROW_A_WORKGROUP, Some(local))?;
        let bindings = sample::BufferBindings {
            x_blob: x,
            out_blob: out,
            seed_blob: seed,
        };
        let push = sample_push(&s, inv_temperature);
        recorded(OP, list.dispatch(&pipe, &bindings, &push, s.grid(local)))
    }

    /// `sample_top`'s pipeline and workgroup for `s`: the reduction's workgroup, halved (down
    /// to 32 invocations) while the pipeline's creation finds the kernel's shared memory, which
    /// grows with it, over the device's.
    fn sample_top_pipeline(
        &self,
        kernel: &Arc<LoadedKernel<sample_top::Kernel>>,
        s: &ReduceShape,
    ) -> Result<(Pipeline<sample_top::Kernel>, [u32; 3]), OpError> {
        let mut local = self.reduce_workgroup(s);
        loop {
            match kernel.pipeline(&Default::default(), Some(local)) {
                Err(PipelineError::SharedMemoryTooLarge { .. }) if local[0] > 32 => local[0] /= 2,
                made => {
                    return Ok((
                        made.map_err(|source| OpError::Load { op: OP, source })?,
                        local,
                    ))
                }
            }
        }
    }

    /// The draw of x's rows `s` with `draw`'s cuts: one workgroup a row (`sample_top`).
    fn sample_cut(
        &self,
        list: &mut CommandList,
        (x, seed): (&Tensor, &Tensor),
        out: &Tensor,
        s: &ReduceShape,
        draw: &Draw,
        format: TensorFormat,
    ) -> Result<(), OpError> {
        let kernel = self.kernel_for::<sample_top::Kernel>(OP, "x_blob", format, false)?;
        let (pipe, local) = self.sample_top_pipeline(&kernel, s)?;
        let bindings = sample_top::BufferBindings {
            x_blob: x,
            out_blob: out,
            seed_blob: seed,
        };
        let push = sample_top::PushConstants {
            rows: s.outer as i32,
            n: s.axis as i32,
            inv_temperature: 1.0 / draw.temperature,
            top_k: draw.top_k.min(s.axis) as i32,
            top_p: draw.top_p,
        };
        recorded(OP, list.dispatch(&pipe, &bindings, &push, s.grid(local)))
    }

    /// The draw of x's rows in `parts`: each part's best noised value's index into a scratch
    /// tensor, then the rows' from those (the same noise: it is a function of the index).
    fn sample_in_parts(
        &self,
        list: &mut CommandList,
        (x, seed): (&Tensor, &Tensor),
        out: &Tensor,
        parts: &ArgmaxParts,
        inv_temperature: f32,
        format: TensorFormat,
    ) -> Result<(), OpError> {
        let first = parts.first_pass();
        // Both pipelines before anything is recorded.
        let kernel = self.kernel_for::<sample::Kernel>(OP, "x_blob", format, false)?;
        let local = self.reduce_workgroup(&first);
        let parts_pipe = pipeline(OP, &kernel, &ROW_A_WORKGROUP, Some(local))?;
        let kernel = self.kernel_for::<sample_parts::Kernel>(OP, "x_blob", format, false)?;
        let (grid, rows_local) = parts.grid();
        let rows_pipe = pipeline(OP, &kernel, &Default::default(), Some(rows_local))?;
        let part_index = scratch(list, &self.ctx, OP, &[first.outer], TensorFormat::I32, &[x])?;
        let bindings = sample::BufferBindings {
            x_blob: x,
            out_blob: &part_index,
            seed_blob: seed,
        };
        let push = sample_push(&first, inv_temperature);
        recorded(
            OP,
            list.dispatch(&parts_pipe, &bindings, &push, first.grid(local)),
        )?;
        let bindings = sample_parts::BufferBindings {
            x_blob: x,
            part_blob: &part_index,
            out_blob: out,
            seed_blob: seed,
        };
        let push = sample_parts::PushConstants {
            rows: parts.rows as i32,
            parts: parts.parts as i32,
            len: parts.len as i32,
            inv_temperature,
        };
        recorded(OP, list.dispatch(&rows_pipe, &bindings, &push, grid))
    }
}

fn sample_push(s: &ReduceShape, inv_temperature: f32) -> sample::PushConstants {
    sample::PushConstants {
        outer: s.outer as i32,
        axis: s.axis as i32,
        inner: s.inner as i32,
        inv_temperature,
    }
}

/// x's float format, where x is not empty (rows of at most `i32::MAX` values), `out` has x's
/// shape without its last axis (removed, or kept as 1) in I32, the temperature is finite and
/// above 0 (and 1 / T finite), `top_p` in (0, 1], and `seed` is a U32 `[2]`.
fn check_sample(
    x: &Tensor,
    out: &Tensor,
    draw: &Draw,
    seed: &Tensor,
) -> Result<TensorFormat, OpError> {
    let t = draw.temperature;
    if !(t > 0.0 && t.is_finite() && (1.0 / t).is_finite()) {
        return Err(OpError::Unsupported {
            op: OP,
            why: format!("temperature {t}: a draw takes a finite temperature above 0"),
        });
    }
    if !(draw.top_p > 0.0 && draw.top_p <= 1.0) {
        return Err(OpError::Unsupported {
            op: OP,
            why: format!("top_p {}: a draw keeps a share in (0, 1]", draw.top_p),
        });
    }
    if x.shape().last().is_some_and(|&n| n > i32::MAX as usize) {
        return Err(OpError::Unsupported {
            op: OP,
            why: format!(
                "rows of {:?} values: at most {}",
                x.shape().last(),
                i32::MAX
            ),
        });
    }
    nonempty(OP, "x", x)?;
    let xs = x.shape();
    let mut kept = xs.to_vec();
    *kept.last_mut().expect("x is not empty") = 1;
    let removed = &xs[..xs.len() - 1];
    if out.shape() != kept && (removed.is_empty() || out.shape() != removed) {
        return Err(OpError::Shape {
            op: OP,
            operand: "out",
            got: out.shape().to_vec(),
            want: format!("x's shape without its last axis: {removed:?} or {kept:?}"),
        });
    }
    same_format(OP, "out", Some(out), TensorFormat::I32)?;
    shape_is(OP, "seed", seed, &[2], "[2]")?;
    same_format(OP, "seed", Some(seed), TensorFormat::U32)?;
    float_format(OP, "x", x)
}
