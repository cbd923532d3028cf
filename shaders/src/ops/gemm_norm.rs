//! [`Ops::gemm_rms_norm`]: a GEMM whose result is also written RMS-normalized row by row — a
//! decoder's residual projection and its next layer's normed input, one pass fewer where the
//! GEMM splits along K on [`gemm_cm2`](crate::gemm_cm2).

use super::check::{not_aliased, same_format, shape_is};
use super::gemm::{check_gemm, Epilogue, GemmDims};
use super::gemm_cm2::operands;
use super::{OpError, Ops};
use crate::{Cm2Tiles, Gemm, SPLIT_REDUCE_RMS_MAX_ROWS};
use vkprism::{CommandList, Tensor};

const OP: &str = "gemm_rms_norm";

impl Ops {
    /// Records [`Ops::gemm`] (`c = act(alpha · op(a) · op(b) + beta · c + bias)`, the same
    /// operands and checks), then `h = c / sqrt(mean(c²) + eps)` along c's rows (RMS norm
    /// without a weight, of c's values as stored: [`Ops::rms_norm`] of `c` with no `gamma`).
    /// `h` has c's shape and format and shares no memory with any other operand. Where the
    /// GEMM is one product split along K on [`gemm_cm2`](crate::gemm_cm2) — its narrow tiles
    /// made split ones for this ([`Cm2Tiles::with_row_pass`]) — the split's second pass
    /// writes `h` as well ([`gemm_split_reduce_rms`](crate::gemm_split_reduce_rms)): one
    /// dispatch fewer. Otherwise the GEMM, then [`Ops::rms_norm`]. Nothing is recorded when a
    /// check fails.
    #[allow(clippy::too_many_arguments)]
    pub fn gemm_rms_norm(
        &self,
        list: &mut CommandList,
        a: &Tensor,
        b: &Tensor,
        bias: Option<&Tensor>,
        c: &Tensor,
        op: &Gemm,
        h: &Tensor,
        eps: f32,
    ) -> Result<(), OpError> {
        let d = check_gemm(a, b, bias, c, op)?;
        shape_is(OP, "h", h, c.shape(), "c's shape")?;
        same_format(OP, "h", Some(h), d.format)?;
        let inputs = [
            ("a", Some(a)),
            ("b", Some(b)),
            ("bias", bias),
            ("c", Some(c)),
        ];
        not_aliased(OP, h, "h", &inputs)?;
        if let Some((kernel, tiles)) = self.gemm_cm2_plan(&d, (a, b), op) {
            let tiles = self.row_pass_tiles(tiles, &d, op);
            if tiles.split_k > 1 && d.m <= SPLIT_REDUCE_RMS_MAX_ROWS {
                let epilogue = Epilogue::of_gemm(bias, op).with_rms(h, eps);
                return self.gemm_cm2_split(list, &kernel, &tiles, &d, (a, b, c), op, &epilogue);
            }
        }
        self.gemm(list, a, b, bias, c, op)?;
        self.rms_norm(list, c, None, h, eps)
    }

    /// `tiles` made split ones by [`Cm2Tiles::with_row_pass`] for one product `d` (`op`'s),
    /// where the device offers those and not every load of theirs clamps; else `tiles`.
    fn row_pass_tiles(&self, tiles: Cm2Tiles, d: &GemmDims, op: &Gemm) -> Cm2Tiles {
        let split = tiles.with_row_pass((d.m, d.k));
        let offered = split.offered_by(self.context().features(), operands(d.format));
        let transposes = (op.transpose_a, op.transpose_b);
        let clamps = split.clamps_every_load((d.m, d.n, d.k), transposes);
        match d.batch == 1 && offered && !clamps {
            true => split,
            false => tiles,
        }
    }
}
