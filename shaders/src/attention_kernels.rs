//! The attention kernels: [`attention`] and [`attention4`] (flash attention, one query row per
//! workgroup, every float variant, prompt or decode; with `split` its keys shared between workgroups and
//! [`attention_combine`] merging them), [`attention_cm`] (flash attention on cooperative
//! matrices, a block of query rows per workgroup, for prompts) and [`attention_cm2`] (the same
//! on workgroup-scope matrices). [`AttentionShape`] gives their grids and push constants, and
//! records the two matrix kernels.

use crate::cm2::workgroup_offers;
use vkprism::{CommandError, CommandList, Pipeline, Tensor};

vkprism::compute_shader! {
    /// The two row kernels, one module each (re-exported at the crate's root): the quad one
    /// takes the scalar one's constants types (one set of push constants for both).
    pub mod attention_rows,
    // Values are read one at a time where rows are not quads, which a packed format can't do.
    variants: [fp32_sg, fp32_nosg, fp16s_sg, fp16s_nosg, fp16sa_sg, fp16sa_nosg, bf16s_sg, bf16s_nosg],
    shaders: {
        /// `o = softmax(scale · q·Kᵀ) · V` per query row and head, the softmax computed online
        /// in fp32 (no score matrix in memory), q and o `[batch, sq, hq, d]`, k and v
        /// `[batch, skv, hkv, d]` (rows `q_stride`, `kv_stride`, `o_stride` elements apart);
        /// query head h reads key/value head `h / (hq / hkv)`; with `causal` (constant 0) query
        /// i sees keys `j <= i + offset`. `d` at most 256. One workgroup of 64 per (row, head)
        /// and share of the keys: grid x is `splits` workgroups; with `split` (constant 1) each
        /// writes its unnormalized share to `part` (`[rows, splits, d + 2]` F32) for
        /// [`attention_combine`](crate::attention_combine), otherwise `o` (then `splits` must be
        /// 1; `part` is unread, bind any F32 tensor). With `split` and `combine_last`
        /// (constant 3) the row's last workgroup to finish merges its shares into `o` itself:
        /// `count` holds an I32 zero per row (zero again after the dispatch; unread without
        /// `combine_last`, bind any I32 tensor). Variants: `fp32`, `fp16s`, `fp16sa`, `bf16s`,
        /// each `_sg` and `_nosg`.
        attention: { path: "attention.comp" },
        /// [`attention`](crate::attention) with K and V read as quads: `d` and `kv_stride`
        /// multiples of 4 (so k and v hold whole quads).
        attention4: {
            path: "attention.comp",
            define: [("VKPRISM_QUADS", "1")],
            share: [attention::SpecConstants, attention::PushConstants],
        },
        /// [`attention`](crate::attention)'s operation, layouts, push constants and partial
        /// results for few query rows (decode): one workgroup of 256 per key/value head, up to
        /// 8 of the query heads reading it, query row and share of the keys, so each key and
        /// value is read once per workgroup. `D` (constant 3) is the head dimension, a
        /// multiple of 4 up to 256 (equal to the push constant `d`); every row stride a
        /// multiple of 4. Grid [`AttentionShape::grouped_grid`](crate::AttentionShape::grouped_grid).
        attention_grouped: {
            path: "attention_grouped.comp",
            share: [attention::PushConstants],
        },
        /// [`attention`](crate::attention)'s operation, layouts and push constants for few
        /// query rows (decode): one large workgroup (the operation layer's: 512 invocations)
        /// per query row and head over all of its keys, every 16-byte load of a chunk of keys
        /// issued at once, so no second pass follows. With `split` (constant 4) the keys are
        /// shared between `splits` workgroups of whole chunks, each writing its unnormalized
        /// share to `part` (`[rows, splits, d + 2]` F32) and counting itself done in `count`
        /// (an I32 zero per row, zero again after the dispatch), the row's last merging into
        /// `o`; without it both are unread (bind any F32 and I32 tensors). `D` (constant 2) is
        /// the head dimension, a multiple of 8 from 32 to 256 (equal to the push constant
        /// `d`); every row stride a multiple of 8; `KPI` (constant 3) keys per invocation and
        /// chunk, 1 to min(4, D / 8); a workgroup of at least D / 8 invocations. Grid
        /// [`AttentionShape::decode_grid`](crate::AttentionShape::decode_grid).
        attention_decode: {
            path: "attention_decode.comp",
            share: [attention::PushConstants],
        },
    },
}

