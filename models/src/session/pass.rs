//! [`Pass`]: the graph at one input shape, shapes inferred, memory planned and allocated, and
//! every node recorded once into one command list (input upload, the nodes, output download)
//! that each run replays in one submission. The runtime's list puts a barrier only before a
//! command that reads or writes a buffer an earlier command since the last barrier wrote (or
//! writes one such a command read), so reused buffers are ordered too.

use super::graph::Graph;
use super::plan::MemoryPlan;
use super::record::{record, Operands};
use super::shape::infer;
use super::{SessionError, Timing};
use std::time::Duration;
use vkprism::{CommandList, Readback, Tensor, TensorFormat, UploadSlot};
use vkprism_shaders::ops::Ops;

/// The recorded pass for one input shape.
pub(crate) struct Pass {
    /// Each value's shape, by index.
    pub shapes: Vec<Vec<usize>>,
    /// Where each value lives.
    pub plan: MemoryPlan,
    /// What it was recorded to time.
    pub timing: Timing,
    list: CommandList,
    /// Dispatches recorded once each node was: where each node's dispatches end.
    node_ends: Vec<usize>,
    input: UploadSlot,
    output: Readback,
}

impl Pass {
    /// Bytes of the list's scratch (split passes' partial sums).
    pub fn scratch_bytes(&self) -> u64 {
        self.list.scratch_bytes()
    }

    /// `graph` (checked) at input shape `input`, over the `constants` uploaded in `format`,
    /// its values in `format`, recorded to time as `timing` says.
    pub fn record(
        ops: &Ops,
        graph: &Graph,
        constants: &[Tensor],
        format: TensorFormat,
        input: &[usize],
        timing: Timing,
    ) -> Result<Pass, SessionError> {
        let shapes = infer(graph, input)?;
        let plan = MemoryPlan::of(graph, &shapes, format.size());
        let values = allocate(ops, &plan, format)?;
        let mut list = new_list(ops, graph, timing)?;
        let upload = list.upload_slot(&values[0])?;
        let t = Operands {
            values: &values,
            constants,
        };
        let mut node_ends = Vec::new();
        for node in &graph.nodes {
            record(ops, &mut list, node, &t).map_err(|source| SessionError::Op {
                node: node.name.clone(),
                source: Box::new(source),
            })?;
            node_ends.push(list.len());
        }
        let output = list.download(&values[graph.output.expect("checked").0])?;
        Ok(Pass {
            shapes,
            plan,
            timing,
            list,
            node_ends,
            input: upload,
            output,
        })
    }

    /// Writes `input` (the input's values, checked by the caller), replays the list and reads
    /// the output.
    pub fn run(&mut self, input: &[f32]) -> Result<Vec<f32>, SessionError> {
        self.input.write_f32(input)?;
        self.list.submit_and_wait()?;
        Ok(self.output.read_f32()?)
    }

    /// Dispatches and barriers recorded.
    pub fn counts(&self) -> (usize, usize) {
        (self.list.len(), self.list.barrier_count())
    }

    /// The GPU time of the last run, where it was timed.
    pub fn gpu_time(&self) -> Option<Duration> {
        match self.timing {
            Timing::Off => None,
            _ => self.list.total_time().ok(),
        }
    }

    /// Each node's GPU time in the last run (its dispatches' together), where timed per node.
    pub fn node_times(&self) -> Option<Vec<Duration>> {
        if self.timing != Timing::PerLayer {
            return None;
        }
        let times = self.list.timings().ok()?;
        let mut start = 0;
        let mut out = Vec::new();
        for &end in &self.node_ends {
            out.push(times[start..end].iter().sum());
            start = end;
        }
        Some(out)
    }
}

/// One device buffer per buffer of `plan`, and each value as a view of its buffer's start.
fn allocate(
    ops: &Ops,
    plan: &MemoryPlan,
    format: TensorFormat,
) -> Result<Vec<Tensor>, SessionError> {
    let ctx = ops.context();
    let buffers = plan
        .buffers
        .iter()
        .map(|&n| Tensor::new(ctx, &[n], format))
        .collect::<Result<Vec<_>, _>>()?;
    let views = plan
        .values
        .iter()
        .map(|v| buffers[v.buffer].view(0, &v.shape))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(views)
}

/// An empty list timing as `timing` says (room for every dispatch of `graph`'s nodes).
fn new_list(ops: &Ops, graph: &Graph, timing: Timing) -> Result<CommandList, SessionError> {
    let ctx = ops.context();
    let list = match timing {
        Timing::Off => CommandList::new(ctx)?,
        Timing::Total => CommandList::with_total_timing(ctx)?,
        Timing::PerLayer => {
            let dispatches = graph.nodes.iter().map(|n| n.op.max_dispatches()).sum();
            CommandList::with_timestamps(ctx, dispatches)?
        }
    };
    Ok(list)
}
