//! Retry strategies and retry control, shared by the model checker's clients, the timed
//! experiments and real client code.
//!
//! - [`Strategy`] names a delay formula; [`Backoff`] validates it with a base and a cap;
//!   [`BackoffState`] is one client's running state and draws delays from a caller's generator.
//! - [`RetryPolicy`] adds the limits that end a retry loop: attempts, an overall deadline and the
//!   server's Retry-After.
//! - [`RetryGate`] (retry control): whether a retry may go out at all: the AWS SDK retry quota,
//!   the SRE retry ratio, gRPC retry throttling, a token bucket, a circuit breaker.
//!
//! Delays are `f64` milliseconds; attempt numbers follow the AWS post: 1 for the first retry.

mod breaker;
mod budget;
mod policy;
mod strategy;
mod window;

pub use breaker::{BreakerConfig, BreakerScope, CircuitBreaker};
pub use budget::{
    AttemptKind, AttemptResult, AwsRetryQuota, FailureKind, GateError, GrpcThrottle, QuotaCosts,
    RetryControl, RetryGate, RetryPermit, RetryRatio, TokenBucket, MILLI,
};
pub use policy::{Decision, Failure, GiveUpReason, RetryAfter, RetryPolicy};
pub use strategy::{
    Backoff, BackoffError, BackoffState, DelayBounds, Strategy, CAP_MS_MAX, GROWTH_MAX,
};
