//! The network's sizes ([`ResNetConfig`]) and the bottleneck blocks they make ([`Block`]).

/// The channels a bottleneck block's output has per channel of its 3×3 convolution.
pub const EXPANSION: usize = 4;

/// A bottleneck ResNet's sizes (torchvision's v1.5 layout: the stride on each block's 3×3
/// convolution).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct ResNetConfig {
    /// Bottleneck blocks in each of the four stages.
    pub blocks: [usize; 4],
    /// The stem's output channels; stage i's 3×3 convolutions have `width · 2^i` channels, its
    /// blocks' outputs [`EXPANSION`] times that. A multiple of 4.
    pub width: usize,
    /// Classes the last layer scores.
    pub classes: usize,
    /// The input images' height and width the network is made for (any size runs).
    pub input: usize,
}

impl ResNetConfig {
    /// ResNet-50: blocks [3, 4, 6, 3], width 64, 1000 classes, 224×224 images.
    pub fn resnet50() -> ResNetConfig {
        ResNetConfig {
            blocks: [3, 4, 6, 3],
            width: 64,
            classes: 1000,
            input: 224,
        }
    }

    /// ResNet-50's depth with width 8, 10 classes and 32×32 images: every layer of the real
    /// network, small enough for a CPU device.
    pub fn reduced() -> ResNetConfig {
        ResNetConfig {
            blocks: [3, 4, 6, 3],
            width: 8,
            classes: 10,
            input: 32,
        }
    }

    /// This configuration with `width` stem channels.
    pub fn with_width(mut self, width: usize) -> ResNetConfig {
        self.width = width;
        self
    }

    /// This configuration with `classes` classes.
    pub fn with_classes(mut self, classes: usize) -> ResNetConfig {
        self.classes = classes;
        self
    }

    /// This configuration made for `input`×`input` images.
    pub fn with_input(mut self, input: usize) -> ResNetConfig {
        self.input = input;
        self
    }

    /// The channels the global pool averages and the last layer reads.
    pub fn features(&self) -> usize {
        self.width * 8 * EXPANSION
    }

    /// Every bottleneck block in order, with its sizes.
    pub fn block_list(&self) -> Vec<Block> {
        let mut out = Vec::new();
        let mut inc = self.width;
        for (stage, &n) in self.blocks.iter().enumerate() {
            let mid = self.width << stage;
            for index in 0..n {
                let stride = if stage > 0 && index == 0 { 2 } else { 1 };
                let outc = mid * EXPANSION;
                out.push(Block {
                    stage: stage + 1,
                    index,
                    inc,
                    mid,
                    stride,
                    downsample: index == 0,
                });
                inc = outc;
            }
        }
        out
    }
}

/// One bottleneck block: 1×1 (inc → mid), 3×3 with the stride (mid → mid), 1×1 (mid → outc),
/// each with batch norm, ReLU after the first two and after the residual sum.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Block {
    /// The stage, 1 to 4 (the `layer{stage}` of the weights' names).
    pub stage: usize,
    /// The block's index in its stage.
    pub index: usize,
    /// Input channels.
    pub inc: usize,
    /// The 3×3 convolution's channels.
    pub mid: usize,
    /// The 3×3 convolution's (and the shortcut's) stride.
    pub stride: usize,
    /// Whether the shortcut is a strided 1×1 convolution with batch norm (each stage's first
    /// block) rather than the identity.
    pub downsample: bool,
}

impl Block {
    /// Output channels.
    pub fn outc(&self) -> usize {
        self.mid * EXPANSION
    }

    /// The prefix of its weights' names: `layer{stage}.{index}`.
    pub fn prefix(&self) -> String {
        format!("layer{}.{}", self.stage, self.index)
    }
}
