//! `--cases slab_probe` (printed, not recorded): how long a dispatch of a few large workgroups
//! takes to load a slab each (every 16-byte load issued before any is used), the slabs warm in
//! L2 or read from memory after 64 MiB of other reads: what a decode step's attention, a
//! workgroup per query head over all its keys, can expect of its loads (`attention_decode`).
//! `VKPRISM_BENCH_SLABS=groups,local,per,share;...` times other shapes: many workgroups
//! sharing few slabs read L2 as fast as it serves them (the warm figure's TB/s).

use crate::harness::{env_rows, time_calls, Config, Record};
use vkprism::{Context, Tensor, TensorFormat};

vkprism::compute_shader! {
    /// Each workgroup loads `PER` 16-byte words an invocation of one slab, `SHARE` workgroups a
    /// slab.
    pub mod slab_load,
    path: "../kernels/slab_load.comp",
}

pub fn run(ctx: &Context, cfg: Config) -> Result<Vec<Record>, Box<dyn std::error::Error>> {
    let k = ctx.load::<slab_load::Kernel>()?;
    // 96 MiB: the slabs in its first 32, the reads that push them out of L2 the other 64.
    let words = 96 << 16;
    let src = Tensor::from_f32(ctx, &[words * 4], TensorFormat::F32, &vec![1.0; words * 4])?;
    let dst = Tensor::new(ctx, &[MAX_GROUPS], TensorFormat::F32)?;
    for (groups, local, per, share) in shapes() {
        let pipe = k.pipeline(
            &slab_load::SpecConstants {
                PER: per,
                SHARE: share,
            },
            Some([local, 1, 1]),
        )?;
        let b = slab_load::BufferBindings {
            src_blob: &src,
            dst_blob: &dst,
        };
        // The rest of the 96 MiB read between calls (`cold`): the slab comes from memory.
        let evict_pipe = k.pipeline(
            &slab_load::SpecConstants { PER: 16, SHARE: 1 },
            Some([1024, 1, 1]),
        )?;
        let evict_groups = 256u32; // 64 MiB
        let evict_first = SLAB_WORDS as i32;
        let evict = |l: &mut vkprism::CommandList| {
            l.dispatch(
                &evict_pipe,
                &b,
                &slab_load::PushConstants { first: evict_first },
                [evict_groups * 1024, 1, 1],
            )
        };
        let probe = |l: &mut vkprism::CommandList| {
            l.dispatch(
                &pipe,
                &b,
                &slab_load::PushConstants { first: 0 },
                [groups * local, 1, 1],
            )
        };
        let warm = time_calls(ctx, cfg, |l| Ok(probe(l)?))?;
        let both = time_calls(ctx, cfg, |l| {
            evict(l)?;
            Ok(probe(l)?)
        })?;
        let alone = time_calls(ctx, cfg, |l| Ok(evict(l)?))?;
        println!(
            "slab_probe {groups} wg x {local} inv x {per} loads (share {share}, {} KiB a wg): warm {:.2} us ({:.2} TB/s), cold {:.2} us (evict {:.2})  SM {:?} MHz",
            local as usize * per as usize * 16 / 1024,
            warm.median_s * 1e6,
            (groups * local) as f64 * per as f64 * 16.0 / warm.median_s / 1e12,
            (both.median_s - alone.median_s) * 1e6,
            alone.median_s * 1e6,
            warm.sm_clock_mhz
        );
    }
    Ok(Vec::new())
}

/// 16-byte words of `src` the slabs may take (its first 32 MiB; the eviction reads the rest).
const SLAB_WORDS: usize = 32 << 16;

/// Workgroups a dispatch may have: each writes its result to one of `dst`'s values.
const MAX_GROUPS: usize = 16384;

/// The dispatches timed: `VKPRISM_BENCH_SLABS=groups,local,per,share;...` (many workgroups
/// sharing few slabs measure L2's bandwidth), or the shapes of a decode step's attention. A
/// given shape whose slabs would not fit the first 32 MiB, or with a zero, is left out and said.
fn shapes() -> Vec<(u32, u32, i32, i32)> {
    let Some(rows) = env_rows::<u32, 4>("VKPRISM_BENCH_SLABS") else {
        return vec![
            (32, 512, 16, 8),
            (32, 1024, 8, 8),
            (32, 256, 32, 8),
            (64, 512, 8, 8),
            (64, 1024, 4, 8),
            (128, 256, 8, 8),
            (256, 64, 16, 8),
            (4, 1024, 8, 1),
            (32, 512, 16, 1),
            (1, 64, 1, 1),
        ];
    };
    // Every count at least 1, the grid's invocations a u32, one result a workgroup, the slabs
    // inside their 32 MiB.
    let fits = |&[groups, local, per, share]: &[u32; 4]| {
        let counts = groups > 0 && local > 0 && per > 0 && share > 0;
        let slabs = groups.div_ceil(share.max(1)) as usize;
        counts
            && groups.checked_mul(local).is_some()
            && groups as usize <= MAX_GROUPS
            && slabs * local as usize * per as usize <= SLAB_WORDS
    };
    let (kept, left): (Vec<_>, Vec<_>) = rows.into_iter().partition(fits);
    for r in left {
        println!(
            "slab_probe {r:?}: left out (a zero, over {MAX_GROUPS} groups, or slabs past the \
             first 32 MiB)"
        );
    }
    kept.into_iter()
        // A share past the groups is one slab for all, as the groups themselves (and an i32).
        .map(|[g, l, p, s]| (g, l, p as i32, s.min(g) as i32))
        .collect()
}
