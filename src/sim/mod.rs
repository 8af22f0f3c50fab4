//! Timed discrete-event simulation for the experiments.
//!
//! - [`kernel`]: virtual clock in integer nanoseconds, an event queue ordered by
//!   (time, sequence), a runner with an event bound, and the pinned generator: ChaCha8 seeded
//!   explicitly, one stream per run.
//! - [`stats`]: mean, sd and 95% interval of repeated runs, percentiles.
//! - [`aws`]: the AWS "Exponential Backoff And Jitter" world and its sweep.

pub mod aws;
pub mod dedup_window;
pub mod kernel;
pub mod stats;

pub use kernel::{
    ms_to_ns, ns_to_ms, run, run_rng, Control, EventQueue, Model, RunEnd, RunStats, ScheduleError,
    TimeNs,
};
