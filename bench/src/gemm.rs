//! GEMM throughput of `vkprism_shaders::gemm` in every local-memory variant, 2·M·N·K FLOPs per run,
//! the GEMM on workgroup-scope matrices (`gemm_cm2.rs`), then the int8 GEMM (`gemm_int8.rs`) and the image GEMM (`gemm_image.rs`) on the same shapes.

use crate::harness::{print, time_calls, Config, Record, Timing, CALLS_METHOD};
use crate::{quantize, random};
use vkprism::{CommandList, Context, LoadOptions, Tensor};
use vkprism_shaders::tuning::GemmProblem;
use vkprism_shaders::{
    gemm, gemm_split, multiprocessors, DeviceClass, Gemm, GemmConfig, GemmTuner, Ops,
};

/// (M, N, K): the shapes; the last is an LLM projection (4096 tokens, 512 × 14336).
pub const SHAPES: [(usize, usize, usize); 4] = [
    (1024, 1024, 1024),
    (2048, 2048, 2048),
    (4096, 4096, 4096),
    (4096, 512, 14336),
];
const QUICK_SHAPES: [(usize, usize, usize); 1] = [(256, 128, 192)];

/// Every variant of the library GEMM that stages through shared memory, fp32 without, and the
/// cooperative-matrix variants (run where the device offers their shapes).
const VARIANTS: [&str; 14] = [
    "fp32_lm_nocm",
    "fp16p_lm_nocm",
    "fp16pa_lm_nocm",
    "fp16s_lm_nocm",
    "fp16sa_lm_nocm",
    "bf16p_lm_nocm",
    "bf16s_lm_nocm",
    "fp32_nolm_nocm",
    "fp16p_lm_cm",
    "fp16pa_lm_cm",
    "fp16s_lm_cm",
    "fp16sa_lm_cm",
    "bf16p_lm_cm",
    "bf16s_lm_cm",
];

pub fn run(ctx: &Context, cfg: Config) -> Result<Vec<Record>, Box<dyn std::error::Error>> {
    let given = given_shapes();
    let shapes: &[_] = match (&given, cfg.quick) {
        (Some(given), _) => given,
        (None, true) => &QUICK_SHAPES,
        (None, false) => &SHAPES,
    };
    let mut records = Vec::new();
    let mut tuner = tuner(ctx);
    for &(m, n, k) in shapes {
        if !shape_selected(&format!("{m}x{n}x{k}")) {
            continue;
        }
        let a = random(m * k, 1);
        let b = random(k * n, 2);
        for variant in VARIANTS.into_iter().filter(|v| selected(v)) {
            match one(ctx, cfg, (m, n, k), variant, &a, &b, tuner.as_mut()) {
                Ok((r, tuned)) => {
                    print(&r);
                    print_tuned(&r, tuned);
                    records.push(r);
                }
                Err(e) => println!("# gemm {m}x{n}x{k} {variant}: not run: {e}"),
            }
        }
    }
    records.extend(crate::gemm_cm2::run(ctx, cfg, shapes)?);
    records.extend(crate::gemm_int8::run(ctx, cfg, shapes)?);
    records.extend(crate::gemm_image::run(ctx, cfg, shapes)?);
    Ok(records)
}

fn one(
    ctx: &Context,
    cfg: Config,
    (m, n, k): (usize, usize, usize),
    variant: &str,
    a: &[f32],
    b: &[f32],
    tuner: Option<&mut GemmTuner>,
) -> Result<(Record, Option<String>), Box<dyn std::error::Error>> {
    let kernel = ctx.load_with::<gemm::Kernel>(&LoadOptions::variant_named(variant)?)?;
    let f = kernel.format_of("a_blob")?;
    let Operands {
        a: at,
        b: bt,
        ta,
        tb,
    } = Operands::upload(ctx, f, (m, n, k), a, b)?;
    let ct = Tensor::new(ctx, &[m, n], f)?;
    let key = kernel.variant().key;
    let coopmat = key.coopmat == Some(true);
    let (gemm_cfg, tuned) = match tuner {
        Some(t) => (t.gemm(&kernel, m, n, k, ta, tb)?, tuned(t)),
        None => (config(&key, ctx.features(), (m, n, k), (ta, tb)), None),
    };
    let mut list = CommandList::with_total_timing(ctx)?;
    // The split pair or the one pass, as the operation layer records them; its pipelines are
    // the ones made here for their statistics (cached per constants and workgroup).
    let spec = gemm_cfg.spec(gemm::SpecConstants {
        transpose_a: ta as i32,
        transpose_b: tb as i32,
        ..Default::default()
    });
    if gemm_cfg.split_k > 1 {
        println!("# gemm {variant} {m}x{n}x{k}: split_k {}", gemm_cfg.split_k);
        let split = ctx.load_with::<gemm_split::Kernel>(&LoadOptions::variant_named(variant)?)?;
        let pipe = split.pipeline(&spec, Some(gemm_cfg.local_size()))?;
        crate::print_statistics(&format!("gemm_split {variant} {gemm_cfg:?}"), &pipe);
    } else {
        let pipe = kernel.pipeline(&spec, Some(gemm_cfg.local_size()))?;
        crate::print_statistics(&format!("gemm {variant} {gemm_cfg:?}"), &pipe);
    }
    let op = Gemm::new().with_transpose_a(ta).with_transpose_b(tb);
    let ops = Ops::new(ctx);
    let record = |l: &mut CommandList| -> Result<(), Box<dyn std::error::Error>> {
        Ok(ops.gemm_with(l, &kernel, &gemm_cfg, &at, &bt, None, &ct, &op)?)
    };
    record(&mut list)?;
    list.submit_and_wait()?;
    check(
        &ct.download_f32()?,
        &quantize(a, f),
        &quantize(b, f),
        (m, n, k),
        variant,
    )?;
    let t = time_calls(ctx, cfg, record)?;
    Ok((tflops_record((m, n, k), variant, coopmat, &t), tuned))
}

