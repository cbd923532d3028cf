//! Host ↔ device copies of 1 GiB (1 MiB in `--quick`): `Tensor::write_bytes`
//! and `read_bytes`, wall time (median of 5 after one warm-up), GB/s. Run twice: as the context
//! chooses (in place where VRAM is host-visible, staged otherwise) and with `force_staging`.

use crate::harness::{median, print, sm_clock_mhz, Config, Record};
use std::time::Instant;
use vkprism::{Context, ContextOptions, Tensor, TensorFormat};

pub fn run(ctx: &Context, cfg: Config) -> Result<Vec<Record>, Box<dyn std::error::Error>> {
    let mib: usize = if cfg.quick { 1 } else { 1024 };
    let bytes: Vec<u8> = (0..mib << 20).map(|i| (i % 251) as u8 + 1).collect();
    let staged = Context::with_options(ContextOptions::default().with_force_staging(true))?;
    let mut records = Vec::new();
    for (c, forced) in [(ctx, false), (&staged, true)] {
        let t = Tensor::new(c, &[bytes.len() / 4], TensorFormat::U32)?;
        let (up, down) = time_both(&t, &bytes, cfg)?;
        // The variant column says how: written in place, or through the staging buffer.
        let how = match (forced, t.writes_in_place()) {
            (true, _) => "fp32_forced_staging",
            (false, true) => "fp32_in_place",
            (false, false) => "fp32_staged",
        };
        for (dir, secs) in [("upload", up), ("download", down)] {
            let r = Record {
                case: "transfer",
                shape: format!("{dir} {mib}MiB"),
                variant: how.into(),
                coopmat: false,
                value: bytes.len() as f64 / secs / 1e9,
                unit: "GB/s",
                sm_clock_mhz: sm_clock_mhz(),
                method: "wall time of the call, end to end",
            };
            print(&r);
            records.push(r);
        }
    }
    Ok(records)
}

/// Median wall seconds of writing `bytes` into `t` and of reading them back (checked).
fn time_both(
    t: &Tensor,
    bytes: &[u8],
    cfg: Config,
) -> Result<(f64, f64), Box<dyn std::error::Error>> {
    let runs = if cfg.quick { 2 } else { 5 };
    let (mut up, mut down) = (Vec::new(), Vec::new());
    // One host buffer for every read, touched before timing (as torch copies into a host
    // tensor it already has): first-touch page faults are not the transfer.
    let mut back = vec![0u8; bytes.len()];
    for i in 0..=runs {
        let s = Instant::now();
        t.write_bytes(bytes)?;
        let u = s.elapsed().as_secs_f64();
        back.fill(0);
        let s = Instant::now();
        t.read_bytes_into(&mut back)?;
        let d = s.elapsed().as_secs_f64();
        if back != bytes {
            return Err("read_bytes_into returned other bytes than were written".into());
        }
        if i > 0 {
            up.push(u);
            down.push(d);
        }
    }
    Ok((median(up), median(down)))
}
