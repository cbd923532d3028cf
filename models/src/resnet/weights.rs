//! The weights on the host, named as torchvision's `resnet50().state_dict()`: which tensors a
//! configuration needs ([`weight_shapes`]), random ones for tests ([`HostWeights::random`]),
//! and safetensors input and output (F32, F16 or BF16 in the file).

use super::config::{Block, ResNetConfig};
use super::ResNetError;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use safetensors::tensor::TensorView;
use safetensors::{Dtype, SafeTensors};
use std::collections::BTreeMap;
use std::path::Path;

/// The four tensors of a batch norm, as `{prefix}.{part}`.
pub const BN_PARTS: [&str; 4] = ["weight", "bias", "running_mean", "running_var"];

/// The batch norms' epsilon (torchvision's).
pub const BN_EPS: f32 = 1e-5;

/// One tensor on the host: its shape and its values, row-major.
#[derive(Clone, Debug, PartialEq)]
pub struct HostTensor {
    /// The shape (PyTorch's).
    pub shape: Vec<usize>,
    /// The values, row-major.
    pub data: Vec<f32>,
}

/// Every tensor a configuration needs, by name, with its shape: the stem (`conv1`, `bn1`), each
/// block's three convolutions and batch norms (and each stage's first block's `downsample`),
/// and `fc`.
pub fn weight_shapes(cfg: &ResNetConfig) -> Vec<(String, Vec<usize>)> {
    let mut out = Vec::new();
    conv_bn_shapes(&mut out, "conv1", "bn1", [cfg.width, 3, 7, 7]);
    for b in cfg.block_list() {
        block_shapes(&mut out, &b);
    }
    out.push(("fc.weight".into(), vec![cfg.classes, cfg.features()]));
    out.push(("fc.bias".into(), vec![cfg.classes]));
    out
}

/// A convolution's weight `[outc, c, kh, kw]` and its batch norm's four vectors.
fn conv_bn_shapes(out: &mut Vec<(String, Vec<usize>)>, conv: &str, bn: &str, w: [usize; 4]) {
    out.push((format!("{conv}.weight"), w.to_vec()));
    for part in BN_PARTS {
        out.push((format!("{bn}.{part}"), vec![w[0]]));
    }
}

/// A bottleneck block's tensors.
fn block_shapes(out: &mut Vec<(String, Vec<usize>)>, b: &Block) {
    let p = b.prefix();
    let convs = [
        [b.mid, b.inc, 1, 1],
        [b.mid, b.mid, 3, 3],
        [b.outc(), b.mid, 1, 1],
    ];
    for (i, w) in convs.into_iter().enumerate() {
        let n = i + 1;
        conv_bn_shapes(out, &format!("{p}.conv{n}"), &format!("{p}.bn{n}"), w);
    }
    if b.downsample {
        let w = [b.outc(), b.inc, 1, 1];
        conv_bn_shapes(
            out,
            &format!("{p}.downsample.0"),
            &format!("{p}.downsample.1"),
            w,
        );
    }
}

/// A network's weights on the host, by `state_dict` name.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct HostWeights {
    tensors: BTreeMap<String, HostTensor>,
}

impl HostWeights {
    /// The tensor `name`, or [`ResNetError::MissingTensor`].
    pub fn get(&self, name: &str) -> Result<&HostTensor, ResNetError> {
        self.tensors
            .get(name)
            .ok_or_else(|| ResNetError::MissingTensor { name: name.into() })
    }

    /// Adds (or replaces) tensor `name`.
    pub fn insert(&mut self, name: impl Into<String>, tensor: HostTensor) {
        self.tensors.insert(name.into(), tensor);
    }

    /// Removes tensor `name`, returning it.
    pub fn remove(&mut self, name: &str) -> Option<HostTensor> {
        self.tensors.remove(name)
    }

