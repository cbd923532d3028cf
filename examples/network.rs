//! A small CNN built from the kernel library (`vkprism-shaders`), run the way MNN runs a session:
//! prepare once (load kernels, plan and allocate memory, upload weights, record every dispatch
//! into one command list), then replay that list for many inputs, changing only the input
//! tensor's contents. Every result is checked against a CPU reference; the GPU time of each
//! layer comes from timestamps.
//!
//!     cargo run --release --example network [-- RUNS]
//!
//! (default 32 runs; a progress line every tenth of the runs from 100 on). The network, on a 3×16×16 input, weights from a fixed seed:
//!
//! | layer | kernel | shape |
//! |---|---|---|
//! | conv1 | `conv2d` 3×3, pad 1 | 3×16×16 → 8×16×16 |
//! | relu1 | `activation` (relu) | 2048 |
//! | conv2 | `conv2d` 3×3, stride 2, pad 1 | 8×16×16 → 16×8×8 |
//! | relu2 | `activation` (relu) | 1024 |
//! | fc1 | `gemm`, bias and relu fused | 1024 → 64 |
//! | fc2 | `gemm`, bias and relu fused | 64 → 64 |
//! | residual | `binary_op` (add) | fc1 + fc2 |
//! | fc3 | `gemm`, bias | 64 → 16 logits |
//!
//! Memory: the eight intermediate values live in three reused buffers, assigned as MNN's memory
//! pool does (a buffer is free again after the last layer that reads it); the command list puts a
//! barrier only where a layer reads or overwrites what an earlier one wrote.
//!
//! Each kernel is loaded with `ctx.load::<K>()`, the best variant this device runs (fp16 storage
//! where the device has it; never a cooperative-matrix `_cm` variant where it lacks them, as
//! lavapipe does). Kernels exchange tensors, so they must agree on the storage format: checked.
//!
//! `tests/examples.rs` runs [`Session`] for a few inputs.

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::error::Error;
use std::time::{Duration, Instant};
use vkprism::{CommandList, Context, FloatMode, Pipeline, Tensor, TensorFormat, VariantKey};
use vkprism_shaders::reference::{self, Conv2d, Gemm};
use vkprism_shaders::{activation, binary_op, conv2d, elementwise_grid, gemm, GemmConfig};
use vkprism_testkit::quantize;

/// A value flowing between layers: the network's input, an intermediate, or the output.
type Value = usize;

/// One layer: what it computes, what it reads and what it writes.
#[derive(Clone, Debug)]
pub enum Op {
    /// 2D convolution with bias (weights `outc × c × k × k`).
    Conv {
        /// The convolution's sizes.
        shape: Conv2d,
        /// `outc × c × k × k` weights.
        weight: Vec<f32>,
        /// One bias per output channel.
        bias: Vec<f32>,
        /// What it reads.
        input: Value,
    },
    /// Element-wise relu over `n` values.
    Relu {
        /// Elements.
        n: usize,
        /// What it reads.
        input: Value,
    },
    /// Fully connected: `act(x · W + bias)`, `W` stored `k × n`; `relu` fused or none.
    Dense {
        /// Inputs.
        k: usize,
        /// Outputs.
        n: usize,
        /// `W`, `k × n`.
        weight: Vec<f32>,
        /// One bias per output.
        bias: Vec<f32>,
        /// Whether relu is fused.
        relu: bool,
        /// What it reads.
        input: Value,
    },
    /// Element-wise sum of two values of `n` elements.
    Add {
        /// Elements.
        n: usize,
        /// The first value added.
        a: Value,
        /// The second value added.
        b: Value,
    },
}

impl Op {
    fn inputs(&self) -> Vec<Value> {
        match self {
            Op::Conv { input, .. } | Op::Relu { input, .. } | Op::Dense { input, .. } => {
                vec![*input]
            }
            Op::Add { a, b, .. } => vec![*a, *b],
        }
    }
    fn output_len(&self) -> usize {
        match self {
            Op::Conv { shape, .. } => shape.outc * shape.out_h() * shape.out_w(),
            Op::Relu { n, .. } | Op::Dense { n, .. } | Op::Add { n, .. } => *n,
        }
    }
}

