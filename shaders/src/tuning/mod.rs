//! Tile configuration per device: a documented table keyed by vendor / architecture, and
//! tuning by measurement on first use, cached beside the pipeline cache.
//!
//! [`GemmConfig::for_gemm`](crate::GemmConfig::for_gemm), `for_gemm_int8` and `for_conv` choose
//! tiles from the problem's shape alone, with the figures measured on an H100. Two ways to do
//! better on another GPU:
//!
//! - **The table** ([`table`]): [`DeviceClass::of`] sorts the device into a class by the ids it
//!   reports (NVIDIA with Hopper apart, AMD, Intel, ARM Mali, Qualcomm Adreno, Apple through
//!   MoltenVK, CPU implementations, other), and [`DeviceClass::config`] gives the class's
//!   default for a problem. Only the NVIDIA rows are measured (they are exactly `for_gemm`'s
//!   choices); the others are reasoned defaults, not measurements: [`DeviceClass`] has the
//!   table and the reasons.
//! - **Tuning** ([`autotune`]): [`GemmTuner`] times the class's candidates on the real problem
//!   the first time it meets it (in its shape bucket: M, N and K rounded up to powers of two),
//!   keeps the fastest, and records it in a small file ([`cache`]) next to the pipeline cache
//!   ([`GemmTuner::cache_path_for`]); later calls, in this process or the next, read the
//!   record and time nothing.
//!
//! ```no_run
//! use std::path::Path;
//! use vkprism_shaders::{gemm, tuning::GemmTuner};
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let ctx = vkprism::Context::new()?;
//! let pipelines = Path::new("pipelines.bin");
//! let _ = ctx.load_pipeline_cache(pipelines); // a missing or stale cache is no error here
//! let mut tuner = GemmTuner::new(&ctx, Some(&GemmTuner::cache_path_for(pipelines)));
//! let kernel = ctx.load::<gemm::Kernel>()?;
//! let cfg = tuner.gemm(&kernel, 4096, 4096, 4096, false, false)?; // timed once, then recorded
//! let pipe = kernel.pipeline(&cfg.spec(Default::default()), Some(cfg.local_size()))?;
//! // ... dispatch `cfg.grid(4096, 4096)` invocations of `pipe` ...
//! # drop(pipe);
//! ctx.save_pipeline_cache(pipelines)?;
//! # Ok(())
//! # }
//! ```
//!
//! Invariant: a tuner's cache never changes a result, only its speed. Every candidate is a
//! configuration the kernel computes correctly (the tuner checks each one's result before
//! timing it), a cached choice is checked against the device's limits before it is used, and
//! what depends on the problem's layout (16-byte loads) is derived from the problem, never read
//! from the file.

pub mod autotune;
pub mod cache;
pub mod table;

pub use autotune::{
    CacheStatus, CandidateRejection, Clock, GemmTuner, TuneBudget, TuneError, TuneReport,
};
pub use cache::{CacheDevice, CacheError, TuneKey, Tuned, TuningCache};
pub use table::{
    fits, shared_memory_bytes, DeviceClass, DeviceInfo, GemmKernel, GemmProblem, Misfit,
};
