//! [`Ops::attention`]: scaled dot-product attention ([`Attention`]), causal or not, with
//! grouped-query heads, for a prompt or for new tokens against a KV cache. The fp16 path on
//! devices with cooperative matrices is [`attention_cm`] (a block of query rows per workgroup,
//! the keys of each block split between workgroups where the blocks are few), or for long
//! prompts [`attention_cm2`] where the device has `VK_NV_cooperative_matrix2`;
//! for few query rows (decode), [`attention_decode`] (a workgroup per row and head over all its
//! keys, or over a longer cache a few workgroups each taking a share of them, the last merging
//! the row); everywhere else [`attention`] with the keys shared between
//! workgroups where the rows alone would leave the GPU idle, each row merged by its last share
//! to finish (or, for the grouped kernel and past [`COUNTED_ROWS`] rows, by
//! [`attention_combine`]).

use super::check::{float_format, not_aliased, position_buffer, same_format};
use super::{pipeline, recorded, scratch, OpError, Ops};
use crate::{
    attention, attention4, attention_cm, attention_cm2, attention_combine, attention_decode,
    attention_grouped, multiprocessors, AttentionShape, CmSplit, KeyShares,
};
use std::sync::Arc;
use vkprism::{Bindings, CommandList, Kernel, LoadedKernel, Tensor, TensorFormat, VariantKey};

const OP: &str = "attention";

/// `o = softmax(scale · q·Kᵀ + mask) · V`: what [`Ops::attention`] computes. Built with
/// [`Attention::new`] and the `with_*` setters.
#[derive(Copy, Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct Attention {
    /// The scores' scale (`None`: 1/√d).
    pub scale: Option<f32>,
    /// Query i of sq (the last sq of the skv positions) sees only keys `j <= i + skv - sq`.
    pub causal: bool,
}

impl Default for Attention {
    fn default() -> Self {
        Attention::new()
    }
}

impl Attention {
    /// Attention without a mask, scaled by 1/√d.
    pub fn new() -> Attention {
        Attention {
            scale: None,
            causal: false,
        }
    }
    /// This attention with the scores scaled by `scale`.
    pub fn with_scale(mut self, scale: f32) -> Attention {
        self.scale = Some(scale);
        self
    }
    /// This attention with the causal mask (`on`).
    pub fn with_causal(mut self, on: bool) -> Attention {
        self.causal = on;
        self
    }
}

/// Workgroups the split path aims for: enough keys in flight to keep a large GPU's memory busy.
const SPLIT_TARGET: usize = 2048;

/// Query rows (batch · sq) up to which [`attention_grouped`] takes a problem: decode.
const GROUPED_ROWS: usize = 4;

/// Keys from which [`attention_grouped`] takes a decode step [`attention_decode`] does not (a
/// head dimension not whole octets, or a cache past [`DECODE_SPLIT_MAX_CHUNKS`]): below them the
/// row kernel's workgroup per query head and 64 keys is as fast
/// (`vkprism-bench --cases attention_probe`; BENCHMARKS.md).
const GROUPED_MIN_KEYS: usize = 1024;

/// Query heads per key/value head from which [`attention_grouped`] takes a problem: with
/// fewer, its workgroup reads each key for few heads and the row kernel is faster (the `ops`
/// case's multi-head decode).
const GROUPED_MIN_HEADS: usize = 4;

/// Keys per share of [`attention_grouped`]: one chunk of its workgroup each (a share's chunks
/// run one after another, the shares side by side).
const GROUPED_SHARE: usize = 256;

/// [`attention_decode`]'s workgroup (or the device's largest power of two below it) and keys
/// an invocation: 512 × 4, against 256 × 4, 512 × 2 and 1024 × 2 or 4 (which spill) on the
/// H100 (`vkprism-bench --cases attention_probe`).
const DECODE_INVOCATIONS: u32 = 512;
const DECODE_KEYS_EACH: usize = 4;

/// Chunks of keys up to which [`attention_decode`] takes a decode step in one workgroup a row:
/// each chunk waits on memory once, one after another, which up to 5 is faster than the
/// split's shares and merge inside TinyLlama's decode step on the H200 (BENCHMARKS.md).
/// Beyond, up to [`DECODE_SPLIT_MAX_CHUNKS`], the keys are split into shares side by side
/// ([`decode_splits`]), the row's last share merging them.
const DECODE_MAX_CHUNKS: usize = 5;