/// A network: named layers in order; layer `i` produces value `i + 1` (value 0 is the input) and
/// the last layer's value is the output.
pub struct Network {
    /// Elements of the input.
    pub input_len: usize,
    /// (name, layer).
    pub layers: Vec<(&'static str, Op)>,
}

/// Deterministic pseudo-random values in [-1, 1) (`rand`'s `StdRng` seeded with `seed`).
pub fn uniform(seed: u64, n: usize) -> Vec<f32> {
    let mut rng = StdRng::seed_from_u64(seed);
    (0..n).map(|_| rng.gen_range(-1.0..1.0)).collect()
}

/// `n` weights for a layer with `fan_in` inputs (uniform, variance 2 / fan_in: activations keep
/// their scale through relus).
fn weights(seed: u64, n: usize, fan_in: usize) -> Vec<f32> {
    let a = (6.0 / fan_in as f32).sqrt();
    uniform(seed, n).into_iter().map(|v| v * a).collect()
}

/// The network of the table above, with weights from `seed`.
pub fn cnn(seed: u64) -> Network {
    let conv1 = Conv2d {
        c: 3,
        h: 16,
        w: 16,
        outc: 8,
        k: 3,
        stride: 1,
        pad: 1,
    };
    let conv2 = Conv2d {
        c: 8,
        h: 16,
        w: 16,
        outc: 16,
        k: 3,
        stride: 2,
        pad: 1,
    };
    let conv = |shape: Conv2d, s: u64, input| Op::Conv {
        shape,
        weight: weights(seed + s, shape.outc * shape.c * 9, shape.c * 9),
        bias: uniform(seed + s + 1, shape.outc)
            .iter()
            .map(|v| v * 0.1)
            .collect(),
        input,
    };
    let dense = |k, n, relu, s: u64, input| Op::Dense {
        k,
        n,
        weight: weights(seed + s, k * n, k),
        bias: uniform(seed + s + 1, n).iter().map(|v| v * 0.1).collect(),
        relu,
        input,
    };
    let flat = conv2.outc * conv2.out_h() * conv2.out_w();
    Network {
        input_len: conv1.c * conv1.h * conv1.w,
        layers: vec![
            ("conv1", conv(conv1, 10, 0)),
            (
                "relu1",
                Op::Relu {
                    n: conv1.outc * conv1.out_h() * conv1.out_w(),
                    input: 1,
                },
            ),
            ("conv2", conv(conv2, 20, 2)),
            ("relu2", Op::Relu { n: flat, input: 3 }),
            ("fc1", dense(flat, 64, true, 30, 4)),
            ("fc2", dense(64, 64, true, 40, 5)),
            ("residual", Op::Add { n: 64, a: 5, b: 6 }),
            ("fc3", dense(64, 16, false, 50, 7)),
        ],
    }
}

/// Where each intermediate value lives: MNN's pool in miniature. Walking the layers in order, a
/// value takes the first buffer whose last value has no reader left (never one this layer reads:
/// no layer reads and writes one buffer). Returns each value's buffer (`None` for the input and
/// the output, which have their own tensors) and the number of buffers.
pub fn plan_memory(net: &Network) -> (Vec<Option<usize>>, usize) {
    let values = net.layers.len() + 1;
    let mut last_read = vec![0; values];
    for (i, (_, op)) in net.layers.iter().enumerate() {
        for v in op.inputs() {
            last_read[v] = i;
        }
    }
    let mut slot_of = vec![None; values];
    // For each buffer, the value it holds now.
    let mut holders: Vec<Value> = Vec::new();
    for i in 0..net.layers.len() - 1 {
        let value = i + 1;
        let free = holders.iter().position(|&held| last_read[held] < i);
        let slot = match free {
            Some(s) => {
                holders[s] = value;
                s
            }
            None => {
                holders.push(value);
                holders.len() - 1
            }
        };
        slot_of[value] = Some(slot);
    }
    (slot_of, holders.len())
}

/// The network on the CPU (`vkprism_shaders::reference`, accumulating in f64), every stored value
/// rounded to `format` as the GPU stores it. Returns the output and, per output element, the scale
/// of its rounding error (sum of |x · w| + |bias| of the last layer).
pub fn reference(net: &Network, format: TensorFormat, input: &[f32]) -> (Vec<f32>, Vec<f32>) {
    let q = |x: &[f32]| quantize(x, format);
    let mut values = vec![q(input)];
    let mut scale = Vec::new();
    for (_, op) in &net.layers {
        let (out, s) = match op {
            Op::Conv {
                shape,
                weight,
                bias,
                input,
            } => reference::conv2d(*shape, &values[*input], &q(weight), &q(bias)),
            Op::Relu { input, .. } => (reference::activation(0, 0.0, &values[*input]), vec![]),
            Op::Dense {
                k,
                n,
                weight,
                bias,
                relu,
                input,
            } => {
                let o = Gemm {
                    alpha: 1.0,
                    activation: *relu as i32,
                    ..Gemm::default()
                };
                let bias = q(bias);
                reference::gemm_with(o, 1, *n, *k, &values[*input], &q(weight), Some(&bias))
            }
            Op::Add { a, b, .. } => (reference::binary_op(0, &values[*a], &values[*b]), vec![]),
        };
        values.push(q(&out));
        scale = s;
    }
    (values.pop().expect("one value per layer"), scale)
}

/// The largest error allowed on the output, relative to each element's error scale (at least
/// 1): fp32 1e-4 (sums in another order, through four layers); fp16 / bf16 storage 1e-2 / 5e-2
/// (a value that rounds the other way at one layer moves every later sum by up to half an ulp of
/// it: 4.9e-4 for fp16, 3.9e-3 for bf16, with margin for a few of them); fp16 arithmetic 2e-2.
pub fn tolerance(float: FloatMode) -> f32 {
    match float {
        FloatMode::Fp32 => 1e-4,
        f if f.is_bf16() => 5e-2,
        f if f.is_fp16_arithmetic() => 2e-2,
        _ => 1e-2,
    }
}

/// A prepared network: kernels loaded, memory planned and allocated, weights uploaded, every
/// dispatch recorded once. [`Session::run`] replays it for one input.
pub struct Session {
    list: CommandList,
    input: Tensor,
    output: Tensor,
    /// Layer names, in dispatch order.
    pub layer_names: Vec<&'static str>,
    /// The variant each layer runs.
    pub variants: Vec<VariantKey>,
    /// The storage format of every tensor.
    pub format: TensorFormat,
    /// How many buffers hold the intermediate values.
    pub buffers: usize,
}

/// The network's kernels, each the best variant this device runs, and their pipelines: one per
/// kernel and specialization, reused by every layer that needs it.
struct Kernels {
    conv: Pipeline<conv2d::Kernel>,
    relu: Pipeline<activation::Kernel>,
    add: Pipeline<binary_op::Kernel>,
    gemm_relu: Pipeline<gemm::Kernel>,
    gemm_none: Pipeline<gemm::Kernel>,
    /// The one GEMM configuration every dense layer takes.
    gemm_cfg: GemmConfig,
    /// The variant of conv2d, activation, gemm and binary_op.
    keys: [VariantKey; 4],
    /// The storage format they share.
    format: TensorFormat,
}

impl Kernels {
    fn load(ctx: &Context) -> Result<Kernels, Box<dyn Error>> {
        let conv_k = ctx.load::<conv2d::Kernel>()?;
        let relu_k = ctx.load::<activation::Kernel>()?;
        let gemm_k = ctx.load::<gemm::Kernel>()?;
        let add_k = ctx.load::<binary_op::Kernel>()?;
        let format = gemm_k.format_of("a_blob")?;
        for (name, f) in [
            ("conv2d", conv_k.format_of("in_blob")?),
            ("activation", relu_k.format_of("x_blob")?),
            ("binary_op", add_k.format_of("a_blob")?),
        ] {
            if f != format {
                return Err(format!(
                    "{name} stores {f:?} but gemm stores {format:?}: load them with options \
                     that agree (e.g. LoadOptions::variant)"
                )
                .into());
            }
        }
        let gemm_key = gemm_k.variant().key;
        // Every dense layer is one row (M = 1) over a short K, so one configuration of the GEMM
        // (workgroup, tiles, 8-byte loads) serves them all.
        let gemm_cfg =
            GemmConfig::for_gemm(&gemm_key, ctx.features().limits.subgroup_size, 1, 4, 4);
        let gemm_spec = |relu: bool| {
            gemm_cfg.spec(gemm::SpecConstants {
                bias_term: 1,
                activation: relu as i32,
                ..gemm::SpecConstants::default()
            })
        };
        Ok(Kernels {
            conv: conv_k.pipeline(&conv2d::SpecConstants { ksize: 3 }, None)?,
            // `n` = 0: the element count comes from the push constants (psc), so one pipeline
            // serves both relus.
            relu: relu_k.pipeline(&activation::SpecConstants { op: 0, n: 0 }, None)?,
            add: add_k.pipeline(&binary_op::SpecConstants { op: 0 }, None)?,
            gemm_relu: gemm_k.pipeline(&gemm_spec(true), Some(gemm_cfg.local_size()))?,
            gemm_none: gemm_k.pipeline(&gemm_spec(false), Some(gemm_cfg.local_size()))?,
            gemm_cfg,
            keys: [
                conv_k.variant().key,
                relu_k.variant().key,
                gemm_key,
                add_k.variant().key,
            ],
            format,
        })
    }

