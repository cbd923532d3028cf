//! The memory plan of a graph at one input shape: which buffer holds each value. A value's
//! buffer is free again after its last reader; a node's output takes the buffer of an input
//! that dies at that node where the operation may write over it (same shape, an element-wise
//! or row-wise kernel), else the smallest free buffer that holds it, else the largest free
//! one, grown, else a new one. A node's output never shares a buffer with an input otherwise:
//! the kernels read their inputs while writing.

use super::graph::{Graph, Value};
use std::fmt;

/// Where one value lives.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PlannedValue {
    /// The value's name (the input's, or the node's that makes it).
    pub name: String,
    /// Its shape.
    pub shape: Vec<usize>,
    /// Its buffer's index in [`MemoryPlan::buffers`].
    pub buffer: usize,
    /// The input whose buffer it took over in place, where it did.
    pub in_place_of: Option<Value>,
}

impl PlannedValue {
    /// Its elements.
    pub fn len(&self) -> usize {
        self.shape.iter().product()
    }

    /// Whether it has no elements.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Buffers of elements and the value each holds over time: the session allocates one device
/// buffer per entry of [`MemoryPlan::buffers`] and makes each value a view of its buffer.
/// Printed, one line per value (name, shape, buffer), one per buffer (bytes), then the peak.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MemoryPlan {
    /// Each value by index: the input, then each node's output.
    pub values: Vec<PlannedValue>,
    /// Each buffer's elements.
    pub buffers: Vec<usize>,
    /// Bytes per element (the session's format).
    pub element_bytes: usize,
}

impl MemoryPlan {
    /// The plan of `graph` for its values' `shapes` (by index), in elements of
    /// `element_bytes`.
    pub(crate) fn of(graph: &Graph, shapes: &[Vec<usize>], element_bytes: usize) -> MemoryPlan {
        let mut plan = MemoryPlan {
            values: (0..shapes.len())
                .map(|v| PlannedValue {
                    name: graph.value_name(Value(v)).into(),
                    shape: shapes[v].clone(),
                    buffer: usize::MAX,
                    in_place_of: None,
                })
                .collect(),
            buffers: Vec::new(),
            element_bytes,
        };
        plan.place_all(graph);
        plan
    }

    /// Places the input, then each node's output as its node comes.
    fn place_all(&mut self, graph: &Graph) {
        let last_read = last_reads(graph);
        let mut free: Vec<usize> = Vec::new();
        let mut live: Vec<usize> = vec![0];
        self.place(0, &mut free);
        for (i, node) in graph.nodes.iter().enumerate() {
            live.retain(|&v| {
                let dead = last_read[v] < i;
                if dead {
                    free.push(self.values[v].buffer);
                }
                !dead
            });
            let out = node.output.0;
            let donor = node.inputs.iter().enumerate().find_map(|(input, v)| {
                let v = v.0;
                (node.op.in_place(input, &node.inputs)
                    && last_read[v] == i
                    && self.values[v].shape == self.values[out].shape
                    && live.contains(&v))
                .then_some(v)
            });
            match donor {
                Some(v) => {
                    live.retain(|&l| l != v);
                    self.values[out].buffer = self.values[v].buffer;
                    self.values[out].in_place_of = Some(Value(v));
                }
                None => self.place(out, &mut free),
            }
            live.push(out);
        }
    }

    /// Puts value `v` into a free buffer (taken from `free`) or a new one.
    fn place(&mut self, v: usize, free: &mut Vec<usize>) {
        let len = self.values[v].len();
        let fits = free
            .iter()
            .enumerate()
            .filter(|(_, &b)| self.buffers[b] >= len)
            .min_by_key(|(_, &b)| self.buffers[b]);
        let largest = free
            .iter()
            .enumerate()
            .max_by_key(|(_, &b)| self.buffers[b]);
        let buffer = match fits.or(largest) {
            Some((i, _)) => free.swap_remove(i),
            None => {
                self.buffers.push(0);
                self.buffers.len() - 1
            }
        };
        self.buffers[buffer] = self.buffers[buffer].max(len);
        self.values[v].buffer = buffer;
    }

    /// Bytes of every buffer together: the values' peak.
    pub fn peak_bytes(&self) -> u64 {
        self.bytes(self.buffers.iter().sum())
    }

    /// Bytes every value would take in a buffer of its own.
    pub fn unshared_bytes(&self) -> u64 {
        self.bytes(self.values.iter().map(PlannedValue::len).sum())
    }

    /// Bytes of `elements`.
    fn bytes(&self, elements: usize) -> u64 {
        (elements * self.element_bytes) as u64
    }
}

impl fmt::Display for MemoryPlan {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for v in &self.values {
            write!(f, "{}: {:?} in buffer {}", v.name, v.shape, v.buffer)?;
            match v.in_place_of {
                Some(x) => writeln!(f, " (in place of {})", self.values[x.0].name)?,
                None => writeln!(f)?,
            }
        }
        for (i, &n) in self.buffers.iter().enumerate() {
            writeln!(f, "buffer {i}: {} bytes", self.bytes(n))?;
        }
        writeln!(
            f,
            "peak: {} bytes in {} buffers ({} bytes unshared)",
            self.peak_bytes(),
            self.buffers.len(),
            self.unshared_bytes()
        )
    }
}

/// Each value's last reading node: the node that makes it where none reads it (the input:
/// node 0), past every node for the output (read back after the last).
fn last_reads(graph: &Graph) -> Vec<usize> {
    let mut last: Vec<usize> = (0..graph.value_count())
        .map(|v| v.saturating_sub(1))
        .collect();
    for (i, node) in graph.nodes.iter().enumerate() {
        for v in &node.inputs {
            last[v.0] = i;
        }
    }
    if let Some(out) = graph.output {
        last[out.0] = usize::MAX;
    }
    last
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::session::Dim;
    use vkprism_shaders::ops::UnaryOp;

    /// Input 0 → relu 1 → relu 2, a pool 3 of 0, 4 = 2 + 3, then the mean 5: shapes of
    /// 8, 16, 16, 8, 16 and 4 elements.
    fn residual() -> (Graph, Vec<Vec<usize>>) {
        let mut g = Graph::new();
        let x = g.input("x", &[Dim::Var("n")]);
        let a = g.unary("a", x, UnaryOp::Relu);
        let b = g.unary("b", a, UnaryOp::Relu);
        let c = g.global_avg_pool("c", x);
        let d = g.add("d", b, c, true);
        let e = g.global_avg_pool("e", d);
        g.output(e);
        let shapes = [8, 16, 16, 8, 16, 4].map(|n| vec![n]).to_vec();
        (g, shapes)
    }

    #[test]
    fn buffers_are_reused_after_the_last_reader_and_in_place() {
        let (g, shapes) = residual();
        let plan = MemoryPlan::of(&g, &shapes, 2);
        let buffers: Vec<usize> = plan.values.iter().map(|v| v.buffer).collect();
        // `a` differs in shape from `x`, so takes a buffer of its own; `b` writes over `a`
        // and `d` over `b`, each dying there; `c` cannot take `x`'s (it reads `x`), but `e`
        // can, once `x` and `c` are dead.
        assert_eq!(buffers, [0, 1, 1, 2, 1, 0], "{plan}");
        assert_eq!(plan.values[2].in_place_of, Some(Value(1)));
        assert_eq!(plan.values[4].in_place_of, Some(Value(2)));
        assert_eq!(plan.buffers, [8, 16, 8]);
        assert_eq!(plan.peak_bytes(), 64);
        assert_eq!(plan.unshared_bytes(), 2 * 68);
    }
}
