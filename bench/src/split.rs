//! The second pass of a split-K GEMM or convolution (`gemm_split_reduce`), recorded after the
//! first in the benchmark's timed list.

use vkprism::{CommandList, Context, LoadOptions, Pipeline, Tensor, VariantKey};
use vkprism_shaders::{gemm_split_reduce, GemmConfig};

/// Records the reduce pass of `cfg` from `partial` into `out` (`bias` unread) (no bias, no activation, alpha 1)
/// in `key`'s float mode; returns its pipeline, which must outlive the list's runs.
pub fn reduce(
    ctx: &Context,
    list: &mut CommandList,
    key: &VariantKey,
    cfg: &GemmConfig,
    (m, n): (usize, usize),
    (bias, partial, out): (&Tensor, &Tensor, &Tensor),
) -> Result<Pipeline<gemm_split_reduce::Kernel>, Box<dyn std::error::Error>> {
    let kernel =
        ctx.load_with::<gemm_split_reduce::Kernel>(&LoadOptions::variant_named(key.float.name())?)?;
    let pipe = kernel.pipeline(&cfg.reduce_spec(false, 0), None)?;
    let bindings = gemm_split_reduce::BufferBindings {
        partial_blob: partial,
        bias_blob: bias,
        c_blob: out,
    };
    let push = gemm_split_reduce::PushConstants {
        M: m as i32,
        N: n as i32,
        alpha: 1.0,
        slope: 0.0,
    };
    list.dispatch(&pipe, &bindings, &push, cfg.reduce_grid(m, n))?;
    Ok(pipe)
}