    /// Records layer `op` writing `out`, its inputs from `value`; the variant it runs. Its
    /// weights are uploaded here and dropped when it returns: the list keeps clones of what it
    /// binds.
    fn record<'a>(
        &self,
        ctx: &Context,
        list: &mut CommandList,
        op: &Op,
        value: impl Fn(Value) -> &'a Tensor,
        out: &Tensor,
    ) -> Result<VariantKey, Box<dyn Error>> {
        let [conv_key, relu_key, gemm_key, add_key] = self.keys;
        match op {
            Op::Conv {
                shape,
                weight,
                bias,
                input,
            } => {
                let w = Tensor::from_f32(ctx, &[weight.len()], self.format, weight)?;
                let b = Tensor::from_f32(ctx, &[bias.len()], self.format, bias)?;
                self.record_conv(list, shape, [value(*input), &w, &b, out])?;
                Ok(conv_key)
            }
            Op::Relu { n, input } => {
                let bindings = activation::BufferBindings {
                    x_blob: value(*input),
                    y_blob: out,
                };
                let push = activation::PushConstants {
                    n: (n / 4) as i32,
                    alpha: 0.0,
                };
                list.dispatch(&self.relu, &bindings, &push, elementwise_grid(n / 4))?;
                Ok(relu_key)
            }
            Op::Dense {
                k,
                n,
                weight,
                bias,
                relu,
                input,
            } => {
                let w = Tensor::from_f32(ctx, &[*k, *n], self.format, weight)?;
                let b = Tensor::from_f32(ctx, &[*n], self.format, bias)?;
                self.record_dense(list, (*k, *n, *relu), [value(*input), &w, &b, out])?;
                Ok(gemm_key)
            }
            Op::Add { n, a, b } => {
                let bindings = binary_op::BufferBindings {
                    a_blob: value(*a),
                    b_blob: value(*b),
                    out_blob: out,
                };
                let push = binary_op::PushConstants { n: (n / 4) as i32 };
                list.dispatch(&self.add, &bindings, &push, elementwise_grid(n / 4))?;
                Ok(add_key)
            }
        }
    }

