//! [`ResNet`]: the network on a device, its forward pass one command list recorded once per
//! input size and replayed.

use super::config::ResNetConfig;
use super::fold::fold;
use super::layers::DeviceNet;
use super::plan::{ConvRef, Graph, MemoryPlan, Step};
use super::weights::HostWeights;
use super::ResNetError;
use std::time::Duration;
use vkprism::{CommandList, Context, Readback, Tensor, TensorFormat, UploadSlot};
use vkprism_shaders::ops::{BinaryOp, OpError, Ops, Pool2d, UnaryOp};

/// A bottleneck ResNet on one device: the weights folded and uploaded once in the model's
/// format; per input size (batch, height, width) the activations planned and allocated once and
/// every layer recorded into one command list (input upload, layers, logits download: one
/// submission), replayed by each [`ResNet::forward`] of that size.
pub struct ResNet {
    ops: Ops,
    cfg: ResNetConfig,
    format: TensorFormat,
    net: DeviceNet,
    timing: Timing,
    prepared: Option<Prepared>,
}

/// What a forward pass times on the GPU (the device must have timestamps).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum Timing {
    /// Nothing.
    #[default]
    Off,
    /// The whole pass ([`ResNet::gpu_time`]).
    Total,
    /// Each layer ([`ResNet::layer_times`]; timestamps around every dispatch serialize the GPU
    /// on some drivers, so the total is a figure for throughput).
    PerLayer,
}

/// The forward pass for one input size, ready to replay.
struct Prepared {
    /// `[batch, h, w]`.
    size: [usize; 3],
    graph: Graph,
    plan: MemoryPlan,
    list: CommandList,
    /// Dispatches recorded once each step was: where each step's dispatches end.
    step_ends: Vec<usize>,
    input: UploadSlot,
    logits: Readback,
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

/// The activations' memory for one input size.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct MemoryReport {
    /// Activation values of the forward pass.
    pub values: usize,
    /// Buffers they share.
    pub buffers: usize,
    /// Bytes of those buffers: the activations' peak.
    pub planned_bytes: u64,
    /// Bytes every value would take in a buffer of its own.
    pub unplanned_bytes: u64,
    /// Bytes of the weights on the device.
    pub weight_bytes: u64,
}

impl std::fmt::Display for MemoryReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mib = |b: u64| b as f64 / (1024.0 * 1024.0);
        write!(
            f,
            "activations: {} values in {} buffers, {:.2} MiB (unshared: {:.2} MiB); weights {:.2} MiB",
            self.values,
            self.buffers,
            mib(self.planned_bytes),
            mib(self.unplanned_bytes),
            mib(self.weight_bytes)
        )
    }
}

impl ResNet {
    /// The network of `cfg` with `weights` (checked: every tensor present and of its shape),
    /// batch norm folded, uploaded in `format` (F32, F16 or Bf16) on `ctx`.
    pub fn new(
        ctx: &Context,
        cfg: ResNetConfig,
        weights: &HostWeights,
        format: TensorFormat,
    ) -> Result<ResNet, ResNetError> {
        if !matches!(
            format,
            TensorFormat::F32 | TensorFormat::F16 | TensorFormat::Bf16
        ) {
            return Err(ResNetError::Format(format));
        }
        let folded = fold(&cfg, weights)?;
        let net = DeviceNet::upload(ctx, &folded, format)?;
        Ok(ResNet {
            ops: Ops::new(ctx),
            cfg,
            format,
            net,
            timing: Timing::Off,
            prepared: None,
        })
    }

    /// This model timing each forward pass on the GPU as `timing` says ([`ResNet::gpu_time`],
    /// [`ResNet::layer_times`]); the device must have timestamps.
    pub fn with_timing(mut self, timing: Timing) -> ResNet {
        self.timing = timing;
        self.prepared = None;
        self
    }

    /// The configuration.
    pub fn config(&self) -> &ResNetConfig {
        &self.cfg
    }

    /// The format of weights and activations on the device.
    pub fn format(&self) -> TensorFormat {
        self.format
    }

    /// The logits of `input`, `[batch, h, w, 3]` channels-last (`shape`). The first call of a
    /// size plans and records its command list; later ones replay it. A wrong shape or data
    /// length is [`ResNetError::InputShape`]; after any error the model stays usable.
    pub fn forward(&mut self, input: &[f32], shape: [usize; 4]) -> Result<Logits, ResNetError> {
        check_input(input, shape)?;
        let [batch, h, w, _] = shape;
        let mut p = self.prepared_for([batch, h, w])?;
        let result = run(&mut p, input, self.cfg.classes);
        self.prepared = Some(p);
        result
    }

    /// The GPU time of the last forward pass, where [`ResNet::with_timing`] asked for it.
    pub fn gpu_time(&self) -> Option<Duration> {
        let p = self
            .prepared
            .as_ref()
            .filter(|_| self.timing != Timing::Off)?;
        p.list.total_time().ok()
    }

    /// Each layer's name (`conv1`, `maxpool`, `layer1.0.conv2`, `layer1.0.downsample`,
    /// `layer1.0.add_relu`, `avgpool`, `fc`) and GPU time in the last forward pass, with
    /// [`Timing::PerLayer`].
    pub fn layer_times(&self) -> Option<Vec<(String, Duration)>> {
        let p = self
            .prepared
            .as_ref()
            .filter(|_| self.timing == Timing::PerLayer)?;
        let times = p.list.timings().ok()?;
        let blocks = self.cfg.block_list();
        let mut start = 0;
        let mut out = Vec::new();
        for (step, &end) in p.graph.steps.iter().zip(&p.step_ends) {
            out.push((step.name(&blocks), times[start..end].iter().sum()));
            start = end;
        }
        Some(out)
    }

