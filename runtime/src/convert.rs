//! Host `f32` to and from the float storage formats, shared by tensors and images. fp16 and bf16
//! go through the `half` crate: round to nearest, ties to even; NaN stays NaN; overflow becomes
//! infinity. (ncnn truncates to bf16; rounding can differ from it by one bf16 ulp, and is closer.)

use half::slice::{HalfBitsSliceExt, HalfFloatSliceExt};
use vkprism_core::TensorFormat;

/// `data` as the little-endian bytes `format` stores; `None` if `format` holds no floats. The
/// 16-bit formats convert a slice at a time (the CPU's conversion instructions where it has
/// them: an input image of millions of values is a step's host time otherwise).
pub(crate) fn encode_f32(format: TensorFormat, data: &[f32]) -> Option<Vec<u8>> {
    let size = match format {
        TensorFormat::F32 => 4,
        TensorFormat::F16 | TensorFormat::Bf16 => 2,
        _ => return None,
    };
    let mut bytes = vec![0; size * data.len()];
    encode_f32_into(format, data, &mut bytes)?;
    Some(bytes)
}

/// Values converted at once by [`encode_f32_into`]: a buffer of this many halves lives on the
/// stack, where a whole input's would be allocated (and its pages faulted in) for each copy.
const ENCODE_CHUNK: usize = 8192;

/// `data` as the little-endian bytes `format` stores, written into `dst` (exactly their size)
/// a chunk at a time, without a buffer of the whole; `None` if `format` holds no floats. F32 goes through
/// [`crate::host_copy::copy`] (threads for large copies).
pub(crate) fn encode_f32_into(format: TensorFormat, data: &[f32], dst: &mut [u8]) -> Option<()> {
    match format {
        TensorFormat::F32 => crate::host_copy::copy(dst, bytemuck::cast_slice(data)),
        TensorFormat::F16 => encode_halves::<half::f16>(data, dst),
        TensorFormat::Bf16 => encode_halves::<half::bf16>(data, dst),
        _ => return None,
    }
    Some(())
}

/// `data` converted to 16-bit `H` values, their little-endian bytes into `dst`: in contiguous
/// parts on scoped threads where the input is large (as [`crate::host_copy::copy`] splits).
fn encode_halves<H>(data: &[f32], dst: &mut [u8])
where
    H: Copy + Default,
    [H]: HalfFloatSliceExt,
{
    assert_eq!(
        dst.len(),
        2 * data.len(),
        "encoded size of {} values",
        data.len()
    );
    let threads = crate::host_copy::threads_for(dst.len());
    if threads == 1 {
        return encode_halves_here::<H>(data, dst);
    }
    let part = data.len().div_ceil(threads);
    std::thread::scope(|scope| {
        for (src, out) in data.chunks(part).zip(dst.chunks_mut(2 * part)) {
            scope.spawn(move || encode_halves_here::<H>(src, out));
        }
    });
}

/// [`encode_halves`] on this thread, a stack chunk at a time.
fn encode_halves_here<H>(data: &[f32], dst: &mut [u8])
where
    H: Copy + Default,
    [H]: HalfFloatSliceExt,
{
    let mut chunk = [H::default(); ENCODE_CHUNK];
    for (src, out) in data
        .chunks(ENCODE_CHUNK)
        .zip(dst.chunks_mut(2 * ENCODE_CHUNK))
    {
        let halves = &mut chunk[..src.len()];
        halves.convert_from_f32_slice(src);
        let bits: &[u16] = halves.reinterpret_cast();
        if cfg!(target_endian = "little") {
            out.copy_from_slice(bytemuck::cast_slice(bits));
        } else {
            for (o, b) in out.chunks_exact_mut(2).zip(bits) {
                o.copy_from_slice(&b.to_le_bytes());
            }
        }
    }
}

