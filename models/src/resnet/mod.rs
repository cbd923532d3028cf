//! ResNet-50 in torchvision's layout (v1.5: the stride on each bottleneck's 3×3 convolution),
//! built on the operation layer and checked against a CPU reference.
//!
//! - `config.rs`: [`ResNetConfig`] (ResNet-50's, and a reduced one of the same depth for
//!   tests) and the bottleneck [`Block`]s it makes;
//! - `weights.rs`: [`HostWeights`], the weights by `state_dict` name ([`weight_shapes`]), random
//!   ones for tests, safetensors input and output;
//! - `fold.rs`: batch norm folded into each convolution, weights channels-last;
//! - `layers.rs`: the folded weights on the device, each layer recorded through [`Ops`];
//! - `plan.rs`: the forward pass as steps over activation values, and the memory plan that
//!   reuses a value's buffer after its last reader;
//! - `model.rs`: [`ResNet`] (record once per input size, replay), [`Logits`],
//!   [`MemoryReport`];
//! - `reference.rs`: the same forward pass on the CPU, batch norm unfolded;
//! - `error.rs`: [`ResNetError`].
//!
//! [`Ops`]: vkprism_shaders::ops::Ops

mod config;
mod error;
mod fold;
mod layers;
mod model;
mod plan;
pub mod reference;
mod weights;

pub use config::{Block, ResNetConfig, EXPANSION};
pub use error::ResNetError;
pub use model::{Logits, MemoryReport, ResNet, Timing};
pub use weights::{weight_shapes, HostTensor, HostWeights, BN_EPS, BN_PARTS};
