//! GEMM throughput of `vkprism_shaders::gemm_cm2` (workgroup-scope cooperative matrices,
//! `VK_NV_cooperative_matrix2`) on the GEMM case's shapes, recorded as variants `fp16s_cm2` and
//! `bf16s_cm2` of case `gemm` beside the KHR kernel's `fp16s_lm_cm` and `bf16s_lm_cm`. Where the
//! device lacks the extension's features, one line says so and nothing is recorded.

use crate::gemm::{check, selected, shape_selected, tflops_record, Operands};
use crate::harness::{print, time_calls, Config, Record};
use crate::{quantize, random};
use std::sync::Arc;
use vkprism::{CommandList, Context, LoadOptions, LoadedKernel, Tensor};
use vkprism_shaders::{gemm_cm2, Cm2Tiles, Gemm, Ops};

/// The kernel's variants and the records' names for them (the storage variant on the `_cm2`
/// path).
const VARIANTS: [(&str, &str); 2] = [("fp16s_cm", "fp16s_cm2"), ("bf16s_cm", "bf16s_cm2")];

pub fn run(
    ctx: &Context,
    cfg: Config,
    shapes: &[(usize, usize, usize)],
) -> Result<Vec<Record>, Box<dyn std::error::Error>> {
    let mut records = Vec::new();
    for (variant, label) in VARIANTS.into_iter().filter(|(_, l)| selected(l)) {
        let load = LoadOptions::variant_named(variant)?;
        let kernel = match ctx.load_with::<gemm_cm2::Kernel>(&load) {
            Ok(k) => k,
            Err(e) => {
                println!("# gemm {label}: not run: {e}");
                continue;
            }
        };
        for &(m, n, k) in shapes {
            if !shape_selected(&format!("{m}x{n}x{k}")) {
                continue;
            }
            let a = random(m * k, 1);
            let b = random(k * n, 2);
            for tiles in candidates(m, n, k) {
                match one(ctx, cfg, (&kernel, label), (m, n, k), tiles, &a, &b) {
                    Ok(r) => {
                        print(&r);
                        println!("#   gemm {m}x{n}x{k} {label}: {tiles:?}");
                        records.push(r);
                    }
                    Err(e) => println!("# gemm {m}x{n}x{k} {label} {tiles:?}: not run: {e}"),
                }
            }
        }
    }
    Ok(records)
}

/// The operation layer's choice (`Cm2Tiles::for_problem`), or with
/// `VKPRISM_BENCH_CM2=bm,bn,bk,unroll,fixed[,threads[,split]];...` those tiles (to compare
/// them; `fixed` 1 fixes the sizes at pipeline creation).
fn candidates(m: usize, n: usize, k: usize) -> Vec<Cm2Tiles> {
    let Ok(list) = std::env::var("VKPRISM_BENCH_CM2") else {
        return vec![Cm2Tiles::for_problem(m, n, k)];
    };
    parse_tiles(&list)
}

/// Tiles written `bm,bn,bk,unroll,fixed[,threads[,split]];...`.
pub fn parse_tiles(list: &str) -> Vec<Cm2Tiles> {
    list.split(';')
        .filter_map(|t| {
            let v: Vec<u32> = t.split(',').filter_map(|x| x.parse().ok()).collect();
            let (&[bm, bn, bk, unroll, fixed], threads, split) =
                (&v[..5.min(v.len())], v.get(5), v.get(6))
            else {
                return None;
            };
            Some(Cm2Tiles {
                bm,
                bn,
                bk,
                unroll,
                fixed_sizes: fixed == 1,
                threads: threads
                    .copied()
                    .unwrap_or(vkprism_shaders::GEMM_CM2_THREADS),
                split_k: split.copied().unwrap_or(1),
            })
        })
        .collect()
}

fn one(
    ctx: &Context,
    cfg: Config,
    (kernel, label): (&Arc<LoadedKernel<gemm_cm2::Kernel>>, &'static str),
    (m, n, k): (usize, usize, usize),
    tiles: Cm2Tiles,
    a: &[f32],
    b: &[f32],
) -> Result<Record, Box<dyn std::error::Error>> {
    let f = kernel.format_of("a_blob")?;
    let Operands {
        a: at,
        b: bt,
        ta,
        tb,
    } = Operands::upload(ctx, f, (m, n, k), a, b)?;
    let ct = Tensor::new(ctx, &[m, n], f)?;
    let spec = tiles.spec(
        (m, n, k),
        gemm_cm2::SpecConstants {
            transpose_a: ta as i32,
            transpose_b: tb as i32,
            ..Default::default()
        },
    );
    let pipe = kernel.pipeline(&spec, Some(tiles.local_size()))?;
    crate::print_statistics(&format!("gemm_cm2 {tiles:?}"), &pipe);
    // As the operation layer records it (the split pair where tiles.split_k > 1).
    let op = Gemm::new().with_transpose_a(ta).with_transpose_b(tb);
    let ops = Ops::new(ctx);
    let copies = cold_copies(k * n * 2);
    let extra: Vec<Tensor> = (1..copies)
        .map(|_| Operands::upload(ctx, f, (m, n, k), a, b).map(|o| o.b))
        .collect::<Result<_, _>>()?;
    let next = std::cell::Cell::new(0usize);
    let record = |l: &mut CommandList| -> Result<(), Box<dyn std::error::Error>> {
        let i = next.get();
        next.set((i + 1) % copies);
        let b = if i == 0 { &bt } else { &extra[i - 1] };
        Ok(ops.gemm_cm2_with(l, kernel, &tiles, &at, b, None, &ct, &op)?)
    };
    let mut list = CommandList::new(ctx)?;
    record(&mut list)?;
    list.submit_and_wait()?;
    check(
        &ct.download_f32()?,
        &quantize(a, f),
        &quantize(b, f),
        (m, n, k),
        label,
    )?;
    let t = time_calls(ctx, cfg, record)?;
    Ok(tflops_record((m, n, k), label, true, &t))
}

/// With `VKPRISM_BENCH_COLD_B` set, as many copies of B (of `bytes`) as keep each call's B out
/// of L2 (128 MiB of them), the calls cycling through them as a network's layers do; with
/// `VKPRISM_BENCH_B_COPIES=N`, N of them; else 1.
fn cold_copies(bytes: usize) -> usize {
    let copies = std::env::var("VKPRISM_BENCH_B_COPIES").ok();
    if let Some(n) = copies.and_then(|n| n.parse::<usize>().ok()) {
        return n.max(1);
    }
    match std::env::var("VKPRISM_BENCH_COLD_B") {
        Ok(_) => (128usize << 20).div_ceil(bytes).max(2),
        Err(_) => 1,
    }
}
