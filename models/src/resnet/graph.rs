//! The folded network as a session [`Graph`]: the stem, the max pool, each bottleneck block
//! (three convolutions, the shortcut, the residual sum and its ReLU), the global average pool
//! and the last layer, each node named as the weights are.

use super::config::Block;
use super::fold::{FoldedConv, FoldedNet};
use crate::session::{Conv, Dim, Graph, Linear, Value};
use vkprism_shaders::ops::{Activation, Pool2d};

/// The graph of `net` (`blocks`: its configuration's), over `[batch, height, width, 4]`
/// images (the stem's channels padded to 4); the output is `[batch, classes_padded]`.
pub(crate) fn build(net: FoldedNet, blocks: &[Block]) -> Graph {
    let mut g = Graph::new();
    let dims = [
        Dim::Var("batch"),
        Dim::Var("height"),
        Dim::Var("width"),
        Dim::Fixed(4),
    ];
    let x = g.input("input", &dims);
    let x = conv(&mut g, "conv1", x, net.stem, true);
    let window = Pool2d::new(3, 3).with_stride(2, 2).with_padding(1, 1);
    let mut x = g.max_pool("maxpool", x, window);
    for (folded, block) in net.blocks.into_iter().zip(blocks) {
        let prefix = block.prefix();
        let name = |part: &str| format!("{prefix}.{part}");
        let y = conv(&mut g, &name("conv1"), x, folded.conv1, true);
        let y = conv(&mut g, &name("conv2"), y, folded.conv2, true);
        let y = conv(&mut g, &name("conv3"), y, folded.conv3, false);
        let shortcut = match folded.downsample {
            Some(d) => conv(&mut g, &name("downsample"), x, d, false),
            None => x,
        };
        x = g.add(&name("add_relu"), y, shortcut, true);
    }
    let features = g.global_avg_pool("avgpool", x);
    let classes = net.classes_padded;
    let width = net.fc_weight.len() / classes;
    let linear = Linear {
        weight: g.constant("fc.weight", &[classes, width], net.fc_weight),
        bias: Some(g.constant("fc.bias", &[classes], net.fc_bias)),
        activation: Activation::None,
    };
    let logits = g.linear("fc", features, linear);
    g.output(logits);
    g
}

/// Adds the convolution `name` of `x` with `f`'s weights, ReLU fused where `relu`.
fn conv(g: &mut Graph, name: &str, x: Value, f: FoldedConv, relu: bool) -> Value {
    let conv = Conv {
        weight: g.constant(
            &format!("{name}.weight"),
            &[f.k, f.k, f.c, f.outc],
            f.weight,
        ),
        bias: Some(g.constant(&format!("{name}.bias"), &[f.outc], f.bias)),
        stride: f.stride,
        pad: f.pad,
        activation: if relu {
            Activation::Relu
        } else {
            Activation::None
        },
    };
    g.conv2d(name, x, conv)
}
