//! A decoder's weights in GPU memory, in the model's tensor format, laid out for the fused
//! kernels: each RMS norm's weight folded into the columns of the projections it feeds
//! (`W[n][k] · g[k]`, so the GEMV normalizes its input itself and the GEMM reads a norm without
//! a weight), the query, key and value projections stacked into one, each head's rows in the
//! order that puts its rotation pairs side by side (Llama's pairs are values i and i + d/2; rows
//! i and i + d/2 become rows 2i and 2i + 1, so the rotation is `RopeStyle::Interleaved` and a
//! GEMV's workgroup holds whole pairs), the output projection's columns in the same order
//! (attention works in that order throughout: dot products and weighted sums don't depend on
//! it), their biases and the heads' norms (where the model has them) in the rows' order (a
//! head's norm sums over all its values, whatever their order), the MLP's gate and up rows
//! interleaved. Read from a [`WeightSource`] a layer at a time, its tensors read on threads of
//! their own and laid out in blocks of rows on threads (`row_blocks.rs`), the next layer read
//! while this one uploads, the output layer beside them: a file's tensors are never all on the
//! host as `f32` at once (two layers' and the output layer's at most).

use crate::int8::quantize_rows;
use crate::row_blocks::for_row_blocks;
use crate::weights::{layer_bias, layer_weight, QKV_BIAS_PARTS, QK_NORM_PARTS};
use crate::{LlamaConfig, ModelError, WeightSource, WeightStorage};
use vkprism::{Context, Tensor, TensorFormat};

/// A projection's weight `[out, in]` as stored.
pub(crate) enum Projection {
    /// In the model's float format.
    Float(Tensor),
    /// I8 values and one F32 scale per row.
    Int8 { w: Tensor, scales: Tensor },
}

impl Projection {
    /// The stored matrix `[out, in]` (float or I8).
    pub fn matrix(&self) -> &Tensor {
        match self {
            Projection::Float(w) | Projection::Int8 { w, .. } => w,
        }
    }

    /// Bytes of GPU memory it takes.
    fn bytes(&self) -> u64 {
        match self {
            Projection::Float(w) => w.size_bytes(),
            Projection::Int8 { w, scales } => w.size_bytes() + scales.size_bytes(),
        }
    }
}

/// One decoder layer's weights (projections `[out, in]`).
pub(crate) struct LayerWeights {
    /// The query, key and value rows stacked, `[(heads + 2·kv_heads) · head_dim, hidden]`,
    /// each head's rotation pairs side by side, the input norm folded in.
    pub qkv: Projection,
    /// Their biases stacked the same way, in the model's format, where it has them.
    pub qkv_bias: Option<Tensor>,
    /// The query heads' and the key heads' norm weights `[head_dim]`, each head's values in
    /// the pairs' order, in the model's format, where it has them.
    pub qk_norm: Option<[Tensor; 2]>,
    /// `[hidden, heads · head_dim]`, each head's columns in the pairs' order.
    pub o: Projection,
    /// Gate and up rows interleaved (row 2i gate i, row 2i + 1 up i), `[2·mlp, hidden]`, the
    /// post-attention norm folded in.
    pub gate_up: Projection,
    /// `[hidden, mlp]`.
    pub down: Projection,
}

/// Every weight of a decoder.
pub(crate) struct DeviceWeights {
    pub embed: Tensor,
    pub layers: Vec<LayerWeights>,
    /// The output projection `[vocab, hidden]`, the final norm folded in (the embedding's
    /// values where the model ties them).
    pub lm_head: Projection,
}

/// One decoder layer's projections on the host, laid out as [`LayerWeights`] holds them.
struct HostLayer {
    qkv: Vec<f32>,
    qkv_bias: Option<Vec<f32>>,
    qk_norm: Option<[Vec<f32>; 2]>,
    o: Vec<f32>,
    gate_up: Vec<f32>,
    down: Vec<f32>,
}

