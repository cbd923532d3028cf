//! ResNet-50 in torchvision's layout (v1.5: the stride on each bottleneck's 3×3 convolution),
//! built on the operation layer and checked against a CPU reference.
//!
//! - `config.rs`: [`ResNetConfig`] (ResNet-50's, and a reduced one of the same depth for
//!   tests) and the bottleneck [`Block`]s it makes;
//! - `weights.rs`: [`HostWeights`], the weights by `state_dict` name ([`weight_shapes`]), random
//!   ones for tests, safetensors input and output;
//! - `fold.rs`: batch norm folded into each convolution, weights channels-last;
//! - `stem.rs`: [`StemLayout`], the stem over pixels or over 2×2 blocks of them (the device
//!   input's shape, the images written into it, the stem's weights for it);
//! - `graph.rs`: the folded network as a [`crate::session::Graph`], each node named as its
//!   weights;
//! - `model.rs`: [`ResNet`] (a [`crate::session::Session`] of that graph: resized per input
//!   size, replayed per forward pass), [`Logits`];
//! - `reference.rs`: the same forward pass on the CPU, batch norm unfolded;
//! - `error.rs`: [`ResNetError`].

mod config;
mod error;
mod fold;
mod graph;
mod model;
pub mod reference;
mod stem;
mod weights;

pub use crate::session::{MemoryReport, Recorded, Timing};
pub use config::{Block, ResNetConfig, EXPANSION};
pub use error::ResNetError;
pub use model::{Logits, ResNet};
pub use stem::StemLayout;
pub use weights::{weight_shapes, HostTensor, HostWeights, BN_EPS, BN_PARTS};
