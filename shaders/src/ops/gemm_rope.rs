//! [`Ops::gemm_rope_qkv`]: a decoder prompt's fused query, key and value projection rotated
//! and placed into q and the KV cache in one pass on [`gemm_cm2_rope`] where the device has
//! workgroup-scope matrices, else [`Ops::gemm`] into a scratch matrix and [`Ops::rope_qkv`].

use super::check::{float_format, placed_apart, same_format, shape_is};
use super::gemm::GemmDims;
use super::rope::{check_placement, placement_shape};
use super::{pipeline, recorded, scratch, OpError, Ops};
use crate::{
    gemm_cm2, gemm_cm2_rope, Cm2Tiles, Gemm, Rope, RopeFrequencies, RopeQkvShape, RopeStyle,
};
use std::sync::Arc;
use vkprism::{CommandList, LoadedKernel, Tensor};

const OP: &str = "gemm_rope_qkv";

/// The largest tile [`gemm_cm2_rope`] stages in shared memory, in bytes. On the H100 the
/// fused pass beat the GEMM and the placement with tiles of 10 to 14 KiB (64×80 to 64×112)
/// but ran 3 to 4 times slower with 128×128 tiles (32 KiB), where the GEMM's driver-staged
/// loads share the workgroup's 48 KiB with it (what the driver does then was not measured;
/// BENCHMARKS.md).
const STAGED_TILE_BYTES: usize = 16 << 10;

impl Ops {
    /// Records `q, k_cache, v_cache ← rope_qkv(x · wᵀ)` into `list`: x `[tokens, k]`, w
    /// `[(hq + 2·hkv) · head_dim, k]` (the fused projection's rows: query heads, then key
    /// heads, then value heads), q `[tokens, hq, head_dim]`, the caches `[rows, hkv,
    /// head_dim]`; token t at position `op.position_offset + t`, which must fit the cache;
    /// `bias` (`[(hq + 2·hkv) · head_dim]`) added to each row where given. As [`Ops::gemm`] (B
    /// transposed) then [`Ops::rope_qkv`] compute it, the projection rounded to the format
    /// before it is turned. One pass on [`gemm_cm2_rope`] where [`Ops::gemm`] would take
    /// [`gemm_cm2`] unsplit on tiles of at most 16 KiB (the tile is staged in shared memory;
    /// larger ones ran slower than the two passes on the H100), the pairs are interleaved and
    /// head_dim a multiple of 8; otherwise those two operations, the projection in a scratch
    /// matrix. One float format; no output may be another operand.
    /// Nothing is recorded when a check fails.
    #[allow(clippy::too_many_arguments)]
    pub fn gemm_rope_qkv(
        &self,
        list: &mut CommandList,
        x: &Tensor,
        (w, bias): (&Tensor, Option<&Tensor>),
        q: &Tensor,
        k_cache: &Tensor,
        v_cache: &Tensor,
        op: &Rope,
    ) -> Result<(), OpError> {
        let s = check_gemm_rope(x, w, q, k_cache, v_cache)?;
        if let Some(b) = bias {
            shape_is(OP, "bias", b, &[s.width()], "[(hq + 2·hkv) · head_dim]")?;
        }
        let format = float_format(OP, "x", x)?;
        for (name, t) in [
            ("w", Some(w)),
            ("bias", bias),
            ("q", Some(q)),
            ("k_cache", Some(k_cache)),
            ("v_cache", Some(v_cache)),
        ] {
            same_format(OP, name, t, format)?;
        }
        let inputs = [("x", Some(x)), ("w", Some(w)), ("bias", bias)];
        placed_apart(OP, [q, k_cache, v_cache], &inputs)?;
        let offset = check_placement(OP, &s, op, true)?;
        let depth = x.shape()[1];
        if let Some((kernel, tiles)) = self.gemm_rope_plan(&s, depth, (x, w), op) {
            let push = rope_push(&s, depth, offset, &op.frequencies());
            let spec = tiles.spec(
                (s.tokens, s.width(), depth),
                gemm_cm2::SpecConstants {
                    transpose_b: 1,
                    bias_term: bias.is_some() as i32,
                    ..Default::default()
                },
            );
            let bindings = gemm_cm2_rope::BufferBindings {
                a_blob: x,
                b_blob: w,
                q_blob: q,
                k_blob: k_cache,
                v_blob: v_cache,
                // Unread without a bias (`bias_term` 0): x binds in its place.
                bias_blob: bias.unwrap_or(x),
            };
            let pipe = pipeline(OP, &kernel, &spec, Some(tiles.local_size()))?;
            let grid = tiles.grid(s.tokens, s.width(), 1);
            return recorded(OP, list.dispatch(&pipe, &bindings, &push, grid));
        }
        let qkv = scratch(list, &self.ctx, OP, &[s.tokens, s.width()], format, &[x, w])?;
        let gemm = Gemm::new().with_transpose_b(true);
        let result = self
            .gemm(list, x, w, bias, &qkv, &gemm)
            .and_then(|()| self.rope_qkv(list, &qkv, q, k_cache, v_cache, op, None));
        list.release_scratch(&qkv);
        result
    }