impl HostLayer {
    /// Layer `i` of `cfg` read from `source` and laid out, its four projections read and laid
    /// out side by side on threads of their own.
    fn read(
        source: &dyn WeightSource,
        cfg: &LlamaConfig,
        i: usize,
    ) -> Result<HostLayer, ModelError> {
        let (h, q, kv, m, d) = (
            cfg.hidden,
            cfg.q_dim(),
            cfg.kv_dim(),
            cfg.mlp,
            cfg.head_dim(),
        );
        let read = |part: &str, shape: &[usize]| source.tensor(&layer_weight(i, part), shape);
        let qkv_bias = cfg.qkv_bias.then(|| qkv_bias(source, cfg, i)).transpose()?;
        let qk_norm = cfg.qk_norm.then(|| qk_norm(source, cfg, i)).transpose()?;
        std::thread::scope(|s| {
            let [wq, wk, wv, o, gate, up, down] = [
                ("self_attn.q_proj", [q, h]),
                ("self_attn.k_proj", [kv, h]),
                ("self_attn.v_proj", [kv, h]),
                ("self_attn.o_proj", [h, q]),
                ("mlp.gate_proj", [m, h]),
                ("mlp.up_proj", [m, h]),
                ("mlp.down_proj", [h, m]),
            ]
            .map(|(part, shape)| s.spawn(move || read(part, &shape)));
            let input_norm = read("input_layernorm", &[h])?;
            let post_norm = read("post_attention_layernorm", &[h])?;
            let qkv = [joined(wq)?, joined(wk)?, joined(wv)?];
            let gate_up = [joined(gate)?, joined(up)?];
            Ok(HostLayer {
                qkv: pairs_side_by_side(&qkv.each_ref().map(Vec::as_slice), h, d, &input_norm),
                qkv_bias,
                qk_norm,
                o: pair_columns(&joined(o)?, q, d),
                gate_up: interleave_rows(&gate_up[0], &gate_up[1], &post_norm),
                down: joined(down)?,
            })
        })
    }
}

/// Layer `i`'s query, key and value biases stacked as its projection's rows are, each head's
/// rotation pairs side by side.
fn qkv_bias(
    source: &dyn WeightSource,
    cfg: &LlamaConfig,
    i: usize,
) -> Result<Vec<f32>, ModelError> {
    let (q, kv) = (cfg.q_dim(), cfg.kv_dim());
    let mut parts = Vec::with_capacity(3);
    for (part, n) in QKV_BIAS_PARTS.into_iter().zip([q, kv, kv]) {
        parts.push(source.tensor(&layer_bias(i, part), &[n])?);
    }
    let parts: Vec<&[f32]> = parts.iter().map(Vec::as_slice).collect();
    Ok(pairs_side_by_side(&parts, 1, cfg.head_dim(), &[1.0]))
}

/// Layer `i`'s query and key heads' norm weights, each in the order its heads' rotation pairs
/// sit side by side.
fn qk_norm(
    source: &dyn WeightSource,
    cfg: &LlamaConfig,
    i: usize,
) -> Result<[Vec<f32>; 2], ModelError> {
    let d = cfg.head_dim();
    let read = |part| -> Result<_, ModelError> {
        let w = source.tensor(&layer_weight(i, part), &[d])?;
        Ok(pairs_side_by_side(&[&w], 1, d, &[1.0]))
    };
    Ok([read(QK_NORM_PARTS[0])?, read(QK_NORM_PARTS[1])?])
}

/// What a scoped thread returned (its panic, if it panicked, carried on).
fn joined<T>(handle: std::thread::ScopedJoinHandle<'_, T>) -> T {
    handle
        .join()
        .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
}

/// Uploads tensors in one format.
struct Uploader<'a> {
    ctx: &'a Context,
    format: TensorFormat,
    storage: WeightStorage,
}

impl Uploader<'_> {
    fn upload(&self, shape: &[usize], values: &[f32]) -> Result<Tensor, ModelError> {
        Ok(Tensor::from_f32(self.ctx, shape, self.format, values)?)
    }

    /// A projection's weight `[out, in]` stored as `storage` says.
    fn projection(
        &self,
        [out, width]: [usize; 2],
        values: &[f32],
    ) -> Result<Projection, ModelError> {
        if self.storage == WeightStorage::Float {
            return Ok(Projection::Float(self.upload(&[out, width], values)?));
        }
        let (q, scales) = quantize_rows(values, width);
        Ok(Projection::Int8 {
            w: Tensor::from_i8(self.ctx, &[out, width], &q)?,
            scales: Tensor::from_f32(self.ctx, &[out], TensorFormat::F32, &scales)?,
        })
    }

    fn layer(&self, cfg: &LlamaConfig, host: HostLayer) -> Result<LayerWeights, ModelError> {
        let (h, q, kv, m) = (cfg.hidden, cfg.q_dim(), cfg.kv_dim(), cfg.mlp);
        let vector = |v: &Vec<f32>| self.upload(&[v.len()], v);
        let qk_norm = match &host.qk_norm {
            Some([q, k]) => Some([vector(q)?, vector(k)?]),
            None => None,
        };
        Ok(LayerWeights {
            qkv: self.projection([q + 2 * kv, h], &host.qkv)?,
            qkv_bias: host.qkv_bias.as_ref().map(vector).transpose()?,
            qk_norm,
            o: self.projection([h, q], &host.o)?,
            gate_up: self.projection([2 * m, h], &host.gate_up)?,
            down: self.projection([h, m], &host.down)?,
        })
    }

    /// Every layer of `cfg` from `source`: each read and laid out on another thread while the
    /// one before it uploads (so at most two layers are on the host at once).
    fn layers(
        &self,
        cfg: &LlamaConfig,
        source: &dyn WeightSource,
    ) -> Result<Vec<LayerWeights>, ModelError> {
        std::thread::scope(|s| {
            let (ready, layers) = std::sync::mpsc::sync_channel(0);
            s.spawn(move || {
                for i in 0..cfg.layers {
                    let layer = HostLayer::read(source, cfg, i);
                    let failed = layer.is_err();
                    // A failed upload drops the receiver: then there is no one to read for.
                    if ready.send(layer).is_err() || failed {
                        return;
                    }
                }
            });
            layers.iter().map(|layer| self.layer(cfg, layer?)).collect()
        })
    }
}

