//! The row kernels, one workgroup per row (or per output) reduced through shared memory
//! (`rows.glsl`): [`reduce`] and [`argmax`] along one axis ([`ReduceShape`]), [`softmax`]
//! along the last ([`SoftmaxShape`]), [`norm`]: layer, RMS and group norm ([`NormShape`]).
//! Every one reads values one at a time (rows of any length) and computes in fp32 in every
//! variant, so each has the float variants that store scalars: `fp32`, `fp16s`, `fp16sa`,
//! `bf16s` (no packed ones: a packed pair would straddle rows), each `_sg` (a workgroup's
//! reduction through subgroup arithmetic, then one partial per subgroup in shared memory) and
//! `_nosg` (a tree through shared memory alone): eight variants, `fp32_sg` ... `bf16s_nosg`.
//! The runtime picks `_sg` where the device has subgroup arithmetic; either works with any
//! workgroup size.

vkprism::compute_shader! {
    /// `out[o][i] = op over a of x[o][a][i]` for x viewed as `[outer, axis, inner]`, into
    /// `[outer, inner]`; `op` (constant 0): 0 sum, 1 mean, 2 max, 3 min, reduced in fp32 in
    /// every variant (a tree for sums across a workgroup, compensated sums in one invocation).
    /// `per_invocation` (constant 1): 0 one workgroup per output, 1 one invocation per output
    /// ([`ReduceShape::per_invocation`](crate::ReduceShape::per_invocation) chooses). Values
    /// are read one at a time, so any lengths; the float variants that store scalars,
    /// `fp32`, `fp16s`, `fp16sa`, `bf16s`, each `_sg` (subgroup arithmetic) and `_nosg`.
    pub mod reduce,
    path: "reduce.comp",
    define: [("ARGMAX", "0"), ("GUMBEL", "0")],
}

vkprism::compute_shader! {
    /// The index along the axis of the largest value of x viewed as `[outer, axis, inner]`,
    /// into an I32 `[outer, inner]` (the first index on ties): [`reduce`]'s grids and push
    /// constants (`op` ignored).
    pub mod argmax,
    path: "reduce.comp",
    define: [("ARGMAX", "1"), ("GUMBEL", "0")],
}

vkprism::compute_shader! {
    /// A draw along the axis of x viewed as `[outer, axis, inner]` from softmax(x / T), into
    /// an I32 `[outer, inner]`: [`argmax`] of each value times `inv_temperature` (1 / T, a push
    /// constant after [`reduce`]'s) plus Gumbel noise, a function of the value's index in x and
    /// the two-word seed in the U32 `seed_blob` (the same seed, the same draws).
    pub mod sample,
    path: "reduce.comp",
    define: [("ARGMAX", "1"), ("GUMBEL", "1")],
}

vkprism::compute_shader! {
    /// The second pass of [`argmax`] along long rows taken in parts: x `[rows, parts · len]`,
    /// each part's own argmax (an index within it) in the I32 `part_blob` `[rows, parts]`
    /// ([`argmax`] over x viewed as `[rows · parts, len]`); the row's argmax into the I32
    /// `out_blob` `[rows]`, the first on ties. One workgroup a row, grid
    /// [`ArgmaxParts::grid`]; push constants [`ArgmaxParts::push`].
    pub mod argmax_parts,
    path: "argmax_parts.comp",
    define: [("GUMBEL", "0")],
}

vkprism::compute_shader! {
    /// A draw from each row of x `[rows, n]` (I32 out `[rows]`) cut as `transformers`
    /// samples: the logits times `inv_temperature`, cut to those at least the `top_k`-th
    /// largest (0: no cut), then to the largest ones whose probabilities reach `top_p` of what
    /// is left (1: no cut), ties at either cut kept; the draw is [`sample`]'s over what is left
    /// (the same noise, from the U32 `seed_blob`). One workgroup a row of any length.
    pub mod sample_top,
    path: "sample_top.comp",
}

vkprism::compute_shader! {
    /// The second pass of [`sample`] along long rows taken in parts: [`argmax_parts`] over
    /// [`sample`]'s noised values (the same noise, from the same seed).
    pub mod sample_parts,
    path: "argmax_parts.comp",
    define: [("GUMBEL", "1")],
}

