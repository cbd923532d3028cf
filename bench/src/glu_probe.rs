//! `--cases glu_probe`: `gemm_cm2_glu` (a SwiGLU MLP's gate/up GEMM gating its own products) on
//! the decoder's prompt shape (512 tokens, 5632 outputs, K 2048, fp16, weights `[2n, k]` as
//! stored) on each candidate tiling (`VKPRISM_BENCH_GLU=bm,bn,bk,unroll,fixed[,threads];...`,
//! default a list around the library's), each call on the next of four copies of the weights
//! (past L2, as in a prompt); beside `Ops::gemm_glu` as recorded today. `VKPRISM_BENCH_GLU_M`
//! sets the rows (how the grid's waves fill), `VKPRISM_BENCH_GLU_N` the outputs.
//! `VKPRISM_BENCH_GLU_SPLIT=rows;tiles;tiles` times the rows cut in two at `rows`, each part a
//! dispatch on its own tiling into its own buffers, so no barrier orders them (the second's
//! workgroups may start as the first's retire). Printed, not recorded: it picks the library's
//! tiling.

use crate::gemm_cm2::parse_tiles;
use crate::harness::{time_calls, Config, Record};
use crate::random;
use std::cell::Cell;
use vkprism::{Context, LoadOptions, Tensor, TensorFormat};
use vkprism_shaders::{gemm_cm2_glu, gemm_glu_constants, Activation, Ops};

const DEFAULT: &str = "128,64,64,8,1,128;128,64,64,4,1,128;128,64,64,16,1,128;128,64,32,8,1,128;\
                       64,64,64,8,1,128;128,32,64,8,1,128;64,128,64,8,1,128;128,128,64,8,1,256;\
                       256,64,64,8,1,256;64,64,64,8,1,64;128,64,64,8,1,256";

/// Copies of the weights the calls cycle through: 4 × 46 MiB, past the H100's 50 MiB of L2.
const COPIES: usize = 4;

/// `VKPRISM_BENCH_GLU_M`: the prompt's rows (512 unless set), to see how the grid's waves fill.
fn prompt_rows() -> usize {
    env_size("VKPRISM_BENCH_GLU_M", 512)
}

/// `VKPRISM_BENCH_GLU_N`: the MLP's width (TinyLlama's 5632 unless set; Llama 3.2 1B's 8192).
fn mlp_width() -> usize {
    env_size("VKPRISM_BENCH_GLU_N", 5632)
}

