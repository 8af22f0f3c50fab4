//! Timed discrete-event simulation: the kernel and the statistics, nothing else. The worlds that
//! run on it are the experiments' ([`crate::experiments`]).
//!
//! - [`kernel`]: virtual clock in integer nanoseconds, an event queue ordered by
//!   (time, sequence), a runner with an event bound, and the pinned generator: ChaCha8 seeded
//!   explicitly, one stream per run.
//! - [`slot_queue`]: the same order of events for worlds with at most one pending event per
//!   slot (client), as a tournament tree; the AWS world runs on it.
//! - [`stats`]: mean, sd and 95% interval of repeated runs, percentiles, Wilson intervals.

pub mod kernel;
pub mod slot_queue;
pub mod stats;

pub use kernel::{
    ms_to_ns, ns_to_ms, run, run_drained, run_rng, Control, EventQueue, RunEnd, RunStats,
    ScheduleError, TimeNs, TimedWorld,
};
