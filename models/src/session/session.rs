//! [`Session`]: a [`Graph`] on one device, in MNN's Vulkan backend's flow: create (weights
//! uploaded once), resize (shapes inferred, memory planned, every node recorded once) and run
//! (input written, list replayed, output read, in one submission).

use super::graph::{Graph, Value};
use super::pass::Pass;
use super::plan::MemoryPlan;
use super::shape::infer;
use super::{MemoryReport, SessionError};
use std::time::Duration;
use vkprism::{Context, Tensor, TensorFormat};
use vkprism_shaders::ops::Ops;

/// What a run times on the GPU (the device must have timestamps).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum Timing {
    /// Nothing.
    #[default]
    Off,
    /// The whole run ([`Session::gpu_time`]).
    Total,
    /// Each node (timestamps around every dispatch serialize the GPU on some drivers, so the
    /// total is a figure for throughput).
    PerLayer,
}

/// What a pass recorded.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Recorded {
    /// Dispatches.
    pub dispatches: usize,
    /// Barriers between dependent commands (dispatches, the input's upload and the output's
    /// download).
    pub barriers: usize,
}

/// A graph's output after a run.
#[derive(Clone, Debug, PartialEq)]
pub struct Output {
    /// Its shape.
    pub shape: Vec<usize>,
    /// Its values, row-major.
    pub values: Vec<f32>,
}

/// A graph on a device: its constants uploaded once in the session's format; per input shape
/// (given to [`Session::resize`]) its values planned and allocated, every node recorded into
/// one command list replayed by each [`Session::run`]. A failed call leaves the session as it
/// was.
pub struct Session {
    ops: Ops,
    format: TensorFormat,
    /// The graph, its constants' host data dropped once uploaded.
    graph: Graph,
    /// Each constant on the device, by index.
    constants: Vec<Tensor>,
    timing: Timing,
    /// The pass of the last input shape resized to.
    pass: Option<Pass>,
}

