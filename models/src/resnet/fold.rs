//! The weights made ready for the kernels, on the host: each batch norm folded into its
//! convolution ([`fold_batch_norm`]), the weights moved to the channels-last `[kh][kw][c][outc]`
//! layout, the stem's 3 input channels padded to 4, `fc` padded to a multiple of 4 classes.

use super::config::{Block, ResNetConfig};
use super::weights::{HostWeights, BN_EPS};
use super::ResNetError;
use vkprism_shaders::ops::OpError;
use vkprism_shaders::{fold_batch_norm, BatchNorm, ConvWeightLayout};

/// One convolution with its batch norm folded in: weights `[kh][kw][c][outc]` and a bias.
#[derive(Clone, Debug)]
pub struct FoldedConv {
    /// Kernel height and width.
    pub k: usize,
    /// Input channels (the stem's padded to 4).
    pub c: usize,
    /// Output channels.
    pub outc: usize,
    /// Stride, both directions.
    pub stride: usize,
    /// Zero padding on every side.
    pub pad: usize,
    /// `[k][k][c][outc]`.
    pub weight: Vec<f32>,
    /// `[outc]`.
    pub bias: Vec<f32>,
}

/// A bottleneck block's folded convolutions.
#[derive(Clone, Debug)]
pub struct FoldedBlock {
    /// 1×1, input to the 3×3's channels; ReLU after.
    pub conv1: FoldedConv,
    /// 3×3 with the block's stride; ReLU after.
    pub conv2: FoldedConv,
    /// 1×1 to the output channels; the shortcut added, then ReLU.
    pub conv3: FoldedConv,
    /// The strided 1×1 shortcut, where the block has one.
    pub downsample: Option<FoldedConv>,
}

/// The whole network, folded.
#[derive(Clone, Debug)]
pub struct FoldedNet {
    /// The 7×7 stride-2 stem; ReLU after.
    pub stem: FoldedConv,
    /// Every bottleneck block in order.
    pub blocks: Vec<FoldedBlock>,
    /// `fc.weight`, `[classes_padded, features]` (rows past `classes` zero).
    pub fc_weight: Vec<f32>,
    /// `fc.bias`, `[classes_padded]`.
    pub fc_bias: Vec<f32>,
    /// Classes, a multiple of 4 (the GEMM's rows are).
    pub classes_padded: usize,
}

/// `cfg`'s network from `weights`, folded (every tensor checked present and of its shape).
pub fn fold(cfg: &ResNetConfig, weights: &HostWeights) -> Result<FoldedNet, ResNetError> {
    check_shapes(cfg, weights)?;
    let stem = fold_conv(weights, "conv1", "bn1", 2, 3, 4)?;
    let blocks = cfg
        .block_list()
        .iter()
        .map(|b| fold_block(weights, b))
        .collect::<Result<_, _>>()?;
    let classes_padded = cfg.classes.next_multiple_of(4);
    let mut fc_weight = weights.get("fc.weight")?.data.clone();
    fc_weight.resize(classes_padded * cfg.features(), 0.0);
    let mut fc_bias = weights.get("fc.bias")?.data.clone();
    fc_bias.resize(classes_padded, 0.0);
    Ok(FoldedNet {
        stem,
        blocks,
        fc_weight,
        fc_bias,
        classes_padded,
    })
}

/// Every tensor `cfg` needs is in `weights` with its shape.
fn check_shapes(cfg: &ResNetConfig, weights: &HostWeights) -> Result<(), ResNetError> {
    for (name, want) in super::weights::weight_shapes(cfg) {
        let got = &weights.get(&name)?.shape;
        if *got != want {
            let got = got.clone();
            return Err(ResNetError::WrongShape { name, got, want });
        }
    }
    Ok(())
}

/// A block's three convolutions and its shortcut.
fn fold_block(weights: &HostWeights, b: &Block) -> Result<FoldedBlock, ResNetError> {
    let p = b.prefix();
    let conv = |n: usize, stride, pad| {
        let (c, bn) = (format!("{p}.conv{n}"), format!("{p}.bn{n}"));
        fold_conv(weights, &c, &bn, stride, pad, 0)
    };
    let downsample = if b.downsample {
        let (c, bn) = (format!("{p}.downsample.0"), format!("{p}.downsample.1"));
        Some(fold_conv(weights, &c, &bn, b.stride, 0, 0)?)
    } else {
        None
    };
    Ok(FoldedBlock {
        conv1: conv(1, 1, 0)?,
        conv2: conv(2, b.stride, 1)?,
        conv3: conv(3, 1, 0)?,
        downsample,
    })
}

/// Convolution `conv` with batch norm `bn` folded in, channels-last, its input channels padded
/// with zero weights to `min_c` (0: none).
fn fold_conv(
    weights: &HostWeights,
    conv: &str,
    bn: &str,
    stride: usize,
    pad: usize,
    min_c: usize,
) -> Result<FoldedConv, ResNetError> {
    let w = weights.get(&format!("{conv}.weight"))?;
    let part = |p: &str| weights.get(&format!("{bn}.{p}")).map(|t| t.data.as_slice());
    let norm = BatchNorm {
        gamma: part("weight")?,
        beta: part("bias")?,
        running_mean: part("running_mean")?,
        running_var: part("running_var")?,
        eps: BN_EPS,
    };
    let (folded, bias) = fold_batch_norm(&w.data, None, &norm, ConvWeightLayout::Torch)
        .map_err(|e: OpError| ResNetError::Op(e))?;
    let [outc, c, k] = [w.shape[0], w.shape[1], w.shape[2]];
    let padded_c = c.max(min_c);
    Ok(FoldedConv {
        k,
        c: padded_c,
        outc,
        stride,
        pad,
        weight: channels_last(&folded, outc, c, k, padded_c),
        bias,
    })
}

/// `[outc][c][k][k]` weights as `[k][k][padded_c][outc]`, the added input channels zero.
fn channels_last(w: &[f32], outc: usize, c: usize, k: usize, padded_c: usize) -> Vec<f32> {
    let mut out = vec![0.0; k * k * padded_c * outc];
    for o in 0..outc {
        for ci in 0..c {
            for ky in 0..k {
                for kx in 0..k {
                    let to = ((ky * k + kx) * padded_c + ci) * outc + o;
                    out[to] = w[((o * c + ci) * k + ky) * k + kx];
                }
            }
        }
    }
    out
}