pub use attention_rows::{attention, attention4, attention_decode, attention_grouped};

vkprism::compute_shader! {
    /// The second pass of a split [`attention`]: each row's shares merged by their maxima and
    /// sums into `o`. One workgroup of 64 per row (rows over grid y and z, as the row kernels),
    /// in the first pass's variant: `fp32`, `fp16s`, `fp16sa`, `bf16s`, each `_sg` and `_nosg`.
    pub mod attention_combine,
    path: "attention_combine.comp",
}

vkprism::compute_shader! {
    /// The two flash attention kernels on matrices, for prompts, one module each (re-exported
    /// at the crate's root), sharing one push-constants type (one value serves both).
    pub mod attention_matrix_kernels,
    variants: [fp16s_cm, fp16sa_cm],
    shaders: {
    /// Flash attention on 16×16×16 fp16 cooperative matrices: [`attention`](crate::attention)'s
    /// operation and layouts for a block of `16 · subgroups` query rows per workgroup, `D`
    /// (constant 1) the head dimension, a multiple of 16 up to 256, every row stride a multiple
    /// of 8; `subgroup_size` (constant 2) the device's; a workgroup of 128 or 256 (up to `D` =
    /// 128). Each block's keys may be split into shares of `share_keys` keys (push constants
    /// `share_keys`, a multiple of 32, and `shares`, workgroups a block:
    /// [`KeyShares`](crate::KeyShares)): each share writes its unnormalized output, maxima and
    /// sums to `part`, counts itself done in `count`, and the block's last share merges them
    /// into `o` ([`CmSplit`](crate::CmSplit)). Grid
    /// [`AttentionShape::cm_grid`](crate::AttentionShape::cm_grid). Variants: `fp16s_cm`,
    /// `fp16sa_cm`.
        attention_cm: { path: "attention_cm.comp" },
    /// Flash attention on `VK_NV_cooperative_matrix2`'s workgroup-scope matrices:
    /// [`attention`](crate::attention)'s operation and layouts for a block of `BR` query rows per
    /// workgroup (one fp16 matrix of Q, one fp32 accumulator of O), the keys `BC` at a time,
    /// every operand staged through shared memory by the kernel. `D` (constant 1) the head
    /// dimension, a multiple of 16 up to 256; every row stride a multiple of 8; `BR` and `BC`
    /// (constants 2 and 3) multiples of the device's workgroup-scope granularity for the
    /// workgroup it runs in. Grid [`AttentionShape::cm_grid`](crate::AttentionShape::cm_grid)
    /// with `rows` = `BR`. Variants: `fp16s_cm`, `fp16sa_cm`, which need what
    /// [`gemm_cm2`](crate::gemm_cm2)'s do, and besides `cooperativeMatrixReductions` and
    /// `cooperativeMatrixConversions`.
        attention_cm2: {
            path: "attention_cm2.comp",
            // glslang compiles GL_NV_cooperative_matrix2 only for SPIR-V 1.6 (Vulkan 1.3).
            vulkan_version: "1.3",
            share: [attention_cm::PushConstants],
        },
    },
}

pub use attention_matrix_kernels::{attention_cm, attention_cm2};

/// One attention problem: the sizes and strides every attention kernel's push constants hold.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct AttentionShape {
    /// Independent sequences.
    pub batch: usize,
    /// Query rows per sequence.
    pub sq: usize,
    /// Keys (and values) per sequence.
    pub skv: usize,
    /// Query heads.
    pub hq: usize,
    /// Key/value heads (dividing `hq`).
    pub hkv: usize,
    /// The head dimension.
    pub d: usize,
}

/// Rows per z slice of a per-row grid, as `ROWS_Y` in rows.glsl and attention_combine.comp.
const ROWS_Y: usize = 32768;

impl AttentionShape {
    /// Query rows over all heads and sequences: `batch · sq · hq`.
    pub fn rows(&self) -> usize {
        self.batch * self.sq * self.hq
    }

    /// The causal offset of a prompt at the end of the keys: `skv - sq`.
    pub fn causal_offset(&self) -> i32 {
        self.skv as i32 - self.sq as i32
    }