/// Chunks of keys up to which a split [`attention_decode`] takes a decode step where
/// [`attention_grouped`] could (grouped-query heads): as far as it was measured faster than
/// that kernel and its combine pass (16,384 keys of 64 on the H200, BENCHMARKS.md). Without
/// grouped heads it takes any cache.
const DECODE_SPLIT_MAX_CHUNKS: usize = 64;

/// The shares a split [`attention_decode`] row of `chunks` chunks takes where `rows` rows run
/// on `sms` multiprocessors: as many as keep the grid within one workgroup a multiprocessor
/// (past it a second wave of shares waits for the first), of as few whole chunks each as that
/// allows (a share's chunks wait on memory one after another) — at most 4 chunks a share, and
/// at most [`DECODE_MAX_SPLITS`] shares. Each the fastest of 1 to 4 chunks a share on the H200
/// at 768 to 2304 keys, TinyLlama's and Qwen3's heads (BENCHMARKS.md).
fn decode_splits(chunks: usize, rows: usize, sms: usize) -> usize {
    let shares_fit = (sms / rows.max(1)).max(1);
    let per_share = chunks
        .div_ceil(shares_fit)
        .clamp(1, 4)
        .max(chunks.div_ceil(DECODE_MAX_SPLITS));
    chunks.div_ceil(per_share)
}

/// The most shares of a split [`attention_decode`] row: the shares whose weights its merge
/// holds (`MERGE_MAX_SPLITS` in attention_decode.comp; a unit test holds the two equal).
const DECODE_MAX_SPLITS: usize = 256;

/// [`attention_cm2`]'s query rows per workgroup, keys per step and workgroup: the fastest of
/// 13 tilings on the H100 at d 64 and 128 (`vkprism-bench --cases attention_probe`;
/// BENCHMARKS.md).
const CM2_ROWS: u32 = 128;
const CM2_KEYS: u32 = 64;
const CM2_THREADS: u32 = 256;

/// Query rows from which [`attention_cm2`] takes a prompt: at 2048 it runs faster than
/// [`attention_cm`] alone and after a GEMM; at 512 it runs faster alone but slower inside the
/// decoder's prompt, for a reason not found (BENCHMARKS.md), so shorter prompts keep
/// [`attention_cm`].
const CM2_MIN_ROWS: usize = 1024;

/// Query rows up to which the row kernels' last share merges a split row itself (the
/// counters [`Ops::share_counts`] holds): beyond, the combine pass does.
pub(crate) const COUNTED_ROWS: usize = 1024;

/// The fewest keys a share of a split [`attention_cm`] block walks (eight steps of 32): the
/// last share's merge costs about what four steps do (on the H200 a 256-token prompt of
/// TinyLlama's heads ran slower in shares of 128 keys; BENCHMARKS.md).
const CM_SHARE_MIN_KEYS: usize = 256;

/// The most shares of a split [`attention_cm`] block: the weights its merge holds (its keys
/// a step, `BC` in attention_cm.comp; a unit test holds the two equal).
const CM_MAX_SHARES: usize = 32;

/// How [`attention_cm`] splits the keys of `s`'s blocks of `rows` query rows on `sms`
/// multiprocessors (`causal` and its offset): each block into as many shares (of at least
/// [`CM_SHARE_MIN_KEYS`], whole steps of 32, at most [`CM_MAX_SHARES`]) as keep the grid
/// within one wave of one workgroup a multiprocessor, where its counters fit
/// [`Ops::share_counts`]. A grid of more blocks than that is not split: a second wave costs
/// more than the longest block's steps.
fn cm_shares(
    s: &AttentionShape,
    rows: usize,
    (causal, offset): (bool, i32),
    sms: usize,
) -> KeyShares {
    let blocks = s.cm_blocks(rows);
    let most = (sms / blocks.max(1)).min(CM_MAX_SHARES);
    if most < 2 || blocks > COUNTED_ROWS {
        return s.cm_unsplit();
    }
    let seen = s.cm_keys_seen(rows, causal, offset);
    let keys = seen
        .div_ceil(most)
        .next_multiple_of(32)
        .max(CM_SHARE_MIN_KEYS);
    s.cm_key_shares(rows, causal, offset, keys)
}

