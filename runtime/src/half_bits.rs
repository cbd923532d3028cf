//! fp16 and bf16 to and from `f32`, a value at a time, written without branches or calls so
//! that a loop over a slice compiles to the target's plain vector instructions. (`half`'s slice
//! conversions reach F16C through a call per eight values, chosen at run time, and take about
//! 4 ns a value: seconds over a model's weights.) The results are `half`'s, bit for bit: round
//! to nearest, ties to even; overflow to infinity; NaN kept a NaN, quieted, the top of its
//! payload kept where it fits.

/// The fp16 value with bits `h` as `f32` (exact).
#[inline]
pub(crate) fn f16_to_f32(h: u16) -> f32 {
    let h = u32::from(h);
    let sign = (h & 0x8000) << 16;
    // Exponent and mantissa moved to f32's places, the exponent rebased from 15 to 127.
    let normal = ((h & 0x7fff) << 13) + ((127 - 15) << 23);
    // Exponent 31: infinity, or a NaN with the quiet bit set.
    let quiet = if h & 0x3ff != 0 { 0x0040_0000 } else { 0 };
    let special = (normal + ((128 - 16) << 23)) | quiet;
    // Exponent 0: m · 2⁻²⁴, as (1 + m/1024) · 2⁻¹⁴ − 2⁻¹⁴ (both exact).
    let subnormal = (f32::from_bits(normal + (1 << 23)) - f32::from_bits(113 << 23)).to_bits();
    let bits = match h & 0x7c00 {
        0x7c00 => special,
        0 => subnormal,
        _ => normal,
    };
    f32::from_bits(bits | sign)
}

/// `v` as fp16 bits, rounded to nearest, ties to even.
#[inline]
pub(crate) fn f32_to_f16(v: f32) -> u16 {
    let x = v.to_bits();
    let sign = ((x >> 16) & 0x8000) as u16;
    let a = x & 0x7fff_ffff;
    let nan = 0x7e00 | ((a >> 13) & 0x3ff) as u16;
    // From 2⁻¹⁴ on: the exponent rebased from 127 to 15, then rounded at bit 13 (a carry into
    // the exponent is the next binade, or infinity past the largest).
    let odd = (a >> 13) & 1;
    let normal = (a.wrapping_sub((127 - 15) << 23).wrapping_add(0xfff + odd) >> 13) as u16;
    // Below 2⁻¹⁴: added to 0.5, whose ulp is fp16's subnormal step, the float unit rounds it;
    // the mantissa left is the value in steps (1024 rounds up to the least normal value).
    let half_bits = 126 << 23;
    let subnormal = ((f32::from_bits(a) + f32::from_bits(half_bits)).to_bits() - half_bits) as u16;
    let bits = if a > 0x7f80_0000 {
        nan
    } else if a >= 0x4780_0000 {
        0x7c00
    } else if a >= 0x3880_0000 {
        normal
    } else {
        subnormal
    };
    bits | sign
}

/// The bf16 value with bits `b` as `f32` (exact; a NaN quieted).
#[inline]
pub(crate) fn bf16_to_f32(b: u16) -> f32 {
    let quiet = if b & 0x7fff > 0x7f80 { 0x40 } else { 0 };
    f32::from_bits(u32::from(b | quiet) << 16)
}

/// `v` as bf16 bits, rounded to nearest, ties to even.
#[inline]
pub(crate) fn f32_to_bf16(v: f32) -> u16 {
    let x = v.to_bits();
    let truncated = (x >> 16) as u16;
    // Up where the dropped half is over a half-ulp, or exactly one with the kept part odd.
    let up = x & 0x8000 != 0 && x & 0x1_7fff != 0;
    if x & 0x7fff_ffff > 0x7f80_0000 {
        truncated | 0x40
    } else {
        truncated + u16::from(up)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every fp16 and bf16 value, and f32 values spread over every exponent (a prime stride
    /// through the bit patterns) plus the edges: the same bits as `half`'s conversions.
    #[test]
    fn every_value_converts_as_half_does() {
        for h in 0..=u16::MAX {
            let want = half::f16::from_bits(h).to_f32().to_bits();
            assert_eq!(f16_to_f32(h).to_bits(), want, "f16 {h:#06x}");
            let want = half::bf16::from_bits(h).to_f32().to_bits();
            assert_eq!(bf16_to_f32(h).to_bits(), want, "bf16 {h:#06x}");
        }
        let edges = [
            0x3880_0000, // 2⁻¹⁴, fp16's least normal
            0x387f_ffff,
            0x3300_0000, // 2⁻²⁵: half of the least subnormal, a tie to 0
            0x3300_0001,
            0x477f_efff, // just below 65520, which rounds to infinity
            0x477f_f000,
            0x4780_0000,
            0x7f80_0000,
            0x7f80_0001,
            0x7fc0_0000,
            0xffff_ffff,
            0x3f80_1000, // 1 + 2⁻¹¹: a tie to 1.0
            0x3f80_3000, // 1 + 3 · 2⁻¹¹: a tie up
            0x3f80_8000, // a bf16 tie to even
            0x3f81_8000,
        ];
        let strided = (0..=u32::MAX / 4099).map(|i| i * 4099);
        for bits in edges.into_iter().chain(strided) {
            for x in [bits, bits ^ 0x8000_0000] {
                let v = f32::from_bits(x);
                let want = half::f16::from_f32(v).to_bits();
                assert_eq!(f32_to_f16(v), want, "f32 {x:#010x} to f16");
                let want = half::bf16::from_f32(v).to_bits();
                assert_eq!(f32_to_bf16(v), want, "f32 {x:#010x} to bf16");
            }
        }
    }
}
