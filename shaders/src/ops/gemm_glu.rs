//! [`Ops::gemm_glu`]: a SwiGLU MLP's gate and up projections and its gate, one pass on
//! [`gemm_cm2_glu`] where the device has workgroup-scope matrices, else [`Ops::gemm`] into a
//! scratch matrix and [`Ops::glu`].

use super::check::{float_format, not_aliased, same_format, shape_is};
use super::gemm_cm2::{operands, CM2_MIN_PRODUCT};
use super::{pipeline, recorded, scratch, OpError, Ops};
use crate::{gemm_cm2, gemm_cm2_glu, Activation, Cm2Tiles, Gemm, GEMM_CM2_THREADS};
use std::sync::Arc;
use vkprism::{CommandList, LoadedKernel, Tensor, TensorFormat};

const OP: &str = "gemm_glu";

/// [`gemm_cm2_glu`]'s tiles: 128×64 of both products (the registers of a 128×128 tile of the
/// plain GEMM), 64 deep, 8 steps unrolled, the sizes fixed.
const GLU_TILES: Cm2Tiles = Cm2Tiles {
    bm: 128,
    bn: 64,
    bk: 64,
    unroll: 8,
    fixed_sizes: true,
    threads: GEMM_CM2_THREADS,
    split_k: 1,
};

/// The narrow tiles a grid of [`GLU_TILES`] may end in ([`glu_narrow_from`]): 32 outputs wide.
const NARROW_TILES: Cm2Tiles = Cm2Tiles {
    bn: 32,
    ..GLU_TILES
};

/// Where the grid of [`gemm_cm2_glu`]'s tiles ([`Ops::gemm_glu`]'s: 128 rows by 64 outputs)
/// for an `m`×`n` result is more than one wave of workgroups but less than two (the second
/// would hold few) on a GPU of `sms` multiprocessors (a wave: two workgroups on each, as each
/// holds about half an SM's registers), the column of tiles from which they are 32 wide
/// instead (twice as many, half the work each): the wide ones then fill about 85% of one wave
/// and the narrow ones the rest and the second. `None` where the grid is one wave, or where
/// the narrow tiles would make it more than two (a third wave costs more than the narrow
/// tiles save). The fraction is the best of those measured on the H100, the bound what the
/// H200 measured (BENCHMARKS.md).
pub fn glu_narrow_from(m: usize, n: usize, sms: usize) -> Option<u32> {
    let wave = 2 * sms;
    let rows = m.div_ceil(GLU_TILES.bm as usize);
    let cols = n.div_ceil(GLU_TILES.bn as usize);
    if rows * cols <= wave {
        return None;
    }
    let wide = wave * 85 / 100 / rows;
    if wide == 0 || wide >= cols {
        return None;
    }
    let narrow = (n - wide * GLU_TILES.bn as usize).div_ceil(NARROW_TILES.bn as usize);
    (rows * (wide + narrow) <= 2 * wave).then_some(wide as u32)
}

impl Ops {
    /// Records `y = act(x·W_gateᵀ) · (x·W_upᵀ)` into `list` for x `[m, k]`, w `[2n, k]` whose
    /// rows 2i and 2i + 1 are output i's gate and up rows (a decoder's gate/up weights as
    /// stored), y `[m, n]`; one float format, `y` neither x nor w. On [`gemm_cm2_glu`] (one
    /// dispatch, the `[m, 2n]` products never stored) where the device offers its tiles for
    /// F16 or Bf16, k and n multiples of 8, at least [`CM2_MIN_PRODUCT`] multiply-adds and
    /// loads that need not all clamp ([`Cm2Tiles::glu_clamps_every_load`]: m at least 128, n
    /// and k multiples of its tiles) (its last columns of tiles narrow where [`glu_narrow_from`]
    /// says);
    /// otherwise [`Ops::gemm`] into a scratch matrix, then [`Ops::glu`]. Nothing is recorded
    /// when a check fails.
    pub fn gemm_glu(
        &self,
        list: &mut CommandList,
        x: &Tensor,
        w: &Tensor,
        y: &Tensor,
        act: Activation,
    ) -> Result<(), OpError> {
        let (m, n, k) = check_gemm_glu(x, w, y)?;
        let format = float_format(OP, "x", x)?;
        same_format(OP, "w", Some(w), format)?;
        same_format(OP, "y", Some(y), format)?;
        not_aliased(OP, y, "y", &[("x", Some(x)), ("w", Some(w))])?;
        if let Some(kernel) = self.gemm_glu_kernel(format, (m, n, k)) {
            return self.gemm_glu_fused(list, &kernel, [x, w, y], act, (m, n, k));
        }
        let pairs = scratch(list, &self.ctx, OP, &[m, 2 * n], format, &[x, w])?;
        let gemm = Gemm::new().with_transpose_b(true);
        let result = self
            .gemm(list, x, w, None, &pairs, &gemm)
            .and_then(|()| self.glu(list, &pairs, y, act));
        list.release_scratch(&pairs);
        result
    }

