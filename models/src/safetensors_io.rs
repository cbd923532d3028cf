//! Safetensors files: [`SafetensorsFile`] reads tensors (F32, F16 or BF16 in the file, as `f32`)
//! for a model; `encode` writes them.

use crate::weights::check_shape;
use crate::{ModelError, WeightSource};
use safetensors::{SafeTensorError, SafeTensors};
use vkprism::TensorFormat;

/// A safetensors file's bytes, its header checked (the offsets of every tensor within the
/// file): a [`WeightSource`].
pub struct SafetensorsFile<'a> {
    inner: SafeTensors<'a>,
}

impl<'a> SafetensorsFile<'a> {
    /// The file in `bytes`, or [`ModelError::Corrupt`] where it is not a whole safetensors
    /// file (truncated, a header that is not JSON, offsets past the end).
    pub fn parse(bytes: &'a [u8]) -> Result<SafetensorsFile<'a>, ModelError> {
        let inner = SafeTensors::deserialize(bytes).map_err(corrupt)?;
        Ok(SafetensorsFile { inner })
    }

    /// The names of the tensors the file holds.
    pub fn names(&self) -> Vec<&str> {
        self.inner.names()
    }
}

impl WeightSource for SafetensorsFile<'_> {
    fn tensor(&self, name: &str, shape: &[usize]) -> Result<Vec<f32>, ModelError> {
        let view = self.inner.tensor(name).map_err(|e| match e {
            SafeTensorError::TensorNotFound(_) => ModelError::MissingTensor { name: name.into() },
            e => corrupt(e),
        })?;
        check_shape(name, view.shape(), shape)?;
        float_values(name, view.dtype(), view.data())
    }
}

/// Tensor `name`'s stored bytes of `dtype` as `f32`, or the located
/// [`ModelError::UnsupportedDtype`]: what a safetensors source reads.
pub(crate) fn float_values(
    name: &str,
    dtype: safetensors::Dtype,
    bytes: &[u8],
) -> Result<Vec<f32>, ModelError> {
    decode_values(dtype, bytes).ok_or_else(|| ModelError::UnsupportedDtype {
        name: name.into(),
        dtype: dtype.to_string(),
    })
}

fn corrupt(e: SafeTensorError) -> ModelError {
    ModelError::Corrupt(e.to_string())
}

/// A tensor's little-endian bytes of `dtype` as `f32`, where the type is a float one (F32,
/// F16, BF16): every network's weight reader (the runtime's conversion, in parts on threads).
pub(crate) fn decode_values(dtype: safetensors::Dtype, bytes: &[u8]) -> Option<Vec<f32>> {
    vkprism::decode_f32(float_format(dtype)?, bytes)
}

/// The tensor format that stores a safetensors float type.
pub(crate) fn float_format(dtype: safetensors::Dtype) -> Option<TensorFormat> {
    match dtype {
        safetensors::Dtype::F32 => Some(TensorFormat::F32),
        safetensors::Dtype::F16 => Some(TensorFormat::F16),
        safetensors::Dtype::BF16 => Some(TensorFormat::Bf16),
        _ => None,
    }
}

/// A float format a file is written in (F32, F16 or Bf16): the tensor format itself, so that
/// writing and reading a file name one set of types.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) struct Dtype(TensorFormat);

impl Dtype {
    /// The file type that stores `format`, where it is a float format.
    pub(crate) fn of(format: TensorFormat) -> Option<Dtype> {
        matches!(
            format,
            TensorFormat::F32 | TensorFormat::F16 | TensorFormat::Bf16
        )
        .then_some(Dtype(format))
    }

    fn file(self) -> safetensors::Dtype {
        match self.0 {
            TensorFormat::F32 => safetensors::Dtype::F32,
            TensorFormat::F16 => safetensors::Dtype::F16,
            // `Dtype::of` admits only the three float formats.
            _ => safetensors::Dtype::BF16,
        }
    }

    /// `values` as little-endian bytes of this type (fp16 and bf16 rounded to nearest).
    fn bytes(self, values: &[f32]) -> Vec<u8> {
        vkprism::encode_f32(self.0, values).expect("every Dtype is a float format")
    }
}

/// `values` as little-endian bytes of `dtype` (fp16 and bf16 rounded to nearest), where the
/// type is a float one: every network's weight writer.
pub(crate) fn encode_values(dtype: safetensors::Dtype, values: &[f32]) -> Option<Vec<u8>> {
    vkprism::encode_f32(float_format(dtype)?, values)
}

/// A safetensors file of `tensors` (name, shape, values), each stored as `dtype`.
pub(crate) fn encode<'a>(
    tensors: impl Iterator<Item = (&'a str, &'a [usize], &'a [f32])>,
    dtype: Dtype,
) -> Result<Vec<u8>, ModelError> {
    let data: Vec<(&str, Vec<usize>, Vec<u8>)> = tensors
        .map(|(name, shape, values)| (name, shape.to_vec(), dtype.bytes(values)))
        .collect();
    let views = data
        .iter()
        .map(|(name, shape, bytes)| {
            let view = safetensors::tensor::TensorView::new(dtype.file(), shape.clone(), bytes);
            view.map(|v| (*name, v))
        })
        .collect::<Result<Vec<_>, _>>()
        .map_err(corrupt)?;
    safetensors::serialize(views, None).map_err(corrupt)
}
