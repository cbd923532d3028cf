//! Host `f32` to and from the float storage formats, shared by tensors and images. fp16 and bf16
//! go through the `half` crate: round to nearest, ties to even; NaN stays NaN; overflow becomes
//! infinity. (ncnn truncates to bf16; rounding can differ from it by one bf16 ulp, and is closer.)

use vkprism_core::TensorFormat;

/// `data` as the little-endian bytes `format` stores; `None` if `format` holds no floats.
pub(crate) fn encode_f32(format: TensorFormat, data: &[f32]) -> Option<Vec<u8>> {
    Some(match format {
        TensorFormat::F32 => bytemuck::cast_slice(data).to_vec(),
        TensorFormat::F16 => data
            .iter()
            .flat_map(|x| half::f16::from_f32(*x).to_le_bytes())
            .collect(),
        TensorFormat::Bf16 => data
            .iter()
            .flat_map(|x| half::bf16::from_f32(*x).to_le_bytes())
            .collect(),
        _ => return None,
    })
}

/// The values in `bytes`, stored as `format`; `None` if `format` holds no floats.
pub(crate) fn decode_f32(format: TensorFormat, bytes: &[u8]) -> Option<Vec<f32>> {
    Some(match format {
        TensorFormat::F32 => bytes
            .chunks_exact(4)
            .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect(),
        TensorFormat::F16 => bytes
            .chunks_exact(2)
            .map(|c| half::f16::from_le_bytes([c[0], c[1]]).to_f32())
            .collect(),
        TensorFormat::Bf16 => bytes
            .chunks_exact(2)
            .map(|c| half::bf16::from_le_bytes([c[0], c[1]]).to_f32())
            .collect(),
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_rounds_to_nearest_even() {
        // 1 + 2^-11 is halfway between two f16 values: ties go to the even one (1.0).
        let halfway = 1.0 + f32::powi(2.0, -11);
        let bytes = encode_f32(TensorFormat::F16, &[halfway, 2.5, -0.0]).unwrap();
        assert_eq!(
            decode_f32(TensorFormat::F16, &bytes).unwrap(),
            [1.0, 2.5, -0.0]
        );
        let bytes = encode_f32(TensorFormat::F32, &[1.25, f32::MAX]).unwrap();
        assert_eq!(
            decode_f32(TensorFormat::F32, &bytes).unwrap(),
            [1.25, f32::MAX]
        );
        assert!(encode_f32(TensorFormat::I8, &[1.0]).is_none());
        assert!(decode_f32(TensorFormat::U32, &[0; 4]).is_none());
    }
}
