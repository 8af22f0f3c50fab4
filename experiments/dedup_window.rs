//! dedup-window: the probability that one event takes effect twice, against the producer's
//! republish delay relative to the broker's dedup window, for each place the dedup can live
//! (docs/src/domain.md section 5). The experiment is `retrylab::experiments::dedup_window`.
//!
//! Exit codes: 0 done, 1 a write failed, 2 bad arguments.

use std::process::ExitCode;

use clap::Parser;
use retrylab::experiments::cli::{self, CommonArgs, Defaults};
use retrylab::experiments::dedup_window::world::{RUNS_DEFAULT, SEED_DEFAULT};
use retrylab::experiments::dedup_window::{Config, DedupWindow};

const DEFAULTS: Defaults = Defaults {
    seed: SEED_DEFAULT,
    runs: RUNS_DEFAULT,
    runs_min: 2,
    runs_max: 1_000_000,
};

#[derive(Parser, Debug)]
#[command(
    name = "dedup-window",
    about = "P(duplicate effect) against the republish delay relative to the dedup window, per dedup place"
)]
struct Cli {
    #[command(flatten)]
    common: CommonArgs,
    /// The broker's dedup window in seconds (SQS FIFO: 300; NATS JetStream default: 120).
    #[arg(long, default_value_t = 300.0)]
    window_s: f64,
    /// Probability that a consumer crashes during one delivery.
    #[arg(long, default_value_t = Config::default().crash_probability)]
    crash_probability: f64,
    /// Probability that a consumer's ack is lost.
    #[arg(long, default_value_t = Config::default().ack_loss_probability)]
    ack_loss_probability: f64,
}

fn build(cli: Cli) -> Result<(CommonArgs, DedupWindow), String> {
    if !(cli.window_s.is_finite() && cli.window_s > 0.0) {
        return Err(format!(
            "--window-s must be a positive number of seconds, got {}",
            cli.window_s
        ));
    }
    for (flag, value) in [
        ("--crash-probability", cli.crash_probability),
        ("--ack-loss-probability", cli.ack_loss_probability),
    ] {
        if !(0.0..1.0).contains(&value) {
            return Err(format!("{flag} must be in [0, 1), got {value}"));
        }
    }
    let config = Config {
        window_ms: cli.window_s * 1000.0,
        crash_probability: cli.crash_probability,
        ack_loss_probability: cli.ack_loss_probability,
        ..Config::default()
    };
    Ok((cli.common, DedupWindow { config }))
}

fn main() -> ExitCode {
    cli::main(&DEFAULTS, build)
}
