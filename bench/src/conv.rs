//! Convolution throughput of `vkprism_shaders::conv2d_nhwc` (implicit GEMM, channels-last):
//! 3×3, stride 1, same padding, batch 8, 2·M·N·K FLOPs per run with M = 8·56·56 (or 8·14·14),
//! N = outc, K = 9·c. Then the depthwise cases (`conv_dw.rs`).

use crate::harness::{print, time_calls, Config, Record, CALLS_METHOD};
use crate::{quantize, random};
use vkprism::{CommandList, Context, LoadOptions, Tensor};
use vkprism_shaders::{
    conv2d_nhwc, conv2d_nhwc_split, Conv2d, Conv2dShape, GemmConfig, GemmTuner, Ops,
};

/// (spatial size, channels in = out).
const SHAPES: [(usize, usize); 4] = [(56, 64), (14, 64), (56, 256), (14, 256)];
const QUICK_SHAPES: [(usize, usize); 1] = [(6, 8)];
const VARIANTS: [&str; 6] = [
    "fp32_lm_nocm",
    "fp16p_lm_nocm",
    "fp16s_lm_nocm",
    "fp16sa_lm_nocm",
    "fp16p_lm_cm",
    "fp16s_lm_cm",
];

pub fn run(ctx: &Context, cfg: Config) -> Result<Vec<Record>, Box<dyn std::error::Error>> {
    let shapes: &[_] = if cfg.quick { &QUICK_SHAPES } else { &SHAPES };
    let mut records = Vec::new();
    let mut tuner = crate::gemm::tuner(ctx);
    for &(hw, c) in shapes {
        let batch = if cfg.quick { 1 } else { 8 };
        let s = Conv2dShape {
            batch,
            h: hw,
            w: hw,
            c,
            outc: c,
            kh: 3,
            kw: 3,
            stride: 1,
            pad: 1,
        };
        if !crate::gemm::shape_selected(&label(&s)) {
            continue;
        }
        let input = random(batch * hw * hw * c, 5);
        let weight = random(9 * c * c, 6);
        for variant in VARIANTS.into_iter().filter(|v| crate::gemm::selected(v)) {
            match one(ctx, cfg, s, variant, &input, &weight, tuner.as_mut()) {
                Ok((r, tuned)) => {
                    print(&r);
                    crate::gemm::print_tuned(&r, tuned);
                    records.push(r);
                }
                Err(e) => println!("# conv2d {} {variant}: not run: {e}", label(&s)),
            }
        }
    }
    records.extend(crate::conv_dw::run(ctx, cfg)?);
    Ok(records)
}

/// `b8 56x56 64->64 3x3`: the shape column of the records (the same in torch_ref.py).
fn label(s: &Conv2dShape) -> String {
    format!(
        "b{} {}x{} {}->{} {}x{}",
        s.batch, s.h, s.w, s.c, s.outc, s.kh, s.kw
    )
}

