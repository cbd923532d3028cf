//! A generic graph [`Session`], the flow of MNN's Vulkan backend: a network built in Rust as a
//! [`Graph`]; created once (structure checked, weights uploaded in the session's format);
//! resized per input shape (shapes inferred, values planned into shared buffers by liveness,
//! every node recorded once into one command list); run per input (input written, list
//! replayed, output read, in one submission).
//!
//! - `graph.rs`: [`Graph`], its [`Value`]s, [`Constant`]s and [`Node`]s, the node kinds
//!   ([`Op`]);
//! - `shape.rs`: shape inference, errors naming the node and what mismatched;
//! - `plan.rs`: [`MemoryPlan`], which buffer holds each value;
//! - `record.rs`: each node recorded through [`vkprism_shaders::ops::Ops`];
//! - `pass.rs`: one input shape's planned, allocated and recorded pass;
//! - `session.rs`: [`Session`] (create, resize, run), [`Timing`], [`Output`], [`Recorded`];
//! - `report.rs`: [`MemoryReport`];
//! - `error.rs`: [`SessionError`].

mod error;
mod graph;
mod pass;
mod plan;
mod record;
mod report;
#[allow(clippy::module_inception)]
mod session;
mod shape;

pub use error::SessionError;
pub use graph::{Constant, Conv, Dim, Graph, Linear, Node, Op, Value};
pub use plan::{MemoryPlan, PlannedValue};
pub use report::MemoryReport;
pub use session::{Output, Recorded, Session, Timing};