    /// [`gemm_cm2_rope`] and the tiles [`Ops::gemm`] would take for the projection, where the
    /// fused pass computes it (see [`Ops::gemm_rope_qkv`]).
    fn gemm_rope_plan(
        &self,
        s: &RopeQkvShape,
        depth: usize,
        (x, w): (&Tensor, &Tensor),
        op: &Rope,
    ) -> Option<(Arc<LoadedKernel<gemm_cm2_rope::Kernel>>, Cm2Tiles)> {
        let format = x.format();
        if op.style != RopeStyle::Interleaved || !s.dim.is_multiple_of(8) {
            return None;
        }
        let d = GemmDims {
            m: s.tokens,
            n: s.width(),
            k: depth,
            batch: 1,
            strides: [0; 3],
            format,
        };
        let gemm = Gemm::new().with_transpose_b(true);
        let (_, tiles) = self.gemm_cm2_plan(&d, (x, w), &gemm)?;
        let staged = (tiles.bm * tiles.bn) as usize * format.size();
        if tiles.split_k > 1 || staged > STAGED_TILE_BYTES {
            return None;
        }
        let kernel = self
            .kernel_for::<gemm_cm2_rope::Kernel>(OP, "a_blob", format, true)
            .ok()?;
        Some((kernel, tiles))
    }
}

/// [`gemm_cm2_rope`]'s push constants: the product's sizes and the placement's.
fn rope_push(
    s: &RopeQkvShape,
    depth: usize,
    offset: i32,
    freqs: &RopeFrequencies,
) -> gemm_cm2_rope::PushConstants {
    let placed = s.push(offset, freqs);
    gemm_cm2_rope::PushConstants {
        M: s.tokens as i32,
        N: s.width() as i32,
        K: depth as i32,
        alpha: 1.0,
        slope: 0.0,
        batch_a: 0,
        batch_b: 0,
        batch_c: 0,
        beta: 0.0,
        hq: placed.hq,
        hkv: placed.hkv,
        dim: placed.dim,
        rows: placed.rows,
        offset: placed.offset,
        log2_base: placed.log2_base,
        freq_factor: placed.freq_factor,
        freq_low: placed.freq_low,
        freq_high: placed.freq_high,
    }
}

/// The placement's shape from x `[tokens, k]`, w `[(hq + 2·hkv) · head_dim, k]`, q `[tokens,
/// hq, head_dim]` and the caches `[rows, hkv, head_dim]`, or the located mismatch.
fn check_gemm_rope(
    x: &Tensor,
    w: &Tensor,
    q: &Tensor,
    k_cache: &Tensor,
    v_cache: &Tensor,
) -> Result<RopeQkvShape, OpError> {
    let s = placement_shape(OP, q, k_cache, v_cache)?;
    let depth = x.shape().get(1).copied().unwrap_or(0);
    shape_is(OP, "x", x, &[s.tokens, depth], "[tokens, k]: q's tokens")?;
    let want = [s.width(), depth];
    shape_is(OP, "w", w, &want, "[(hq + 2·hkv) · head_dim, k]")?;
    Ok(s)
}