fn env_size(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

pub fn run(ctx: &Context, cfg: Config) -> Result<Vec<Record>, Box<dyn std::error::Error>> {
    let (m, n, k) = if cfg.quick {
        (64, 256, 128)
    } else {
        (prompt_rows(), mlp_width(), 2048)
    };
    let f = TensorFormat::F16;
    let x = Tensor::from_f32(ctx, &[m, k], f, &random(m * k, 1))?;
    let w = (0..COPIES as u64)
        .map(|c| Tensor::from_f32(ctx, &[2 * n, k], f, &random(2 * n * k, 2 + c)))
        .collect::<Result<Vec<_>, _>>()?;
    let y = Tensor::new(ctx, &[m, n], f)?;
    let flop = 2.0 * (m * 2 * n * k) as f64;
    let ops = Ops::new(ctx);
    let next = Cell::new(0);
    let t = time_calls(ctx, cfg, |l| {
        next.set(next.get() + 1);
        Ok(ops.gemm_glu(l, &x, &w[next.get() % COPIES], &y, Activation::Silu)?)
    })?;
    println!(
        "# glu {m}x{n}x{k} Ops::gemm_glu: {:.1} us {:.1} TFLOP/s",
        t.median_s * 1e6,
        flop / t.median_s / 1e12
    );
    let kernel =
        match ctx.load_with::<gemm_cm2_glu::Kernel>(&LoadOptions::variant_named("fp16s_cm")?) {
            Ok(k) => k,
            Err(e) => {
                println!("# glu: not run: {e}");
                return Ok(Vec::new());
            }
        };
    if let Ok(split) = std::env::var("VKPRISM_BENCH_GLU_SPLIT") {
        split_rows(ctx, cfg, &kernel, (&w, (m, n, k)), &split)?;
    }
    let list = std::env::var("VKPRISM_BENCH_GLU").unwrap_or_else(|_| DEFAULT.replace(' ', ""));
    for tiles in parse_tiles(&list) {
        if !tiles.offered_by(ctx.features(), vkprism::ScalarKind::F16) {
            println!("# glu {tiles:?}: not offered");
            continue;
        }
        let (spec, push) = gemm_glu_constants(&tiles, (m, n, k), Activation::Silu);
        let pipe = match kernel.pipeline(&spec, Some(tiles.local_size())) {
            Ok(p) => p,
            Err(e) => {
                println!("# glu {tiles:?}: no pipeline: {e}");
                continue;
            }
        };
        crate::print_statistics(&format!("glu {tiles:?}"), &pipe);
        let t = time_calls(ctx, cfg, |l| {
            next.set(next.get() + 1);
            let b = gemm_cm2_glu::BufferBindings {
                a_blob: &x,
                b_blob: &w[next.get() % COPIES],
                bias_blob: &x,
                c_blob: &y,
            };
            l.dispatch(&pipe, &b, &push, tiles.grid(m, n, 1))?;
            Ok(())
        })?;
        println!(
            "# glu {m}x{n}x{k} {tiles:?}: {:.1} us {:.1} TFLOP/s at {:?} MHz",
            t.median_s * 1e6,
            flop / t.median_s / 1e12,
            t.sm_clock_mhz
        );
    }
    Ok(Vec::new())
}

/// `VKPRISM_BENCH_GLU_SPLIT`'s "rows;tiles;tiles": the first `rows` rows on the first tiling,
/// the rest on the second, two dispatches with no barrier between them.
fn split_rows(
    ctx: &Context,
    cfg: Config,
    kernel: &std::sync::Arc<vkprism::LoadedKernel<gemm_cm2_glu::Kernel>>,
    (w, (m, n, k)): (&[Tensor], (usize, usize, usize)),
    split: &str,
) -> Result<(), Box<dyn std::error::Error>> {
    let mut parts = split.splitn(2, ';');
    let first: usize = parts.next().unwrap_or("").trim().parse()?;
    let tiles = parse_tiles(parts.next().unwrap_or(""));
    let (Some(ta), Some(tb)) = (tiles.first(), tiles.get(1)) else {
        return Err("VKPRISM_BENCH_GLU_SPLIT: rows;bm,bn,bk,unroll,fixed[,threads];...".into());
    };
    if first == 0 || first >= m {
        return Err(format!(
            "VKPRISM_BENCH_GLU_SPLIT: cut at {first} rows of {m}: 1 to {}",
            m - 1
        )
        .into());
    }
    let f = TensorFormat::F16;
    let rows = [first, m - first];
    let mut dispatches = Vec::new();
    for (part, (t, r)) in [ta, tb].into_iter().zip(rows).enumerate() {
        let x = Tensor::from_f32(ctx, &[r, k], f, &random(r * k, 10 + part as u64))?;
        let y = Tensor::new(ctx, &[r, n], f)?;
        let (spec, push) = gemm_glu_constants(t, (r, n, k), Activation::Silu);
        let pipe = kernel.pipeline(&spec, Some(t.local_size()))?;
        dispatches.push((x, y, pipe, push, t.grid(r, n, 1)));
    }
    let next = Cell::new(0);
    let t = time_calls(ctx, cfg, |l| {
        next.set(next.get() + 1);
        for (x, y, pipe, push, grid) in &dispatches {
            let b = gemm_cm2_glu::BufferBindings {
                a_blob: x,
                b_blob: &w[next.get() % COPIES],
                bias_blob: x,
                c_blob: y,
            };
            l.dispatch(pipe, &b, push, *grid)?;
        }
        Ok(())
    })?;
    println!(
        "# glu {m}x{n}x{k} split at {first} rows, {ta:?} then {tb:?}: {:.1} us at {:?} MHz",
        t.median_s * 1e6,
        t.sm_clock_mhz
    );
    Ok(())
}