/// The kernel of a pass over query rows.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum RowsKernel {
    /// [`attention_decode`] in workgroups of `invocations`: few query rows over a cache of up
    /// to [`DECODE_SPLIT_MAX_CHUNKS`] chunks, head dimension a multiple of 8 from 32 to 256.
    Decode { invocations: u32 },
    /// [`attention_grouped`]: few query rows over a long cache, grouped-query heads, head
    /// dimension (so every row stride) a multiple of 4.
    Grouped,
    /// [`attention4`]: rows of quads.
    Quads,
    /// [`attention`].
    Scalar,
}

/// The kernel that takes `s` and the shares its keys are split into, where
/// [`attention_decode`] runs in workgroups of `decode_invocations` on `sms` multiprocessors.
fn rows_plan(s: &AttentionShape, decode_invocations: u32, sms: usize) -> (RowsKernel, usize) {
    let chunk = s.decode_chunk(decode_invocations as usize, DECODE_KEYS_EACH);
    let decode = s.batch * s.sq <= GROUPED_ROWS && s.octets() && chunk > 0;
    let kernel = RowsKernel::Decode {
        invocations: decode_invocations,
    };
    let chunks = s.skv.div_ceil(chunk.max(1));
    if decode && chunks <= DECODE_MAX_CHUNKS {
        return (kernel, 1);
    }
    let grouped_heads = s.hq / s.hkv >= GROUPED_MIN_HEADS;
    let split_takes = chunks <= DECODE_SPLIT_MAX_CHUNKS || !grouped_heads;
    if decode && split_takes && s.rows() <= COUNTED_ROWS {
        return (kernel, decode_splits(chunks, s.rows(), sms));
    }
    let grouped =
        s.batch * s.sq <= GROUPED_ROWS && s.skv >= GROUPED_MIN_KEYS && grouped_heads && s.quads();
    if grouped {
        (RowsKernel::Grouped, s.skv.div_ceil(GROUPED_SHARE))
    } else if s.quads() {
        (RowsKernel::Quads, s.splits_for(SPLIT_TARGET))
    } else {
        (RowsKernel::Scalar, s.splits_for(SPLIT_TARGET))
    }
}

impl Ops {
    /// Records attention into `list`: q and o `[sq, hq, d]` or `[batch, sq, hq, d]`, k and v
    /// `[skv, hkv, d]` or `[batch, skv, hkv, d]` (token-major, heads interleaved: a projection's
    /// output as it comes; a KV cache's first skv rows are a [`Tensor::view`]), `hkv` dividing
    /// `hq` (query head h reads key/value head `h / (hq / hkv)`), `d` at most 256, one float
    /// format; o must not be q, k or v. With `op.causal`, the queries are the last sq of the
    /// skv positions. Nothing is recorded when a check fails.
    pub fn attention(
        &self,
        list: &mut CommandList,
        q: &Tensor,
        k: &Tensor,
        v: &Tensor,
        o: &Tensor,
        op: &Attention,
    ) -> Result<(), OpError> {
        let (s, format) = check_attention([q, k, v, o])?;
        let scale = op.scale.unwrap_or(1.0 / (s.d as f32).sqrt());
        let offset = if op.causal { s.causal_offset() } else { 0 };
        if self.matrices_fit(&s, format) {
            if let Some(kernel) = self.attention_cm2_kernel(&s, format) {
                let pass = (op.causal, scale, offset);
                return self.attention_cm2(list, &kernel, &s, [q, k, v, o], pass);
            }
            if let Ok(kernel) = self.kernel_for::<attention_cm::Kernel>(OP, "q_blob", format, true)
            {
                return self.attention_cm(
                    list,
                    &kernel,
                    &s,
                    [q, k, v, o],
                    op.causal,
                    scale,
                    offset,
                );
            }
        }
        let rows = RowsPass {
            causal: op.causal,
            scale,
            offset,
            position: None,
        };
        self.attention_rows(list, &s, [q, k, v, o], &rows)
    }