impl Session {
    /// `graph` on `ctx` in `format` (F32, F16 or Bf16): its structure checked, its constants
    /// uploaded; [`Session::resize`] gives the input shape.
    pub fn new(
        ctx: &Context,
        mut graph: Graph,
        format: TensorFormat,
    ) -> Result<Session, SessionError> {
        if !matches!(
            format,
            TensorFormat::F32 | TensorFormat::F16 | TensorFormat::Bf16
        ) {
            return Err(SessionError::Format(format));
        }
        graph.check().map_err(SessionError::Graph)?;
        let constants = graph
            .constants
            .iter_mut()
            .map(|c| {
                let t = Tensor::from_f32(ctx, &c.shape, format, &c.data);
                c.data = Vec::new();
                t
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Session {
            ops: Ops::new(ctx),
            format,
            graph,
            constants,
            timing: Timing::Off,
            pass: None,
        })
    }

    /// This session recording through `ops` (on the same context): e.g. `Ops::with_tuner`, so
    /// each convolution and GEMM takes the tiles a [`vkprism_shaders::GemmTuner`] measured on
    /// this device. The recorded pass is dropped: the next [`Session::resize`] records again.
    pub fn with_ops(mut self, ops: Ops) -> Session {
        self.ops = ops;
        self.pass = None;
        self
    }

    /// [`Session::new`], then [`Session::resize`] to `input`.
    pub fn prepare(
        ctx: &Context,
        graph: Graph,
        format: TensorFormat,
        input: &[usize],
    ) -> Result<Session, SessionError> {
        let mut session = Session::new(ctx, graph, format)?;
        session.resize(input)?;
        Ok(session)
    }

    /// Plans and records the graph for input shape `input`, keeping the uploaded constants
    /// (an input that does not fit the declaration is [`SessionError::InputShape`], a node
    /// whose operands mismatch [`SessionError::Shape`] naming it: the current pass stays).
    /// The current pass is dropped before the new one is recorded, so device memory holds one
    /// of them at a time; where recording fails (an operation refusing its operands, memory
    /// running out), the shape before is recorded again and the error returned.
    pub fn resize(&mut self, input: &[usize]) -> Result<(), SessionError> {
        infer(&self.graph, input)?;
        let before = self.pass.take().map(|p| (p.shapes[0].clone(), p.timing));
        match self.record(input, self.timing) {
            Ok(pass) => {
                self.pass = Some(pass);
                Ok(())
            }
            Err(e) => {
                // Recorded before, so recorded again unless the device itself now fails; then
                // the session is unprepared until the next resize.
                self.pass = before.and_then(|(shape, timing)| self.record(&shape, timing).ok());
                Err(e)
            }
        }
    }

    /// A pass of the graph at input shape `input`, timed as `timing` says.
    fn record(&self, input: &[usize], timing: Timing) -> Result<Pass, SessionError> {
        let (g, c) = (&self.graph, &self.constants);
        Pass::record(&self.ops, g, c, self.format, input, timing)
    }

    /// Times later runs as `timing` says; the current pass is recorded again at the next run.
    pub fn set_timing(&mut self, timing: Timing) {
        self.timing = timing;
    }

    /// Runs the graph on `input`, the input shape's values row-major: one submission writing
    /// it, replaying every node and reading the output back.
    pub fn run(&mut self, input: &[f32]) -> Result<Output, SessionError> {
        let pass = self.pass.as_ref().ok_or(SessionError::NotPrepared)?;
        let shape = &pass.shapes[0];
        let want: usize = shape.iter().product();
        if input.len() != want {
            return Err(SessionError::InputShape {
                input: self.graph.value_name(Value(0)).into(),
                why: format!("{} values for shape {shape:?} ({want})", input.len()),
            });
        }
        if pass.timing != self.timing {
            self.resize(&shape.clone())?;
        }
        let pass = self.pass.as_mut().expect("resized above");
        let values = pass.run(input)?;
        let output = self.graph.output.expect("a checked graph has an output");
        let shape = pass.shapes[output.0].clone();
        Ok(Output { shape, values })
    }

    /// The graph (its constants' data gone to the device).
    pub fn graph(&self) -> &Graph {
        &self.graph
    }

    /// The format of constants and values on the device.
    pub fn format(&self) -> TensorFormat {
        self.format
    }

    /// The input shape of the current pass.
    pub fn input_shape(&self) -> Option<&[usize]> {
        self.shape(Value(0))
    }

    /// Value `v`'s shape in the current pass.
    pub fn shape(&self, v: Value) -> Option<&[usize]> {
        Some(&self.pass.as_ref()?.shapes.get(v.0)?[..])
    }

    /// The memory plan of the current pass (printable: every value's buffer, every buffer's
    /// bytes, the peak).
    pub fn plan(&self) -> Option<&MemoryPlan> {
        Some(&self.pass.as_ref()?.plan)
    }

    /// The current pass's dispatches and the barriers between them (the list puts one only
    /// before a command that reads or writes a buffer an earlier command since the last
    /// barrier wrote, or writes one such a command read).
    pub fn recorded(&self) -> Option<Recorded> {
        let (dispatches, barriers) = self.pass.as_ref()?.counts();
        Some(Recorded {
            dispatches,
            barriers,
        })
    }

    /// The current pass's memory, and the constants'.
    pub fn memory(&self) -> Option<MemoryReport> {
        let pass = self.pass.as_ref()?;
        Some(MemoryReport {
            values: pass.plan.values.len(),
            buffers: pass.plan.buffers.len(),
            planned_bytes: pass.plan.peak_bytes(),
            unplanned_bytes: pass.plan.unshared_bytes(),
            scratch_bytes: pass.scratch_bytes(),
            weight_bytes: self.weight_bytes(),
        })
    }

    /// Bytes of the constants on the device.
    pub fn weight_bytes(&self) -> u64 {
        self.constants.iter().map(Tensor::size_bytes).sum()
    }

    /// The GPU time of the last run, where [`Session::set_timing`] asked for it.
    pub fn gpu_time(&self) -> Option<Duration> {
        self.pass.as_ref()?.gpu_time()
    }

    /// Each node's name and GPU time in the last run, with [`Timing::PerLayer`].
    pub fn node_times(&self) -> Option<Vec<(String, Duration)>> {
        let times = self.pass.as_ref()?.node_times()?;
        let names = self.graph.nodes.iter().map(|n| n.name.clone());
        Some(names.zip(times).collect())
    }
}
