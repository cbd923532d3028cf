//! The attention operator's f64 reference, re-exported by [`crate::reference`].

/// Scaled dot-product attention in f64 over `s`'s token-major layouts (q, o
/// `[batch, sq, hq, d]`, k, v `[batch, skv, hkv, d]`; query head h reads key/value head
/// `h / (hq / hkv)`); with `causal`, query i sees keys `j <= i + skv - sq` (none: 0). Also
/// returns, per value, the scale of its rounding error: `Σ p · |v|` over the keys it saw.
pub fn attention(
    s: &crate::AttentionShape,
    scale: f32,
    causal: bool,
    q: &[f32],
    k: &[f32],
    v: &[f32],
) -> (Vec<f32>, Vec<f32>) {
    let (d, group) = (s.d, s.hq / s.hkv);
    let mut out = vec![0f32; q.len()];
    let mut err = vec![0f32; q.len()];
    for n in 0..s.batch {
        for i in 0..s.sq {
            let visible = if causal {
                (i as i64 + s.causal_offset() as i64 + 1).clamp(0, s.skv as i64) as usize
            } else {
                s.skv
            };
            for h in 0..s.hq {
                let qa = ((n * s.sq + i) * s.hq + h) * d;
                let kv = |j: usize| ((n * s.skv + j) * s.hkv + h / group) * d;
                let scores: Vec<f64> = (0..visible)
                    .map(|j| {
                        let dot: f64 = (0..d).map(|e| q[qa + e] as f64 * k[kv(j) + e] as f64).sum();
                        dot * scale as f64
                    })
                    .collect();
                let m = scores.iter().copied().fold(f64::NEG_INFINITY, f64::max);
                let p: Vec<f64> = scores.iter().map(|s| (s - m).exp()).collect();
                let l: f64 = p.iter().sum();
                for e in 0..d {
                    let (mut o, mut a) = (0f64, 0f64);
                    for (j, pj) in p.iter().enumerate() {
                        o += pj * v[kv(j) + e] as f64;
                        a += pj * (v[kv(j) + e] as f64).abs();
                    }
                    if l > 0.0 {
                        out[qa + e] = (o / l) as f32;
                        err[qa + e] = (a / l) as f32;
                    }
                }
            }
        }
    }
    (out, err)
}
