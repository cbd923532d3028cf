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

/// Rotary position embedding of x `[tokens, heads, dim]` in f64 (token t at position
/// `t % seq + offset`, pair i rotated by `pos · base^(-2i/dim)`; pairs `(i, i + dim/2)`, or
/// `(2i, 2i + 1)` with `interleaved`), and the error scale `|a| + |b|` of each value's pair.
pub fn rope(
    seq: usize,
    heads: usize,
    dim: usize,
    offset: usize,
    base: f32,
    interleaved: bool,
    x: &[f32],
) -> (Vec<f32>, Vec<f32>) {
    let (mut y, mut scale) = (vec![0f32; x.len()], vec![0f32; x.len()]);
    let half = dim / 2;
    for (row, head) in x.chunks(dim).enumerate() {
        let pos = ((row / heads) % seq + offset) as f64;
        let at = row * dim;
        for i in 0..half {
            let angle = pos * (base as f64).powf(-2.0 * i as f64 / dim as f64);
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