    /// A convolution of `s`'s sizes: input, weights, bias, output.
    fn record_conv(
        &self,
        list: &mut CommandList,
        s: &Conv2d,
        [input, w, b, out]: [&Tensor; 4],
    ) -> Result<(), Box<dyn Error>> {
        let (oh, ow) = (s.out_h(), s.out_w());
        let bindings = conv2d::BufferBindings {
            in_blob: input,
            w_blob: w,
            b_blob: b,
            out_blob: out,
        };
        let push = conv2d::PushConstants {
            c: s.c as i32,
            h: s.h as i32,
            w: s.w as i32,
            outc: s.outc as i32,
            outh: oh as i32,
            outw: ow as i32,
            stride: s.stride as i32,
            pad: s.pad as i32,
        };
        // One invocation per output element (invocations, not workgroups).
        let grid = [ow as u32, oh as u32, s.outc as u32];
        list.dispatch(&self.conv, &bindings, &push, grid)?;
        Ok(())
    }

    /// A dense layer of one row, `k` inputs to `n` outputs (ReLU fused where `relu`): input,
    /// weights `[k, n]`, bias, output.
    fn record_dense(
        &self,
        list: &mut CommandList,
        (k, n, relu): (usize, usize, bool),
        [input, w, b, out]: [&Tensor; 4],
    ) -> Result<(), Box<dyn Error>> {
        // The GEMM reads rows as vec4s: K and N must be multiples of 4 (and K short, for the
        // one configuration every dense layer takes).
        assert!(k % 4 == 0 && n % 4 == 0, "dense layers need multiples of 4");
        assert!(
            k < 2048,
            "dense layers use one GEMM configuration, for short K"
        );
        let bindings = gemm::BufferBindings {
            a_blob: input,
            b_blob: w,
            bias_blob: b,
            c_blob: out,
        };
        let push = gemm::PushConstants {
            M: 1,
            N: n as i32,
            K: k as i32,
            alpha: 1.0,
            slope: 0.0,
            ..Default::default()
        };
        let pipeline = if relu {
            &self.gemm_relu
        } else {
            &self.gemm_none
        };
        list.dispatch(pipeline, &bindings, &push, self.gemm_cfg.grid(1, n))?;
        Ok(())
    }
}

