//! Int8 weights: [`WeightStorage`] (how a decoder stores its projections) and the quantization
//! it uses at load, one scale per output row, symmetric: the row's largest magnitude / 127, each
//! value divided by it and rounded to nearest. A row of zeros gets the scale 0.

use crate::row_blocks::for_row_blocks;

/// How a decoder stores its projections' weights (the embedding is always stored in the model's
/// float format: a step reads one row of it).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub enum WeightStorage {
    /// In the model's float format.
    #[default]
    Float,
    /// Int8 with one F32 scale per output row (the norms folded in before quantizing): half
    /// the bytes of fp16. A token's GEMVs read the int8 values and scale each row's sum; a
    /// prompt's GEMMs read each weight dequantized into the model's float format first.
    Int8,
}

/// Row-major `w` (rows of `width`) quantized per row: the int8 values and each row's scale.
pub(crate) fn quantize_rows(w: &[f32], width: usize) -> (Vec<i8>, Vec<f32>) {
    let mut scales = vec![0.0; w.len() / width];
    for_row_blocks(&mut scales, 1, |first, block| {
        for (s, row) in block.iter_mut().zip(w[first * width..].chunks(width)) {
            *s = row.iter().fold(0f32, |m, v| m.max(v.abs())) / 127.0;
        }
    });
    let mut values = vec![0; w.len()];
    for_row_blocks(&mut values, width, |first, block| {
        let rows = block
            .chunks_mut(width)
            .zip(w[first * width..].chunks(width));
        for ((out, row), scale) in rows.zip(&scales[first..]) {
            for (q, v) in out.iter_mut().zip(row) {
                *q = quantize(*v, *scale);
            }
        }
    });
    (values, scales)
}

/// `v` in steps of `scale`, rounded to nearest, halves away from zero (0 where the scale is).
/// As `f32::round` would, but through a truncating conversion: `round` is a library call on
/// x86-64's base instruction set, which keeps a row's loop from vectorizing.
fn quantize(v: f32, scale: f32) -> i8 {
    if scale > 0.0 {
        // Within ±127 the truncation is exact, and so is the fraction it leaves.
        let x = (v / scale).clamp(-127.0, 127.0);
        let whole = x as i32;
        let fraction = x - whole as f32;
        (whole + i32::from(fraction >= 0.5) - i32::from(fraction <= -0.5)) as i8
    } else {
        0
    }
}

/// Row-major `w` (rows of `width`) as its per-row quantization holds it: each value rounded to
/// a step of its row's scale.
pub(crate) fn rounded_rows(w: &[f32], width: usize) -> Vec<f32> {
    let (values, scales) = quantize_rows(w, width);
    values
        .chunks(width)
        .zip(scales)
        .flat_map(|(row, s)| row.iter().map(move |q| *q as f32 * s))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_get_their_own_scale_and_round_to_nearest() {
        let w = [1.27, -0.5, 0.006, 0.0, 0.0, 0.0, -2.54, 1.0, 0.004];
        let (q, s) = quantize_rows(&w, 3);
        assert_eq!(s, [0.01, 0.0, 0.02]);
        assert_eq!(q, [127, -50, 1, 0, 0, 0, -127, 50, 0]);
        let r = rounded_rows(&w, 3);
        assert!((r[1] + 0.5).abs() < 1e-6 && r[8] == 0.0 && (r[6] + 2.54).abs() < 1e-6);
    }

    /// A matrix large enough to be cut into blocks on threads, against its rows quantized
    /// one at a time.
    #[test]
    fn a_large_matrix_quantizes_as_its_rows_do() {
        let width = 1000;
        let w: Vec<f32> = (0..3000 * width)
            .map(|i| ((i * 37 % 1009) as f32 - 500.0) * (1 + i / width % 7) as f32 * 1e-3)
            .collect();
        let (q, s) = quantize_rows(&w, width);
        for (r, row) in w.chunks(width).enumerate() {
            let (qr, sr) = quantize_rows(row, width);
            assert_eq!(
                (&q[r * width..][..width], s[r]),
                (&qr[..], sr[0]),
                "row {r}"
            );
        }
    }

    /// Every step and half-step from past -127 to past 127, and values between, quantize as
    /// `f32::round` and a clamp to ±127 take them; NaN to 0.
    #[test]
    fn quantize_rounds_halves_away_from_zero() {
        let halves = (-260..=260).map(|i| i as f32 * 0.5);
        let between = (0..20_000).map(|i| (i as f32 * 0.0137) - 137.0);
        for x in halves.chain(between) {
            let want = x.round().clamp(-127.0, 127.0) as i8;
            assert_eq!(quantize(x * 0.25, 0.25), want, "{x}");
        }
        assert_eq!(quantize(f32::NAN, 1.0), 0);
    }

    #[test]
    fn quantizing_what_a_quantization_holds_gives_it_back() {
        let w: Vec<f32> = (0..64)
            .map(|i| ((i * 37 % 23) as f32 - 11.0) * 0.013)
            .collect();
        let once = rounded_rows(&w, 16);
        assert_eq!(quantize_rows(&once, 16), quantize_rows(&w, 16));
    }
}