/// [`argmax`] along rows of `axis` values taken in `parts` parts of `len` (its first pass over
/// `[rows · parts, len]`, then [`argmax_parts`]), where one workgroup a row would read a whole
/// long row alone (a decode step's logits: 151936 values for Qwen's vocabulary).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct ArgmaxParts {
    /// Rows reduced.
    pub rows: usize,
    /// Parts of each row.
    pub parts: usize,
    /// Values in a part.
    pub len: usize,
}

/// Values a row holds from which [`ArgmaxParts::of`] takes it in parts: a decode step's
/// argmax over Qwen's 151936 or Llama 3's 128256 logits is faster in two passes, over
/// TinyLlama's 32000 in one (BENCHMARKS.md).
const PARTS_FROM: usize = 65536;

/// The most parts a row is taken in: the second pass's workgroup, one part an invocation.
const PARTS_MOST: usize = 256;

impl ArgmaxParts {
    /// The parts for an argmax of `s`: where it reduces few contiguous rows (inner 1, at most
    /// 32 outputs, each row at least 65536 values), the most parts up to 256 that divide a
    /// row into whole parts; `None` where one workgroup a row takes it (or no such division).
    pub fn of(s: &ReduceShape) -> Option<ArgmaxParts> {
        if s.inner != 1 || s.outputs() > FEW_OUTPUTS || s.axis < PARTS_FROM {
            return None;
        }
        let parts = (2..=PARTS_MOST).rev().find(|p| s.axis.is_multiple_of(*p))?;
        Some(ArgmaxParts {
            rows: s.outer,
            parts,
            len: s.axis / parts,
        })
    }

    /// The first pass's shape: every part a row of its own.
    pub fn first_pass(&self) -> ReduceShape {
        ReduceShape {
            outer: self.rows * self.parts,
            axis: self.len,
            inner: 1,
        }
    }

    /// The second pass's workgroup (256) and grid: one workgroup a row.
    pub fn grid(&self) -> ([u32; 3], [u32; 3]) {
        let local = [PARTS_MOST as u32, 1, 1];
        (rows_grid(local[0], self.rows), local)
    }

    /// The second pass's push constants.
    pub fn push(&self) -> argmax_parts::PushConstants {
        argmax_parts::PushConstants {
            rows: self.rows as i32,
            parts: self.parts as i32,
            len: self.len as i32,
        }
    }
}

/// A tensor viewed as `[outer, axis, inner]` for a reduction along `axis`: the grid, workgroup
/// and push constants of [`reduce`] and [`argmax`].
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct ReduceShape {
    /// The product of the dimensions before the axis.
    pub outer: usize,
    /// The length of the axis reduced.
    pub axis: usize,
    /// The product of the dimensions after the axis.
    pub inner: usize,
}

/// Outputs up to which a reduction with a workgroup per output takes workgroups of up to 1024
/// invocations ([`ReduceShape::local_size_within`]).
const FEW_OUTPUTS: usize = 32;

impl ReduceShape {
    /// The view of a tensor of `shape` for a reduction along dimension `axis` (< its rank).
    pub fn of(shape: &[usize], axis: usize) -> ReduceShape {
        ReduceShape {
            outer: shape[..axis].iter().product(),
            axis: shape[axis],
            inner: shape[axis + 1..].iter().product(),
        }
    }

    /// Outputs: `outer · inner`.
    pub fn outputs(&self) -> usize {
        self.outer * self.inner
    }

    /// Whether one invocation computes each output (an inner of 32 or more: neighbouring
    /// outputs read neighbouring values, and there are many) rather than one workgroup (the
    /// axis's values spread over a workgroup, a tree across it).
    pub fn per_invocation(&self) -> bool {
        self.inner >= 32
    }

    /// The specialization constants for `op` (0 sum, 1 mean, 2 max, 3 min; ignored by
    /// [`argmax`]) on this grid.
    pub fn spec(&self, op: i32) -> reduce::SpecConstants {
        reduce::SpecConstants {
            op,
            per_invocation: self.per_invocation() as i32,
        }
    }

    /// The workgroup: 64 invocations along the inner outputs, or, one workgroup per output,
    /// the axis rounded up to a power of two, at most 256.
    pub fn local_size(&self) -> [u32; 3] {
        self.local_size_within(256)
    }