/// A GEMM's A and B uploaded in format `f`, stored transposed where `VKPRISM_BENCH_TRANSPOSE`
/// says (`a`, `b` or `ab`: the same op(A) and op(B), so the same check), to compare the loads
/// of both layouts; `ta` / `tb` say which.
pub struct Operands {
    pub a: Tensor,
    pub b: Tensor,
    pub ta: bool,
    pub tb: bool,
}

impl Operands {
    /// `a` (M×K) and `b` (K×N), row-major, uploaded as the environment asks.
    pub fn upload(
        ctx: &Context,
        f: vkprism::TensorFormat,
        (m, n, k): (usize, usize, usize),
        a: &[f32],
        b: &[f32],
    ) -> Result<Operands, Box<dyn std::error::Error>> {
        let transpose = std::env::var("VKPRISM_BENCH_TRANSPOSE").unwrap_or_default();
        let (ta, tb) = (transpose.contains('a'), transpose.contains('b'));
        let a = match ta {
            true => Tensor::from_f32(ctx, &[k, m], f, &transposed(a, m, k))?,
            false => Tensor::from_f32(ctx, &[m, k], f, a)?,
        };
        let b = match tb {
            true => Tensor::from_f32(ctx, &[n, k], f, &transposed(b, k, n))?,
            false => Tensor::from_f32(ctx, &[k, n], f, b)?,
        };
        Ok(Operands { a, b, ta, tb })
    }
}

/// The record of an M×N×K GEMM of `variant` timed as `t`: 2·M·N·K FLOPs a call, in TFLOP/s.
pub fn tflops_record(
    (m, n, k): (usize, usize, usize),
    variant: &str,
    coopmat: bool,
    t: &Timing,
) -> Record {
    Record {
        case: "gemm",
        shape: format!("{m}x{n}x{k}"),
        variant: variant.into(),
        coopmat,
        value: 2.0 * (m * n * k) as f64 / t.median_s / 1e12,
        unit: "TFLOP/s",
        sm_clock_mhz: t.sm_clock_mhz,
        method: CALLS_METHOD,
    }
}

/// `VKPRISM_BENCH_AUTOTUNE=1`: the GEMM, int8 GEMM and convolution runs take their
/// configuration from a `GemmTuner` (measured on first use) instead of `GemmConfig`'s table, and
/// print it beside each figure; `VKPRISM_BENCH_TUNE_CACHE=path` keeps the choices in that file
/// (else they last for the run). The `VKPRISM_BENCH_LOCAL` / `_BK` / `_CM` overrides don't apply
/// then.
pub fn tuner(ctx: &Context) -> Option<GemmTuner> {
    if std::env::var("VKPRISM_BENCH_AUTOTUNE").map_or(true, |v| v.is_empty() || v == "0") {
        return None;
    }
    let path = std::env::var_os("VKPRISM_BENCH_TUNE_CACHE").map(std::path::PathBuf::from);
    let tuner = GemmTuner::new(ctx, path.as_deref());
    println!(
        "# autotune: class {}, cache {:?}",
        tuner.class().name(),
        tuner.cache_status()
    );
    Some(tuner)
}

/// The tuner's last report, one line.
pub fn tuned(tuner: &GemmTuner) -> Option<String> {
    tuner.last_report().map(|r| r.to_string())
}

/// Prints the tuner's choice under the figure it gave.
pub fn print_tuned(r: &Record, tuned: Option<String>) {
    if let Some(line) = tuned {
        println!("#   {} {} {}: {line}", r.case, r.shape, r.variant);
    }
}

/// `VKPRISM_BENCH_VARIANTS=a,b` limits the run to those variants (to compare configurations).
pub fn selected(variant: &str) -> bool {
    std::env::var("VKPRISM_BENCH_VARIANTS")
        .map_or(true, |list| list.split(',').any(|v| v == variant))
}

