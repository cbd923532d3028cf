//! Batch-norm folding on the host, for loading weights: [`fold_batch_norm`] makes one
//! convolution equal to a convolution followed by inference-mode batch norm.

use super::OpError;

/// How a convolution's weights are stored.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ConvWeightLayout {
    /// `[kh][kw][c][outc]`: the channels-last convolution's ([`Ops::conv2d`](super::Ops::conv2d),
    /// [`Conv2dShape`](crate::Conv2dShape)); the output channel varies fastest.
    ChannelsLast,
    /// `[outc][c][kh][kw]`: PyTorch's `Conv2d.weight`; the output channel varies slowest.
    Torch,
}

/// A batch norm's inference-mode parameters, one value per channel: `y = (x - running_mean) /
/// sqrt(running_var + eps) · gamma + beta`.
#[derive(Copy, Clone, Debug)]
pub struct BatchNorm<'a> {
    /// The scale (PyTorch's `weight`).
    pub gamma: &'a [f32],
    /// The shift (PyTorch's `bias`).
    pub beta: &'a [f32],
    /// The running mean.
    pub running_mean: &'a [f32],
    /// The running variance.
    pub running_var: &'a [f32],
    /// Added to the variance.
    pub eps: f32,
}

/// The weights and bias of one convolution equal to the convolution of `weight` (stored as
/// `layout` says, output channels as many as `bn` has values) and `bias` (none: zeros)
/// followed by `bn`: each output channel o scaled by `s = gamma[o] / sqrt(running_var[o] +
/// eps)`, the bias becoming `(bias[o] - running_mean[o]) · s + beta[o]` (computed in f64, then
/// rounded). The weights keep `layout`. An error where the lengths disagree.
pub fn fold_batch_norm(
    weight: &[f32],
    bias: Option<&[f32]>,
    bn: &BatchNorm<'_>,
    layout: ConvWeightLayout,
) -> Result<(Vec<f32>, Vec<f32>), OpError> {
    let outc = bn.gamma.len();
    check_lengths(weight, bias, bn)?;
    let scale: Vec<f64> = (0..outc)
        .map(|o| bn.gamma[o] as f64 / (bn.running_var[o] as f64 + bn.eps as f64).sqrt())
        .collect();
    let per_channel = weight.len() / outc;
    let channel_of = |i: usize| match layout {
        ConvWeightLayout::ChannelsLast => i % outc,
        ConvWeightLayout::Torch => i / per_channel,
    };
    let folded = weight
        .iter()
        .enumerate()
        .map(|(i, &w)| (w as f64 * scale[channel_of(i)]) as f32)
        .collect();
    let folded_bias = (0..outc)
        .map(|o| {
            let b = bias.map_or(0.0, |b| b[o] as f64);
            ((b - bn.running_mean[o] as f64) * scale[o] + bn.beta[o] as f64) as f32
        })
        .collect();
    Ok((folded, folded_bias))
}

/// Every per-channel slice has gamma's length (at least 1), and the weights hold a whole number
/// of values per output channel.
fn check_lengths(weight: &[f32], bias: Option<&[f32]>, bn: &BatchNorm<'_>) -> Result<(), OpError> {
    const OP: &str = "fold_batch_norm";
    let outc = bn.gamma.len();
    let shape = |operand, len: usize, want: String| OpError::Shape {
        op: OP,
        operand,
        got: vec![len],
        want,
    };
    if outc == 0 {
        return Err(shape(
            "gamma",
            0,
            "one value per output channel, at least one".into(),
        ));
    }
    let per_channel = [
        ("beta", Some(bn.beta)),
        ("running_mean", Some(bn.running_mean)),
        ("running_var", Some(bn.running_var)),
        ("bias", bias),
    ];
    for (operand, t) in per_channel {
        if let Some(t) = t.filter(|t| t.len() != outc) {
            return Err(shape(operand, t.len(), format!("[{outc}], as gamma")));
        }
    }
    if weight.is_empty() || !weight.len().is_multiple_of(outc) {
        let want = format!("a whole number of values per output channel ({outc})");
        return Err(shape("weight", weight.len(), want));
    }
    Ok(())
}
