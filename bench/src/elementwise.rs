//! Memory-bound kernels over vec4s, bytes read + written per second: y = 2x + 1 (`axpb`), a copy,
//! `add` (the library's binary op) and `relu` (the library's activation), workgroup 256.

use crate::harness::{print, time_calls, Config, Record, CALLS_METHOD};
use crate::random;
use vkprism::{CommandList, Context, LoadOptions, Tensor, TensorFormat};
use vkprism_shaders::{activation, binary_op};

vkprism::compute_shader! {
    /// y = x * scale + bias, one vec4 per invocation.
    pub mod axpb,
    path: "../kernels/axpb.comp",
}

vkprism::compute_shader! {
    /// y = x in storage precision, two vec4s per loop of an invocation over any grid.
    pub mod copy,
    path: "../kernels/copy.comp",
}

/// MiB of fp32 per operand: above the H100's 50 MB L2 at 64, well above it at 256 and 1024.
const SIZES_MIB: [usize; 3] = [64, 256, 1024];
const VARIANTS: [&str; 4] = ["fp32", "fp16p", "fp16s", "fp16sa"];
const LOCAL: u32 = 256;

/// The operand tensors of one size and format, filled once.
struct Operands {
    x: Tensor,
    x2: Tensor,
    y: Tensor,
    n4: usize,
}

pub fn run(ctx: &Context, cfg: Config) -> Result<Vec<Record>, Box<dyn std::error::Error>> {
    let sizes: &[usize] = if cfg.quick { &[1] } else { &SIZES_MIB };
    let mut records = Vec::new();
    for &mib in sizes {
        let n = mib << 18;
        let (x, x2) = (random(n, 3), random(n, 4));
        for variant in VARIANTS {
            for op in ["axpb", "copy", "add", "relu"] {
                match one(ctx, cfg, op, variant, mib, &x, &x2) {
                    Ok(r) => {
                        print(&r);
                        records.push(r);
                    }
                    Err(e) => println!("# elementwise {op} {mib} MiB {variant}: not run: {e}"),
                }
            }
        }
    }
    Ok(records)
}

fn one(
    ctx: &Context,
    cfg: Config,
    op: &str,
    variant: &str,
    mib: usize,
    x: &[f32],
    x2: &[f32],
) -> Result<Record, Box<dyn std::error::Error>> {
    let n = x.len();
    let f = format_of(ctx, variant)?;
    let t = Operands {
        x: Tensor::from_f32(ctx, &[n], f, x)?,
        x2: Tensor::from_f32(ctx, &[n], f, x2)?,
        y: Tensor::new(ctx, &[n], f)?,
        n4: n / 4,
    };
    let mut list = CommandList::new(ctx)?;
    let streams = record(ctx, &mut list, op, variant, &t)?;
    list.submit_and_wait()?;
    check(&t.y.download_f32()?, x, x2, op, variant)?;
    let timing = time_calls(ctx, cfg, |l| {
        record(ctx, l, op, variant, &t)?;
        Ok(())
    })?;
    Ok(Record {
        case: "elementwise",
        shape: format!("{op} {mib}MiB"),
        variant: variant.into(),
        coopmat: false,
        value: (streams * n * f.size()) as f64 / timing.median_s / 1e12,
        unit: "TB/s",
        sm_clock_mhz: timing.sm_clock_mhz,
        method: CALLS_METHOD,
    })
}

/// The storage format of `variant` (every elementwise kernel stores the same way).
fn format_of(ctx: &Context, variant: &str) -> Result<TensorFormat, vkprism::Error> {
    Ok(ctx
        .load_with::<copy::Kernel>(&LoadOptions::variant_named(variant)?)?
        .format_of("x_blob")?)
}

/// Records `op` into `list`; returns how many n-element streams it reads and writes.
fn record(
    ctx: &Context,
    list: &mut CommandList,
    op: &str,
    variant: &str,
    t: &Operands,
) -> Result<usize, vkprism::Error> {
    let (n4, groups) = (t.n4 as i32, [t.n4 as u32, 1, 1]);
    // `copy`, `add` and `activation` take any grid: half as many invocations as vec4s keeps two
    // loads in flight in each.
    let half = vkprism_shaders::elementwise_grid(t.n4);
    let local = Some([LOCAL, 1, 1]);
    match op {
        "axpb" => {
            let pipe = ctx
                .load_with::<axpb::Kernel>(&LoadOptions::variant_named(variant)?)?
                .pipeline(&Default::default(), local)?;
            let push = axpb::PushConstants {
                n: n4,
                scale: 2.0,
                bias: 1.0,
            };
            list.dispatch(
                &pipe,
                &axpb::BufferBindings {
                    x_blob: &t.x,
                    y_blob: &t.y,
                },
                &push,
                groups,
            )?;
            Ok(2)
        }
        "copy" => {
            let pipe = ctx
                .load_with::<copy::Kernel>(&LoadOptions::variant_named(variant)?)?
                .pipeline(&Default::default(), local)?;
            let push = copy::PushConstants { n: n4 };
            list.dispatch(
                &pipe,
                &copy::BufferBindings {
                    x_blob: &t.x,
                    y_blob: &t.y,
                },
                &push,
                half,
            )?;
            Ok(2)
        }
        "add" => {
            let k = ctx.load_with::<binary_op::Kernel>(&LoadOptions::variant_named(variant)?)?;
            let pipe = k.pipeline(&binary_op::SpecConstants { op: 0 }, local)?;
            let b = binary_op::BufferBindings {
                a_blob: &t.x,
                b_blob: &t.x2,
                out_blob: &t.y,
            };
            list.dispatch(&pipe, &b, &binary_op::PushConstants { n: n4 }, half)?;
            Ok(3)
        }
        _ => {
            let k = ctx.load_with::<activation::Kernel>(&LoadOptions::variant_named(variant)?)?;
            let pipe = k.pipeline(&activation::SpecConstants { op: 0, n: 0 }, local)?;
            let push = activation::PushConstants { n: n4, alpha: 0.0 };
            list.dispatch(
                &pipe,
                &activation::BufferBindings {
                    x_blob: &t.x,
                    y_blob: &t.y,
                },
                &push,
                half,
            )?;
            Ok(2)
        }
    }
}

/// Checks ~1000 sampled elements and the last one.
fn check(y: &[f32], x: &[f32], x2: &[f32], op: &str, variant: &str) -> Result<(), String> {
    let n = y.len();
    let tol = if variant == "fp32" { 1e-6 } else { 1e-2 };
    for i in (0..n).step_by(n / 997 + 1).chain([n - 1]) {
        let want = match op {
            "axpb" => 2.0 * x[i] + 1.0,
            "copy" => x[i],
            "add" => x[i] + x2[i],
            _ => x[i].max(0.0),
        };
        // Written as "not within": a NaN is not within, so it fails.
        let within = (y[i] - want).abs() <= tol * want.abs().max(1.0);
        if !within {
            return Err(format!("{op} {variant}: y[{i}] = {}, want {want}", y[i]));
        }
    }
    Ok(())
}
