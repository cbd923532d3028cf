//! The operation layer's memory-bound and attention operators, each timed as back-to-back
//! calls in one list ([`time_calls`]), as `bench/torch_ref.py` times PyTorch's: a CUDA graph
//! of as many calls.
//! - rows: softmax, layer norm, RMS norm over 4096 × 4096 (bytes read + written per second);
//! - unary GELU and SiLU, and a broadcast add of one row to every row, 64 and 256 MiB of fp32;
//! - ResNet's 7×7 stride-2 stem convolution, batch 1 and 8; casts F32 ↔ F16; GEMV for one
//!   token through fp16 and int8 weights (decode's shapes);
//! - sample: a token drawn from one row of logits (TinyLlama's and Qwen3's vocabularies) at a
//!   temperature alone, with top-k, top-p and both (µs a draw);
//! - attention: a causal prompt (fp16, 32 heads of 128, 2048 tokens; FLOP/s of the causal
//!   half) and one decode step against a 4096-token KV cache (K and V bytes per second).

use crate::harness::{print, time_calls, Config, Record, CALLS_METHOD};
use crate::random;
use vkprism::{CommandList, Context, Tensor, TensorFormat};
use vkprism_models::resnet::StemLayout;
use vkprism_shaders::{Attention, BinaryOp, Draw, OpError, Ops, Softmax, UnaryOp};

/// What one figure counts: bytes moved or floating-point operations.
#[derive(Copy, Clone)]
enum Work {
    Bytes(usize),
    Flops(usize),
    /// One call: the figure is its time.
    Call,
}

pub fn run(ctx: &Context, cfg: Config) -> Result<Vec<Record>, Box<dyn std::error::Error>> {
    let ops = Ops::new(ctx);
    let mut records = Vec::new();
    let floats = [TensorFormat::F32, TensorFormat::F16];
    if group("rows") {
        for f in floats {
            rows(ctx, &ops, cfg, f, &mut records)?;
        }
    }
    if group("elementwise") {
        for f in floats {
            elementwise(ctx, &ops, cfg, f, &mut records)?;
        }
    }
    if group("casts") {
        casts(ctx, &ops, cfg, &mut records)?;
    }
    if group("stem") {
        for f in floats {
            stem(ctx, &ops, cfg, f, &mut records)?;
        }
    }
    if group("gemv") {
        gemv(ctx, &ops, cfg, &mut records)?;
    }
    if group("attention") {
        attention(ctx, &ops, cfg, &mut records)?;
    }
    if group("sample") {
        sample(ctx, &ops, cfg, &mut records)?;
    }
    Ok(records)
}

/// Whether the operators' group `name` runs: every group, or those `VKPRISM_BENCH_OPS` lists
/// (`rows,elementwise,casts,stem,gemv,attention,sample`).
fn group(name: &str) -> bool {
    std::env::var("VKPRISM_BENCH_OPS").map_or(true, |list| list.split(',').any(|g| g == name))
}

fn dtype(f: TensorFormat) -> &'static str {
    match f {
        TensorFormat::F16 => "fp16",
        TensorFormat::Bf16 => "bf16",
        _ => "fp32",
    }
}

