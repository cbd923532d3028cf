//! [`ReferenceLlama`]: the decoder's forward pass on the CPU, token by token in f64 with plain
//! loops, written from the model's definition rather than from the GPU model's code: what the
//! tests check the GPU model against.

use crate::weights::{layer_bias, layer_weight};
use crate::{HostWeights, LlamaConfig};
use vkprism_shaders::RopeFrequencies;

/// The CPU forward pass of a decoder of `cfg` with `weights`, with its own KV cache.
pub struct ReferenceLlama<'w> {
    cfg: LlamaConfig,
    weights: &'w HostWeights,
    /// Per layer: the cached keys and values, `[pos, kv_heads, head_dim]` each.
    keys: Vec<Vec<f64>>,
    values: Vec<Vec<f64>>,
    pos: usize,
}

impl<'w> ReferenceLlama<'w> {
    /// The reference of `cfg` with `weights` (which must hold every tensor of `cfg`), its cache
    /// empty.
    pub fn new(cfg: &LlamaConfig, weights: &'w HostWeights) -> ReferenceLlama<'w> {
        ReferenceLlama {
            cfg: *cfg,
            weights,
            keys: vec![Vec::new(); cfg.layers],
            values: vec![Vec::new(); cfg.layers],
            pos: 0,
        }
    }

    /// Positions in the cache.
    pub fn position(&self) -> usize {
        self.pos
    }

    /// Empties the cache.
    pub fn reset(&mut self) {
        *self = ReferenceLlama::new(&self.cfg, self.weights);
    }

    /// The logits after each of `tokens` (each row `vocab` values), the tokens appended to the
    /// cache.
    pub fn forward(&mut self, tokens: &[u32]) -> Vec<Vec<f32>> {
        tokens.iter().map(|t| self.step(*t)).collect()
    }

    /// `n` tokens chosen greedily after `prompt` (one token or more), each the index of the
    /// largest logit (the first on ties), each fed back in.
    pub fn greedy(&mut self, prompt: &[u32], n: usize) -> Vec<u32> {
        let mut logits = self
            .forward(prompt)
            .pop()
            .expect("a prompt of one token or more");
        let mut out = Vec::with_capacity(n);
        for i in 0..n {
            let token = argmax(&logits);
            out.push(token);
            if i + 1 < n {
                logits = self.step(token);
            }
        }
        out
    }

    /// One token through every layer at the next position: its logits.
    fn step(&mut self, token: u32) -> Vec<f32> {
        let c = self.cfg;
        let embed = self.w("model.embed_tokens.weight");
        let row = &embed[token as usize * c.hidden..][..c.hidden];
        let mut x: Vec<f64> = row.iter().map(|v| *v as f64).collect();
        for layer in 0..c.layers {
            self.attention_block(layer, &mut x);
            self.mlp_block(layer, &mut x);
        }
        self.pos += 1;
        let h = rms_norm(&x, self.w("model.norm.weight"), c.rms_eps);
        // The head's own tensor where the weights hold one (int8-rounded weights do).
        let head = if c.tie_embeddings && self.weights.get("lm_head.weight").is_none() {
            "model.embed_tokens.weight"
        } else {
            "lm_head.weight"
        };
        let logits = matvec(self.w(head), &h);
        logits.iter().map(|v| *v as f32).collect()
    }

    /// `x += o_proj(attention(rope(q), rope(k), v))` of the normed `x`; k and v cached.
    fn attention_block(&mut self, layer: usize, x: &mut [f64]) {
        let c = self.cfg;
        let weights = self.weights;
        let part = |p: &str| lookup(weights, &layer_weight(layer, p));
        let h = rms_norm(x, part("input_layernorm"), c.rms_eps);
        let projection = |p: &str| {
            let mut y = matvec(part(p), &h);
            if c.qkv_bias {
                add(&mut y, &widened(lookup(weights, &layer_bias(layer, p))));
            }
            y
        };
        let mut q = projection("self_attn.q_proj");
        let mut k = projection("self_attn.k_proj");
        let v = projection("self_attn.v_proj");
        if c.qk_norm {
            q = heads_rms_normed(&q, c.head_dim(), part("self_attn.q_norm"), c.rms_eps);
            k = heads_rms_normed(&k, c.head_dim(), part("self_attn.k_norm"), c.rms_eps);
        }
        let freqs = c.rope_frequencies();
        rope(&mut q, c.head_dim(), self.pos, &freqs);
        rope(&mut k, c.head_dim(), self.pos, &freqs);
        self.keys[layer].extend_from_slice(&k);
        self.values[layer].extend_from_slice(&v);
        let o = self.attend(layer, &q);
        let out = matvec(part("self_attn.o_proj"), &o);
        add(x, &out);
    }

    /// Each query head's softmax-weighted sum of its key/value head's cached values (every
    /// cached position: the causal mask of one new token).
    fn attend(&self, layer: usize, q: &[f64]) -> Vec<f64> {
        let c = self.cfg;
        let (d, kv_dim) = (c.head_dim(), c.kv_dim());
        let group = c.heads / c.kv_heads;
        let positions = self.pos + 1;
        let (keys, values) = (&self.keys[layer], &self.values[layer]);
        let mut out = vec![0.0; c.q_dim()];
        for head in 0..c.heads {
            let qh = &q[head * d..][..d];
            let kv = (head / group) * d;
            let scores: Vec<f64> = (0..positions)
                .map(|p| dot(qh, &keys[p * kv_dim + kv..][..d]) / (d as f64).sqrt())
                .collect();
            let weights = softmax(&scores);
            for (p, w) in weights.iter().enumerate() {
                let vp = &values[p * kv_dim + kv..][..d];
                for (o, v) in out[head * d..][..d].iter_mut().zip(vp) {
                    *o += w * v;
                }
            }
        }
        out
    }

    /// `x += down(silu(gate(h)) · up(h))` of the normed `x`.
    fn mlp_block(&self, layer: usize, x: &mut [f64]) {
        let part = |p: &str| self.w(&layer_weight(layer, p));
        let h = rms_norm(x, part("post_attention_layernorm"), self.cfg.rms_eps);
        let gate = matvec(part("mlp.gate_proj"), &h);
        let up = matvec(part("mlp.up_proj"), &h);
        let act: Vec<f64> = gate.iter().zip(&up).map(|(g, u)| silu(*g) * u).collect();
        add(x, &matvec(part("mlp.down_proj"), &act));
    }

    fn w(&self, name: &str) -> &'w [f32] {
        lookup(self.weights, name)
    }
}

