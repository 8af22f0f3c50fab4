//! retry-budget: Brooker (2022)'s comparison of retry controls. 100 Poisson clients at 10
//! requests/s, a server failing each call with probability p; load amplification and success rate
//! against p for each policy. The experiment is `retrylab::experiments::budget`.
//!
//! Exit codes: 0 done, 1 the run or a write failed, 2 bad arguments.

use std::process::ExitCode;

use clap::Parser;
use retrylab::experiments::budget::{RetryBudget, DURATION_S_DEFAULT, RUNS_DEFAULT, SEED_DEFAULT};
use retrylab::experiments::cli::{self, CommonArgs, Defaults};

const DEFAULTS: Defaults = Defaults {
    seed: SEED_DEFAULT,
    runs: RUNS_DEFAULT,
    runs_min: 2,
    runs_max: 1000,
};

#[derive(Parser, Debug)]
#[command(
    name = "retry-budget",
    about = "Load amplification and success rate against the server's failure rate, per retry control"
)]
struct Cli {
    #[command(flatten)]
    common: CommonArgs,
    /// Simulated seconds per run; the first half is warm-up and is not counted.
    #[arg(long, default_value_t = DURATION_S_DEFAULT)]
    duration_s: u32,
}

fn main() -> ExitCode {
    cli::main(&DEFAULTS, |cli: Cli| {
        Ok((cli.common, RetryBudget::new(cli.duration_s)?))
    })
}
