//! `--cases bound`: what bounds the library GEMM's cooperative-matrix loop on this device. The
//! loop of `shaders/src/gemm_core.glsl` alone (`bench/kernels/coopmat_bound.comp`: 128×256
//! tiles, no edges, transposes, epilogue or gathers) at 4096³ fp16, then without its global
//! loads, then its multiplies alone from a step staged once; each at 32- and 48-deep steps.
//! The figures are printed, not compared with PyTorch: they say how much of the library
//! kernel's time each part of the loop costs (BENCHMARKS.md, "What bounds the fp16 GEMM").

use crate::harness::{print, time_list, Config, Record};
use vkprism::{CommandList, Context, LoadOptions, Tensor, TensorFormat};

vkprism::compute_shader! {
    /// The cooperative-matrix GEMM loop with parts taken away (`mode`); see the source.
    pub mod coopmat_bound,
    path: "../kernels/coopmat_bound.comp",
    variants: [fp16s_cm],
}

/// The loop's parts, as `mode` takes them away.
const MODES: [(i32, &str); 3] = [(0, "loop"), (1, "no_global_loads"), (2, "multiplies_only")];

pub fn run(ctx: &Context, cfg: Config) -> Result<Vec<Record>, Box<dyn std::error::Error>> {
    let kernel = match ctx
        .load_with::<coopmat_bound::Kernel>(&LoadOptions::variant_named("fp16s_cm").unwrap())
    {
        Ok(k) => k,
        Err(e) => {
            println!("# bound: not run: {e}");
            return Ok(Vec::new());
        }
    };
    // 4096³ (the shape), or one tile's worth on a CPU driver.
    let (m, n, k) = if cfg.quick {
        (128, 256, 96)
    } else {
        (4096, 4096, 4032)
    };
    let a = Tensor::from_f32(ctx, &[m, k], TensorFormat::F16, &crate::random(m * k, 11))?;
    let b = Tensor::from_f32(ctx, &[k, n], TensorFormat::F16, &crate::random(k * n, 12))?;
    let c = Tensor::new(ctx, &[m, n], TensorFormat::F16)?;
    let mut records = Vec::new();
    for bk in [32, 48] {
        for (mode, what) in MODES {
            let spec = coopmat_bound::SpecConstants { BK: bk, mode };
            let pipe = kernel.pipeline(&spec, None)?;
            crate::print_statistics(&format!("bound {what} BK {bk}"), &pipe);
            let mut list = CommandList::with_total_timing(ctx)?;
            let bindings = coopmat_bound::BufferBindings {
                a_blob: &a,
                b_blob: &b,
                c_blob: &c,
            };
            let push = coopmat_bound::PushConstants {
                M: m as i32,
                N: n as i32,
                K: k as i32,
            };
            list.dispatch(
                &pipe,
                &bindings,
                &push,
                [(n / 256 * 32) as u32, (m / 128 * 8) as u32, 1],
            )?;
            let t = time_list(&mut list, cfg)?;
            let r = Record {
                case: "bound",
                shape: format!("{m}x{n}x{k} BK {bk} {what}"),
                variant: "fp16s_cm".into(),
                coopmat: true,
                value: 2.0 * (m * n * k) as f64 / t.median_s / 1e12,
                unit: "TFLOP/s",
                sm_clock_mhz: t.sm_clock_mhz,
                method: "timestamps around one dispatch",
            };
            print(&r);
            records.push(r);
        }
    }
    Ok(records)
}

#[cfg(test)]
mod tests {
    /// A and B are tensors of halves (read as octets), so the bench can upload them as F16.
    #[test]
    fn operands_are_f16_tensors() {
        let v = &super::coopmat_bound::VARIANTS[0];
        assert_eq!(v.key.name(), "fp16s_cm");
        for b in &v.bindings[..3] {
            assert_eq!(b.format, vkprism::TensorFormat::F16, "{}", b.name);
        }
    }
}
