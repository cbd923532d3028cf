//! `--cases gemm_probe`: the tile table against every candidate on a prompt's GEMMs. The
//! TinyLlama decoder's projections for a 512-token prompt (fp16, weights `[out, in]` read
//! transposed), each tuned by a fresh [`GemmTuner`]: every candidate of the device's class timed
//! on one dispatch, the table's choice first. Printed, not recorded: which tiles a prompt's
//! small M wants (the table's rule for small grids comes from these).

use crate::harness::Config;
use std::path::Path;
use vkprism::{Context, LoadOptions, Options};
use vkprism_shaders::{gemm, GemmTuner};

pub fn run(
    ctx: &Context,
    cfg: Config,
) -> Result<Vec<crate::harness::Record>, Box<dyn std::error::Error>> {
    let shapes: &[(usize, usize, usize, &str)] = if cfg.quick {
        &[(32, 64, 64, "small")]
    } else {
        &[
            (512, 2560, 2048, "qkv"),
            (512, 2048, 2048, "o"),
            (512, 11264, 2048, "gate_up"),
            (512, 2048, 5632, "down"),
            (512, 32000, 2048, "lm_head"),
        ]
    };
    let options = Options::default()
        .with_fp16_packed(true)
        .with_fp16_storage(true)
        .with_fp16_arithmetic(true)
        .with_cooperative_matrix(true);
    let kernel = ctx.load_with::<gemm::Kernel>(&LoadOptions::options(options))?;
    println!("# gemm_probe: variant {}", kernel.variant().key);
    for &(m, n, k, name) in shapes {
        let mut tuner = GemmTuner::new(ctx, None::<&Path>);
        tuner.gemm(&kernel, m, n, k, false, true)?;
        if let Some(report) = tuner.last_report() {
            println!("# gemm_probe {name} {m}x{n}x{k}: {report}");
        }
    }
    Ok(Vec::new())
}