    /// Records causal attention for queries at a position read on the GPU into `list`: as
    /// [`Ops::attention`] with `op.causal`, but query i sits at position `position[0] + i` of
    /// the sequence whose keys and values are k's and v's rows (a KV cache's first rows, as
    /// many as a decode step may reach), so it sees keys `j <= position[0] + i`; keys past
    /// those are not read. `position` is an I32 `[1]` tensor written before each run: a
    /// recorded decode step replays at every position without re-recording. Nothing is
    /// recorded when a check fails.
    #[allow(clippy::too_many_arguments)]
    pub fn attention_at(
        &self,
        list: &mut CommandList,
        q: &Tensor,
        k: &Tensor,
        v: &Tensor,
        o: &Tensor,
        op: &Attention,
        position: &Tensor,
    ) -> Result<(), OpError> {
        let (s, _) = check_attention([q, k, v, o])?;
        position_buffer(OP, Some(position))?;
        let scale = op.scale.unwrap_or(1.0 / (s.d as f32).sqrt());
        let rows = RowsPass {
            causal: true,
            scale,
            offset: 0,
            position: Some(position),
        };
        self.attention_rows(list, &s, [q, k, v, o], &rows)
    }

    /// [`attention_decode`]'s workgroup on this device: [`DECODE_INVOCATIONS`], or the largest
    /// power of two the device allows below it.
    fn decode_invocations(&self) -> u32 {
        let limits = &self.ctx.features().limits;
        let most = DECODE_INVOCATIONS
            .min(limits.max_compute_work_group_invocations)
            .min(limits.max_compute_work_group_size[0])
            .max(1);
        1 << most.ilog2()
    }

    /// Whether the cooperative-matrix kernel takes this problem: fp16, a head dimension it
    /// holds, and enough query rows to fill its blocks.
    fn matrices_fit(&self, s: &AttentionShape, format: TensorFormat) -> bool {
        let subgroup = self.ctx.features().limits.subgroup_size;
        format == TensorFormat::F16
            && s.d.is_multiple_of(16)
            && s.d <= 256
            && s.sq >= 16
            && matches!(subgroup, 16 | 32 | 64)
    }

    /// [`attention_cm2`] for prompts of [`CM2_MIN_ROWS`] query rows or more, where the device
    /// loads it and lists its matrices' shapes ([`AttentionShape::cm2_offered`]) for
    /// [`CM2_ROWS`] × [`CM2_KEYS`] tiles in workgroups of [`CM2_THREADS`].
    fn attention_cm2_kernel(
        &self,
        s: &AttentionShape,
        format: TensorFormat,
    ) -> Option<Arc<LoadedKernel<attention_cm2::Kernel>>> {
        if s.sq < CM2_MIN_ROWS {
            return None;
        }
        let offered = s.cm2_offered(self.ctx.features(), [CM2_ROWS, CM2_KEYS, CM2_THREADS]);
        if !offered {
            return None;
        }
        self.kernel_for::<attention_cm2::Kernel>(OP, "q_blob", format, true)
            .ok()
    }

    fn attention_cm2(
        &self,
        list: &mut CommandList,
        kernel: &Arc<LoadedKernel<attention_cm2::Kernel>>,
        s: &AttentionShape,
        [q, k, v, o]: [&Tensor; 4],
        (causal, scale, offset): (bool, f32, i32),
    ) -> Result<(), OpError> {
        let spec = attention_cm2::SpecConstants {
            causal: causal as i32,
            D: s.d as i32,
            BR: CM2_ROWS as i32,
            BC: CM2_KEYS as i32,
        };
        let pipe = pipeline(OP, kernel, &spec, Some([CM2_THREADS, 1, 1]))?;
        let tiles = (CM2_THREADS, CM2_ROWS as usize);
        recorded(
            OP,
            s.record_cm2(list, &pipe, [q, k, v, o], (scale, offset), tiles),
        )
    }

    #[allow(clippy::too_many_arguments)]
    fn attention_cm(
        &self,
        list: &mut CommandList,
        kernel: &Arc<LoadedKernel<attention_cm::Kernel>>,
        s: &AttentionShape,
        [q, k, v, o]: [&Tensor; 4],
        causal: bool,
        scale: f32,
        offset: i32,
    ) -> Result<(), OpError> {
        let subgroup = self.ctx.features().limits.subgroup_size;
        let spec = attention_cm::SpecConstants {
            causal: causal as i32,
            D: s.d as i32,
            subgroup_size: subgroup as i32,
        };
        // Eight subgroups share each K and V tile where the tiles fit 48 KiB with them.
        let threads = if s.d <= 128 { 256 } else { 128 };
        let pipe = pipeline(OP, kernel, &spec, Some([threads, 1, 1]))?;
        let rows = 16 * (threads / subgroup) as usize;
        let shares = cm_shares(s, rows, (causal, offset), self.multiprocessors());
        // Unsplit, the kernel reads no part, but its binding holds whole vec4s.
        let part_shape = if shares.count > 1 {
            s.cm_part_shape(rows, shares).to_vec()
        } else {
            vec![4]
        };
        let part = scratch(
            list,
            &self.ctx,
            OP,
            &part_shape,
            TensorFormat::F32,
            &[q, k, v],
        )?;
        let split = CmSplit {
            shares,
            part: &part,
            counts: self.share_counts(OP)?,
        };
        let result = recorded(
            OP,
            s.record_cm(
                list,
                &pipe,
                [q, k, v, o],
                (scale, offset),
                (threads, rows),
                &split,
            ),
        );
        list.release_scratch(&part);
        result
    }

