//! int8 GEMM throughput of `vkprism_shaders::gemm_int8` (int8 × int8 → int32), 2·M·N·K
//! operations per run, beside `torch._int_mm`.

use crate::harness::{print, time_calls, Config, Record, CALLS_METHOD};
use vkprism::{CommandList, Context, LoadOptions, Tensor, TensorFormat};
use vkprism_shaders::{gemm_int8, GemmConfig, GemmTuner};
use vkprism_testkit::random_i8;

/// The cooperative-matrix variant and the plain one with int8 arithmetic.
const VARIANTS: [&str; 2] = ["fp32_int8a_cm", "fp32_int8a_nocm"];

pub fn run(
    ctx: &Context,
    cfg: Config,
    shapes: &[(usize, usize, usize)],
) -> Result<Vec<Record>, Box<dyn std::error::Error>> {
    let mut records = Vec::new();
    let mut tuner = crate::gemm::tuner(ctx);
    for &(m, n, k) in shapes {
        let a = random_i8(m * k, 5);
        let b = random_i8(k * n, 6);
        for variant in VARIANTS.into_iter().filter(|v| crate::gemm::selected(v)) {
            match one(ctx, cfg, (m, n, k), variant, &a, &b, tuner.as_mut()) {
                Ok((r, tuned)) => {
                    print(&r);
                    crate::gemm::print_tuned(&r, tuned);
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
    a: &[i8],
    b: &[i8],
    tuner: Option<&mut GemmTuner>,
) -> Result<(Record, Option<String>), Box<dyn std::error::Error>> {
    let kernel = ctx.load_with::<gemm_int8::Kernel>(&LoadOptions::variant_named(variant)?)?;
    let key = kernel.variant().key;
    let at = Tensor::from_i8(ctx, &[m, k], a)?;
    let bt = Tensor::from_i8(ctx, &[k, n], b)?;
    let ct = Tensor::new(ctx, &[m, n], TensorFormat::I32)?;
    let (gemm_cfg, tuned) = match tuner {
        Some(t) => (t.gemm_int8(&kernel, m, n, k)?, crate::gemm::tuned(t)),
        None => {
            let subgroup = ctx.features().limits.subgroup_size;
            (GemmConfig::for_gemm_int8(&key, subgroup, m, n, k), None)
        }
    };
    let pipe = kernel.pipeline(
        &gemm_cfg.spec(Default::default()),
        Some(gemm_cfg.local_size()),
    )?;
    crate::print_statistics(&format!("gemm_int8 {variant} {gemm_cfg:?}"), &pipe);
    let mut list = CommandList::with_total_timing(ctx)?;
    let push = gemm_int8::PushConstants {
        M: m as i32,
        N: n as i32,
        K: k as i32,
    };
    let bindings = gemm_int8::BufferBindings {
        a_blob: &at,
        b_blob: &bt,
        c_blob: &ct,
    };
    let grid = gemm_cfg.grid(m, n);
    let record = |l: &mut CommandList| -> Result<(), Box<dyn std::error::Error>> {
        Ok(l.dispatch(&pipe, &bindings, &push, grid)?)
    };
    record(&mut list)?;
    list.submit_and_wait()?;
    check(&ct.download_i32()?, a, b, (m, n, k), variant)?;
    let t = time_calls(ctx, cfg, record)?;
    let record = Record {
        case: "gemm",
        shape: format!("{m}x{n}x{k}"),
        variant: variant.into(),
        coopmat: key.coopmat == Some(true),
        value: 2.0 * (m * n * k) as f64 / t.median_s / 1e12,
        unit: "TOP/s",
        sm_clock_mhz: t.sm_clock_mhz,
        method: CALLS_METHOD,
    };
    Ok((record, tuned))
}

/// 97 sampled elements, exactly.
fn check(
    c: &[i32],
    a: &[i8],
    b: &[i8],
    (m, n, k): (usize, usize, usize),
    variant: &str,
) -> Result<(), String> {
    for s in 0..97usize {
        let (i, j) = ((s * 7919) % m, (s * 104_729) % n);
        let want: i64 = (0..k)
            .map(|l| a[i * k + l] as i64 * b[l * n + j] as i64)
            .sum();
        if c[i * n + j] as i64 != want {
            return Err(format!(
                "{variant}: C[{i}][{j}] = {}, want {want}",
                c[i * n + j]
            ));
        }
    }
    Ok(())
}
