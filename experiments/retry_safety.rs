//! retry-safety: attempts that time out at the client but in fact executed, and the duplicate
//! effects their retries cause, without an idempotency key and with one, per backoff strategy and
//! client timeout. The experiment is `retrylab::experiments::capacity::safety`.
//!
//! Exit codes: 0 done, 1 the run or a write failed, 2 bad arguments.

use std::process::ExitCode;

use clap::Parser;
use retrylab::experiments::capacity::safety::{
    RetrySafety, DURATION_S_DEFAULT, RUNS_DEFAULT, SEED_DEFAULT, TIMEOUTS_MS,
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
    name = "retry-safety",
    about = "Duplicate effects from timed-out attempts that executed, with and without an idempotency key"
)]
struct Cli {
    #[command(flatten)]
    common: CommonArgs,
    /// Simulated seconds per run (the capacity drop is at 10..20 s; at least 30).
    #[arg(long, default_value_t = DURATION_S_DEFAULT)]
    duration_s: u32,
    /// Client timeouts in ms, comma-separated, ascending (default 50,100,150,200,300).
    #[arg(long, value_delimiter = ',')]
    timeouts_ms: Option<Vec<u32>>,
}

fn main() -> ExitCode {
    cli::main(&DEFAULTS, |cli: Cli| {
        let timeouts_ms = cli.timeouts_ms.unwrap_or(TIMEOUTS_MS.to_vec());
        Ok((cli.common, RetrySafety::new(timeouts_ms, cli.duration_s)?))
    })
}
