//! How the state space grows with clients, attempts and faults, with and without symmetry reduction.
//! `cargo run --release --bin state-space [-- --out DIR --max-states N]`; writes `summary.csv`, charts and a
//! README to `results/state-space/`. The searches and the output are `retrylab::experiments::state_space`.
//! Not seeded (every search is exhaustive), so it takes no `--seed`/`--runs`; `--out` is checked first.
//!
//! Exit codes: 0 done, 1 a write failed, 2 bad arguments or an unusable `--out`.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;
use retrylab::experiments::{index, state_space};
use retrylab::spec::load_model;

#[derive(Parser)]
#[command(
    name = "state-space",
    about = "State-space growth of the article's model, with and without symmetry reduction"
)]
struct Args {
    /// Output folder.
    #[arg(long, default_value = "results/state-space")]
    out: PathBuf,
    /// Stop a search past this many unique states (its count is then a lower bound, marked incomplete).
    #[arg(
        long = "max-states",
        value_name = "MAX_STATES",
        default_value_t = 3_000_000
    )]
    states_max: u64,
    /// The base model.
    #[arg(long, default_value = "models/article-sqlite.toml")]
    model: PathBuf,
}

fn main() -> ExitCode {
    let args = Args::parse();
    // Refuse an unwritable --out before the searches, not after them.
    if let Err(message) = retrylab::atomic::ensure_writable_folder(&args.out) {
        eprintln!("state-space: {message}");
        return ExitCode::from(2);
    }
    let base = match load_model(&args.model) {
        Ok(model) => model.world,
        Err(error) => {
            eprintln!("state-space: {error}");
            return ExitCode::from(2);
        }
    };
    let rows = state_space::search(&base, args.states_max, &|row| {
        eprintln!(
            "{}={} symmetry={}: {} states",
            row.dimension, row.value, row.symmetry, row.states
        );
    });
    let written = state_space::report(&rows)
        .and_then(|output| output.write(&args.out))
        .and_then(|()| index::refresh_for(&args.out));
    match written {
        Ok(_) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("state-space: {message}");
            ExitCode::FAILURE
        }
    }
}
