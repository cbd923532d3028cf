//! `--cases barrier_probe`: what a barrier across the whole grid costs inside one dispatch
//! (workgroups counting themselves at an atomic counter and waiting for the rest), against a
//! dependent dispatch (a list barrier between two dispatches) — what a persistent kernel
//! running a decode step's chain of projections in one dispatch would pay a step instead of
//! each dispatch's. The grid is one or two workgroups of 64 invocations a multiprocessor
//! (every one resident at once); each call clears the counter, then runs 1 or 101 phases;
//! a phase's cost is the difference over 100. A wait that gives up (a grid not resident) is
//! counted and printed, and makes the figure meaningless. Skipped on a device that does not
//! report its multiprocessors.

use crate::harness::{probe_record, time_calls, Config, Record};
use vkprism::{Context, LoadOptions, Tensor};
use vkprism_shaders::multiprocessors;

vkprism::compute_shader! {
    /// Phases of nearly no work, each ended by a barrier across the grid (an atomic counter).
    pub mod grid_barrier,
    path: "../kernels/grid_barrier.comp",
    variants: [fp32],
}

const CASE: &str = "barrier_probe";

/// Reads of the counter a wait makes before it gives up (tens of milliseconds).
const PATIENCE: u32 = 1 << 16;

pub fn run(ctx: &Context, cfg: Config) -> Result<Vec<Record>, Box<dyn std::error::Error>> {
    if ctx.features().limits.multiprocessors == 0 {
        // Residency can't be known: a CPU device runs a few workgroups at a time, and each
        // wait would spin to its patience.
        println!("# barrier_probe: the device does not report its multiprocessors; skipped");
        return Ok(Vec::new());
    }
    let kernel = ctx.load_with::<grid_barrier::Kernel>(&LoadOptions::variant_named("fp32")?)?;
    let pipe = kernel.pipeline(&grid_barrier::SpecConstants {}, Some([64, 1, 1]))?;
    let counter = Tensor::from_u32(ctx, &[2], &[0, 0])?;
    let b = grid_barrier::BufferBindings {
        counter_blob: &counter,
    };
    let sms = multiprocessors(ctx.features());
    let mut out = Vec::new();
    for per_sm in [1, 2] {
        let groups = (sms * per_sm) as u32;
        let mut medians = Vec::new();
        for phases in [1u32, 101] {
            let push = grid_barrier::PushConstants {
                phases,
                patience: PATIENCE,
            };
            let t = time_calls(ctx, cfg, |l| {
                l.fill(&counter, 0)?;
                l.dispatch(&pipe, &b, &push, [groups * 64, 1, 1])?;
                Ok(())
            })?;
            let shape = format!("{groups} workgroups, {phases} phases a dispatch");
            out.push(probe_record(CASE, shape, "fp32".into(), t));
            medians.push(t);
        }
        let gave_up = counter.download_u32()?[1];
        let per_phase = (medians[1].median_s - medians[0].median_s) / 100.0;
        println!(
            "# {groups} workgroups: a grid barrier {:.3} us; waits given up in the last call: {gave_up}",
            per_phase * 1e6
        );
    }
    // Against it: a dependent dispatch.
    out.push(crate::gemv_probe::dependent_dispatch(ctx, cfg, CASE)?);
    Ok(out)
}