    /// How many workgroups share one row's keys in [`attention`] so that about `target`
    /// workgroups run: 1 when the rows alone reach it, at most one per 64 keys.
    pub fn splits_for(&self, target: usize) -> usize {
        target
            .div_ceil(self.rows())
            .clamp(1, self.skv.div_ceil(64).max(1))
    }

    /// Whether [`attention4`] takes the problem (K and V rows of whole quads): d a multiple of 4.
    pub fn quads(&self) -> bool {
        self.d.is_multiple_of(4)
    }

    /// [`attention`]'s grid for `splits` shares per row (workgroups of 64).
    pub fn grid(&self, splits: usize) -> [u32; 3] {
        let rows = self.rows();
        [
            64 * splits as u32,
            rows.min(ROWS_Y) as u32,
            rows.div_ceil(ROWS_Y).max(1) as u32,
        ]
    }

    /// [`attention_grouped`]'s grid (workgroups of 256) for `splits` shares per (query row,
    /// key/value head, set of up to 8 of its query heads).
    pub fn grouped_grid(&self, splits: usize) -> [u32; 3] {
        let head_sets = (self.hq / self.hkv).div_ceil(8);
        [
            256 * splits as u32,
            (self.hkv * head_sets) as u32,
            (self.batch * self.sq) as u32,
        ]
    }

    /// Whether [`attention_decode`] takes the problem: a head dimension that is a multiple of
    /// 8 from 32 to 256 (so every row stride a multiple of 8).
    pub fn octets(&self) -> bool {
        self.d.is_multiple_of(8) && (32..=256).contains(&self.d)
    }

    /// [`attention_decode`]'s keys a chunk in workgroups of `invocations` with `kpi` keys an
    /// invocation: a row of `d / 8` octets, an invocation an octet.
    pub fn decode_chunk(&self, invocations: usize, kpi: usize) -> usize {
        invocations / (self.d / 8).max(1) * kpi
    }

    /// [`attention_decode`]'s grid in workgroups of `invocations`: one per query row, head and
    /// share of the keys (`splits` 1: one share, the kernel without `split`).
    pub fn decode_grid(&self, invocations: u32, splits: usize) -> [u32; 3] {
        let [_, rows, slices] = self.grid(1);
        [invocations * splits as u32, rows, slices]
    }

    /// [`attention_combine`]'s grid (workgroups of 64).
    pub fn combine_grid(&self) -> [u32; 3] {
        self.grid(1)
    }

    /// [`attention_cm`]'s and [`attention_cm2`]'s grid for their workgroup of `threads`
    /// invocations covering `rows` query rows, `shares` workgroups a block.
    pub fn cm_grid(&self, threads: u32, rows: usize, shares: usize) -> [u32; 3] {
        [
            (self.sq.div_ceil(rows) * shares) as u32 * threads,
            self.hq as u32,
            self.batch as u32,
        ]
    }

    /// Blocks of `rows` query rows over every head and sequence: the counters a split
    /// [`attention_cm`] pass needs.
    pub fn cm_blocks(&self, rows: usize) -> usize {
        self.batch * self.hq * self.sq.div_ceil(rows)
    }

    /// [`attention_cm`]'s split of each block of `rows` query rows into shares of `keys`
    /// keys (a multiple of the kernel's 32 keys a step), `offset` the causal offset where
    /// `causal`: as many shares a block as the block that sees the most keys needs.
    pub fn cm_key_shares(&self, rows: usize, causal: bool, offset: i32, keys: usize) -> KeyShares {
        KeyShares {
            keys,
            count: self
                .cm_keys_seen(rows, causal, offset)
                .div_ceil(keys.max(1))
                .max(1),
        }
    }

    /// [`attention_cm`]'s blocks unsplit: one share of all the keys.
    pub fn cm_unsplit(&self) -> KeyShares {
        KeyShares {
            keys: self.skv.max(1),
            count: 1,
        }
    }

    /// The most keys a block of `rows` query rows sees (its last block's, where `causal` with
    /// `offset`).
    pub fn cm_keys_seen(&self, rows: usize, causal: bool, offset: i32) -> usize {
        if !causal {
            return self.skv;
        }
        let last_block_end = (self.sq.div_ceil(rows) * rows) as i64 + offset as i64;
        last_block_end.clamp(0, self.skv as i64) as usize
    }

