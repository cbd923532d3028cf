//! The data-movement kernels: [`strided_copy`] (permute, slice, concat: one copy over a domain
//! with strides on both sides, [`CopyShape`]), [`pad_copy`] (constant padding, [`PadShape`]),
//! [`transpose_tiled`] (the last two dimensions swapped through shared memory) and
//! [`embedding`] (rows gathered by index). Each copies values as stored, so every variant is
//! bit-exact; they have the float variants that store scalars without fp16 arithmetic, which
//! a copy never uses: `fp32`, `fp16s`, `bf16s`.

vkprism::compute_shader! {
    /// `y[dst_off + Σ c·dst_stride] = x[src_off + Σ c·src_stride]` for every coordinate `c` of
    /// a domain of up to 6 dimensions ([`CopyShape`] gives the push constants and grid). Any
    /// grid covers the domain (each invocation a grid apart). Variants `fp32`, `fp16s`,
    /// `bf16s`.
    pub mod strided_copy,
    path: "strided_copy.comp",
    define: [("PAD", "0")],
    variants: [fp32, fp16s, bf16s],
}

vkprism::compute_shader! {
    /// `y[c] = x[src_off + Σ (c - before)·src_stride]` where `0 <= c - before < src_dims` along
    /// every dimension, else the push constant `fill`: constant padding of up to 6 dimensions
    /// into a contiguous `y` ([`PadShape`]). Variants `fp32`, `fp16s`, `bf16s`.
    pub mod pad_copy,
    path: "strided_copy.comp",
    define: [("PAD", "1")],
    variants: [fp32, fp16s, bf16s],
}

vkprism::compute_shader! {
    /// `y[b][c][r] = x[b][r][c]` for x `[batch, rows, cols]`: square tiles of the workgroup's
    /// x size (32 by default; y size 8) staged through shared memory so reads and writes are
    /// both along rows. Grid: [`transpose_grid`]; any grid covers every tile. Variants `fp32`,
    /// `fp16s`, `bf16s`.
    pub mod transpose_tiled,
    path: "transpose.comp",
    variants: [fp32, fp16s, bf16s],
}

vkprism::compute_shader! {
    /// `y[r][c] = table[ids[r]][c]` for a `[vocab, dim]` table, `int` ids and y `[n, dim]`;
    /// an id outside `[0, vocab)` gives a row of zeros and reads nothing. Push constants
    /// `total` (`n · dim`), `dim`, `vocab`; grid: [`flat_grid`]. Variants `fp32`, `fp16s`,
    /// `bf16s`.
    pub mod embedding,
    path: "embedding.comp",
    variants: [fp32, fp16s, bf16s],
}

/// The most dimensions [`strided_copy`] and [`pad_copy`] take (after [`CopyShape::collapsed`]
/// merges what it can).
pub const MAX_RANK: usize = 6;

/// Workgroups per grid dimension every device takes (`maxComputeWorkGroupCount`'s minimum).
const MAX_GROUPS: usize = 65535;

/// The invocations of a workgroup of the element-wise movement kernels.
pub const MOVE_LOCAL: [u32; 3] = [256, 1, 1];

/// The grid of a kernel that walks `n` elements a grid apart with workgroup `local`: one
/// invocation per element, capped at 65,535 workgroups (the kernels loop over the rest).
pub fn flat_grid(n: usize, local: [u32; 3]) -> [u32; 3] {
    let x = local[0].max(1) as usize;
    [(n.div_ceil(x).clamp(1, MAX_GROUPS) * x) as u32, 1, 1]
}

/// The grid of [`transpose_tiled`] for x `[batch, rows, cols]` and workgroup `local`
/// (`local[0]` the tile's side): one workgroup per tile, each dimension capped at 65,535.
pub fn transpose_grid(batch: usize, rows: usize, cols: usize, local: [u32; 3]) -> [u32; 3] {
    let t = local[0].max(1) as usize;
    let groups = |n: usize| n.clamp(1, MAX_GROUPS);
    [
        (groups(cols.div_ceil(t)) * t) as u32,
        (groups(rows.div_ceil(t)) * local[1].max(1) as usize) as u32,
        (groups(batch) * local[2].max(1) as usize) as u32,
    ]
}

/// Row-major strides of `shape`, in elements.
pub fn contiguous_strides(shape: &[usize]) -> Vec<usize> {
    let mut strides = vec![1; shape.len()];
    for d in (0..shape.len().saturating_sub(1)).rev() {
        strides[d] = strides[d + 1] * shape[d + 1];
    }
    strides
}

/// A [`strided_copy`]: every coordinate `c` of `dims` (outermost first) copies
/// `x[src_off + Σ c·src_stride]` to `y[dst_off + Σ c·dst_stride]` (strides in elements).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CopyShape {
    /// The domain, outermost first.
    pub dims: Vec<usize>,
    /// x's stride along each dimension of the domain.
    pub src_stride: Vec<usize>,
    /// y's stride along each dimension of the domain.
    pub dst_stride: Vec<usize>,
    /// x's element at the domain's origin.
    pub src_off: usize,
    /// y's element at the domain's origin.
    pub dst_off: usize,
}

