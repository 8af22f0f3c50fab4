//! The capacity world ([`world`]: workers, a bounded queue, a capacity drop, clients with
//! timeouts, effects with and without an idempotency key) and its two experiments:
//! [`metastability`] (who stays collapsed after the drop) and [`safety`] (retry-safety:
//! duplicate effects from timed-out attempts that executed).

pub mod metastability;
pub mod metastability_claims;
pub mod safety;
pub mod safety_claims;
pub mod world;

pub use world::{recovery, simulate, CapacityConfig, CapacityOutcome, Recovery};
