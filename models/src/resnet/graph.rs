//! The folded network as a session [`Graph`]: the stem, the max pool, each bottleneck block
//! (three convolutions and the shortcut, the last convolution adding the shortcut before its
//! ReLU), the global average pool and the last layer, each node named as the weights are.

use super::config::Block;
use super::fold::{FoldedConv, FoldedNet};
use crate::session::{Conv, Dim, Graph, Linear, Value};
use vkprism_shaders::ops::{Activation, Pool2d};

/// The graph of `net` (`blocks`: its configuration's), over `[batch, height, width,
/// net.stem.c]` inputs (the images as the stem's [`StemLayout`](super::StemLayout) lays them
/// out); the output is `[batch, classes_padded]`.
pub(crate) fn build(net: FoldedNet, blocks: &[Block]) -> Graph {
    let mut g = Graph::new();
    let dims = [
        Dim::Var("batch"),
        Dim::Var("height"),
        Dim::Var("width"),
        Dim::Fixed(net.stem.c),
    ];
    let x = g.input("input", &dims);
    let x = conv(&mut g, "conv1", x, net.stem, true);
    let window = Pool2d::new(3, 3).with_stride(2, 2).with_padding(1, 1);
    let mut x = g.max_pool("maxpool", x, window);
    for (folded, block) in net.blocks.into_iter().zip(blocks) {
        let prefix = block.prefix();
        let name = |part: &str| format!("{prefix}.{part}");
        // The downsample first: it and conv1 read x alone, so the two run side by side.
        let shortcut = match folded.downsample {
            Some(d) => conv(&mut g, &name("downsample"), x, d, false),
            None => x,
        };
        let y = conv(&mut g, &name("conv1"), x, folded.conv1, true);
        let y = conv(&mut g, &name("conv2"), y, folded.conv2, true);
        // conv3, the residual sum and its ReLU in one pass, written over the shortcut.
        let conv3 = conv_node(&mut g, &name("conv3"), folded.conv3, true);
        x = g.conv2d_residual(&name("conv3"), y, shortcut, conv3);
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
    let conv = conv_node(g, name, f, relu);
    g.conv2d(name, x, conv)
}

/// The convolution `name` with `f`'s weights (added to `g` as constants), ReLU fused where
/// `relu`.
fn conv_node(g: &mut Graph, name: &str, f: FoldedConv, relu: bool) -> Conv {
    Conv {
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
    }
}
