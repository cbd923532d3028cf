//! Tile configuration per device: a documented table keyed by vendor / architecture
//! ([`table`]: [`DeviceClass`]), whose NVIDIA rows are `GemmConfig::for_gemm`'s measured
//! choices and whose other rows are documented defaults, not measured; and the file format of
//! a cache of measured choices ([`cache`]).

pub mod cache;
pub mod table;

pub use cache::{CacheDevice, CacheError, TuneKey, Tuned, TuningCache};
pub use table::{fits, shared_memory_bytes, DeviceClass, DeviceInfo, GemmKernel, GemmProblem};
