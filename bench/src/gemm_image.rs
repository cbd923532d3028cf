//! GEMM throughput of `vkprism_shaders::gemm_image`, whose B is read through the sampled-image
//! path as in Qualcomm's "Matrix Multiply on Adreno GPUs": every variant, 2·M·N·K FLOPs per
//! run, on the buffer GEMM's shapes. Its records (case `gemm`, variants `fp32_image`,
//! `fp16p_image`, ...) sit beside the buffer variants' and cuBLAS's of the same dtype in
//! `bench/merge.py`.

use crate::harness::{print, time_calls, Config, Record};
use crate::{quantize, random};
use vkprism::{CommandList, Context, Image, LoadOptions, Tensor};
use vkprism_shaders::{gemm_image, gemm_image_grid};

/// The default workgroup (64×64 macro-tiles of 8×8 micro-tiles); `VKPRISM_BENCH_LOCAL=XxY`
/// overrides it, as for the buffer GEMM.
const LOCAL: [u32; 2] = [8, 8];

pub fn run(
    ctx: &Context,
    cfg: Config,
    shapes: &[(usize, usize, usize)],
) -> Result<Vec<Record>, Box<dyn std::error::Error>> {
    let mut records = Vec::new();
    let max_dim = ctx.features().limits.max_image_dimension_2d as usize;
    for &(m, n, k) in shapes {
        // B is an image N/4 texels wide and K high.
        if k > max_dim || n / 4 > max_dim {
            println!("# gemm {m}x{n}x{k} image: not run: B ({} × {k} texels) exceeds the device's 2D image limit {max_dim}", n / 4);
            continue;
        }
        let a = random(m * k, 1);
        let b = random(k * n, 2);
        for variant in gemm_image::VARIANT_NAMES
            .iter()
            .copied()
            .filter(|v| crate::gemm::selected(v))
        {
            match one(ctx, cfg, (m, n, k), variant, &a, &b) {
                Ok(r) => {
                    print(&r);
                    records.push(r);
                }
                Err(e) => println!("# gemm {m}x{n}x{k} {variant}: not run: {e}"),
            }
        }
    }
    Ok(records)
}

fn one(
    ctx: &Context,
    cfg: Config,
    (m, n, k): (usize, usize, usize),
    variant: &str,
    a: &[f32],
    b: &[f32],
) -> Result<Record, Box<dyn std::error::Error>> {
    let kernel = ctx.load_with::<gemm_image::Kernel>(&LoadOptions::variant_named(variant)?)?;
    let f = kernel.format_of("a_blob")?;
    let texel = kernel.format_of("b_tex")?;
    let at = Tensor::from_f32(ctx, &[m, k], f, a)?;
    // Row-major K×N is the image's texel order (4 columns a texel, x fastest).
    let bt = Image::new(ctx, 2, [(n / 4) as u32, k as u32, 1], 4, texel)?;
    bt.upload_f32(b)?;
    let bias = Tensor::new(ctx, &[n], f)?;
    let ct = Tensor::new(ctx, &[m, n], f)?;
    let local = local_size();
    let pipe = kernel.pipeline(&Default::default(), Some([local[0], local[1], 1]))?;
    crate::print_statistics(&format!("gemm {variant} local {local:?}"), &pipe);
    let mut list = CommandList::with_total_timing(ctx)?;
    let push = gemm_image::PushConstants {
        M: m as i32,
        N: n as i32,
        K: k as i32,
        alpha: 1.0,
        slope: 0.0,
    };
    let bindings = gemm_image::ImageBindings {
        a_blob: &at,
        b_tex: &bt,
        bias_blob: &bias,
        c_blob: &ct,
    };
    let record = |l: &mut CommandList| -> Result<(), Box<dyn std::error::Error>> {
        Ok(l.dispatch(&pipe, &bindings, &push, gemm_image_grid(m, n))?)
    };
    record(&mut list)?;
    list.submit_and_wait()?;
    crate::gemm::check(
        &ct.download_f32()?,
        &quantize(a, f),
        &quantize(b, texel),
        (m, n, k),
        variant,
    )?;
    let t = time_calls(ctx, cfg, record)?;
    Ok(crate::gemm::tflops_record((m, n, k), variant, false, &t))
}

/// [`LOCAL`], or `VKPRISM_BENCH_LOCAL=XxY`.
fn local_size() -> [u32; 2] {
    let parsed = std::env::var("VKPRISM_BENCH_LOCAL").ok().and_then(|v| {
        let (x, y) = v.split_once('x')?;
        Some([x.parse().ok()?, y.parse().ok()?])
    });
    parsed.unwrap_or(LOCAL)
}
