//! Depthwise convolution throughput of `vkprism_shaders::conv2d_dw_nhwc` (channels-last, 3×3,
//! batch 8, MobileNet-like layers), 2·batch·outh·outw·c·kh·kw FLOPs per run; records
//! `case: "conv2d"` with shapes `dw b8 56x56 64 3x3` (`s2` appended when strided), as
//! `torch_ref.py` names PyTorch's `F.conv2d(x, w, groups=c)`.

use crate::harness::{print, time_calls, Config, Record, CALLS_METHOD};
use crate::{quantize, random};
use vkprism::{CommandList, Context, LoadOptions, Tensor};
use vkprism_shaders::{conv2d_dw_nhwc, reference, Conv2dDwShape};

/// (spatial size, channels, stride): MobileNet V1/V2's early depthwise layers.
const SHAPES: [(usize, usize, usize); 3] = [(112, 32, 1), (56, 64, 1), (56, 128, 2)];
const QUICK_SHAPES: [(usize, usize, usize); 2] = [(6, 8, 1), (7, 12, 2)];
const VARIANTS: [&str; 4] = ["fp32", "fp16p", "fp16s", "fp16sa"];

pub fn run(ctx: &Context, cfg: Config) -> Result<Vec<Record>, Box<dyn std::error::Error>> {
    let shapes: &[_] = if cfg.quick { &QUICK_SHAPES } else { &SHAPES };
    let batch = if cfg.quick { 1 } else { 8 };
    let mut records = Vec::new();
    for &(hw, c, stride) in shapes {
        let s = Conv2dDwShape {
            batch,
            h: hw,
            w: hw,
            c,
            kh: 3,
            kw: 3,
            stride,
            pad: 1,
        };
        let input = random(batch * hw * hw * c, 7);
        let weight = random(9 * c, 8);
        for variant in VARIANTS.into_iter().filter(|v| crate::gemm::selected(v)) {
            for cell in cells(&s) {
                match one(ctx, cfg, s, cell, variant, &input, &weight) {
                    Ok(r) => {
                        print(&r);
                        records.push(r);
                    }
                    Err(e) => println!("# conv2d {} {variant}: not run: {e}", label(&s)),
                }
            }
        }
    }
    Ok(records)
}

/// `dw b8 56x56 64 3x3` (`s2` appended when strided): the shape column (the same in
/// torch_ref.py).
fn label(s: &Conv2dDwShape) -> String {
    let stride = if s.stride == 1 {
        String::new()
    } else {
        format!(" s{}", s.stride)
    };
    format!(
        "dw b{} {}x{} {} {}x{}{stride}",
        s.batch, s.h, s.w, s.c, s.kh, s.kw
    )
}

/// The cells to time: `VKPRISM_BENCH_DW_CELLS` (`4x2,4x4`: columns × rows, each shape timed
/// with each, its variant named `fp32 cell 4x4`) or `None`, the shape's own
/// ([`Conv2dDwShape::cell`]).
fn cells(s: &Conv2dDwShape) -> Vec<Option<[usize; 2]>> {
    let Ok(list) = std::env::var("VKPRISM_BENCH_DW_CELLS") else {
        return vec![None];
    };
    let parse = |c: &str| {
        let (w, h) = c.split_once('x')?;
        Some([w.trim().parse().ok()?, h.trim().parse().ok()?])
    };
    let cells: Vec<_> = list.split(',').filter_map(parse).map(Some).collect();
    if cells.is_empty() {
        println!(
            "# conv2d {}: VKPRISM_BENCH_DW_CELLS={list:?} names no cell",
            label(s)
        );
    }
    cells
}

fn one(
    ctx: &Context,
    cfg: Config,
    s: Conv2dDwShape,
    cell: Option<[usize; 2]>,
    variant: &str,
    input: &[f32],
    weight: &[f32],
) -> Result<Record, Box<dyn std::error::Error>> {
    let kernel = ctx.load_with::<conv2d_dw_nhwc::Kernel>(&LoadOptions::variant_named(variant)?)?;
    let key = kernel.variant().key;
    let f = kernel.format_of("in_blob")?;
    let it = Tensor::from_f32(ctx, &[s.batch, s.h, s.w, s.c], f, input)?;
    let wt = Tensor::from_f32(ctx, &[s.kh, s.kw, s.c], f, weight)?;
    let bias = Tensor::new(ctx, &[s.c], f)?;
    let ot = Tensor::new(ctx, &[s.batch, s.outh(), s.outw(), s.c], f)?;
    let mut spec = s.spec(false, 0);
    let mut push = s.push(0.0);
    let mut grid = s.grid();
    if let Some([w, h]) = cell {
        (spec.cell_w, spec.cell_h) = (w as i32, h as i32);
        let cells = s.batch * s.outh().div_ceil(h) * s.outw().div_ceil(w);
        push.cells = cells as i32;
        grid[1] = cells as u32;
    }
    let pipe = kernel.pipeline(&spec, Some(s.local_size()))?;
    let mut list = CommandList::with_total_timing(ctx)?;
    let b = conv2d_dw_nhwc::BufferBindings {
        in_blob: &it,
        w_blob: &wt,
        bias_blob: &bias,
        out_blob: &ot,
    };
    let record = |l: &mut CommandList| -> Result<(), Box<dyn std::error::Error>> {
        Ok(l.dispatch(&pipe, &b, &push, grid)?)
    };
    record(&mut list)?;
    list.submit_and_wait()?;
    check(&ot.download_f32()?, input, weight, f, s, variant)?;
    let t = time_calls(ctx, cfg, record)?;
    Ok(Record {
        case: "conv2d",
        shape: label(&s),
        variant: match cell {
            Some([w, h]) => format!("{variant} cell {w}x{h}"),
            None => variant.into(),
        },
        coopmat: key.coopmat == Some(true),
        value: s.flops() / t.median_s / 1e12,
        unit: "TFLOP/s",
        sm_clock_mhz: t.sm_clock_mhz,
        method: CALLS_METHOD,
    })
}

/// Checks every output against the f64 reference over the inputs the GPU saw (cheap: 9 taps).
fn check(
    out: &[f32],
    input: &[f32],
    weight: &[f32],
    f: vkprism::TensorFormat,
    s: Conv2dDwShape,
    variant: &str,
) -> Result<(), String> {
    let tol = if variant.starts_with("fp32") {
        1e-5
    } else {
        1e-2
    };
    let zero = vec![0.0; s.c];
    let (want, scale) =
        reference::conv2d_dw_nhwc(s, &quantize(input, f), &quantize(weight, f), &zero);
    for (i, ((&got, &want), &scale)) in out.iter().zip(&want).zip(&scale).enumerate() {
        // Written as "not within": a NaN is not within, so it fails.
        let within = (got - want).abs() <= tol * scale.max(1.0);
        if !within {
            return Err(format!("{variant}: out[{i}] = {got}, want {want}"));
        }
    }
    Ok(())
}
