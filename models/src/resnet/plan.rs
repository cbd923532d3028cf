//! The forward pass for one input size as a list of steps over activation values, and the
//! memory plan that places those values: a value's buffer is free again after its last reader,
//! and a new value takes the smallest free buffer that holds it (else the largest free one,
//! grown, else a new one).

use super::config::Block;
use super::layers::{DeviceConv, DeviceNet};

/// An activation: its index among the plan's values.
pub(crate) type Value = usize;

/// Which convolution of the network.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum ConvRef {
    /// The stem.
    Stem,
    /// Block `block`'s `conv{n}` (1 to 3), or its shortcut (`n` 0).
    Block {
        /// The block's index among all blocks.
        block: usize,
        /// 1 to 3: `conv{n}`; 0: the shortcut.
        n: usize,
    },
}

/// One step of the forward pass.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum Step {
    /// A convolution (bias fused), ReLU fused where `relu`.
    Conv {
        /// Which.
        conv: ConvRef,
        /// What it reads.
        input: Value,
        /// What it writes.
        out: Value,
        /// Whether ReLU is fused.
        relu: bool,
    },
    /// Max pooling, 3×3, stride 2, padding 1.
    MaxPool {
        /// What it reads.
        input: Value,
        /// What it writes.
        out: Value,
    },
    /// `acc = relu(acc + other)`, in place: a block's end.
    AddRelu {
        /// The block's index among all blocks.
        block: usize,
        /// What it reads and overwrites.
        acc: Value,
        /// What it adds.
        other: Value,
    },
    /// The mean over each image's pixels.
    GlobalPool {
        /// What it reads.
        input: Value,
        /// What it writes.
        out: Value,
    },
    /// The last layer.
    Fc {
        /// What it reads.
        input: Value,
        /// What it writes.
        out: Value,
    },
}

impl Step {
    /// The values it reads.
    fn reads(&self) -> Vec<Value> {
        match *self {
            Step::Conv { input, .. }
            | Step::MaxPool { input, .. }
            | Step::GlobalPool { input, .. }
            | Step::Fc { input, .. } => vec![input],
            Step::AddRelu { acc, other, .. } => vec![acc, other],
        }
    }

    /// Its layer's name, as the weights' (`blocks`: the network's).
    pub fn name(&self, blocks: &[Block]) -> String {
        let block = |i: usize| blocks[i].prefix();
        match *self {
            Step::Conv {
                conv: ConvRef::Stem,
                ..
            } => "conv1".into(),
            Step::Conv {
                conv: ConvRef::Block { block: i, n: 0 },
                ..
            } => {
                format!("{}.downsample", block(i))
            }
            Step::Conv {
                conv: ConvRef::Block { block: i, n },
                ..
            } => format!("{}.conv{n}", block(i)),
            Step::MaxPool { .. } => "maxpool".into(),
            Step::AddRelu { block: i, .. } => format!("{}.add_relu", block(i)),
            Step::GlobalPool { .. } => "avgpool".into(),
            Step::Fc { .. } => "fc".into(),
        }
    }

    /// The value it makes, where it makes one (not in place).
    fn makes(&self) -> Option<Value> {
        match *self {
            Step::Conv { out, .. }
            | Step::MaxPool { out, .. }
            | Step::GlobalPool { out, .. }
            | Step::Fc { out, .. } => Some(out),
            Step::AddRelu { .. } => None,
        }
    }
}

/// The forward pass over `[batch, h, w, 4]`: its values' shapes, its steps, which value is
/// the input and which the logits.
pub(crate) struct Graph {
    /// Each value's shape.
    pub shapes: Vec<Vec<usize>>,
    /// The steps in order.
    pub steps: Vec<Step>,
    /// The (padded) input.
    pub input: Value,
    /// The logits, `[batch, classes_padded]`.
    pub logits: Value,
}