/// The values in `bytes`, stored as `format`; `None` if `format` holds no floats.
pub(crate) fn decode_f32(format: TensorFormat, bytes: &[u8]) -> Option<Vec<f32>> {
    let bits = || -> Vec<u16> {
        bytes
            .chunks_exact(2)
            .map(|c| u16::from_le_bytes([c[0], c[1]]))
            .collect()
    };
    Some(match format {
        TensorFormat::F32 => bytes
            .chunks_exact(4)
            .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect(),
        TensorFormat::F16 => bits().reinterpret_cast::<half::f16>().to_f32_vec(),
        TensorFormat::Bf16 => bits().reinterpret_cast::<half::bf16>().to_f32_vec(),
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Written a chunk at a time, the bytes are each value's own conversion: lengths around
    /// the chunk, every float format.
    #[test]
    fn encoding_into_memory_converts_every_chunk() {
        for len in [
            0,
            1,
            7,
            ENCODE_CHUNK - 1,
            ENCODE_CHUNK,
            2 * ENCODE_CHUNK + 3,
        ] {
            let data: Vec<f32> = (0..len).map(|i| (i as f32 * 0.37).sin() * 1e3).collect();
            let each =
                |f: fn(f32) -> [u8; 2]| -> Vec<u8> { data.iter().flat_map(|&v| f(v)).collect() };
            for (format, want) in [
                (
                    TensorFormat::F32,
                    data.iter().flat_map(|v| v.to_le_bytes()).collect(),
                ),
                (
                    TensorFormat::F16,
                    each(|v| half::f16::from_f32(v).to_le_bytes()),
                ),
                (
                    TensorFormat::Bf16,
                    each(|v| half::bf16::from_f32(v).to_le_bytes()),
                ),
            ] {
                let mut into = vec![0xAAu8; want.len()];
                encode_f32_into(format, &data, &mut into).unwrap();
                assert_eq!(into, want, "{format:?}, {len} values");
            }
        }
        assert!(encode_f32_into(TensorFormat::I32, &[1.0], &mut [0; 4]).is_none());
    }

    /// Inputs large enough to be split across threads (where the machine has two cores) come
    /// out as one value at a time does, every part in its place.
    #[test]
    fn large_inputs_convert_in_parts_as_one_value_at_a_time() {
        let n = (9 << 20) / 2 + 12345;
        assert!(crate::host_copy::threads_for(2 * n) > 1 || num_cpus_is_one());
        let values: Vec<f32> = (0..n).map(|i| (i % 65521) as f32 * 0.013 - 400.0).collect();
        let (f16, bf16) = one_at_a_time(&values);
        assert!(encode_f32(TensorFormat::F16, &values).unwrap() == f16);
        assert!(encode_f32(TensorFormat::Bf16, &values).unwrap() == bf16);
    }

    /// `values` as fp16 and as bf16 bytes, converted one at a time.
    fn one_at_a_time(values: &[f32]) -> (Vec<u8>, Vec<u8>) {
        let f16 = values
            .iter()
            .flat_map(|x| half::f16::from_f32(*x).to_le_bytes())
            .collect();
        let bf16 = values
            .iter()
            .flat_map(|x| half::bf16::from_f32(*x).to_le_bytes())
            .collect();
        (f16, bf16)
    }

    fn num_cpus_is_one() -> bool {
        std::thread::available_parallelism().map_or(true, |n| n.get() == 1)
    }

    /// The slice conversion stores what converting each value alone stores, over values of
    /// every kind: ties, subnormals of both formats, overflow, infinities, NaN, signed zeros.
    #[test]
    fn slice_conversion_matches_one_value_at_a_time() {
        let mut values = vec![
            1.0 + f32::powi(2.0, -11),
            1.0 + 3.0 * f32::powi(2.0, -11),
            6.0e-8,
            1.0e-40,
            70000.0,
            -3.4e38,
            f32::INFINITY,
            f32::NEG_INFINITY,
            f32::NAN,
            -0.0,
        ];
        values.extend((0..1000).map(|i| ((i * 7919) % 2003) as f32 * 0.37 - 370.0));
        let (f16, bf16) = one_at_a_time(&values);
        assert_eq!(encode_f32(TensorFormat::F16, &values).unwrap(), f16);
        assert_eq!(encode_f32(TensorFormat::Bf16, &values).unwrap(), bf16);
        let back = |format, bytes: &[u8]| -> Vec<u32> {
            decode_f32(format, bytes)
                .unwrap()
                .iter()
                .map(|v| v.to_bits())
                .collect()
        };
        let one_at_a_time = |bytes: &[u8], f: fn([u8; 2]) -> f32| -> Vec<u32> {
            bytes
                .chunks_exact(2)
                .map(|c| f([c[0], c[1]]).to_bits())
                .collect()
        };
        assert_eq!(
            back(TensorFormat::F16, &f16),
            one_at_a_time(&f16, |b| half::f16::from_le_bytes(b).to_f32())
        );
        assert_eq!(
            back(TensorFormat::Bf16, &bf16),
            one_at_a_time(&bf16, |b| half::bf16::from_le_bytes(b).to_f32())
        );
    }

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