    /// The shape of a split [`attention_cm`] pass's partial results for blocks of `rows`
    /// query rows: per share, its unnormalized output, then its rows' maxima and sums.
    pub fn cm_part_shape(&self, rows: usize, shares: KeyShares) -> [usize; 2] {
        [self.cm_blocks(rows) * shares.count, rows * (self.d + 2)]
    }

    /// The shape of [`attention`]'s partial results for `splits` shares.
    pub fn part_shape(&self, splits: usize) -> [usize; 3] {
        [self.rows(), splits, self.d + 2]
    }

    /// [`attention`]'s push constants for contiguous operands.
    pub fn push(&self, scale: f32, offset: i32, splits: usize) -> attention::PushConstants {
        attention::PushConstants {
            batch: self.batch as i32,
            sq: self.sq as i32,
            skv: self.skv as i32,
            hq: self.hq as i32,
            hkv: self.hkv as i32,
            d: self.d as i32,
            q_stride: (self.hq * self.d) as i32,
            kv_stride: (self.hkv * self.d) as i32,
            o_stride: (self.hq * self.d) as i32,
            offset,
            scale,
            splits: splits as i32,
        }
    }

    /// Whether `device` lists [`attention_cm2`]'s products for `tiles` (query rows, keys a
    /// step, invocations) at this head dimension — S = Q·Kᵀ, the row sums (P times ones) and
    /// O += P·V into fp32, O converted to fp16 — and holds what it stages in shared memory
    /// ([`Self::cm2_shared_bytes`]).
    pub fn cm2_offered(&self, device: &vkprism::DeviceFeatures, tiles: [u32; 3]) -> bool {
        use vkprism::ScalarKind::{F16, F32};
        let [rows, keys, threads] = tiles;
        let d = self.d as u32;
        let offer = |mnk, result| workgroup_offers(device, mnk, (F16, result, result), threads);
        let fits =
            self.cm2_shared_bytes(rows, keys) <= device.limits.max_compute_shared_memory_size;
        fits && offer((rows, keys, d), F32)
            && offer((rows, d, keys), F32)
            && offer((rows, keys, keys), F32)
            && offer((rows, d, keys), F16)
    }

    /// [`attention_cm2`]'s shared memory for blocks of `rows` queries at `keys` a step: rows of
    /// `d` halves, each padded by one octet, as many as the larger of what is staged at once —
    /// the K and V tiles (`keys` rows each), Q's and O's blocks (as the kernel declares it).
    pub fn cm2_shared_bytes(&self, rows: u32, keys: u32) -> u32 {
        rows.max(2 * keys) * (self.d as u32 / 8 + 1) * 16
    }

    /// [`attention_combine`]'s push constants for `splits` shares.
    pub fn combine_push(&self, splits: usize) -> attention_combine::PushConstants {
        attention_combine::PushConstants {
            rows: self.rows() as i32,
            hq: self.hq as i32,
            d: self.d as i32,
            o_stride: (self.hq * self.d) as i32,
            splits: splits as i32,
        }
    }

    /// Records [`attention_cm`] on `pipe` over contiguous `[q, k, v, o]`, its workgroups of
    /// `threads` invocations covering `rows` query rows each, each block's keys split as
    /// `split` says (one share a block: not split, its part and counts unread).
    pub fn record_cm(
        &self,
        list: &mut CommandList,
        pipe: &Pipeline<attention_cm::Kernel>,
        [q, k, v, o]: [&Tensor; 4],
        (scale, offset): (f32, i32),
        (threads, rows): (u32, usize),
        split: &CmSplit,
    ) -> Result<(), CommandError> {
        let bindings = attention_cm::BufferBindings {
            q_blob: q,
            k_blob: k,
            v_blob: v,
            o_blob: o,
            part_blob: split.part,
            count_blob: split.counts,
        };
        let grid = self.cm_grid(threads, rows, split.shares.count);
        let push = self.cm_push(scale, offset, split.shares);
        list.dispatch(pipe, &bindings, &push, grid)
    }

    /// Records [`attention_cm2`] likewise.
    pub fn record_cm2(
        &self,
        list: &mut CommandList,
        pipe: &Pipeline<attention_cm2::Kernel>,
        [q, k, v, o]: [&Tensor; 4],
        (scale, offset): (f32, i32),
        (threads, rows): (u32, usize),
    ) -> Result<(), CommandError> {
        let bindings = attention_cm2::BufferBindings {
            q_blob: q,
            k_blob: k,
            v_blob: v,
            o_blob: o,
        };
        let grid = self.cm_grid(threads, rows, 1);
        let push = self.cm_push(scale, offset, self.cm_unsplit());
        list.dispatch(pipe, &bindings, &push, grid)
    }