/// The memory a session holds: the input, the output and the planned buffers, each as large
/// as the largest value it will hold.
struct Memory {
    input: Tensor,
    output: Tensor,
    pool: Vec<Tensor>,
    /// The buffer each value lives in ([`plan_memory`]); none for the input and the output.
    slot_of: Vec<Option<usize>>,
}

impl Memory {
    fn plan(ctx: &Context, net: &Network, format: TensorFormat) -> Result<Memory, Box<dyn Error>> {
        let (slot_of, buffers) = plan_memory(net);
        let mut sizes = vec![0; buffers];
        for (i, (_, op)) in net.layers.iter().enumerate() {
            if let Some(s) = slot_of[i + 1] {
                sizes[s] = sizes[s].max(op.output_len());
            }
        }
        let output_len = net.layers.last().expect("layers").1.output_len();
        let pool = sizes
            .iter()
            .map(|&n| Tensor::new(ctx, &[n], format))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Memory {
            input: Tensor::new(ctx, &[net.input_len], format)?,
            output: Tensor::new(ctx, &[output_len], format)?,
            pool,
            slot_of,
        })
    }

    /// The tensor that holds value `v`.
    fn value(&self, v: Value) -> &Tensor {
        match self.slot_of[v] {
            Some(s) => &self.pool[s],
            None if v == 0 => &self.input,
            None => &self.output,
        }
    }
}

impl Session {
    /// Prepares `net` on `ctx` (MNN's `createSession` + `resize`: everything but the run).
    pub fn new(ctx: &Context, net: &Network) -> Result<Session, Box<dyn Error>> {
        let kernels = Kernels::load(ctx)?;
        let memory = Memory::plan(ctx, net, kernels.format)?;
        // Record every layer once (with a timestamp after each).
        let mut list = CommandList::with_timestamps(ctx, net.layers.len() as u32)?;
        let mut variants = Vec::new();
        for (i, (_, op)) in net.layers.iter().enumerate() {
            let value = |v: Value| memory.value(v);
            variants.push(kernels.record(ctx, &mut list, op, value, memory.value(i + 1))?);
        }
        Ok(Session {
            list,
            buffers: memory.pool.len(),
            input: memory.input,
            output: memory.output,
            layer_names: net.layers.iter().map(|(name, _)| *name).collect(),
            variants,
            format: kernels.format,
        })
    }

    /// Runs the recorded list on `input` (MNN's `runSession`): upload, one submit, download.
    pub fn run(&mut self, input: &[f32]) -> Result<Vec<f32>, Box<dyn Error>> {
        self.input.upload_f32(input)?;
        self.list.submit_and_wait()?;
        Ok(self.output.download_f32()?)
    }

    /// The GPU time of each layer in the last run.
    pub fn layer_times(&self) -> Result<Vec<Duration>, Box<dyn Error>> {
        Ok(self.list.timings()?)
    }

    /// The loosest tolerance of the variants that run.
    pub fn tolerance(&self) -> f32 {
        self.variants
            .iter()
            .map(|k| tolerance(k.float))
            .fold(0.0, f32::max)
    }
}

