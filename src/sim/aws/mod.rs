//! Reproduction of Brooker (2015), "Exponential Backoff And Jitter" (AWS Architecture Blog):
//! the world ([`model`]), the grid of runs ([`sweep`]) and the post's claims ([`claims`]).

pub mod claims;
pub mod model;
pub mod sweep;

pub use model::{cap_stickiness, simulate_run, AwsError, AwsParams, CapStickiness, RunOutcome};
pub use sweep::{run_sweep, summarise, CellSummary, RunRecord, SweepConfig, SweepError};