    /// [`attention_cm`]'s and [`attention_cm2`]'s push constants for contiguous operands and
    /// `shares` ([`attention_cm2`] does not read them).
    pub fn cm_push(
        &self,
        scale: f32,
        offset: i32,
        shares: KeyShares,
    ) -> attention_cm::PushConstants {
        attention_cm::PushConstants {
            batch: self.batch as i32,
            sq: self.sq as i32,
            skv: self.skv as i32,
            hq: self.hq as i32,
            hkv: self.hkv as i32,
            q_stride: (self.hq * self.d) as i32,
            kv_stride: (self.hkv * self.d) as i32,
            o_stride: (self.hq * self.d) as i32,
            offset,
            scale,
            share_keys: shares.keys.max(1) as i32,
            shares: shares.count as i32,
        }
    }
}

/// How [`attention_cm`] splits each block's keys between workgroups
/// ([`AttentionShape::cm_key_shares`]).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct KeyShares {
    /// Keys a share.
    pub keys: usize,
    /// Workgroups a block.
    pub count: usize,
}

/// A split [`attention_cm`] pass's scratch: `part` (F32, at least
/// [`AttentionShape::cm_part_shape`]) and `counts` (an I32 zero per block,
/// [`AttentionShape::cm_blocks`], zero again after the pass). Unsplit, neither is read.
pub struct CmSplit<'a> {
    /// How the blocks' keys are split.
    pub shares: KeyShares,
    /// The shares' partial results.
    pub part: &'a Tensor,
    /// The blocks' counts of shares done.
    pub counts: &'a Tensor,
}

#[cfg(test)]
mod tests {
    use super::*;
    use vkprism::{CoopMatShape, DeviceFeatures, FeatureSet, ScalarKind, WorkgroupMatrixShape};

    /// fp16 products into `c` at granularity 32×32×16 in workgroups of 256 (the H100's).
    fn family(c: ScalarKind) -> WorkgroupMatrixShape {
        let granularity = CoopMatShape {
            m: 32,
            n: 32,
            k: 16,
            a: ScalarKind::F16,
            b: ScalarKind::F16,
            c,
            result: c,
        };
        WorkgroupMatrixShape {
            granularity,
            workgroup_invocations: 256,
        }
    }

    #[test]
    fn cm2_tiles_are_offered_only_with_every_product_at_their_workgroup_size() {
        let s = |d| AttentionShape {
            batch: 1,
            sq: 2048,
            skv: 2048,
            hq: 32,
            hkv: 32,
            d,
        };
        let mut device = DeviceFeatures::new(FeatureSet::all());
        device.workgroup_matrices = [family(ScalarKind::F32), family(ScalarKind::F16)]
            .into_iter()
            .collect();
        // The H100's shared memory: 128 staged rows (Q's block, or the K and V tiles of 64
        // keys) fit up to d 184, at fewer keys a step too.
        device.limits.max_compute_shared_memory_size = 49152;
        assert!(s(128).cm2_offered(&device, [128, 64, 256]));
        assert!(s(128).cm2_offered(&device, [128, 32, 256]));
        assert!(!s(256).cm2_offered(&device, [128, 64, 256]));
        assert!(!s(256).cm2_offered(&device, [128, 32, 256]));
        device.limits.max_compute_shared_memory_size = 32768;
        assert!(!s(128).cm2_offered(&device, [128, 64, 256]));
        device.limits.max_compute_shared_memory_size = 49152;
        // O's columns (d) and the keys must fill the granularity; the workgroup must match.
        assert!(!s(48).cm2_offered(&device, [128, 64, 256]));
        assert!(!s(128).cm2_offered(&device, [128, 48, 256]));
        assert!(!s(128).cm2_offered(&device, [128, 64, 128]));
        // Without fp16 results O can't be stored.
        device.workgroup_matrices = [family(ScalarKind::F32)].into_iter().collect();
        assert!(!s(128).cm2_offered(&device, [128, 64, 256]));
    }
}
