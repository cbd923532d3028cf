#![doc = include_str!("../README.md")]
//!
//! ---
//!
//! This crate is the facade users depend on: it re-exports [`compute_shader!`] and the runtime
//! (`vkprism-runtime`). ARCHITECTURE.md in the repository is the codemap.

// Lets `compute_shader!` name `::vkprism::…` from this crate's own tests and doctests.
extern crate self as vkprism;

pub use vkprism_macros::compute_shader;
pub use vkprism_runtime::*;

// `pub mod __private_<version>`, written by build.rs: what generated code names.
include!(concat!(env!("OUT_DIR"), "/private_module.rs"));