    /// The memory plan of the last forward pass's input size.
    pub fn memory(&self) -> Option<MemoryReport> {
        let p = self.prepared.as_ref()?;
        let bytes = |n: usize| (n * self.format.size()) as u64;
        let all: usize = (0..p.graph.shapes.len()).map(|v| p.graph.len(v)).sum();
        Some(MemoryReport {
            values: p.graph.shapes.len(),
            buffers: p.plan.slots.len(),
            planned_bytes: bytes(p.plan.total()),
            unplanned_bytes: bytes(all),
            weight_bytes: self.net.bytes(),
        })
    }

    /// The memory plan of the last forward pass's input size, one line per layer: the value
    /// it writes, its shape and its buffer; then each buffer's bytes.
    pub fn plan_description(&self) -> Option<String> {
        let p = self.prepared.as_ref()?;
        let blocks = self.cfg.block_list();
        Some(p.plan.describe(&p.graph, &blocks, self.format.size()))
    }

    /// The prepared pass for `size` (taken out of the model while it runs), made where the last
    /// one was of another size.
    fn prepared_for(&mut self, size: [usize; 3]) -> Result<Prepared, ResNetError> {
        match self.prepared.take() {
            Some(p) if p.size == size => Ok(p),
            _ => self.prepare(size),
        }
    }

    /// Plans, allocates and records the forward pass for `[batch, h, w]`.
    fn prepare(&self, size: [usize; 3]) -> Result<Prepared, ResNetError> {
        let [batch, h, w] = size;
        let graph = Graph::build(&self.net, batch, h, w);
        let plan = MemoryPlan::of(&graph);
        let tensors = self.allocate(&graph, &plan)?;
        let ctx = self.ops.context();
        let mut list = match self.timing {
            Timing::Off => CommandList::new(ctx)?,
            Timing::Total => CommandList::with_total_timing(ctx)?,
            // Split-K convolutions take two dispatches, the residual sums two.
            Timing::PerLayer => CommandList::with_timestamps(ctx, 2 * graph.steps.len() as u32)?,
        };
        let input = list.upload_slot(&tensors[graph.input])?;
        let mut step_ends = Vec::new();
        for step in &graph.steps {
            self.record(&mut list, step, &tensors)?;
            step_ends.push(list.len());
        }
        let logits = list.download(&tensors[graph.logits])?;
        Ok(Prepared {
            size,
            graph,
            plan,
            list,
            step_ends,
            input,
            logits,
        })
    }

    /// One buffer per slot of `plan`, and each value of `graph` as a view of its slot's.
    fn allocate(&self, graph: &Graph, plan: &MemoryPlan) -> Result<Vec<Tensor>, ResNetError> {
        let ctx = self.ops.context();
        let slots = plan
            .slots
            .iter()
            .map(|&n| Tensor::new(ctx, &[n], self.format))
            .collect::<Result<Vec<_>, _>>()?;
        let views = graph
            .shapes
            .iter()
            .zip(&plan.slot_of)
            .map(|(shape, &s)| slots[s].view(0, shape))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(views)
    }

    /// Records one step over the values' tensors `t`.
    fn record(&self, list: &mut CommandList, step: &Step, t: &[Tensor]) -> Result<(), OpError> {
        let ops = &self.ops;
        match *step {
            Step::Conv {
                conv,
                input,
                out,
                relu,
            } => self.conv(conv).record(ops, list, &t[input], &t[out], relu),
            Step::MaxPool { input, out } => {
                let pool = Pool2d::new(3, 3).with_stride(2, 2).with_padding(1, 1);
                ops.max_pool2d(list, &t[input], &t[out], &pool)
            }
            Step::AddRelu { acc, other, .. } => {
                ops.binary(list, &t[acc], &t[other], &t[acc], BinaryOp::Add)?;
                ops.unary(list, &t[acc], &t[acc], UnaryOp::Relu)
            }
            Step::GlobalPool { input, out } => ops.global_avg_pool(list, &t[input], &t[out]),
            Step::Fc { input, out } => self.net.record_fc(ops, list, &t[input], &t[out]),
        }
    }

    /// The convolution `which` names.
    fn conv(&self, which: ConvRef) -> &super::layers::DeviceConv {
        match which {
            ConvRef::Stem => &self.net.stem,
            ConvRef::Block { block, n } => {
                let b = &self.net.blocks[block];
                match n {
                    1 => &b.conv1,
                    2 => &b.conv2,
                    3 => &b.conv3,
                    _ => b
                        .downsample
                        .as_ref()
                        .expect("a shortcut step has its convolution"),
                }
            }
        }
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

/// Writes `input` (3 channels, padded to the stem's 4), runs the list and reads the logits of
/// the first `classes` columns.
fn run(p: &mut Prepared, input: &[f32], classes: usize) -> Result<Logits, ResNetError> {
    let padded: Vec<f32> = input
        .chunks_exact(3)
        .flat_map(|px| [px[0], px[1], px[2], 0.0])
        .collect();
    p.input.write_f32(&padded)?;
    p.list.submit_and_wait()?;
    let all = p.logits.read_f32()?;
    let padded_classes = p.graph.shapes[p.graph.logits][1];
    let values = all
        .chunks_exact(padded_classes)
        .flat_map(|row| &row[..classes])
        .copied()
        .collect();
    Ok(Logits { classes, values })
}
