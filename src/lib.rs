//! vkprism: Vulkan compute kernels written inline in Rust, in ncnn's extended GLSL, compiled to
//! SPIR-V for every precision variant at build time, and run through a small ash runtime that
//! picks the best variant the device can run.
//!
//! See the README for a tour and ARCHITECTURE.md for the codemap.

// Lets `compute_shader!` name `::vkprism::…` from this crate's own tests and doctests.
extern crate self as vkprism;

pub use vkprism_macros::compute_shader;
pub use vkprism_runtime::*;

// `pub mod __private_<version>`, written by build.rs: what generated code names.
include!(concat!(env!("OUT_DIR"), "/private_module.rs"));