/// Every column k of the row-major matrix `w` (rows of `g.len()`) scaled by `g[k]`: a norm's
/// weight moved into the projection after it.
pub(crate) fn fold_columns(w: &mut [f32], g: &[f32]) {
    for_row_blocks(w, g.len(), |_, block| {
        for row in block.chunks_mut(g.len()) {
            scaled(row, g);
        }
    });
}

/// `row` times `g`, value by value.
fn scaled(row: &mut [f32], g: &[f32]) {
    for (v, s) in row.iter_mut().zip(g) {
        *v *= s;
    }
}

/// The value within a head of `d` values that position `slot` holds when each rotation pair
/// (i, i + d/2) sits side by side at 2i and 2i + 1: i for slot 2i, i + d/2 for slot 2i + 1.
fn pair_source(slot: usize, d: usize) -> usize {
    slot / 2 + (slot % 2) * (d / 2)
}

/// The rows of `parts` stacked (each rows of `width`, heads of `d` rows, each part whole
/// heads), reordered within each head, row [`pair_source`]`(t)` to row t, and scaled column by
/// column by `g` (`width` values; `[1.0]` for vectors).
fn pairs_side_by_side(parts: &[&[f32]], width: usize, d: usize, g: &[f32]) -> Vec<f32> {
    let mut rows: Vec<&[f32]> = Vec::new();
    for part in parts {
        rows.extend(part.chunks(width));
    }
    let mut out = vec![0.0; rows.len() * width];
    for_row_blocks(&mut out, width, |first, block| {
        for (t, row) in (first..).zip(block.chunks_mut(width)) {
            row.copy_from_slice(rows[t / d * d + pair_source(t % d, d)]);
            scaled(row, g);
        }
    });
    out
}

/// The columns of `w` (rows of `width`, heads of `d` columns) reordered within each head:
/// column [`pair_source`]`(t)` to column t.
fn pair_columns(w: &[f32], width: usize, d: usize) -> Vec<f32> {
    let mut out = vec![0.0; w.len()];
    for_row_blocks(&mut out, width, |first, block| {
        let rows_in = w[first * width..].chunks(width);
        for (row_in, row_out) in rows_in.zip(block.chunks_mut(width)) {
            for (c, v) in row_out.iter_mut().enumerate() {
                *v = row_in[c / d * d + pair_source(c % d, d)];
            }
        }
    });
    out
}

/// The rows of `a` and `b` (rows of `g.len()`) alternating, a₀, b₀, a₁, b₁, ..., scaled column
/// by column by `g`.
fn interleave_rows(a: &[f32], b: &[f32], g: &[f32]) -> Vec<f32> {
    let width = g.len();
    let mut out = vec![0.0; a.len() + b.len()];
    for_row_blocks(&mut out, width, |first, block| {
        for (t, row) in (first..).zip(block.chunks_mut(width)) {
            let from = if t % 2 == 0 { a } else { b };
            row.copy_from_slice(&from[t / 2 * width..][..width]);
            scaled(row, g);
        }
    });
    out
}

impl DeviceWeights {
    /// Every tensor of `cfg` from `source`, uploaded as `format` (the projections as
    /// `storage` says).
    pub fn upload(
        ctx: &Context,
        cfg: &LlamaConfig,
        source: &dyn WeightSource,
        (format, storage): (TensorFormat, WeightStorage),
    ) -> Result<DeviceWeights, ModelError> {
        let up = Uploader {
            ctx,
            format,
            storage,
        };
        let (h, vocab) = (cfg.hidden, cfg.vocab);
        let folded_head = |mut head: Vec<f32>| -> Result<Vec<f32>, ModelError> {
            fold_columns(&mut head, &source.tensor("model.norm.weight", &[h])?);
            Ok(head)
        };
        std::thread::scope(|s| {
            // An output layer of its own is read and laid out beside the layers.
            let untied = (!cfg.tie_embeddings)
                .then(|| s.spawn(|| folded_head(source.tensor("lm_head.weight", &[vocab, h])?)));
            let embed_values = source.tensor("model.embed_tokens.weight", &[vocab, h])?;
            let embed = up.upload(&[vocab, h], &embed_values)?;
            let layers = up.layers(cfg, source)?;
            let head = match untied {
                Some(thread) => joined(thread)?,
                None => folded_head(embed_values)?,
            };
            Ok(DeviceWeights {
                embed,
                layers,
                lm_head: up.projection([vocab, h], &head)?,
            })
        })
    }

