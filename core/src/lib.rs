//! The one vocabulary shared by the `compute_shader!` compiler and the runtime.
//!
//! The compiler decides, per variant, which [`Feature`]s the SPIR-V needs and writes them into
//! the generated [`VariantInfo`] table; the runtime detects the same [`Feature`]s on the device
//! and picks a variant. Both sides naming features through this crate is what keeps them in step.
//! Nothing here depends on Vulkan or on proc-macro types.

#![deny(missing_docs)]

mod coopmat;
mod features;
// info.rs is being reworked by the compiler half of issue 6 (reflected flags, `requires()`);
// its docs come with that change.
#[allow(missing_docs)]
mod info;
mod variant;

pub use coopmat::{CoopMatShape, CoopMatShapes};
pub use features::{DeviceFeatures, DeviceLimits, Feature, FeatureSet};
pub use info::{
    Access, BindingInfo, BindingKind, ElementType, KernelInfo, LocalSizeDim, PushConstantInfo,
    ScalarKind, SpecConstantInfo, TensorFormat, VariantInfo,
};
pub use variant::{FloatMode, Int8Mode, MemoryKind, ParseVariantError, VariantKey};