/// The `i`-th input: a smooth pattern with a per-input phase, in about [-1, 1].
pub fn input(net: &Network, i: usize) -> Vec<f32> {
    let noise = uniform(1000 + i as u64, net.input_len);
    (0..net.input_len)
        .map(|j| ((j as f32 * 0.37 + i as f32).sin() + noise[j]) * 0.5)
        .collect()
}

/// Compares one output with the reference; the largest error relative to the scale.
pub fn check(got: &[f32], want: &[f32], scale: &[f32]) -> f32 {
    got.iter()
        .zip(want)
        .zip(scale)
        .map(|((g, w), s)| {
            if g.is_finite() {
                (g - w).abs() / s.max(1.0)
            } else {
                f32::INFINITY
            }
        })
        .fold(0.0, f32::max)
}

#[allow(dead_code)] // `tests/examples.rs` includes this file without its `main`.
fn main() -> Result<(), Box<dyn Error>> {
    let runs: usize = std::env::args()
        .nth(1)
        .map(|a| a.parse())
        .transpose()?
        .unwrap_or(32);
    let ctx = Context::new()?;
    println!("device: {}", ctx.device_name());

    let net = cnn(3);
    let t = Instant::now();
    let mut session = Session::new(&ctx, &net)?;
    println!(
        "prepared in {:.0?}: {} layers recorded once, {} intermediate values in {} buffers, {:?} \
         storage",
        t.elapsed(),
        net.layers.len(),
        net.layers.len() - 1,
        session.buffers,
        session.format
    );
    let tolerance = session.tolerance();
    let t = Instant::now();
    let (total, worst) = run_checked(&mut session, &net, runs)?;
    ctx.check_validation()?;
    let wall = t.elapsed();
    print_layer_times(&session, &total, runs);
    println!(
        "\n{runs} inputs in {wall:.2?} ({:.0?} each, with the CPU reference); all match the CPU: \
         worst error {worst:.2e} (tolerance {tolerance:.0e})",
        wall / runs.max(1) as u32
    );
    Ok(())
}

/// Runs `runs` inputs through `session`, each checked against the CPU reference (an error past
/// the session's tolerance ends it); returns each layer's summed GPU time and the worst error.
fn run_checked(
    session: &mut Session,
    net: &Network,
    runs: usize,
) -> Result<(Vec<Duration>, f32), Box<dyn Error>> {
    let tolerance = session.tolerance();
    let mut total = vec![Duration::ZERO; net.layers.len()];
    let mut worst = 0f32;
    let t = Instant::now();
    let progress_every = if runs >= 100 { runs / 10 } else { usize::MAX };
    for i in 0..runs {
        let x = input(net, i);
        let got = session.run(&x)?;
        for (sum, d) in total.iter_mut().zip(session.layer_times()?) {
            *sum += d;
        }
        let (want, scale) = reference(net, session.format, &x);
        let err = check(&got, &want, &scale);
        worst = worst.max(err);
        if err > tolerance {
            return Err(format!(
                "input {i}: the GPU result differs from the CPU: error {err:.2e} > tolerance \
                 {tolerance:.0e}\n  got  {got:?}\n  want {want:?}"
            )
            .into());
        }
        if (i + 1) % progress_every == 0 {
            eprintln!(
                "  [{:>5}/{runs}] {:.0?} per input (upload, run, download, CPU check)",
                i + 1,
                t.elapsed() / (i as u32 + 1)
            );
        }
    }
    Ok((total, worst))
}

/// Each layer's variant and mean GPU time over `runs`, and their total.
fn print_layer_times(session: &Session, total: &[Duration], runs: usize) {
    println!("\nlayer      variant            GPU time (mean of {runs} runs)");
    for ((name, key), sum) in session.layer_names.iter().zip(&session.variants).zip(total) {
        println!(
            "{name:<10} {:<18} {:>9.1?}",
            key.name(),
            *sum / runs.max(1) as u32
        );
    }
    let gpu: Duration = total.iter().sum::<Duration>() / runs.max(1) as u32;
    println!("{:<10} {:<18} {gpu:>9.1?}", "total", "");
}