impl Graph {
    /// The forward pass of `net` over `batch` images of `h`×`w`.
    pub fn build(net: &DeviceNet, batch: usize, h: usize, w: usize) -> Graph {
        let mut g = Graph {
            shapes: vec![vec![batch, h, w, net.stem.c]],
            steps: Vec::new(),
            input: 0,
            logits: 0,
        };
        let mut x = g.conv(&net.stem, ConvRef::Stem, 0, true);
        let [b, h, w, c] = g.nhwc(x);
        let pooled = g.value(vec![b, (h - 1) / 2 + 1, (w - 1) / 2 + 1, c]);
        g.steps.push(Step::MaxPool {
            input: x,
            out: pooled,
        });
        x = pooled;
        for (i, block) in net.blocks.iter().enumerate() {
            let conv = |n| ConvRef::Block { block: i, n };
            let y = g.conv(&block.conv1, conv(1), x, true);
            let y = g.conv(&block.conv2, conv(2), y, true);
            let y = g.conv(&block.conv3, conv(3), y, false);
            let shortcut = match &block.downsample {
                Some(d) => g.conv(d, conv(0), x, false),
                None => x,
            };
            g.steps.push(Step::AddRelu {
                block: i,
                acc: y,
                other: shortcut,
            });
            x = y;
        }
        let features = g.value(vec![batch, net.features]);
        g.steps.push(Step::GlobalPool {
            input: x,
            out: features,
        });
        g.logits = g.value(vec![batch, net.classes_padded]);
        g.steps.push(Step::Fc {
            input: features,
            out: g.logits,
        });
        g
    }

    /// A new value of `shape`.
    fn value(&mut self, shape: Vec<usize>) -> Value {
        self.shapes.push(shape);
        self.shapes.len() - 1
    }

    /// Value `v`'s shape as `[batch, h, w, c]`.
    pub fn nhwc(&self, v: Value) -> [usize; 4] {
        let s = &self.shapes[v];
        [s[0], s[1], s[2], s[3]]
    }

    /// Adds the step of `conv` over `input`, returning its output.
    fn conv(&mut self, conv: &DeviceConv, which: ConvRef, input: Value, relu: bool) -> Value {
        let [b, h, w, _] = self.nhwc(input);
        let s = conv.shape(b, h, w);
        let out = self.value(vec![b, s.outh(), s.outw(), s.outc]);
        self.steps.push(Step::Conv {
            conv: which,
            input,
            out,
            relu,
        });
        out
    }

    /// Elements of value `v`.
    pub fn len(&self, v: Value) -> usize {
        self.shapes[v].iter().product()
    }
}

/// Where each value lives: buffers ("slots") of elements, each value in one.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct MemoryPlan {
    /// Each slot's elements.
    pub slots: Vec<usize>,
    /// Each value's slot.
    pub slot_of: Vec<usize>,
}

impl MemoryPlan {
    /// The plan of `g`: each value placed when its step comes, after the values whose last
    /// reader came before it were freed (a step's output never shares its inputs' buffers).
    pub fn of(g: &Graph) -> MemoryPlan {
        let last_read = last_reads(g);
        let mut plan = MemoryPlan {
            slots: Vec::new(),
            slot_of: vec![usize::MAX; g.shapes.len()],
        };
        let mut free: Vec<usize> = Vec::new();
        let mut live: Vec<Value> = Vec::new();
        plan.place(g.input, g.len(g.input), &mut free);
        live.push(g.input);
        for (i, step) in g.steps.iter().enumerate() {
            live.retain(|&v| {
                let dead = last_read[v] < i;
                if dead {
                    free.push(plan.slot_of[v]);
                }
                !dead
            });
            if let Some(v) = step.makes() {
                plan.place(v, g.len(v), &mut free);
                live.push(v);
            }
        }
        plan
    }

