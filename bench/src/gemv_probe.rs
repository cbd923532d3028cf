//! `--cases gemv_probe`: what a decode step's GEMVs cost one after another on this device. The
//! TinyLlama decoder's four projections and its output layer (fp16, in the variant the operation
//! layer runs), each as 20 dependent calls in one list ([`time_calls`]: every call waits for the
//! one before, as in a decode step), each call on the next of as many copies of the weights as
//! keep them out of L2 (as in a decode step, where every weight comes from memory), at workgroups
//! of 64, 128 and 256 invocations (the library's choice: `GemvShape::local_size`); the same at 256
//! on one pipeline against two alternating (what a GEMV's code costs it); and a dependent chain of
//! one-token rotations, nearly no work, for the cost of a dependent dispatch itself. Printed, not
//! compared with PyTorch: they say where a decode step's time goes (bytes per second against the
//! dispatch's floor). The same projections on int8 weights (`gemv_int8`, the operation layer's
//! variant) the same way, at workgroups of 32 to 256; and each fp16 chain on one copy (what
//! L2 is worth to it).

use crate::harness::{probe_record, time_calls, Config, Record};
use crate::random;
use std::cell::Cell;
use std::sync::Arc;
use vkprism::{Context, LoadOptions, LoadedKernel, Tensor, TensorFormat};
use vkprism_shaders::{gemv, gemv_int8, options_for, GemvShape, Ops, Rope};

const CASE: &str = "gemv_probe";

pub fn run(ctx: &Context, cfg: Config) -> Result<Vec<Record>, Box<dyn std::error::Error>> {
    let shapes: &[(usize, usize, &str)] = if cfg.quick {
        &[(64, 128, "small")]
    } else {
        &[
            (2560, 2048, "qkv"),
            (2048, 2048, "o"),
            (11264, 2048, "gate_up"),
            (2048, 5632, "down"),
            (32000, 2048, "lm_head"),
        ]
    };
    let f = TensorFormat::F16;
    let kernel = ctx.load_with::<gemv::Kernel>(&LoadOptions::options(options_for(f)))?;
    let variant = kernel.variant().key.to_string();
    let mut out = Vec::new();
    for &(n, k, name) in shapes {
        let o = Fp16Operands::new(ctx, n, k)?;
        let (s, copies) = (o.shape, o.w.len());
        for local in [64u32, 128, 256] {
            let pipe = kernel.pipeline(&s.spec(false), Some([local, 1, 1]))?;
            let next = Cell::new(0);
            let t = time_calls(ctx, cfg, |l| {
                let b = o.bindings(next.get());
                next.set(next.get() + 1);
                l.dispatch(&pipe, &b, &s.push(), s.grid([local, 1, 1]))?;
                Ok(())
            })?;
            let r = probe_record(
                CASE,
                format!("{name} {n}x{k}, {copies} copies"),
                format!("{variant} local {local}"),
                t,
            );
            println!("#   {:.2} TB/s", (n * k * 2) as f64 / t.median_s / 1e12);
            out.push(r);
        }
        out.extend(alternating(ctx, cfg, &kernel, &o, name)?);
        out.push(one_copy(ctx, cfg, &kernel, &o, name)?);
    }
    out.extend(int8(ctx, cfg, shapes)?);
    out.push(dependent_dispatch(ctx, cfg, CASE)?);
    Ok(out)
}

/// The floor of a chain of dispatches: a dependent chain of one-token rotations (64 values
/// each, nearly no work), as a record of `case`.
pub fn dependent_dispatch(
    ctx: &Context,
    cfg: Config,
    case: &'static str,
) -> Result<Record, Box<dyn std::error::Error>> {
    let ops = Ops::new(ctx);
    let x = Tensor::from_f32(ctx, &[1, 1, 64], TensorFormat::F16, &random(64, 23))?;
    let t = time_calls(ctx, cfg, |l| Ok(ops.rope(l, &x, &x, &Rope::new())?))?;
    let shape = "dependent dispatch (rope of 64 values)".into();
    Ok(probe_record(case, shape, "fp16".into(), t))
}

/// Bytes of weights a chain cycles through: past the H100's 50 MiB of L2.
const PAST_L2: usize = 160 << 20;

/// What a GEMV's code costs it in a chain of other kernels: on `o` at 256 invocations, each
/// call on the next copy of the weights, a chain of one pipeline (the bias added) against a
/// chain alternating between two (with and without it: two binaries of nearly the same work,
/// so that each call finds the other's code in the SMs' instruction caches); their
/// statistics printed.
fn alternating(
    ctx: &Context,
    cfg: Config,
    kernel: &Arc<LoadedKernel<gemv::Kernel>>,
    o: &Fp16Operands,
    name: &str,
) -> Result<Vec<Record>, Box<dyn std::error::Error>> {
    let (s, copies) = (o.shape, o.w.len());
    let bias = Tensor::from_f32(ctx, &[s.n], TensorFormat::F16, &random(s.n, 25))?;
    let plain = kernel.pipeline(&s.spec(false), Some([256, 1, 1]))?;
    let biased = kernel.pipeline(&s.spec(true), Some([256, 1, 1]))?;
    crate::print_statistics(&format!("gemv {name}"), &plain);
    crate::print_statistics(&format!("gemv {name} with its bias"), &biased);
    let variant = format!("{} local 256", kernel.variant().key);
    let mut out = Vec::new();
    for (label, alternate) in [("one pipeline", false), ("two alternating", true)] {
        let next = Cell::new(0);
        let t = time_calls(ctx, cfg, |l| {
            let b = gemv::BufferBindings {
                bias_blob: &bias,
                ..o.bindings(next.get())
            };
            let pipe = if alternate && next.get().is_multiple_of(2) {
                &plain
            } else {
                &biased
            };
            next.set(next.get() + 1);
            l.dispatch(pipe, &b, &s.push(), s.grid([256, 1, 1]))?;
            Ok(())
        })?;
        let shape = format!("{name} {}x{}, {copies} copies, {label}", s.n, s.k);
        out.push(probe_record(CASE, shape, variant.clone(), t));
    }
    Ok(out)
}