    /// [`ReduceShape::local_size`] on a device that takes workgroups of up to
    /// `max_invocations`: where the outputs are at most 32 (a decode step's argmax
    /// over its vocabulary: one workgroup is the whole grid), a workgroup per output of up to
    /// 1024 invocations, so each walks fewer of the axis's values one after another.
    pub fn local_size_within(&self, max_invocations: u32) -> [u32; 3] {
        if self.per_invocation() {
            return [64, 1, 1];
        }
        let most = if self.outputs() <= FEW_OUTPUTS {
            1024
        } else {
            256
        };
        let most = most.min(max_invocations as usize).max(1);
        [self.axis.next_power_of_two().clamp(1, most) as u32, 1, 1]
    }

    /// The invocation grid for the workgroup `local`: `inner` × `outer` invocations (one per
    /// output), or `local x` × `outputs` (a workgroup per output), the second count spread over
    /// y and z.
    pub fn grid(&self, local: [u32; 3]) -> [u32; 3] {
        if self.per_invocation() {
            rows_grid(self.inner as u32, self.outer)
        } else {
            rows_grid(local[0], self.outputs())
        }
    }

    /// The push constants.
    pub fn push(&self) -> reduce::PushConstants {
        reduce::PushConstants {
            outer: self.outer as i32,
            axis: self.axis as i32,
            inner: self.inner as i32,
        }
    }

    /// [`argmax`]'s push constants.
    pub fn argmax_push(&self) -> argmax::PushConstants {
        argmax::PushConstants {
            outer: self.outer as i32,
            axis: self.axis as i32,
            inner: self.inner as i32,
        }
    }
}

/// Rows per z slice of a row kernel's grid (`ROWS_Y` in rows.glsl): every device takes 65,535
/// workgroups along y and z, so any number of rows up to 2^31 fits one dispatch, without the
/// runtime splitting it.
const ROWS_Y: usize = 32768;

/// The invocation grid `[x, rows over y and z]` of a row kernel (`rows_row` in rows.glsl).
pub(crate) fn rows_grid(x: u32, rows: usize) -> [u32; 3] {
    [
        x,
        rows.min(ROWS_Y) as u32,
        rows.div_ceil(ROWS_Y).max(1) as u32,
    ]
}

/// The workgroup of a kernel with one workgroup per row of `len` values: `len` rounded up to a
/// power of two, at most 256.
pub(crate) fn row_workgroup(len: usize) -> [u32; 3] {
    [len.next_power_of_two().clamp(1, 256) as u32, 1, 1]
}

vkprism::compute_shader! {
    /// The two softmax kernels, one module each (re-exported at the crate's root):
    /// [`softmax4`] takes [`softmax`]'s constants types.
    pub mod softmax_kernels,
    variants: [fp32_sg, fp32_nosg, fp16s_sg, fp16s_nosg, fp16sa_sg, fp16sa_nosg, bf16s_sg, bf16s_nosg],
    shaders: {
        /// `y = softmax(scale · x)` along the last axis of `[rows, cols]`, one workgroup per row,
        /// numerically stable (the row's maximum subtracted) and in fp32 in every variant; with
        /// `causal` (constant 0), row r of each block of `block` rows sees only columns
        /// `c <= r % block + offset`, the others 0. Any `cols`. In place is safe (x and y one
        /// tensor). Variants: `fp32`, `fp16s`, `fp16sa`, `bf16s`, each `_sg` and `_nosg`.
        softmax: { path: "softmax.comp" },
        /// [`softmax`](crate::softmax) over rows of quads (`cols` a multiple of 4), read and
        /// written as quads.
        softmax4: {
            path: "softmax.comp",
            define: [("VKPRISM_QUADS", "1")],
            share: [softmax::SpecConstants, softmax::PushConstants],
        },
    },
}

pub use softmax_kernels::{softmax, softmax4};

/// Rows of a [`softmax`]: the grid, workgroup and push constants.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct SoftmaxShape {
    /// Rows (the product of every dimension but the last).
    pub rows: usize,
    /// The last dimension.
    pub cols: usize,
    /// Rows of one causal block (the second-last dimension; 1 for a vector): row r's position
    /// in its block is `r % block`.
    pub block: usize,
}

impl SoftmaxShape {
    /// The rows of a tensor of `shape` (at least one dimension).
    pub fn of(shape: &[usize]) -> SoftmaxShape {
        let cols = shape.last().copied().unwrap_or(1);
        let n = shape.len();
        SoftmaxShape {
            rows: shape[..n.saturating_sub(1)].iter().product(),
            cols,
            block: if n >= 2 { shape[n - 2] } else { 1 },
        }
    }

