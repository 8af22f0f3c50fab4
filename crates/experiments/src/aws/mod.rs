//! aws-jitter: Brooker (2015), "Exponential Backoff And Jitter" (AWS Architecture Blog),
//! reproduced: the world ([`world`]), the grid of runs ([`sweep`]), the post's claims
//! ([`claims`]) and the output ([`report`]).

pub mod claims;
pub mod report;
pub mod sweep;
pub mod world;

pub use sweep::{
    run_sweep, summarise, AwsJitter, CellSummary, RunRecord, SweepConfig, SweepError, RUNS_DEFAULT,
    RUNS_MAX, SEED_DEFAULT,
};
pub use world::{cap_stickiness, simulate_run, AwsError, AwsParams, CapStickiness, RunOutcome};
