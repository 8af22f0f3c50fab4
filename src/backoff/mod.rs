//! Retry strategies and retry control, shared by the model checker's clients, the timed
//! experiments and real client code.
//!
//! - [`Strategy`] names a delay formula; [`Backoff`] validates it with a base and a cap;
//!   [`BackoffState`] is one client's running state and draws delays from a caller's generator.
//! - [`RetryPolicy`] adds the limits that end a retry loop: attempts, an overall deadline and the
//!   server's Retry-After.
//!
//! Delays are `f64` milliseconds; attempt numbers follow the AWS post: 1 for the first retry.

mod policy;
mod strategy;

pub use policy::{Decision, Failure, GiveUpReason, RetryAfter, RetryPolicy};
pub use strategy::{
    Backoff, BackoffError, BackoffState, DelayBounds, Strategy, CAP_MS_MAX, GROWTH_MAX,
};