/// What L2 is worth to a GEMV: on `o` at the library's workgroup, a chain on one copy of the
/// weights, each call finding them in L2 where they fit (against the chains above, which
/// cycle the copies past it).
fn one_copy(
    ctx: &Context,
    cfg: Config,
    kernel: &Arc<LoadedKernel<gemv::Kernel>>,
    o: &Fp16Operands,
    name: &str,
) -> Result<Record, Box<dyn std::error::Error>> {
    let s = o.shape;
    let local = s.local_size(GemvShape::chunk(2));
    let pipe = kernel.pipeline(&s.spec(false), Some(local))?;
    let t = time_calls(ctx, cfg, |l| {
        l.dispatch(&pipe, &o.bindings(0), &s.push(), s.grid(local))?;
        Ok(())
    })?;
    let shape = format!("{name} {}x{}, one copy", s.n, s.k);
    let variant = format!("{} local {}", kernel.variant().key, local[0]);
    Ok(probe_record(CASE, shape, variant, t))
}

/// A GEMV's fp16 operands: as many copies of random n × k weights as keep them out of L2, one
/// token's input and output, and an unread cache position.
struct Fp16Operands {
    shape: GemvShape,
    w: Vec<Tensor>,
    x: Tensor,
    y: Tensor,
    unread: Tensor,
}

impl Fp16Operands {
    fn new(ctx: &Context, n: usize, k: usize) -> Result<Fp16Operands, vkprism::TensorError> {
        let f = TensorFormat::F16;
        let copies = PAST_L2.div_ceil(n * k * 2).clamp(1, 20);
        let w = (0..copies)
            .map(|c| Tensor::from_f32(ctx, &[n, k], f, &random(n * k, 21 + c as u64)))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Fp16Operands {
            shape: GemvShape { batch: 1, n, k },
            w,
            x: Tensor::from_f32(ctx, &[1, k], f, &random(k, 22))?,
            y: Tensor::new(ctx, &[1, n], f)?,
            unread: Tensor::from_i32(ctx, &[1], &[0])?,
        })
    }

    /// Call `call`'s bindings: the next copy of the weights (the bias unread: x).
    fn bindings(&self, call: usize) -> gemv::BufferBindings<'_> {
        gemv::BufferBindings {
            w_blob: &self.w[call % self.w.len()],
            x_blob: &self.x,
            bias_blob: &self.x,
            y_blob: &self.y,
            k_blob: &self.y,
            v_blob: &self.y,
            pos_blob: &self.unread,
        }
    }
}

/// The int8 GEMV on `shapes`, each call on the next copy of the weights.
fn int8(
    ctx: &Context,
    cfg: Config,
    shapes: &[(usize, usize, &str)],
) -> Result<Vec<Record>, Box<dyn std::error::Error>> {
    let f = TensorFormat::F16;
    let kernel = ctx.load_with::<gemv_int8::Kernel>(&LoadOptions::options(options_for(f)))?;
    let variant = kernel.variant().key.to_string();
    let mut out = Vec::new();
    for &(n, k, name) in shapes {
        let copies = PAST_L2.div_ceil(n * k).clamp(1, 20);
        let values: Vec<i8> = (0..n * k).map(|i| (i * 37 % 255) as i8).collect();
        let w = (0..copies)
            .map(|_| Tensor::from_i8(ctx, &[n, k], &values))
            .collect::<Result<Vec<_>, _>>()?;
        let scales = Tensor::from_f32(ctx, &[n], TensorFormat::F32, &random(n, 24))?;
        let x = Tensor::from_f32(ctx, &[1, k], f, &random(k, 22))?;
        let y = Tensor::new(ctx, &[1, n], f)?;
        let s = GemvShape { batch: 1, n, k };
        let unread = Tensor::from_i32(ctx, &[1], &[0])?;
        for local in [32u32, 64, 128, 256] {
            let pipe = kernel.pipeline(&s.spec(false), Some([local, 1, 1]))?;
            let next = Cell::new(0);
            let t = time_calls(ctx, cfg, |l| {
                let b = gemv_int8::BufferBindings {
                    w_blob: &w[next.get() % copies],
                    x_blob: &x,
                    scale_blob: &scales,
                    y_blob: &y,
                    k_blob: &y,
                    v_blob: &y,
                    pos_blob: &unread,
                    bias_blob: &x,
                };
                next.set(next.get() + 1);
                l.dispatch(&pipe, &b, &s.push(), s.grid([local, 1, 1]))?;
                Ok(())
            })?;
            let r = probe_record(
                CASE,
                format!("{name} {n}x{k} int8, {copies} copies"),
                format!("{variant} local {local}"),
                t,
            );
            println!("#   {:.2} TB/s", (n * k) as f64 / t.median_s / 1e12);
            out.push(r);
        }
    }
    Ok(out)
}
