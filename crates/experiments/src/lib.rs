//! Experiments as data: a grid of cells, each run `--runs` times on its own ChaCha8 stream, in
//! parallel with a result independent of the thread count; per-run rows and per-cell summaries as
//! serde structs written with the `csv` crate; claims judged here, in the library, each with its
//! criterion, verdict and evidence; charts; and a generated README.
//!
//! - [`grid`]: the [`Experiment`] trait (cells, one run, the stream of a run, the report) and
//!   [`sweep`], which runs every cell.
//! - [`table`]: CSV text from rows (headers derived from the row struct's fields), the
//!   fixed-decimal formats of the committed files, and [`table::Markdown`], the one writer of
//!   every README table.
//! - [`claim`]: a claim, its verdict and the Markdown table of claims. Each experiment's claims
//!   module makes every comparison of the experiment once (typed findings, then claims); its
//!   README only renders those findings, the claims and tables.
//! - [`output`]: what an experiment writes (tables, charts, claims, README) and the writer.
//! - [`cli`] (features `cli` and `plot`): the one `main` of the experiment binaries.
//! - [`index`]: `results/README.md`, the index of every experiment's committed results.
//!
//! Each experiment is one module, its world next to its claims and its report: [`aws`] (Brooker
//! 2015), [`dedup_window`], [`layers`], [`budget`] (Brooker 2022), [`capacity`] (the world of
//! `metastability` and `retry-safety`), [`state_space`] (the checker's state counts). [`client`]
//! is the retry policies the storm worlds share. Adding an experiment is writing its world, its
//! claims and its report, and an 80-line binary that lists its flags and calls [`cli::main`].

pub mod aws;
pub mod budget;
pub mod capacity;
pub mod claim;
#[cfg(all(feature = "cli", feature = "plot"))]
pub mod cli;
pub mod client;
pub mod dedup_window;
pub mod grid;
pub mod index;
pub mod layers;
pub mod output;
pub mod state_space;
pub mod table;

// The layers below, under the names the modules of this crate use for them.
use retrylab_check as check;
use retrylab_sim::{atomic, backoff, plot, sim};
#[cfg(feature = "nats")]
use retrylab_worlds::handler;
use retrylab_worlds::{builtin, protocol};

pub use claim::{Claim, ClaimVerdict};
pub use grid::{sweep, CellRuns, Context, Experiment, Grid, RunAt};
pub use output::Output;

/// The one-way network delay of a world's config: finite and not negative.
pub(crate) fn check_leg_ms(leg_ms: f64) -> Result<(), String> {
    if leg_ms.is_finite() && leg_ms >= 0.0 {
        Ok(())
    } else {
        Err(format!("leg_ms must be finite and >= 0, got {leg_ms}"))
    }
}

/// Checks a `--duration-s` flag against its range.
pub fn check_duration_s(duration_s: u32, low: u32, high: u32) -> Result<(), String> {
    if (low..=high).contains(&duration_s) {
        Ok(())
    } else {
        Err(format!(
            "--duration-s must be in {low}..={high}, got {duration_s}"
        ))
    }
}
