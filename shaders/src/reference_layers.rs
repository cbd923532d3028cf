//! CPU references (f64) for decode's matrix-vector products, rotary position embedding,
//! pooling and batch norm; re-exported from [`crate::reference`].

/// `y[b][n] = Σ_k w[n][k] · x[b][k] (+ bias[n])` for W `[n, k]` and x `[batch, k]`, and the
/// error scale `Σ_k |w · x| + |bias|` per output.
pub fn gemv(
    n: usize,
    k: usize,
    w: &[f32],
    x: &[f32],
    bias: Option<&[f32]>,
) -> (Vec<f32>, Vec<f32>) {
    let batch = x.len() / k;
    let mut y = Vec::with_capacity(batch * n);
    let mut scale = Vec::with_capacity(batch * n);
    for xb in x.chunks(k) {
        for (row, wr) in w.chunks(k).enumerate().take(n) {
            let b = bias.map_or(0.0, |b| b[row] as f64);
            let (mut acc, mut mag) = (b, b.abs());
            for (wv, xv) in wr.iter().zip(xb) {
                let t = *wv as f64 * *xv as f64;
                acc += t;
                mag += t.abs();
            }
            y.push(acc as f32);
            scale.push(mag as f32);
        }
    }
    (y, scale)
}

/// `y[b][n] = scale[n] · Σ_k w[n][k] · x[b][k]` for int8 W `[n, k]`, and the error scale
/// `|scale[n]| · Σ_k |w · x|`.
pub fn gemv_int8(n: usize, k: usize, w: &[i8], scales: &[f32], x: &[f32]) -> (Vec<f32>, Vec<f32>) {
    let wf: Vec<f32> = w.iter().map(|&v| v as f32).collect();
    let (y, mag) = gemv(n, k, &wf, x, None);
    let per_row = |i: usize| scales[i % n] as f64;
    (
        y.iter()
            .enumerate()
            .map(|(i, v)| (*v as f64 * per_row(i)) as f32)
            .collect(),
        mag.iter()
            .enumerate()
            .map(|(i, v)| (*v as f64 * per_row(i).abs()) as f32)
            .collect(),
    )
}

/// Llama 3's scaling with bounds that put heads of 8 to 128 values (base 10000) in all three
/// bands: a head of 8 has pair 0 kept, pair 1 blended, pairs 2 and 3 divided; a head of 64 pairs
/// 1 to 10 blended. What the rotation tests scale by, so a wrong band shows.
pub const LLAMA3_EVERY_BAND: crate::RopeScaling = crate::RopeScaling::Llama3 {
    factor: 8.0,
    low_freq_factor: 1.0,
    high_freq_factor: 16.0,
    original_max_positions: 128,
};

/// Rotary position embedding of x `[tokens, heads, dim]` in f64 (token t at position
/// `t % seq + offset`, pair i rotated by `pos · freqs.inv_freq(i, dim)`; pairs `(i, i + dim/2)`,
/// or `(2i, 2i + 1)` with `interleaved`), and the error scale `|a| + |b|` of each value's pair.
pub fn rope(
    seq: usize,
    heads: usize,
    dim: usize,
    offset: usize,
    freqs: &crate::RopeFrequencies,
    interleaved: bool,
    x: &[f32],
) -> (Vec<f32>, Vec<f32>) {
    let (mut y, mut scale) = (vec![0f32; x.len()], vec![0f32; x.len()]);
    let half = dim / 2;
    for (row, head) in x.chunks(dim).enumerate() {
        let pos = ((row / heads) % seq + offset) as f64;
        let at = row * dim;
        for i in 0..half {
            let angle = pos * freqs.inv_freq(i, dim);
            let (ia, ib) = if interleaved {
                (2 * i, 2 * i + 1)
            } else {
                (i, i + half)
            };
            let (a, b) = (head[ia] as f64, head[ib] as f64);
            let (s, c) = angle.sin_cos();
            y[at + ia] = (a * c - b * s) as f32;
            y[at + ib] = (b * c + a * s) as f32;
            let mag = (a.abs() + b.abs()) as f32;
            scale[at + ia] = mag;
            scale[at + ib] = mag;
        }
    }
    (y, scale)
}

/// Max (`max`) or average pooling of x `[batch, h, w, c]` in f64 over `s`'s windows (average:
/// the sum over the pixels inside x divided by kh · kw), and the error scale (the largest
/// |value| of the window).
pub fn pool2d(s: crate::Pool2dShape, max: bool, x: &[f32]) -> (Vec<f32>, Vec<f32>) {
    let [batch, oh, ow, c] = s.out_shape();
    let (mut y, mut scale) = (Vec::new(), Vec::new());
    for b in 0..batch {
        for oy in 0..oh {
            for ox in 0..ow {
                for ch in 0..c {
                    let (mut acc, mut mag) = (if max { f64::NEG_INFINITY } else { 0.0 }, 0f64);
                    for ky in 0..s.kernel.0 {
                        for kx in 0..s.kernel.1 {
                            let iy = (oy * s.stride.0 + ky) as isize - s.padding.0 as isize;
                            let ix = (ox * s.stride.1 + kx) as isize - s.padding.1 as isize;
                            if iy < 0 || ix < 0 || iy >= s.h as isize || ix >= s.w as isize {
                                continue;
                            }
                            let v =
                                x[((b * s.h + iy as usize) * s.w + ix as usize) * c + ch] as f64;
                            acc = if max { acc.max(v) } else { acc + v };
                            mag = mag.max(v.abs());
                        }
                    }
                    if !max {
                        acc /= (s.kernel.0 * s.kernel.1) as f64;
                    }
                    y.push(acc as f32);
                    scale.push(mag as f32);
                }
            }
        }
    }
    (y, scale)
}

/// The mean over the pixels of x `[batch, hw, c]` per image and channel, in f64, and the error
/// scale (the largest |value| averaged).
pub fn global_avg_pool(batch: usize, hw: usize, c: usize, x: &[f32]) -> (Vec<f32>, Vec<f32>) {
    let (mut y, mut scale) = (Vec::new(), Vec::new());
    for b in 0..batch {
        for ch in 0..c {
            let vals = (0..hw).map(|i| x[(b * hw + i) * c + ch] as f64);
            let sum: f64 = vals.clone().sum();
            y.push((sum / hw as f64) as f32);
            scale.push(vals.fold(0f64, |m, v| m.max(v.abs())) as f32);
        }
    }
    (y, scale)
}

/// Inference-mode batch norm of a channels-last x (`c` channels, the last dimension) in f64:
/// `(x - mean) / sqrt(var + eps) · gamma + beta`.
pub fn batch_norm(c: usize, bn: &crate::BatchNorm<'_>, x: &[f32]) -> Vec<f32> {
    x.iter()
        .enumerate()
        .map(|(i, &v)| {
            let o = i % c;
            let r = 1.0 / (bn.running_var[o] as f64 + bn.eps as f64).sqrt();
            ((v as f64 - bn.running_mean[o] as f64) * r * bn.gamma[o] as f64 + bn.beta[o] as f64)
                as f32
        })
        .collect()
}