fn one(
    ctx: &Context,
    cfg: Config,
    s: Conv2dShape,
    variant: &str,
    input: &[f32],
    weight: &[f32],
    tuner: Option<&mut GemmTuner>,
) -> Result<(Record, Option<String>), Box<dyn std::error::Error>> {
    let kernel = ctx.load_with::<conv2d_nhwc::Kernel>(&LoadOptions::variant_named(variant)?)?;
    let key = kernel.variant().key;
    let f = kernel.format_of("in_blob")?;
    let (m, n, k) = s.gemm_mnk();
    let it = Tensor::from_f32(ctx, &[s.batch, s.h, s.w, s.c], f, input)?;
    let wt = Tensor::from_f32(ctx, &[s.kh, s.kw, s.c, s.outc], f, weight)?;
    let ot = Tensor::new(ctx, &[s.batch, s.outh(), s.outw(), s.outc], f)?;
    let (conv_cfg, tuned) = match tuner {
        Some(t) => (t.conv2d_nhwc(&kernel, &s)?, crate::gemm::tuned(t)),
        None => {
            let subgroup = ctx.features().limits.subgroup_size;
            let sms = vkprism_shaders::multiprocessors(ctx.features());
            let table = GemmConfig::for_conv(&key, subgroup, &s).split_for_sms((m, n, k), sms);
            (crate::gemm::overridden(table), None)
        }
    };
    let mut list = CommandList::with_total_timing(ctx)?;
    // The split pair or the one pass, as the operation layer records them; its pipelines are
    // the ones made here for their statistics (cached per constants and workgroup).
    let spec = conv_cfg.spec(Default::default());
    if conv_cfg.split_k > 1 {
        println!(
            "# conv2d {variant} {}: split_k {}",
            label(&s),
            conv_cfg.split_k
        );
        let split =
            ctx.load_with::<conv2d_nhwc_split::Kernel>(&LoadOptions::variant_named(variant)?)?;
        let pipe = split.pipeline(&spec, Some(conv_cfg.local_size()))?;
        crate::print_statistics(&format!("conv2d_split {variant} {conv_cfg:?}"), &pipe);
    } else {
        let pipe = kernel.pipeline(&spec, Some(conv_cfg.local_size()))?;
        crate::print_statistics(&format!("conv2d {variant} {conv_cfg:?}"), &pipe);
    }
    let ops = Ops::new(ctx);
    let record = |l: &mut CommandList| -> Result<(), Box<dyn std::error::Error>> {
        let conv = Conv2d::new(s);
        Ok(ops.conv2d_with(l, &kernel, &conv_cfg, &it, &wt, None, &ot, &conv)?)
    };
    record(&mut list)?;
    list.submit_and_wait()?;
    check(
        &ot.download_f32()?,
        &quantize(input, f),
        &quantize(weight, f),
        s,
        variant,
    )?;
    let t = time_calls(ctx, cfg, record)?;
    let record = Record {
        case: "conv2d",
        shape: label(&s),
        variant: variant.into(),
        coopmat: key.coopmat == Some(true),
        value: 2.0 * (m * n * k) as f64 / t.median_s / 1e12,
        unit: "TFLOP/s",
        sm_clock_mhz: t.sm_clock_mhz,
        method: CALLS_METHOD,
    };
    Ok((record, tuned))
}

/// Checks 97 sampled outputs against an f64 sum over the inputs the GPU saw.
fn check(
    out: &[f32],
    input: &[f32],
    weight: &[f32],
    s: Conv2dShape,
    variant: &str,
) -> Result<(), String> {
    let tol = if variant.starts_with("fp32") {
        1e-4
    } else {
        1e-2
    };
    let (oh, ow) = (s.outh(), s.outw());
    for t in 0..97usize {
        let i = (t * 7919) % out.len();
        let (o, x, y, b) = (
            i % s.outc,
            (i / s.outc) % ow,
            (i / (s.outc * ow)) % oh,
            i / (s.outc * ow * oh),
        );
        let (mut want, mut scale) = (0f64, 0f64);
        for ky in 0..s.kh {
            for kx in 0..s.kw {
                let (iy, ix) = (
                    (y + ky) as isize - s.pad as isize,
                    (x + kx) as isize - s.pad as isize,
                );
                if iy < 0 || ix < 0 || iy >= s.h as isize || ix >= s.w as isize {
                    continue;
                }
                for c in 0..s.c {
                    let v = input[((b * s.h + iy as usize) * s.w + ix as usize) * s.c + c] as f64
                        * weight[((ky * s.kw + kx) * s.c + c) * s.outc + o] as f64;
                    want += v;
                    scale += v.abs();
                }
            }
        }
        let got = out[i] as f64;
        // Written as "not within": a NaN is not within, so it fails.
        let within = (got - want).abs() <= tol * scale.max(1.0);
        if !within {
            return Err(format!("{variant}: out[{i}] = {got}, want {want}"));
        }
    }
    Ok(())
}