impl CopyShape {
    /// Elements copied.
    pub fn elements(&self) -> usize {
        self.dims.iter().product()
    }

    /// The same copy in fewest dimensions: dimensions of 1 dropped, and each pair of
    /// neighbours merged where both sides step over the inner one exactly as one longer
    /// dimension would (the index arithmetic per element shrinks with the rank).
    pub fn collapsed(&self) -> CopyShape {
        let mut out = CopyShape {
            dims: Vec::new(),
            src_stride: Vec::new(),
            dst_stride: Vec::new(),
            ..*self
        };
        for d in 0..self.dims.len() {
            let (n, s, t) = (self.dims[d], self.src_stride[d], self.dst_stride[d]);
            if n == 1 {
                continue;
            }
            match out.dims.len() {
                k if k > 0 && out.src_stride[k - 1] == s * n && out.dst_stride[k - 1] == t * n => {
                    out.dims[k - 1] *= n;
                    out.src_stride[k - 1] = s;
                    out.dst_stride[k - 1] = t;
                }
                _ => {
                    out.dims.push(n);
                    out.src_stride.push(s);
                    out.dst_stride.push(t);
                }
            }
        }
        out
    }

    /// The push constants.
    ///
    /// # Panics
    /// Past [`MAX_RANK`] dimensions (collapse first), or where an offset or count overflows
    /// `i32`.
    pub fn push(&self) -> strided_copy::PushConstants {
        strided_copy::PushConstants {
            n: to_i32(self.elements()),
            rank: to_i32(self.dims.len()),
            src_off: to_i32(self.src_off),
            dst_off: to_i32(self.dst_off),
            dims: right_aligned(&self.dims, 1),
            src_stride: right_aligned(&self.src_stride, 0),
            dst_stride: right_aligned(&self.dst_stride, 0),
        }
    }

    /// The grid for workgroup `local` ([`flat_grid`]).
    pub fn grid(&self, local: [u32; 3]) -> [u32; 3] {
        flat_grid(self.elements(), local)
    }

    /// Where this copy is the last two dimensions of a contiguous x swapped into a contiguous
    /// y, x viewed as `[batch, rows, cols]`: what [`transpose_tiled`] does faster.
    pub fn as_transpose(&self) -> Option<[usize; 3]> {
        let c = self.collapsed();
        if c.dst_stride != contiguous_strides(&c.dims) {
            return None;
        }
        match (&c.dims[..], &c.src_stride[..]) {
            (&[cols, rows], &[1, s]) if s == cols => Some([1, rows, cols]),
            (&[batch, cols, rows], &[b, 1, s]) if s == cols && b == rows * cols => {
                Some([batch, rows, cols])
            }
            _ => None,
        }
    }
}

/// A [`pad_copy`]: y contiguous of shape `dims`; y's coordinate `c` reads x's `c - before` where
/// that lies within `src_dims`, else the fill value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PadShape {
    /// y's shape.
    pub dims: Vec<usize>,
    /// x's shape.
    pub src_dims: Vec<usize>,
    /// The values added before x along each dimension.
    pub before: Vec<usize>,
}

impl PadShape {
    /// Elements of y.
    pub fn elements(&self) -> usize {
        self.dims.iter().product()
    }

    /// The push constants, y filled with `fill` outside x.
    ///
    /// # Panics
    /// Past [`MAX_RANK`] dimensions, or where a count overflows `i32`.
    pub fn push(&self, fill: f32) -> pad_copy::PushConstants {
        pad_copy::PushConstants {
            n: to_i32(self.elements()),
            rank: to_i32(self.dims.len()),
            src_off: 0,
            fill,
            dims: right_aligned(&self.dims, 1),
            src_stride: right_aligned(&contiguous_strides(&self.src_dims), 0),
            before: right_aligned(&self.before, 0),
            src_dims: right_aligned(&self.src_dims, 1),
        }
    }

    /// The grid for workgroup `local` ([`flat_grid`]).
    pub fn grid(&self, local: [u32; 3]) -> [u32; 3] {
        flat_grid(self.elements(), local)
    }
}

/// `v` as the kernels' `int`.
fn to_i32(v: usize) -> i32 {
    i32::try_from(v).expect("a count or offset within i32 (the operations check)")
}

/// `v` in the last `v.len()` of [`MAX_RANK`] slots, `fill` before it (the kernels read the
/// last `rank` slots).
fn right_aligned(v: &[usize], fill: i32) -> [i32; MAX_RANK] {
    assert!(v.len() <= MAX_RANK, "at most {MAX_RANK} dimensions");
    let mut out = [fill; MAX_RANK];
    for (o, &x) in out[MAX_RANK - v.len()..].iter_mut().zip(v) {
        *o = to_i32(x);
    }
    out
}
