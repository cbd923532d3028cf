//! Host `f32` to and from the float storage formats, shared by tensors and images (and, through
//! [`crate::encode_f32`] / [`crate::decode_f32`], by readers of weight files). fp16 and bf16
//! convert as `half` does (`half_bits.rs`): round to nearest, ties to even; NaN stays NaN;
//! overflow becomes infinity. (ncnn truncates to bf16; rounding can differ from it by one bf16
//! ulp, and is closer.) Large inputs convert in parts on threads.

use crate::half_bits::{bf16_to_f32, f16_to_f32, f32_to_bf16, f32_to_f16};
use crate::host_copy::threads_for;
use vkprism_core::TensorFormat;

/// `data` as the little-endian bytes `format` stores (F32, F16 or Bf16); `None` if `format`
/// holds no floats.
pub fn encode_f32(format: TensorFormat, data: &[f32]) -> Option<Vec<u8>> {
    let size = float_size(format)?;
    let mut bytes = vec![0; size * data.len()];
    encode_f32_into(format, data, &mut bytes)?;
    Some(bytes)
}

/// `data` as the little-endian bytes `format` stores, written into `dst` (exactly their size);
/// `None` if `format` holds no floats. F32 goes through [`crate::host_copy::copy`].
pub(crate) fn encode_f32_into(format: TensorFormat, data: &[f32], dst: &mut [u8]) -> Option<()> {
    match format {
        TensorFormat::F32 => crate::host_copy::copy(dst, bytemuck::cast_slice(data)),
        TensorFormat::F16 => narrow_all(data, dst, f32_to_f16),
        TensorFormat::Bf16 => narrow_all(data, dst, f32_to_bf16),
        _ => return None,
    }
    Some(())
}

/// `data` through `narrow` into `dst` as little-endian 16-bit values, in parts on threads
/// (`narrow` a closure or function item, so that each format's loop is compiled with it
/// inlined and vectorized).
fn narrow_all(data: &[f32], dst: &mut [u8], narrow: impl Fn(f32) -> u16 + Sync) {
    assert_eq!(
        dst.len(),
        2 * data.len(),
        "encoded size of {} values",
        data.len()
    );
    let part = part_len(data.len(), dst.len());
    let parts = data.chunks(part).zip(dst.chunks_mut(2 * part));
    each_part(parts, |src, out| {
        for (o, v) in out.chunks_exact_mut(2).zip(src) {
            o.copy_from_slice(&narrow(*v).to_le_bytes());
        }
    });
}

/// The values in `bytes`, stored as `format` (F32, F16 or Bf16, little-endian); `None` if
/// `format` holds no floats.
pub fn decode_f32(format: TensorFormat, bytes: &[u8]) -> Option<Vec<f32>> {
    let size = float_size(format)?;
    let mut values = vec![0.0; bytes.len() / size];
    let bytes = &bytes[..values.len() * size];
    match format {
        TensorFormat::F32 => widen_all(bytes, &mut values, f32::from_le_bytes),
        TensorFormat::F16 => widen_all(bytes, &mut values, |b| f16_to_f32(u16::from_le_bytes(b))),
        _ => widen_all(bytes, &mut values, |b| bf16_to_f32(u16::from_le_bytes(b))),
    }
    Some(values)
}

/// Bytes a value of `format` takes, where it holds floats.
pub(crate) fn float_size(format: TensorFormat) -> Option<usize> {
    match format {
        TensorFormat::F32 => Some(4),
        TensorFormat::F16 | TensorFormat::Bf16 => Some(2),
        _ => None,
    }
}

/// Each `N` bytes of `bytes` through `widen` into `values`, in parts on threads (`widen`
/// compiled into each format's loop, as in [`narrow_all`]).
fn widen_all<const N: usize>(
    bytes: &[u8],
    values: &mut [f32],
    widen: impl Fn([u8; N]) -> f32 + Sync,
) {
    let part = part_len(values.len(), bytes.len());
    let parts = values.chunks_mut(part).zip(bytes.chunks(N * part));
    each_part(parts, |out, src| {
        for (o, c) in out.iter_mut().zip(src.chunks_exact(N)) {
            *o = widen(c.try_into().expect("chunks of N bytes"));
        }
    });
}

/// Values a part converts: all of them, or as many as give each of [`threads_for`]'s threads
/// one part.
fn part_len(values: usize, bytes: usize) -> usize {
    values.div_ceil(threads_for(bytes)).max(1)
}

/// `f` over each pair of parts, on scoped threads where there are several, on this thread
/// where there is one.
fn each_part<A: Send, B: Send>(mut parts: impl Iterator<Item = (A, B)>, f: impl Fn(A, B) + Sync) {
    let Some(first) = parts.next() else { return };
    std::thread::scope(|s| {
        for (a, b) in parts {
            let f = &f;
            s.spawn(move || f(a, b));
        }
        f(first.0, first.1);
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Written into memory, the bytes are each value's own conversion: short and odd lengths,
    /// every float format.
    #[test]
    fn encoding_into_memory_converts_every_value() {
        for len in [0, 1, 7, 8191, 8192, 2 * 8192 + 3] {
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