    /// The workgroup: the row rounded up to a power of two, at most 256.
    pub fn local_size(&self) -> [u32; 3] {
        row_workgroup(self.cols)
    }

    /// The invocation grid for workgroup `local`: one workgroup per row.
    pub fn grid(&self, local: [u32; 3]) -> [u32; 3] {
        rows_grid(local[0], self.rows)
    }

    /// [`softmax4`]'s workgroup: a row's quads rounded up to a power of two, at most 256.
    pub fn local_size_quads(&self) -> [u32; 3] {
        row_workgroup(self.cols.div_ceil(4))
    }

    /// The push constants for `scale` and the causal `offset` (ignored without `causal`).
    pub fn push(&self, scale: f32, offset: i32) -> softmax::PushConstants {
        softmax::PushConstants {
            rows: self.rows as i32,
            cols: self.cols as i32,
            block: self.block.max(1) as i32,
            offset,
            scale,
        }
    }
}

vkprism::compute_shader! {
    /// The two norm kernels, one module each (re-exported at the crate's root): [`norm4`]
    /// takes [`norm`]'s constants types.
    pub mod norm_kernels,
    variants: [fp32_sg, fp32_nosg, fp16s_sg, fp16s_nosg, fp16sa_sg, fp16sa_nosg, bf16s_sg, bf16s_nosg],
    shaders: {
        /// `y = (x - mean) / sqrt(var + eps) · gamma + beta` over groups of a channels-last
        /// `[batch, hw, c]` tensor: `groups` groups of `c / groups` channels, each group's mean and
        /// variance over its `hw · c / groups` values (layer norm: hw 1, one group; group norm: NHWC
        /// images). With `rms` (constant 0): `y = x / sqrt(mean(x²) + eps) · gamma + beta`. `gamma`
        /// and `beta` per channel, read with `gamma_term` / `beta_term` (constants 1, 2). One
        /// workgroup per group; fp32 statistics in two passes (centred on the group's first value,
        /// so a large mean cancels exactly). Any `c`; in place is safe. Variants: `fp32`, `fp16s`,
        /// `fp16sa`, `bf16s`, each `_sg` and `_nosg`.
        norm: { path: "norm.comp" },
        /// [`norm`](crate::norm) over rows of quads (layer and RMS norm: `hw` 1, one group, `c`
        /// a multiple of 4), every operand read and written as quads.
        norm4: {
            path: "norm.comp",
            define: [("VKPRISM_QUADS", "1")],
            share: [norm::SpecConstants, norm::PushConstants],
        },
    },
}

pub use norm_kernels::{norm, norm4};

/// Groups of a [`norm`]: the grid, workgroup and push constants.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct NormShape {
    /// Images (or rows, for layer and RMS norm).
    pub batch: usize,
    /// Pixels per image (1 for layer and RMS norm).
    pub hw: usize,
    /// Channels (the row's length, for layer and RMS norm).
    pub c: usize,
    /// Groups of channels, dividing `c` (1 for layer and RMS norm).
    pub groups: usize,
}

impl NormShape {
    /// Layer or RMS norm over the last dimension of `shape`: every other dimension is a row.
    pub fn rows(shape: &[usize]) -> NormShape {
        let n = shape.len();
        NormShape {
            batch: shape[..n.saturating_sub(1)].iter().product(),
            hw: 1,
            c: shape.last().copied().unwrap_or(1),
            groups: 1,
        }
    }

    /// Values per group: `hw · c / groups`.
    pub fn group_len(&self) -> usize {
        self.hw * self.c / self.groups.max(1)
    }

    /// The workgroup: a group's values rounded up to a power of two, at most 256.
    pub fn local_size(&self) -> [u32; 3] {
        row_workgroup(self.group_len())
    }

    /// [`norm4`]'s workgroup: a row's quads rounded up to a power of two, at most 256.
    pub fn local_size_quads(&self) -> [u32; 3] {
        row_workgroup(self.c.div_ceil(4))
    }

    /// The invocation grid for workgroup `local`: one workgroup per group.
    pub fn grid(&self, local: [u32; 3]) -> [u32; 3] {
        rows_grid(local[0], self.batch * self.groups)
    }

    /// The push constants for `eps`.
    pub fn push(&self, eps: f32) -> norm::PushConstants {
        norm::PushConstants {
            batch: self.batch as i32,
            hw: self.hw as i32,
            c: self.c as i32,
            groups: self.groups as i32,
            eps,
        }
    }
}