    /// A row kernel ([`rows_plan`]'s: [`attention_decode`] for a decode step over a short
    /// cache, [`attention_grouped`] over a long one, else [`attention4`] where rows are quads,
    /// else [`attention`]), its keys split over workgroups where the rows are few, then
    /// [`attention_combine`].
    fn attention_rows(
        &self,
        list: &mut CommandList,
        s: &AttentionShape,
        [q, k, v, o]: [&Tensor; 4],
        pass: &RowsPass,
    ) -> Result<(), OpError> {
        let sms = multiprocessors(self.ctx.features());
        let (kernel, splits) = rows_plan(s, self.decode_invocations(), sms);
        let part_shape = if splits > 1 {
            s.part_shape(splits).to_vec()
        } else {
            vec![1]
        };
        let part = scratch(
            list,
            &self.ctx,
            OP,
            &part_shape,
            TensorFormat::F32,
            &[q, k, v],
        )?;
        let result = self.rows_passes(list, s, [q, k, v, o], pass, (kernel, splits), &part);
        list.release_scratch(&part);
        result
    }

    /// `kernel`'s pass over `part` (the shares, where `splits` > 1), merged by the row kernels'
    /// last share or by the combine pass.
    fn rows_passes(
        &self,
        list: &mut CommandList,
        s: &AttentionShape,
        [q, k, v, o]: [&Tensor; 4],
        pass: &RowsPass,
        (kernel, splits): (RowsKernel, usize),
        part: &Tensor,
    ) -> Result<(), OpError> {
        // The row kernels' last share merges the row where its count fits the counters.
        let combine_last = splits > 1 && kernel != RowsKernel::Grouped && s.rows() <= COUNTED_ROWS;
        let spec = attention::SpecConstants {
            causal: pass.causal as i32,
            split: (splits > 1) as i32,
            position_in_buffer: pass.position.is_some() as i32,
            combine_last: combine_last as i32,
        };
        let pos = self.position_or_unread(OP, pass.position)?;
        let side = RowsSide {
            pos,
            part,
            counts: self.share_counts(OP)?,
        };
        let push = s.push(pass.scale, pass.offset, splits);
        let constants = (&spec, &push);
        let key =
            self.rows_kernel_pass(list, s, [q, k, v, o], &side, (kernel, splits), constants)?;
        if splits == 1 || combine_last {
            return Ok(());
        }
        self.combine_pass(list, s, part, o, splits, key)
    }