    /// Bytes of GPU memory the weights take.
    pub fn bytes(&self) -> u64 {
        let layer = |l: &LayerWeights| {
            let bias = l.qkv_bias.as_ref().map_or(0, |b| b.size_bytes());
            let norms = l
                .qk_norm
                .as_ref()
                .map_or(0, |n| n.iter().map(|t| t.size_bytes()).sum());
            bias + norms
                + [&l.qkv, &l.o, &l.gate_up, &l.down]
                    .iter()
                    .map(|p| p.bytes())
                    .sum::<u64>()
        };
        self.embed.size_bytes() + self.lm_head.bytes() + self.layers.iter().map(layer).sum::<u64>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Where value i of a head of `d` goes when the pairs sit side by side: 2i, or
    /// 2(i - d/2) + 1 (the layout as Llama's pairs define it, checked against `pair_source`).
    fn pair_slot(i: usize, d: usize) -> usize {
        if i < d / 2 {
            2 * i
        } else {
            2 * (i - d / 2) + 1
        }
    }

    #[test]
    fn folding_scales_columns_and_interleaving_alternates_rows() {
        let mut w = vec![1.0, 2.0, 3.0, 4.0];
        fold_columns(&mut w, &[10.0, 100.0]);
        assert_eq!(w, [10.0, 200.0, 30.0, 400.0]);
        let rows = interleave_rows(&[1.0, 2.0, 3.0, 4.0], &[5.0, 6.0, 7.0, 8.0], &[1.0, 10.0]);
        assert_eq!(rows, [1.0, 20.0, 5.0, 60.0, 3.0, 40.0, 7.0, 80.0]);
    }

    #[test]
    fn rotation_pairs_move_side_by_side_in_rows_and_columns() {
        // Two heads of 4 one-value rows: (0, 2) and (1, 3) are the pairs.
        let rows: Vec<f32> = (0..8).map(|v| v as f32).collect();
        let in_parts = pairs_side_by_side(&[&rows[..4], &rows[4..]], 1, 4, &[1.0]);
        assert_eq!(in_parts, [0., 2., 1., 3., 4., 6., 5., 7.]);
        assert_eq!(pair_columns(&rows, 8, 4), [0., 2., 1., 3., 4., 6., 5., 7.]);
        for i in 0..64 {
            assert_eq!(pair_source(pair_slot(i, 64), 64), i);
        }
    }

    /// The layouts of matrices large enough to be cut into blocks on threads, against the
    /// same moves made value by value.
    #[test]
    fn layouts_in_blocks_match_value_by_value() {
        let (width, d) = (512, 64);
        let value = |r: usize, c: usize| (r * 7 + c * 3) as f32 / 11.0 - 1.0;
        let matrix = |rows: usize, at: usize| -> Vec<f32> {
            (0..rows * width)
                .map(|i| value(at + i / width, i % width))
                .collect()
        };
        let g: Vec<f32> = (0..width).map(|c| 0.5 + c as f32 / 64.0).collect();
        let (q, k, v) = (matrix(4096, 0), matrix(512, 4096), matrix(512, 4608));
        let qkv = pairs_side_by_side(&[&q, &k, &v], width, d, &g);
        for (t, row) in qkv.chunks(width).enumerate() {
            let r = t / d * d + (0..d).find(|i| pair_slot(*i, d) == t % d).unwrap();
            assert!(
                (0..width).all(|c| row[c] == value(r, c) * g[c]),
                "qkv row {t}"
            );
        }
        let (a, b) = (matrix(2048, 0), matrix(2048, 2048));
        let gate_up = interleave_rows(&a, &b, &g);
        for (t, row) in gate_up.chunks(width).enumerate() {
            let r = if t % 2 == 0 { t / 2 } else { 2048 + t / 2 };
            assert!(
                (0..width).all(|c| row[c] == value(r, c) * g[c]),
                "gate/up row {t}"
            );
        }
        let o = pair_columns(&q, width, d);
        for (r, row) in o.chunks(width).enumerate() {
            for c in 0..width {
                assert_eq!(
                    row[c / d * d + pair_slot(c % d, d)],
                    value(r, c),
                    "o {r}, {c}"
                );
            }
        }
        let mut folded = q.clone();
        fold_columns(&mut folded, &g);
        assert!(folded
            .iter()
            .enumerate()
            .all(|(i, x)| *x == q[i] * g[i % width]));
    }
}
