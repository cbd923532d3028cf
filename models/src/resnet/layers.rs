//! The folded weights in GPU memory, in the model's format, and how each layer records itself
//! through the operation layer.

use super::fold::{FoldedConv, FoldedNet};
use super::ResNetError;
use vkprism::{CommandList, Context, Tensor, TensorFormat};
use vkprism_shaders::ops::{Activation, Conv2d, Gemm, OpError, Ops};
use vkprism_shaders::Conv2dShape;

/// A convolution (batch norm folded in) on the device.
pub(crate) struct DeviceConv {
    /// Kernel height and width.
    pub k: usize,
    /// Input channels.
    pub c: usize,
    /// Output channels.
    pub outc: usize,
    /// Stride, both directions.
    pub stride: usize,
    /// Zero padding on every side.
    pub pad: usize,
    /// `[k, k, c, outc]`.
    weight: Tensor,
    /// `[outc]`.
    bias: Tensor,
}

impl DeviceConv {
    /// `f` uploaded in `format`.
    fn upload(ctx: &Context, f: &FoldedConv, format: TensorFormat) -> Result<Self, ResNetError> {
        let shape = [f.k, f.k, f.c, f.outc];
        Ok(DeviceConv {
            k: f.k,
            c: f.c,
            outc: f.outc,
            stride: f.stride,
            pad: f.pad,
            weight: Tensor::from_f32(ctx, &shape, format, &f.weight)?,
            bias: Tensor::from_f32(ctx, &[f.outc], format, &f.bias)?,
        })
    }

    /// The convolution's shape over `batch` images of `h`×`w`.
    pub fn shape(&self, batch: usize, h: usize, w: usize) -> Conv2dShape {
        Conv2dShape {
            batch,
            h,
            w,
            c: self.c,
            outc: self.outc,
            kh: self.k,
            kw: self.k,
            stride: self.stride,
            pad: self.pad,
        }
    }

    /// Records `out = act(conv(input) + bias)`, ReLU where `relu`.
    pub fn record(
        &self,
        ops: &Ops,
        list: &mut CommandList,
        input: &Tensor,
        out: &Tensor,
        relu: bool,
    ) -> Result<(), OpError> {
        let [batch, h, w, _] = [0, 1, 2, 3].map(|i| input.shape()[i]);
        let act = if relu {
            Activation::Relu
        } else {
            Activation::None
        };
        let op = Conv2d::new(self.shape(batch, h, w)).with_activation(act);
        ops.conv2d(list, input, &self.weight, Some(&self.bias), out, &op)
    }
}

/// A bottleneck block on the device.
pub(crate) struct DeviceBlock {
    /// 1×1; ReLU after.
    pub conv1: DeviceConv,
    /// 3×3 with the stride; ReLU after.
    pub conv2: DeviceConv,
    /// 1×1; the shortcut added, then ReLU.
    pub conv3: DeviceConv,
    /// The strided shortcut, where the block has one.
    pub downsample: Option<DeviceConv>,
}

/// The whole network's weights on the device.
pub(crate) struct DeviceNet {
    /// The stem.
    pub stem: DeviceConv,
    /// The blocks in order.
    pub blocks: Vec<DeviceBlock>,
    /// `[classes_padded, features]`.
    fc_weight: Tensor,
    /// `[classes_padded]`.
    fc_bias: Tensor,
    /// The last layer's outputs (classes rounded up to 4).
    pub classes_padded: usize,
    /// The features the last layer reads.
    pub features: usize,
}

impl DeviceNet {
    /// `net` uploaded in `format`.
    pub fn upload(
        ctx: &Context,
        net: &FoldedNet,
        format: TensorFormat,
    ) -> Result<Self, ResNetError> {
        let conv = |f: &FoldedConv| DeviceConv::upload(ctx, f, format);
        let blocks = net
            .blocks
            .iter()
            .map(|b| {
                Ok(DeviceBlock {
                    conv1: conv(&b.conv1)?,
                    conv2: conv(&b.conv2)?,
                    conv3: conv(&b.conv3)?,
                    downsample: b.downsample.as_ref().map(conv).transpose()?,
                })
            })
            .collect::<Result<_, ResNetError>>()?;
        let features = net.fc_weight.len() / net.classes_padded;
        let fc_shape = [net.classes_padded, features];
        Ok(DeviceNet {
            stem: conv(&net.stem)?,
            blocks,
            fc_weight: Tensor::from_f32(ctx, &fc_shape, format, &net.fc_weight)?,
            fc_bias: Tensor::from_f32(ctx, &[net.classes_padded], format, &net.fc_bias)?,
            classes_padded: net.classes_padded,
            features,
        })
    }

    /// Records the last layer: `logits = pooled · fc_weightᵀ + fc_bias`.
    pub fn record_fc(
        &self,
        ops: &Ops,
        list: &mut CommandList,
        pooled: &Tensor,
        logits: &Tensor,
    ) -> Result<(), OpError> {
        let op = Gemm::new().with_transpose_b(true);
        ops.gemm(
            list,
            pooled,
            &self.fc_weight,
            Some(&self.fc_bias),
            logits,
            &op,
        )
    }

    /// Bytes of weights on the device.
    pub fn bytes(&self) -> u64 {
        let conv = |c: &DeviceConv| c.weight.size_bytes() + c.bias.size_bytes();
        let blocks: u64 = self
            .blocks
            .iter()
            .map(|b| {
                conv(&b.conv1)
                    + conv(&b.conv2)
                    + conv(&b.conv3)
                    + b.downsample.as_ref().map_or(0, conv)
            })
            .sum();
        conv(&self.stem) + blocks + self.fc_weight.size_bytes() + self.fc_bias.size_bytes()
    }
}