/// Times back-to-back calls of `record` ([`time_calls`]).
fn measure(
    ctx: &Context,
    cfg: Config,
    label: (&'static str, String, TensorFormat),
    work: Work,
    record: impl Fn(&mut CommandList) -> Result<(), OpError>,
) -> Result<Record, Box<dyn std::error::Error>> {
    let t = time_calls(ctx, cfg, |l| Ok(record(l)?))?;
    let (value, unit) = match work {
        Work::Bytes(b) => (b as f64 / t.median_s / 1e12, "TB/s"),
        Work::Flops(f) => (f as f64 / t.median_s / 1e12, "TFLOP/s"),
        Work::Call => (t.median_s * 1e6, "us"),
    };
    let r = Record {
        case: label.0,
        shape: label.1,
        variant: dtype(label.2).into(),
        coopmat: false,
        value,
        unit,
        sm_clock_mhz: t.sm_clock_mhz,
        method: CALLS_METHOD,
    };
    print(&r);
    Ok(r)
}

fn rows(
    ctx: &Context,
    ops: &Ops,
    cfg: Config,
    f: TensorFormat,
    out: &mut Vec<Record>,
) -> Result<(), Box<dyn std::error::Error>> {
    let n = if cfg.quick { 64 } else { 4096 };
    let x = Tensor::from_f32(ctx, &[n, n], f, &random(n * n, 1))?;
    let y = Tensor::new(ctx, &[n, n], f)?;
    let g = Tensor::from_f32(ctx, &[n], f, &random(n, 2))?;
    let bytes = Work::Bytes(2 * n * n * f.size());
    let shape = format!("{n}x{n}");
    out.push(measure(
        ctx,
        cfg,
        ("softmax", shape.clone(), f),
        bytes,
        |l| ops.softmax(l, &x, &y, &Softmax::new()),
    )?);
    out.push(measure(
        ctx,
        cfg,
        ("layer_norm", shape.clone(), f),
        bytes,
        |l| ops.layer_norm(l, &x, Some(&g), Some(&g), &y, 1e-5),
    )?);
    out.push(measure(ctx, cfg, ("rms_norm", shape, f), bytes, |l| {
        ops.rms_norm(l, &x, Some(&g), &y, 1e-5)
    })?);
    Ok(())
}

fn elementwise(
    ctx: &Context,
    ops: &Ops,
    cfg: Config,
    f: TensorFormat,
    out: &mut Vec<Record>,
) -> Result<(), Box<dyn std::error::Error>> {
    let sizes: &[usize] = if cfg.quick { &[1] } else { &[64, 256] };
    for &mib in sizes {
        // `mib` MiB of fp32 elements, as the elementwise case counts them.
        let n = mib << 18;
        let cols = 4096;
        let x = Tensor::from_f32(ctx, &[n / cols, cols], f, &random(n, 3))?;
        let y = Tensor::new(ctx, &[n / cols, cols], f)?;
        let row = Tensor::from_f32(ctx, &[cols], f, &random(cols, 4))?;
        let bytes = Work::Bytes(2 * n * f.size());
        for (name, op) in [("gelu", UnaryOp::Gelu), ("silu", UnaryOp::Silu)] {
            let label = ("unary", format!("{name} {mib}MiB"), f);
            out.push(measure(ctx, cfg, label, bytes, |l| {
                ops.unary(l, &x, &y, op)
            })?);
        }
        let label = ("broadcast", format!("add row {mib}MiB"), f);
        out.push(measure(ctx, cfg, label, bytes, |l| {
            ops.binary(l, &x, &row, &y, BinaryOp::Add)
        })?);
    }
    Ok(())
}

/// ResNet's stem, 7×7 stride-2 convolution of 224×224 RGB images to 64 channels, in each
/// `StemLayout`: the one the network takes on this device (`StemLayout::for_device`) under the
/// label PyTorch's reference has (`stem b8 224x224 3->64 7x7 s2`), the other beside it with
/// its name (`stem pixels b8 ...`, `stem blocks b8 ...`). FLOPs of the 3 real channels and the
/// 7×7 taps, as PyTorch's, for both.
fn stem(
    ctx: &Context,
    ops: &Ops,
    cfg: Config,
    f: TensorFormat,
    out: &mut Vec<Record>,
) -> Result<(), Box<dyn std::error::Error>> {
    let hw = if cfg.quick { 32 } else { 224 };
    let chosen = StemLayout::for_device(ctx, f);
    for batch in [1, 8] {
        for layout in [StemLayout::Pixels, StemLayout::Blocks] {
            let name = match layout {
                _ if layout == chosen => String::new(),
                StemLayout::Pixels => "pixels ".into(),
                StemLayout::Blocks => "blocks ".into(),
            };
            let label = format!("stem {name}b{batch} {hw}x{hw} 3->64 7x7 s2");
            out.push(stem_in(
                ctx,
                ops,
                cfg,
                f,
                layout,
                [batch, hw, hw, 3],
                label,
            )?);
        }
    }
    Ok(())
}

/// One stem of `images` (`[batch, h, w, 3]`) in `layout` (random input and weights of its
/// shapes).
fn stem_in(
    ctx: &Context,
    ops: &Ops,
    cfg: Config,
    f: TensorFormat,
    layout: StemLayout,
    images: [usize; 4],
    label: String,
) -> Result<Record, Box<dyn std::error::Error>> {
    let [batch, h, w, _] = images;
    let input_shape = layout.input_shape(images);
    let shape = layout.conv_shape(images, 64);
    let k = shape.kh;
    let (oh, ow) = (shape.outh(), shape.outw());
    assert_eq!((oh, ow), (h.div_ceil(2), w.div_ceil(2)), "{layout:?}");
    let len = input_shape.iter().product();
    let input = Tensor::from_f32(ctx, &input_shape, f, &random(len, 18))?;
    let weight_shape = [k, k, shape.c, 64];
    let weight = Tensor::from_f32(ctx, &weight_shape, f, &random(k * k * shape.c * 64, 19))?;
    let y = Tensor::new(ctx, &[batch, oh, ow, 64], f)?;
    let conv = vkprism_shaders::Conv2d::new(shape);
    let flops = Work::Flops(2 * batch * oh * ow * 64 * 49 * 3);
    measure(ctx, cfg, ("conv2d", label, f), flops, |l| {
        ops.conv2d(l, &input, &weight, None, &y, &conv)
    })
}

/// F32 → F16 and back over 256 MiB of fp32 (bytes of both sides).
fn casts(
    ctx: &Context,
    ops: &Ops,
    cfg: Config,
    out: &mut Vec<Record>,
) -> Result<(), Box<dyn std::error::Error>> {
    let n = if cfg.quick { 1 << 18 } else { 256 << 18 };
    let x32 = Tensor::from_f32(ctx, &[n], TensorFormat::F32, &random(n, 13))?;
    let x16 = Tensor::from_f32(ctx, &[n], TensorFormat::F16, &random(n, 14))?;
    let (y16, y32) = (
        Tensor::new(ctx, &[n], TensorFormat::F16)?,
        Tensor::new(ctx, &[n], TensorFormat::F32)?,
    );
    let bytes = Work::Bytes(6 * n);
    let mib = n >> 18;
    let label = ("cast", format!("f32 to f16 {mib}MiB"), TensorFormat::F32);
    out.push(measure(ctx, cfg, label, bytes, |l| {
        ops.cast(l, &x32, &y16)
    })?);
    let label = ("cast", format!("f16 to f32 {mib}MiB"), TensorFormat::F32);
    out.push(measure(ctx, cfg, label, bytes, |l| {
        ops.cast(l, &x16, &y32)
    })?);
    Ok(())
}

/// Decode's matrix-vector products: one token through [N, K] weights, fp16 and int8 (with
/// per-row scales), bytes of the weights per second.
fn gemv(
    ctx: &Context,
    ops: &Ops,
    cfg: Config,
    out: &mut Vec<Record>,
) -> Result<(), Box<dyn std::error::Error>> {
    let shapes: &[(usize, usize)] = if cfg.quick {
        &[(64, 128)]
    } else {
        &[(4096, 4096), (14336, 4096), (4096, 14336)]
    };
    let f = TensorFormat::F16;
    for &(n, k) in shapes {
        let w = Tensor::from_f32(ctx, &[n, k], f, &random(n * k, 15))?;
        let x = Tensor::from_f32(ctx, &[1, k], f, &random(k, 16))?;
        let y = Tensor::new(ctx, &[1, n], f)?;
        let label = ("gemv", format!("{n}x{k}"), f);
        out.push(measure(ctx, cfg, label, Work::Bytes(n * k * 2), |l| {
            ops.gemv(l, &w, &x, None, &y)
        })?);
        let q: Vec<i8> = (0..n * k).map(|i| (i * 7 % 255) as i8).collect();
        let w8 = Tensor::from_i8(ctx, &[n, k], &q)?;
        let scales = Tensor::from_f32(ctx, &[n], TensorFormat::F32, &random(n, 17))?;
        let label = ("gemv", format!("{n}x{k} int8 weights"), f);
        out.push(measure(ctx, cfg, label, Work::Bytes(n * k), |l| {
            ops.gemv_int8(l, &w8, &scales, &x, &y)
        })?);
    }
    Ok(())
}

/// A token drawn from one row of fp16 logits uniform in [-8, 8] (top-p 0.95 keeps some 6,000
/// of 32,000 there), at temperature 0.8 alone and with `transformers`' cuts.
fn sample(
    ctx: &Context,
    ops: &Ops,
    cfg: Config,
    out: &mut Vec<Record>,
) -> Result<(), Box<dyn std::error::Error>> {
    let vocabularies: &[usize] = if cfg.quick { &[1000] } else { &[32000, 151936] };
    let f = TensorFormat::F16;
    let seed = Tensor::from_u32(ctx, &[2], &[7, 0])?;
    let best = Tensor::from_i32(ctx, &[1], &[0])?;
    for &n in vocabularies {
        let logits = vkprism_testkit::random_in(n, 21, -8.0, 8.0);
        let x = Tensor::from_f32(ctx, &[1, n], f, &logits)?;
        let t = Draw::new(0.8);
        for (what, draw) in [
            ("temperature 0.8", t),
            ("top_k 40", t.with_top_k(40)),
            ("top_p 0.95", t.with_top_p(0.95)),
            ("top_k 40 top_p 0.95", t.with_top_k(40).with_top_p(0.95)),
        ] {
            let label = ("sample", format!("1x{n} {what}"), f);
            out.push(measure(ctx, cfg, label, Work::Call, |l| {
                ops.sample(l, &x, &best, &draw, &seed)
            })?);
        }
    }
    Ok(())
}

fn attention(
    ctx: &Context,
    ops: &Ops,
    cfg: Config,
    out: &mut Vec<Record>,
) -> Result<(), Box<dyn std::error::Error>> {
    let f = TensorFormat::F16;
    let (heads, d) = (32, 128);
    let (prompt, cache) = if cfg.quick { (64, 128) } else { (2048, 4096) };
    let tokens =
        |n: usize, seed| Tensor::from_f32(ctx, &[n, heads, d], f, &random(n * heads * d, seed));
    let (q, k, v, o) = (
        tokens(prompt, 5)?,
        tokens(prompt, 6)?,
        tokens(prompt, 7)?,
        tokens(prompt, 8)?,
    );
    let causal = Attention::new().with_causal(true);
    print_attention_statistics(ctx, d);
    // The causal half of QKᵀ and PV, as PyTorch's side counts it.
    let flops = Work::Flops(4 * prompt * prompt * heads * d / 2);
    let label = (
        "attention",
        format!("prefill {prompt} h{heads} d{d} causal"),
        f,
    );
    out.push(measure(ctx, cfg, label, flops, |l| {
        ops.attention(l, &q, &k, &v, &o, &causal)
    })?);
    let (q1, o1) = (tokens(1, 9)?, tokens(1, 10)?);
    let (kc, vc) = (tokens(cache, 11)?, tokens(cache, 12)?);
    let bytes = Work::Bytes(2 * cache * heads * d * f.size());
    let label = ("attention", format!("decode kv{cache} h{heads} d{d}"), f);
    out.push(measure(ctx, cfg, label, bytes, |l| {
        ops.attention(l, &q1, &kc, &vc, &o1, &causal)
    })?);
    grouped_decode(ctx, ops, cfg, out)
}

/// A grouped-query decoder's step (TinyLlama's heads: 32 query heads over 4 key/value heads of
/// 64) against caches of 512 and 2048 tokens.
fn grouped_decode(
    ctx: &Context,
    ops: &Ops,
    cfg: Config,
    out: &mut Vec<Record>,
) -> Result<(), Box<dyn std::error::Error>> {
    let f = TensorFormat::F16;
    let (hq, hkv, d) = (32, 4, 64);
    let q = Tensor::from_f32(ctx, &[1, hq, d], f, &random(hq * d, 13))?;
    let o = Tensor::new(ctx, &[1, hq, d], f)?;
    let causal = Attention::new().with_causal(true);
    let caches: &[usize] = if cfg.quick { &[64] } else { &[512, 2048] };
    for &cache in caches {
        let n = cache * hkv * d;
        let k = Tensor::from_f32(ctx, &[cache, hkv, d], f, &random(n, 14))?;
        let v = Tensor::from_f32(ctx, &[cache, hkv, d], f, &random(n, 15))?;
        let bytes = Work::Bytes(2 * n * f.size());
        let label = ("attention", format!("decode kv{cache} h{hq}/{hkv} d{d}"), f);
        out.push(measure(ctx, cfg, label, bytes, |l| {
            ops.attention(l, &q, &k, &v, &o, &causal)
        })?);
    }
    Ok(())
}

/// With `VKPRISM_BENCH_STATS`, the driver's statistics of the cooperative-matrix attention
/// pipeline the operation layer uses for head dimension `d` (registers, spills, shared memory).
fn print_attention_statistics(ctx: &Context, d: usize) {
    if std::env::var_os("VKPRISM_BENCH_STATS").is_none() {
        return;
    }
    let load = vkprism::LoadOptions::options(
        vkprism::Options::default()
            .with_fp16_storage(true)
            .with_fp16_arithmetic(true),
    );
    let Ok(k) = ctx.load_with::<vkprism_shaders::attention_cm::Kernel>(&load) else {
        return;
    };
    let spec = vkprism_shaders::attention_cm::SpecConstants {
        causal: 1,
        D: d as i32,
        subgroup_size: ctx.features().limits.subgroup_size as i32,
    };
    let threads = if d <= 128 { 256 } else { 128 };
    if let Ok(pipe) = k.pipeline(&spec, Some([threads, 1, 1])) {
        crate::print_statistics("attention_cm", &pipe);
    }
}