    /// Records `kernel`'s pass (`spec`'s choices, made for the plain row kernel, carried to
    /// the others' constants); returns the variant it ran.
    fn rows_kernel_pass(
        &self,
        list: &mut CommandList,
        s: &AttentionShape,
        [q, k, v, o]: [&Tensor; 4],
        side: &RowsSide,
        (kernel, splits): (RowsKernel, usize),
        (spec, push): (&attention::SpecConstants, &attention::PushConstants),
    ) -> Result<VariantKey, OpError> {
        let format = q.format();
        let RowsSide { pos, part, counts } = *side;
        match kernel {
            RowsKernel::Decode { invocations } => {
                let kernel =
                    self.kernel_for::<attention_decode::Kernel>(OP, "q_blob", format, false)?;
                let spec = attention_decode::SpecConstants {
                    causal: spec.causal,
                    position_in_buffer: spec.position_in_buffer,
                    D: s.d as i32,
                    KPI: DECODE_KEYS_EACH as i32,
                    split: spec.split,
                };
                let b = attention_decode::BufferBindings {
                    q_blob: q,
                    k_blob: k,
                    v_blob: v,
                    o_blob: o,
                    pos_blob: pos,
                    part_blob: part,
                    count_blob: counts,
                };
                let grid = s.decode_grid(invocations, splits);
                rows_pass(list, &kernel, &spec, &b, push, (invocations, grid))
            }
            RowsKernel::Grouped => {
                let kernel =
                    self.kernel_for::<attention_grouped::Kernel>(OP, "q_blob", format, false)?;
                let spec = attention_grouped::SpecConstants {
                    causal: spec.causal,
                    split: spec.split,
                    position_in_buffer: spec.position_in_buffer,
                    D: s.d as i32,
                };
                let b = attention_grouped::BufferBindings {
                    q_blob: q,
                    k_blob: k,
                    v_blob: v,
                    o_blob: o,
                    part_blob: part,
                    pos_blob: pos,
                };
                let grid = s.grouped_grid(splits);
                rows_pass(list, &kernel, &spec, &b, push, (256, grid))
            }
            RowsKernel::Quads => {
                let kernel = self.kernel_for::<attention4::Kernel>(OP, "q_blob", format, false)?;
                let b = attention4::BufferBindings {
                    q_blob: q,
                    k_blob: k,
                    v_blob: v,
                    o_blob: o,
                    part_blob: part,
                    pos_blob: pos,
                    count_blob: counts,
                };
                rows_pass(list, &kernel, spec, &b, push, (64, s.grid(splits)))
            }
            RowsKernel::Scalar => {
                let kernel = self.kernel_for::<attention::Kernel>(OP, "q_blob", format, false)?;
                let b = attention::BufferBindings {
                    q_blob: q,
                    k_blob: k,
                    v_blob: v,
                    o_blob: o,
                    part_blob: part,
                    pos_blob: pos,
                    count_blob: counts,
                };
                rows_pass(list, &kernel, spec, &b, push, (64, s.grid(splits)))
            }
        }
    }

    /// The combine pass merging `splits` shares of `part` into `o`, in the row pass's variant
    /// `key` (its float mode and subgroups).
    fn combine_pass(
        &self,
        list: &mut CommandList,
        s: &AttentionShape,
        part: &Tensor,
        o: &Tensor,
        splits: usize,
        key: VariantKey,
    ) -> Result<(), OpError> {
        let combine = self.kernel_exact::<attention_combine::Kernel>(OP, key)?;
        let pipe = pipeline(
            OP,
            &combine,
            &attention_combine::SpecConstants {},
            Some([64, 1, 1]),
        )?;
        let bindings = attention_combine::BufferBindings {
            part_blob: part,
            o_blob: o,
        };
        recorded(
            OP,
            list.dispatch(&pipe, &bindings, &s.combine_push(splits), s.combine_grid()),
        )
    }
}

/// The buffers a row kernel's pass binds besides its operands: the position (bound even where
/// unread), the shares' partial results and their counters.
#[derive(Copy, Clone)]
struct RowsSide<'a> {
    pos: &'a Tensor,
    part: &'a Tensor,
    counts: &'a Tensor,
}

/// What the row kernel's pass takes besides its operands.
struct RowsPass<'a> {
    causal: bool,
    scale: f32,
    /// The causal offset (query i sees keys `j <= i + offset`), added to `position[0]` where
    /// there is one.
    offset: i32,
    position: Option<&'a Tensor>,
}

/// Records one pass of a row kernel in workgroups of `local` over `grid`; returns the variant
/// it ran.
fn rows_pass<'a, B>(
    list: &mut CommandList,
    kernel: &Arc<LoadedKernel<B::Kernel>>,
    spec: &<B::Kernel as Kernel>::SpecConstants,
    bindings: &B,
    push: &<B::Kernel as Kernel>::PushConstants,
    (local, grid): (u32, [u32; 3]),
) -> Result<VariantKey, OpError>
where
    B: Bindings<'a>,
{
    let pipe = pipeline(OP, kernel, spec, Some([local, 1, 1]))?;
    recorded(OP, list.dispatch(&pipe, bindings, push, grid))?;
    Ok(kernel.variant().key)
}

/// The problem of q, k, v and o and their one float format, or the located mismatch; o
/// shares no memory with the others.
fn check_attention([q, k, v, o]: [&Tensor; 4]) -> Result<(AttentionShape, TensorFormat), OpError> {
    let s = attention_shape(q, k, v, o)?;
    let format = float_format(OP, "q", q)?;
    for (name, t) in [("k", k), ("v", v), ("o", o)] {
        same_format(OP, name, Some(t), format)?;
    }
    not_aliased(
        OP,
        o,
        "o",
        &[("q", Some(q)), ("k", Some(k)), ("v", Some(v))],
    )?;
    Ok((s, format))
}

