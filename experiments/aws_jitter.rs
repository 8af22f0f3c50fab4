//! aws-jitter: reproduces Brooker (2015), "Exponential Backoff And Jitter" (AWS Architecture
//! Blog), seeded and with 95% confidence intervals, and goes a little beyond it. The experiment is
//! `retrylab::experiments::aws`; this is its flags.
//!
//! Exit codes: 0 done, 1 the run or a write failed, 2 bad arguments.

use std::process::ExitCode;

use clap::Parser;
use retrylab::experiments::aws::report::EXTRA_STRATEGIES;
use retrylab::experiments::aws::{AwsJitter, SweepConfig, RUNS_DEFAULT, RUNS_MAX, SEED_DEFAULT};
use retrylab::experiments::cli::{self, CommonArgs, Defaults};

const DEFAULTS: Defaults = Defaults {
    seed: SEED_DEFAULT,
    runs: RUNS_DEFAULT,
    // An interval needs two runs.
    runs_min: 2,
    runs_max: RUNS_MAX,
};

#[derive(Parser, Debug)]
#[command(
    name = "aws-jitter",
    about = "Reproduce the AWS 'Exponential Backoff And Jitter' comparison: CSV, charts, README"
)]
struct Cli {
    #[command(flatten)]
    common: CommonArgs,
    /// Client counts, comma-separated, ascending (default 10,20,...,190).
    #[arg(long, value_delimiter = ',')]
    clients: Option<Vec<u32>>,
    /// Only the post's five strategies (skip the decorrelated variants).
    #[arg(long)]
    post_only: bool,
}

fn build(cli: Cli) -> Result<(CommonArgs, AwsJitter), String> {
    let mut config = SweepConfig::post();
    let clients_given = cli.clients.is_some();
    if let Some(clients) = cli.clients {
        if clients.is_empty() {
            return Err("--clients needs at least one client count".into());
        }
        if clients.windows(2).any(|w| w[0] >= w[1]) {
            return Err(format!(
                "--clients must be strictly ascending, got {clients:?}"
            ));
        }
        config.clients = clients;
    }
    if !cli.post_only {
        config.strategies.extend(EXTRA_STRATEGIES);
    }
    let mut experiment = AwsJitter::new(config).map_err(|e| e.to_string())?;
    experiment.post_only = cli.post_only;
    experiment.clients_given = clients_given;
    Ok((cli.common, experiment))
}

fn main() -> ExitCode {
    cli::main(&DEFAULTS, build)
}
