//! `--cases gemm_wall`: what a user calling `Ops::gemm` from the host waits for, end to end: one
//! call recorded into a list, then the list submitted and waited for (host wall time, median
//! after warm-up by GPU time), fp32 / fp16 / bf16 on the GEMM case's shapes. Recorded as case
//! `gemm`, shape `MxNxK wall`, in µs, beside PyTorch eager from `bench/torch_ref.py --cases
//! gemm_wall` (one `torch.matmul` and `torch.cuda.synchronize()`, host wall time): the labelled
//! end-to-end figures beside the kernel-only ones (20 calls back to back, GPU time).

use crate::gemm::{given_shapes, shape_selected, SHAPES};
use crate::harness::{print, wall_series, warm_up, Config, Record};
use crate::random;
use vkprism::{CommandList, Context, Tensor, TensorFormat};
use vkprism_shaders::{Gemm, Ops};

/// How the records are timed.
const METHOD: &str = "host wall time of one call (Ops::gemm recorded once; submit, wait), median";

const FORMATS: [(TensorFormat, &str); 3] = [
    (TensorFormat::F32, "fp32"),
    (TensorFormat::F16, "fp16"),
    (TensorFormat::Bf16, "bf16"),
];

pub fn run(ctx: &Context, cfg: Config) -> Result<Vec<Record>, Box<dyn std::error::Error>> {
    let given = given_shapes();
    let shapes: &[_] = match (&given, cfg.quick) {
        (Some(given), _) => given,
        (None, true) => &[(256, 128, 192)],
        (None, false) => &SHAPES,
    };
    let ops = Ops::new(ctx);
    let mut out = Vec::new();
    for &(m, n, k) in shapes {
        if !shape_selected(&format!("{m}x{n}x{k}")) {
            continue;
        }
        for (format, name) in FORMATS {
            let a = Tensor::from_f32(ctx, &[m, k], format, &random(m * k, 1))?;
            let b = Tensor::from_f32(ctx, &[k, n], format, &random(k * n, 2))?;
            let c = Tensor::new(ctx, &[m, n], format)?;
            let mut list = CommandList::with_total_timing(ctx)?;
            ops.gemm(&mut list, &a, &b, None, &c, &Gemm::new())?;
            // The series at least as long as PyTorch's and until the clock has been read
            // (`torch_ref.py`'s `timed` with `until_clock`): the same rule on both sides.
            warm_up(&mut list, cfg)?;
            let t = wall_series(&mut list, cfg.min_runs, cfg.min_series_gpu_s)?;
            let r = Record {
                case: "gemm",
                shape: format!("{m}x{n}x{k} wall"),
                variant: name.into(),
                coopmat: false,
                value: t.median_s * 1e6,
                unit: "us",
                sm_clock_mhz: t.sm_clock_mhz,
                method: METHOD,
            };
            print(&r);
            out.push(r);
        }
    }
    Ok(out)
}
