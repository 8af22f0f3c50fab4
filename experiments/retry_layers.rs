//! retry-layers: how many requests reach the bottom service per user call when it fails, for k
//! layers of services each making r attempts (every layer retries) or only the top one retrying.
//! The experiment is `retrylab::experiments::layers`.
//!
//! Exit codes: 0 done, 1 the run or a write failed, 2 bad arguments.

use std::process::ExitCode;

use clap::Parser;
use retrylab::experiments::cli::{self, CommonArgs, Defaults};
use retrylab::experiments::layers::{RetryLayers, RUNS_DEFAULT, SEED_DEFAULT};

const DEFAULTS: Defaults = Defaults {
    seed: SEED_DEFAULT,
    runs: RUNS_DEFAULT,
    runs_min: 2,
    runs_max: 10_000,
};

#[derive(Parser, Debug)]
#[command(
    name = "retry-layers",
    about = "Requests reaching a failing bottom service per user call, k layers x r attempts"
)]
struct Cli {
    #[command(flatten)]
    common: CommonArgs,
}

fn main() -> ExitCode {
    cli::main(&DEFAULTS, |cli: Cli| {
        Ok((cli.common, RetryLayers::default()))
    })
}
