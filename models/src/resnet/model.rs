//! [`ResNet`]: the network as a session graph on a device, recorded once per input size and
//! replayed.

use super::config::ResNetConfig;
use super::fold::fold;
use super::graph::build;
use super::stem::{StemInput, StemLayout};
use super::weights::HostWeights;
use super::ResNetError;
use crate::session::{MemoryReport, Recorded, Session, Timing};
use std::time::Duration;
use vkprism::{Context, TensorFormat};
use vkprism_shaders::Ops;

/// A bottleneck ResNet on one device: the weights folded and uploaded once in the model's
/// format into a [`Session`] of its graph; per input size (batch, height, width) the session
/// resized (activations planned and allocated once, every layer recorded into one command
/// list: input upload, layers, logits download, one submission), replayed by each
/// [`ResNet::forward`] of that size.
pub struct ResNet {
    cfg: ResNetConfig,
    session: Session,
    /// The last input in the stem's layout.
    input: StemInput,
}

/// A forward pass's result: `[batch, classes]` scores.
#[derive(Clone, Debug, PartialEq)]
pub struct Logits {
    /// Classes per image.
    pub classes: usize,
    /// The scores, `[batch, classes]` row-major.
    pub values: Vec<f32>,
}

impl Logits {
    /// Image `n`'s scores.
    pub fn row(&self, n: usize) -> &[f32] {
        &self.values[n * self.classes..(n + 1) * self.classes]
    }

    /// Image `n`'s `k` best classes with their scores, best first.
    pub fn top_k(&self, n: usize, k: usize) -> Vec<(usize, f32)> {
        let mut scored: Vec<(usize, f32)> = self.row(n).iter().copied().enumerate().collect();
        scored.sort_by(|a, b| b.1.total_cmp(&a.1));
        scored.truncate(k);
        scored
    }
}

impl ResNet {
    /// The network of `cfg` with `weights` (checked: every tensor present and of its shape),
    /// batch norm folded, uploaded in `format` (F32, F16 or Bf16) on `ctx`, the stem in the
    /// layout [`StemLayout::for_device`] chooses.
    pub fn new(
        ctx: &Context,
        cfg: ResNetConfig,
        weights: &HostWeights,
        format: TensorFormat,
    ) -> Result<ResNet, ResNetError> {
        let stem = StemLayout::for_device(ctx, format);
        ResNet::with_stem(ctx, cfg, weights, format, stem)
    }

    /// As [`ResNet::new`], the stem in the layout `stem`.
    pub fn with_stem(
        ctx: &Context,
        cfg: ResNetConfig,
        weights: &HostWeights,
        format: TensorFormat,
        stem: StemLayout,
    ) -> Result<ResNet, ResNetError> {
        if !matches!(
            format,
            TensorFormat::F32 | TensorFormat::F16 | TensorFormat::Bf16
        ) {
            return Err(ResNetError::Format(format));
        }
        let mut net = fold(&cfg, weights)?;
        net.stem = stem.fold(net.stem);
        let session = Session::new(ctx, build(net, &cfg.block_list()), format)?;
        Ok(ResNet {
            cfg,
            session,
            input: StemInput::new(stem),
        })
    }

    /// This model timing each forward pass on the GPU as `timing` says ([`ResNet::gpu_time`],
    /// [`ResNet::layer_times`]); the device must have timestamps.
    pub fn with_timing(mut self, timing: Timing) -> ResNet {
        self.session.set_timing(timing);
        self
    }

    /// This model recording through `ops` (on the same context), e.g. `Ops::with_tuner` for
    /// tiles measured on this device ([`Session::with_ops`]).
    pub fn with_ops(self, ops: Ops) -> ResNet {
        ResNet {
            session: self.session.with_ops(ops),
            ..self
        }
    }

    /// The configuration.
    pub fn config(&self) -> &ResNetConfig {
        &self.cfg
    }

    /// How the stem sees the images.
    pub fn stem_layout(&self) -> StemLayout {
        self.input.layout()
    }

    /// The format of weights and activations on the device.
    pub fn format(&self) -> TensorFormat {
        self.session.format()
    }

    /// The logits of `input`, `[batch, h, w, 3]` channels-last (`shape`). The first call of a
    /// size resizes the session (plans and records its command list); later ones replay it. A
    /// wrong shape or data length is [`ResNetError::InputShape`]; after any error the model
    /// stays usable.
    pub fn forward(&mut self, input: &[f32], shape: [usize; 4]) -> Result<Logits, ResNetError> {
        check_input(input, shape)?;
        let device_shape = self.input.layout().input_shape(shape);
        if self.session.input_shape() != Some(&device_shape[..]) {
            self.session.resize(&device_shape)?;
        }
        let out = self.session.run(self.input.write(input, shape))?;
        let (classes, padded_classes) = (self.cfg.classes, out.shape[1]);
        let values = out
            .values
            .chunks_exact(padded_classes)
            .flat_map(|row| &row[..classes])
            .copied()
            .collect();
        Ok(Logits { classes, values })
    }

    /// The GPU time of the last forward pass, where [`ResNet::with_timing`] asked for it.
    pub fn gpu_time(&self) -> Option<Duration> {
        self.session.gpu_time()
    }

    /// Each layer's name (`conv1`, `maxpool`, `layer1.0.conv2`, `layer1.0.downsample`,
    /// `layer1.0.conv3` with the residual sum, `avgpool`, `fc`) and GPU time in the last forward pass, with
    /// [`Timing::PerLayer`].
    pub fn layer_times(&self) -> Option<Vec<(String, Duration)>> {
        self.session.node_times()
    }

    /// The dispatches and barriers recorded for the last forward pass's input size.
    pub fn recorded(&self) -> Option<Recorded> {
        self.session.recorded()
    }

    /// The memory plan of the last forward pass's input size.
    pub fn memory(&self) -> Option<MemoryReport> {
        self.session.memory()
    }

    /// The memory plan of the last forward pass's input size, one line per layer: the value
    /// it writes, its shape and its buffer; then each buffer's bytes and the peak.
    pub fn plan_description(&self) -> Option<String> {
        self.session.plan().map(|p| p.to_string())
    }
}

/// `input` is `[batch, h, w, 3]` data of that many values, no size zero.
fn check_input(input: &[f32], shape: [usize; 4]) -> Result<(), ResNetError> {
    let why = if shape[3] != 3 {
        format!("shape {shape:?}: [batch, h, w, 3] expected (3 channels, channels-last)")
    } else if shape.contains(&0) {
        format!("shape {shape:?}: every size at least 1")
    } else if input.len() != shape.iter().product::<usize>() {
        format!("{} values for shape {shape:?}", input.len())
    } else {
        return Ok(());
    };
    Err(ResNetError::InputShape { why })
}