    /// The tensors' names, sorted.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.tensors.keys().map(String::as_str)
    }

    /// Random weights for `cfg` from `seed`: convolutions uniform with variance 2 / fan-in,
    /// batch norms with non-trivial statistics (scales in [0.5, 1.5], the last of each block's
    /// in [0.1, 0.4] so the residual sums keep their scale, shifts and means in ±0.2, variances
    /// in [0.5, 2]), `fc` uniform within ±1/√features.
    pub fn random(cfg: &ResNetConfig, seed: u64) -> HostWeights {
        let mut rng = StdRng::seed_from_u64(seed);
        let mut w = HostWeights::default();
        for (name, shape) in weight_shapes(cfg) {
            let data = random_values(&mut rng, &name, &shape);
            w.insert(name, HostTensor { shape, data });
        }
        w
    }

    /// The tensors `cfg` needs, read from safetensors `bytes` (others in the file are ignored),
    /// each converted to f32 and checked against its shape.
    pub fn from_safetensors(cfg: &ResNetConfig, bytes: &[u8]) -> Result<HostWeights, ResNetError> {
        let file = SafeTensors::deserialize(bytes)?;
        let mut w = HostWeights::default();
        for (name, want) in weight_shapes(cfg) {
            let view = file
                .tensor(&name)
                .map_err(|_| ResNetError::MissingTensor { name: name.clone() })?;
            if view.shape() != want.as_slice() {
                let got = view.shape().to_vec();
                return Err(ResNetError::WrongShape { name, got, want });
            }
            let data = decode(&name, &view)?;
            w.insert(name, HostTensor { shape: want, data });
        }
        Ok(w)
    }

    /// As [`HostWeights::from_safetensors`], from the file at `path`.
    pub fn load(cfg: &ResNetConfig, path: &Path) -> Result<HostWeights, ResNetError> {
        let bytes = std::fs::read(path).map_err(|source| ResNetError::Io {
            path: path.display().to_string(),
            source,
        })?;
        HostWeights::from_safetensors(cfg, &bytes)
    }

    /// Every tensor as safetensors bytes, stored as `dtype` (F32, F16 or BF16; any other is
    /// [`ResNetError::UnsupportedDtype`]).
    pub fn to_safetensors(&self, dtype: Dtype) -> Result<Vec<u8>, ResNetError> {
        let mut encoded = Vec::new();
        for (name, t) in &self.tensors {
            encoded.push((name.as_str(), &t.shape, encode(name, dtype, &t.data)?));
        }
        let views = encoded
            .iter()
            .map(|(name, shape, bytes)| Ok((*name, TensorView::new(dtype, shape.to_vec(), bytes)?)))
            .collect::<Result<Vec<_>, ResNetError>>()?;
        Ok(safetensors::serialize(views, None)?)
    }

    /// As [`HostWeights::to_safetensors`], written to the file at `path`.
    pub fn save(&self, path: &Path, dtype: Dtype) -> Result<(), ResNetError> {
        std::fs::write(path, self.to_safetensors(dtype)?).map_err(|source| ResNetError::Io {
            path: path.display().to_string(),
            source,
        })
    }
}

/// Random values for tensor `name` of `shape` (see [`HostWeights::random`]).
fn random_values(rng: &mut StdRng, name: &str, shape: &[usize]) -> Vec<f32> {
    let n: usize = shape.iter().product();
    let mut uniform = |lo: f32, hi: f32| (0..n).map(|_| rng.gen_range(lo..hi)).collect();
    let last_bn = name.contains(".bn3.");
    match name.rsplit('.').next() {
        Some("running_var") => uniform(0.5, 2.0),
        Some("running_mean") | Some("bias") => uniform(-0.2, 0.2),
        Some("weight") if shape.len() == 1 && last_bn => uniform(0.1, 0.4),
        Some("weight") if shape.len() == 1 => uniform(0.5, 1.5),
        _ => {
            let fan_in: usize = shape[1..].iter().product();
            let a = if name.starts_with("fc.") {
                (1.0 / fan_in as f32).sqrt()
            } else {
                (6.0 / fan_in as f32).sqrt()
            };
            uniform(-a, a)
        }
    }
}

/// A tensor's values as f32 (F32, F16 or BF16 in the file).
fn decode(name: &str, view: &TensorView<'_>) -> Result<Vec<f32>, ResNetError> {
    crate::safetensors_io::decode_values(view.dtype(), view.data())
        .ok_or_else(|| unsupported(name, view.dtype()))
}

/// `data` stored as `dtype`, little-endian.
fn encode(name: &str, dtype: Dtype, data: &[f32]) -> Result<Vec<u8>, ResNetError> {
    crate::safetensors_io::encode_values(dtype, data).ok_or_else(|| unsupported(name, dtype))
}

/// [`ResNetError::UnsupportedDtype`] for `name`.
fn unsupported(name: &str, dtype: Dtype) -> ResNetError {
    ResNetError::UnsupportedDtype {
        name: name.into(),
        dtype: format!("{dtype:?}"),
    }
}