/// The rows × cols row-major `x` transposed (cols × rows).
fn transposed(x: &[f32], rows: usize, cols: usize) -> Vec<f32> {
    (0..cols * rows)
        .map(|i| x[(i % rows) * cols + i / rows])
        .collect()
}

/// `VKPRISM_BENCH_GEMM_SHAPES=MxNxK;...`: the GEMM cases' shapes instead of the committed ones
/// (to measure others, such as a network's projections).
pub fn given_shapes() -> Option<Vec<(usize, usize, usize)>> {
    let list = std::env::var("VKPRISM_BENCH_GEMM_SHAPES").ok()?;
    let shape = |s: &str| match s
        .split('x')
        .map(str::parse)
        .collect::<Result<Vec<usize>, _>>()
    {
        Ok(v) if v.len() == 3 && v.iter().all(|d| *d > 0) => Some((v[0], v[1], v[2])),
        _ => None,
    };
    Some(list.split(';').filter_map(shape).collect())
}

/// `VKPRISM_BENCH_SHAPES=a;b` limits the GEMM and convolution runs to those shapes (labels as
/// printed: `4096x512x14336`, `b8 14x14 256->256 3x3`).
pub fn shape_selected(label: &str) -> bool {
    std::env::var("VKPRISM_BENCH_SHAPES").map_or(true, |list| list.split(';').any(|s| s == label))
}

/// The table's configuration for the problem with A and B stored as `(ta, tb)` say (as
/// `Ops::gemm` chooses it: 16-byte loads where the stored rows allow), split for the device's
/// SMs as `Ops::gemm` splits it, with the environment's overrides ([`overridden`]).
fn config(
    key: &vkprism::VariantKey,
    device: &vkprism::DeviceFeatures,
    (m, n, k): (usize, usize, usize),
    (ta, tb): (bool, bool),
) -> GemmConfig {
    let problem = GemmProblem::gemm(m, n, k, ta, tb);
    let table = DeviceClass::NvidiaHopper.config(&problem, key, device.limits.subgroup_size);
    overridden(table.split_for_sms((m, n, k), multiprocessors(device)))
}

/// `cfg` with overrides to compare configurations: `VKPRISM_BENCH_LOCAL=XxY`, `VKPRISM_BENCH_BK`,
/// for cooperative-matrix variants `VKPRISM_BENCH_CM=subgroups,wfm,wfn,warps_n`, and
/// `VKPRISM_BENCH_SPLIT` (split-K shares; 1 for none).
pub fn overridden(mut cfg: GemmConfig) -> GemmConfig {
    let var = |name| std::env::var(name).ok();
    let numbers =
        |v: String, sep| -> Vec<u32> { v.split(sep).filter_map(|x| x.parse().ok()).collect() };
    if let Some([x, y]) = var("VKPRISM_BENCH_LOCAL")
        .map(|v| numbers(v, 'x'))
        .as_deref()
    {
        cfg.local = [*x, *y];
    }
    if let Some(bk) = var("VKPRISM_BENCH_BK").and_then(|v| v.parse().ok()) {
        cfg.bk = bk;
    }
    if let Some(split) = var("VKPRISM_BENCH_SPLIT").and_then(|v| v.parse().ok()) {
        cfg.split_k = split;
    }
    if let Some([warps, wfm, wfn, warps_n]) =
        var("VKPRISM_BENCH_CM").map(|v| numbers(v, ',')).as_deref()
    {
        if cfg.coopmat {
            cfg.local = [cfg.subgroup_size, *warps];
            cfg.cm_tiles = [*wfm, *wfn, *warps_n];
        }
    }
    cfg
}

/// Checks 97 sampled elements against an f64 dot product of the inputs the GPU saw, with an
/// error bound relative to sum |a||b| (fp32 accumulation, output stored in the variant's format).
pub fn check(
    c: &[f32],
    a: &[f32],
    b: &[f32],
    (m, n, k): (usize, usize, usize),
    variant: &str,
) -> Result<(), String> {
    let tol = if variant.starts_with("fp32") {
        1e-4
    } else {
        1e-2
    };
    for s in 0..97usize {
        let (i, j) = ((s * 7919) % m, (s * 104_729) % n);
        let (mut want, mut scale) = (0f64, 0f64);
        for l in 0..k {
            let p = a[i * k + l] as f64 * b[l * n + j] as f64;
            want += p;
            scale += p.abs();
        }
        let got = c[i * n + j] as f64;
        // Written as "not within": a NaN is not within, so it fails.
        let within = (got - want).abs() <= tol * scale.max(1.0);
        if !within {
            return Err(format!("{variant}: C[{i}][{j}] = {got}, want {want}"));
        }
    }
    Ok(())
}