    /// [`gemm_cm2_glu`] where it takes the problem on this device.
    fn gemm_glu_kernel(
        &self,
        format: TensorFormat,
        (m, n, k): (usize, usize, usize),
    ) -> Option<Arc<LoadedKernel<gemm_cm2_glu::Kernel>>> {
        let matrices = matches!(format, TensorFormat::F16 | TensorFormat::Bf16);
        let eights = k.is_multiple_of(8) && n.is_multiple_of(8);
        let large = m * 2 * n * k >= CM2_MIN_PRODUCT;
        let offered = GLU_TILES.offered_by(self.context().features(), operands(format));
        let unclamped = !GLU_TILES.glu_clamps_every_load((m, n, k));
        if !(matrices && eights && large && offered && unclamped) {
            return None;
        }
        self.kernel_for::<gemm_cm2_glu::Kernel>(OP, "a_blob", format, true)
            .ok()
    }

    fn gemm_glu_fused(
        &self,
        list: &mut CommandList,
        kernel: &Arc<LoadedKernel<gemm_cm2_glu::Kernel>>,
        [x, w, y]: [&Tensor; 3],
        act: Activation,
        (m, n, k): (usize, usize, usize),
    ) -> Result<(), OpError> {
        let (mut spec, push) = gemm_glu_constants(&GLU_TILES, (m, n, k), act);
        let grid = self.glu_grid(&mut spec, (m, n), x.format());
        let bindings = gemm_cm2_glu::BufferBindings {
            a_blob: x,
            b_blob: w,
            // Declared by the file the kernel shares with gemm_cm2, never read: any tensor.
            bias_blob: x,
            c_blob: y,
        };
        let pipe = pipeline(OP, kernel, &spec, Some(GLU_TILES.local_size()))?;
        recorded(OP, list.dispatch(&pipe, &bindings, &push, grid))
    }

    /// [`GLU_TILES`]' grid for an `m`×`n` result, its last columns of tiles narrow where
    /// [`glu_narrow_from`] says so and the device offers those tiles (`spec` told which).
    fn glu_grid(
        &self,
        spec: &mut gemm_cm2::SpecConstants,
        (m, n): (usize, usize),
        format: TensorFormat,
    ) -> [u32; 3] {
        let mut grid = GLU_TILES.grid(m, n, 1);
        let features = self.context().features();
        let offered = |_: &u32| NARROW_TILES.offered_by(features, operands(format));
        if let Some(from) = glu_narrow_from(m, n, self.multiprocessors()).filter(offered) {
            spec.narrow_from = from as i32;
            spec.narrow_bn = NARROW_TILES.bn as i32;
            let rest = n - from as usize * GLU_TILES.bn as usize;
            let narrow = rest.div_ceil(NARROW_TILES.bn as usize) as u32;
            grid[0] = (from + narrow) * GLU_TILES.threads;
        }
        grid
    }
}

/// [`gemm_cm2_glu`]'s specialization and push constants for x `[m, k]`, w `[2n, k]` (B read
/// transposed) on `tiles`, `act` the gate's activation: what [`Ops::gemm_glu`] records with
/// its own tiles.
pub fn gemm_glu_constants(
    tiles: &Cm2Tiles,
    (m, n, k): (usize, usize, usize),
    act: Activation,
) -> (gemm_cm2::SpecConstants, gemm_cm2::PushConstants) {
    let (activation, slope) = act.code();
    let epilogue = gemm_cm2::SpecConstants {
        transpose_b: 1,
        activation,
        ..Default::default()
    };
    let push = gemm_cm2::PushConstants {
        M: m as i32,
        N: n as i32,
        K: k as i32,
        alpha: 1.0,
        slope,
        batch_a: 0,
        batch_b: 0,
        batch_c: 0,
        beta: 0.0,
    };
    (tiles.glu_spec((m, n, k), epilogue), push)
}

/// `(m, n, k)` of x `[m, k]`, w `[2n, k]` and y `[m, n]`.
fn check_gemm_glu(x: &Tensor, w: &Tensor, y: &Tensor) -> Result<(usize, usize, usize), OpError> {
    let [m, k] = *x.shape() else {
        return Err(OpError::Shape {
            op: OP,
            operand: "x",
            got: x.shape().to_vec(),
            want: "[m, k]".into(),
        });
    };
    let n = w.shape().first().copied().unwrap_or(0) / 2;
    if n == 0 || w.shape() != [2 * n, k] {
        return Err(OpError::Shape {
            op: OP,
            operand: "w",
            got: w.shape().to_vec(),
            want: format!("[2n, {k}]: gate/up rows side by side"),
        });
    }
    shape_is(OP, "y", y, &[m, n], "[m, n]: x's rows, w's rows halved")?;
    Ok((m, n, k))
}