fn lookup<'w>(weights: &'w HostWeights, name: &str) -> &'w [f32] {
    weights
        .get(name)
        .unwrap_or_else(|| panic!("the reference's weights lack `{name}`"))
}

/// The index of the largest value, the first on ties.
pub fn argmax(x: &[f32]) -> u32 {
    let mut best = 0;
    for (i, v) in x.iter().enumerate() {
        if *v > x[best] {
            best = i;
        }
    }
    best as u32
}

fn rms_norm(x: &[f64], gamma: &[f32], eps: f32) -> Vec<f64> {
    let mean_square = x.iter().map(|v| v * v).sum::<f64>() / x.len() as f64;
    let inv = 1.0 / (mean_square + eps as f64).sqrt();
    x.iter()
        .zip(gamma)
        .map(|(v, g)| v * inv * *g as f64)
        .collect()
}

/// Every head of `x` (heads of `d` values) RMS-normalized with weight `gamma` `[d]`.
fn heads_rms_normed(x: &[f64], d: usize, gamma: &[f32], eps: f32) -> Vec<f64> {
    x.chunks_exact(d)
        .flat_map(|head| rms_norm(head, gamma, eps))
        .collect()
}

/// `v` in f64.
fn widened(v: &[f32]) -> Vec<f64> {
    v.iter().map(|x| *x as f64).collect()
}

/// `W · x` for a row-major `W` `[out, x.len()]`.
fn matvec(w: &[f32], x: &[f64]) -> Vec<f64> {
    w.chunks_exact(x.len())
        .map(|row| row.iter().zip(x).map(|(w, x)| *w as f64 * x).sum())
        .collect()
}

/// Rotates every head of `x` (heads of `d` values) by position `pos`, in Hugging Face's
/// rotate-half pairing `(i, i + d/2)`, angle `pos · freqs.inv_freq(i, d)` (`theta^(-2i/d)`
/// scaled).
fn rope(x: &mut [f64], d: usize, pos: usize, freqs: &RopeFrequencies) {
    let half = d / 2;
    for head in x.chunks_exact_mut(d) {
        for i in 0..half {
            let angle = pos as f64 * freqs.inv_freq(i, d);
            let (sin, cos) = angle.sin_cos();
            let (a, b) = (head[i], head[i + half]);
            head[i] = a * cos - b * sin;
            head[i + half] = b * cos + a * sin;
        }
    }
}

fn softmax(x: &[f64]) -> Vec<f64> {
    let max = x.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
    let e: Vec<f64> = x.iter().map(|v| (v - max).exp()).collect();
    let sum: f64 = e.iter().sum();
    e.iter().map(|v| v / sum).collect()
}

fn silu(x: f64) -> f64 {
    x / (1.0 + (-x).exp())
}

fn dot(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(a, b)| a * b).sum()
}

fn add(x: &mut [f64], y: &[f64]) {
    for (a, b) in x.iter_mut().zip(y) {
        *a += b;
    }
}
