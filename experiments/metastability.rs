//! metastability: a server with capacity loses most of it for a while, then gets it back. Which
//! retry policies let goodput come back, how long it takes, and which keep the server busy with
//! work nobody waits for. The experiment is `retrylab::experiments::capacity::metastability`.
//!
//! Exit codes: 0 done, 1 the run or a write failed, 2 bad arguments.

use std::process::ExitCode;

use clap::Parser;
use retrylab::experiments::capacity::metastability::{
    Metastability, RUNS_DEFAULT, SEED_DEFAULT, TRIGGER_S_DEFAULT,
};
use retrylab::experiments::cli::{self, CommonArgs, Defaults};

const DEFAULTS: Defaults = Defaults {
    seed: SEED_DEFAULT,
    runs: RUNS_DEFAULT,
    runs_min: 2,
    runs_max: 1000,
};

#[derive(Parser, Debug)]
#[command(
    name = "metastability",
    about = "Goodput over time around a capacity drop, per retry policy: who stays collapsed"
)]
struct Cli {
    #[command(flatten)]
    common: CommonArgs,
    /// How long the capacity drop lasts, in seconds (it starts at 10 s; the run lasts 60 s).
    #[arg(long, default_value_t = TRIGGER_S_DEFAULT)]
    trigger_s: u32,
}

fn main() -> ExitCode {
    cli::main(&DEFAULTS, |cli: Cli| {
        Ok((cli.common, Metastability::new(cli.trigger_s)?))
    })
}