/// The problem of q, k, v and o, or the located mismatch.
fn attention_shape(
    q: &Tensor,
    k: &Tensor,
    v: &Tensor,
    o: &Tensor,
) -> Result<AttentionShape, OpError> {
    const OP: &str = "attention";
    let dims = |name: &'static str, t: &Tensor| -> Result<[usize; 4], OpError> {
        match *t.shape() {
            [s, h, d] if s * h * d > 0 => Ok([1, s, h, d]),
            [b, s, h, d] if b * s * h * d > 0 => Ok([b, s, h, d]),
            _ => Err(OpError::Shape {
                op: OP,
                operand: name,
                got: t.shape().to_vec(),
                want: "[tokens, heads, d] or [batch, tokens, heads, d], none of them 0".into(),
            }),
        }
    };
    let [batch, sq, hq, d] = dims("q", q)?;
    let [kb, skv, hkv, kd] = dims("k", k)?;
    let want_kv = format!("[{batch}, skv, hkv, {d}] with hkv dividing q's {hq} heads");
    if kb != batch || kd != d || !hq.is_multiple_of(hkv) {
        return Err(OpError::Shape {
            op: OP,
            operand: "k",
            got: k.shape().to_vec(),
            want: want_kv,
        });
    }
    if v.shape() != k.shape() {
        return Err(OpError::Shape {
            op: OP,
            operand: "v",
            got: v.shape().to_vec(),
            want: format!("k's shape {:?}", k.shape()),
        });
    }
    if o.shape() != q.shape() {
        return Err(OpError::Shape {
            op: OP,
            operand: "o",
            got: o.shape().to_vec(),
            want: format!("q's shape {:?}", q.shape()),
        });
    }
    if d > 256 {
        return Err(OpError::Unsupported {
            op: OP,
            why: format!("head dimension {d} is over 256"),
        });
    }
    Ok(AttentionShape {
        batch,
        sq,
        skv,
        hq,
        hkv,
        d,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode_step(skv: usize, d: usize) -> AttentionShape {
        AttentionShape {
            batch: 1,
            sq: 1,
            skv,
            hq: 32,
            hkv: 4,
            d,
        }
    }

    #[test]
    fn matrix_blocks_split_their_keys_only_within_one_wave() {
        let prompt = |sq, skv, hq| AttentionShape {
            batch: 1,
            sq,
            skv,
            hq,
            hkv: 4,
            d: 64,
        };
        let shares = |s: AttentionShape| {
            let offset = s.causal_offset();
            let k = cm_shares(&s, 128, (true, offset), 132);
            (k.keys, k.count)
        };
        // 128 blocks of a 512-token prompt: a second wave would cost more than it saves.
        assert_eq!(shares(prompt(512, 512, 32)), (512, 1));
        // A chunk of 128 tokens after 1920: 32 blocks, 4 shares each of 2048 keys.
        assert_eq!(shares(prompt(128, 2048, 32)), (512, 4));
        // 8 blocks over 300 keys: shares of at least 256 keys.
        assert_eq!(shares(prompt(40, 300, 8)), (256, 2));
        // Short keys: one share.
        assert_eq!(shares(prompt(100, 100, 4)), (256, 1));
        assert_eq!(shares(prompt(256, 256, 32)), (256, 1));
        // Two blocks over 8192 keys: at most 32 shares.
        assert_eq!(shares(prompt(64, 8192, 2)), (256, 32));
    }

    /// The values `source` gives the lines that start with `prefix` (a `;` after it dropped).
    fn declared(source: &str, prefix: &str) -> Vec<usize> {
        source
            .lines()
            .filter_map(|line| line.trim().strip_prefix(prefix))
            .map(|value| value.trim().trim_end_matches(';').parse().unwrap())
            .collect()
    }

    /// The matrix kernel's merge holds the weights of `BC` shares in its score memory.
    #[test]
    fn the_matrix_kernels_share_limit_is_its_keys_a_step() {
        let source = include_str!("../attention_cm.comp");
        assert_eq!(declared(source, "const int BC = "), vec![CM_MAX_SHARES]);
    }

    /// The kernel's merge holds the weights of `MERGE_MAX_SPLITS` shares; the rule must not
    /// make more, and a smaller rule would leave the kernel's array oversized.
    #[test]
    fn the_share_limit_is_the_one_the_decode_kernel_holds() {
        let source = include_str!("../attention_decode.comp");
        let defined = declared(source, "#define MERGE_MAX_SPLITS ");
        assert_eq!(defined, vec![DECODE_MAX_SPLITS]);
    }

    #[test]
    fn a_decode_step_takes_the_decode_kernel_up_to_sixty_four_chunks_of_its_workgroup() {
        let plan = |skv, d, invocations| rows_plan(&decode_step(skv, d), invocations, 132);
        let decode = |invocations| RowsKernel::Decode { invocations };
        // 512 invocations, d 64 (32 query rows): chunks of 256 keys, unsplit up to 5, then
        // shares of whole chunks, at most 4 of them (132 multiprocessors over 32 rows): 3 of 2
        // chunks at 1536 keys, 4 of 2 at 2048, 3 of 3 at 2304, 4 of 4 at 4096, more shares of
        // 4 past it; past 64 chunks the grouped kernel.
        assert_eq!(plan(768, 64, 512), (decode(512), 1));
        assert_eq!(plan(1280, 64, 512), (decode(512), 1));
        assert_eq!(plan(1281, 64, 512), (decode(512), 3));
        assert_eq!(plan(1536, 64, 512), (decode(512), 3));
        assert_eq!(plan(2048, 64, 512), (decode(512), 4));
        assert_eq!(plan(2304, 64, 512), (decode(512), 3));
        assert_eq!(plan(4096, 64, 512), (decode(512), 4));
        assert_eq!(plan(8192, 64, 512), (decode(512), 8));
        assert_eq!(plan(16384, 64, 512), (decode(512), 16));
        assert_eq!(plan(16385, 64, 512).0, RowsKernel::Grouped);
        // A device allowing 256: chunks of 128.
        assert_eq!(plan(384, 64, 256), (decode(256), 1));
        assert_eq!(plan(1000, 64, 256), (decode(256), 4));
        assert_eq!(plan(2049, 64, 256), (decode(256), 5));
        assert_eq!(plan(8193, 64, 256).0, RowsKernel::Grouped);
        // d 128: chunks of 128 keys at 512 (3 shares of 2 at 768 keys); past 64 of them the
        // grouped kernel.
        assert_eq!(plan(384, 128, 512), (decode(512), 1));
        assert_eq!(plan(768, 128, 512), (decode(512), 3));
        assert_eq!(plan(2049, 128, 512), (decode(512), 5));
        assert_eq!(plan(8193, 128, 512).0, RowsKernel::Grouped);
        // Qwen3's 16 query heads over 8 (no grouped kernel): up to 8 shares fit, so 6 of one
        // chunk at 768 keys, 8 at 1024, 5 of 2 at 1280, 6 of 3 at 2304.
        let qwen3 = |skv| {
            let s = AttentionShape {
                hq: 16,
                hkv: 8,
                ..decode_step(skv, 128)
            };
            rows_plan(&s, 512, 132)
        };
        assert_eq!(qwen3(768), (decode(512), 6));
        assert_eq!(qwen3(1024), (decode(512), 8));
        assert_eq!(qwen3(1280), (decode(512), 5));
        assert_eq!(qwen3(2304), (decode(512), 6));
        // Without grouped heads (as many key/value heads as query heads), any cache: shares
        // of at most 4 chunks (4096 keys of 128: 8 shares).
        let mha = |skv| {
            let s = AttentionShape {
                hkv: 32,
                ..decode_step(skv, 128)
            };
            rows_plan(&s, 512, 132)
        };
        assert_eq!(mha(4096), (decode(512), 8));
        assert_eq!(mha(100_000), (decode(512), 196));
        // At most 256 shares, however long the cache.
        assert_eq!(mha(1_000_000).1, 253);
        // A head dimension that is no multiple of 8, and a prompt.
        assert_eq!(plan(100, 12, 512).0, RowsKernel::Quads);
        let prompt = AttentionShape {
            sq: 16,
            ..decode_step(100, 64)
        };
        let kernel = rows_plan(&prompt, 512, 132).0;
        assert!(!matches!(kernel, RowsKernel::Decode { .. }), "{kernel:?}");
    }
}