    /// Puts value `v` of `len` elements into a free slot (taken from `free`) or a new one.
    fn place(&mut self, v: Value, len: usize, free: &mut Vec<usize>) {
        let fits = free
            .iter()
            .enumerate()
            .filter(|(_, &s)| self.slots[s] >= len)
            .min_by_key(|(_, &s)| self.slots[s]);
        let largest = free.iter().enumerate().max_by_key(|(_, &s)| self.slots[s]);
        let slot = match fits.or(largest) {
            Some((i, _)) => free.swap_remove(i),
            None => {
                self.slots.push(0);
                self.slots.len() - 1
            }
        };
        self.slots[slot] = self.slots[slot].max(len);
        self.slot_of[v] = slot;
    }

    /// One line per step of `g` (`blocks`: the network's): the layer, the value it writes,
    /// its shape and its buffer; then each buffer's size in bytes of `element_bytes`.
    pub fn describe(&self, g: &Graph, blocks: &[Block], element_bytes: usize) -> String {
        let mut out = format!(
            "input: {:?} in buffer {}\n",
            g.shapes[g.input], self.slot_of[g.input]
        );
        for step in &g.steps {
            let v = match *step {
                Step::AddRelu { acc, .. } => acc,
                _ => step.makes().unwrap_or(g.input),
            };
            let (name, shape, slot) = (step.name(blocks), &g.shapes[v], self.slot_of[v]);
            out += &format!("{name}: {shape:?} in buffer {slot}\n");
        }
        for (i, n) in self.slots.iter().enumerate() {
            out += &format!("buffer {i}: {} bytes\n", n * element_bytes);
        }
        out
    }

    /// Elements of every slot together: the activations' peak.
    pub fn total(&self) -> usize {
        self.slots.iter().sum()
    }
}

/// Each value's last reading step (`usize::MAX` for the logits, read back after the last).
fn last_reads(g: &Graph) -> Vec<usize> {
    let mut last = vec![0; g.shapes.len()];
    for (i, step) in g.steps.iter().enumerate() {
        for v in step.reads() {
            last[v] = i;
        }
    }
    last[g.logits] = usize::MAX;
    last
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Input 0 → conv 1 → conv 2, the shortcut 3 from 0, 2 += 3, then the pool 4 and fc 5.
    fn residual_graph() -> Graph {
        let conv = |input, out| Step::Conv {
            conv: ConvRef::Stem,
            input,
            out,
            relu: true,
        };
        Graph {
            shapes: vec![vec![8], vec![16], vec![8], vec![8], vec![4], vec![2]],
            steps: vec![
                conv(0, 1),
                conv(1, 2),
                conv(0, 3),
                Step::AddRelu {
                    block: 0,
                    acc: 2,
                    other: 3,
                },
                Step::GlobalPool { input: 2, out: 4 },
                Step::Fc { input: 4, out: 5 },
            ],
            input: 0,
            logits: 5,
        }
    }

    #[test]
    fn live_values_never_share_a_buffer() {
        let g = residual_graph();
        let plan = MemoryPlan::of(&g);
        let last = last_reads(&g);
        let made_at = |v: Value| g.steps.iter().position(|s| s.makes() == Some(v));
        for a in 0..g.shapes.len() {
            for b in a + 1..g.shapes.len() {
                let (sa, sb) = (made_at(a).unwrap_or(0), made_at(b).unwrap_or(0));
                let overlap = sa <= last[b] && sb <= last[a];
                if overlap {
                    assert_ne!(plan.slot_of[a], plan.slot_of[b], "values {a} and {b}");
                }
            }
            assert!(plan.slots[plan.slot_of[a]] >= g.len(a));
        }
        // 0 lives until the shortcut; 1 is free after conv 2, so the shortcut reuses it, and the
        // pool and the logits reuse the first buffers freed.
        assert_eq!(plan.slots.len(), 3, "{plan:?}");
        assert!(plan.total() < (0..6).map(|v| g.len(v)).sum::<usize>());
    }
}
