//! dedup-window: the probability that one event takes effect twice, against the producer's
//! republish delay relative to the broker's dedup window, for each place the dedup can live
//! (docs/src/domain.md section 5). The world is [`world`], its claims [`claims`], the output [`report`].

pub mod claims;
#[cfg(feature = "nats")]
pub mod real_broker;
pub mod report;
pub mod world;

use rand_chacha::ChaCha8Rng;

use crate::grid::{Context, Experiment, Grid, RunAt};
use crate::output::Output;
pub use world::{cells, count, run_once, stream, sweep, At, Cause, Cell, Config, Place};

/// The experiment: the world's configuration (seed and runs are the sweep's).
#[derive(Clone, Debug, PartialEq)]
pub struct DedupWindow {
    pub config: Config,
}

impl Experiment for DedupWindow {
    type Cell = At;
    /// (the event took effect twice, the broker forwarded the copy)
    type Run = (bool, bool);

    fn name(&self) -> &'static str {
        "dedup-window"
    }

    fn cells(&self) -> Vec<At> {
        cells(&self.config)
    }

    fn stream(&self, _: &At, at: RunAt) -> u64 {
        stream(at.cell_index, at.runs_per_cell, at.run_index)
    }

    fn run(&self, cell: &At, rng: &mut ChaCha8Rng) -> Result<(bool, bool), String> {
        Ok(run_once(
            cell.cause,
            cell.place,
            cell.ratio,
            &self.config,
            rng,
        ))
    }

    fn flags(&self) -> Vec<String> {
        let default = Config::default();
        let mut flags = Vec::new();
        if self.config.window_ms != default.window_ms {
            flags.push(format!("--window-s {}", self.config.window_ms / 1000.0));
        }
        if self.config.crash_probability != default.crash_probability {
            flags.push(format!(
                "--crash-probability {}",
                self.config.crash_probability
            ));
        }
        if self.config.ack_loss_probability != default.ack_loss_probability {
            flags.push(format!(
                "--ack-loss-probability {}",
                self.config.ack_loss_probability
            ));
        }
        flags
    }

    fn report(&self, grid: &Grid<At, (bool, bool)>, context: &Context) -> Result<Output, String> {
        let cells: Vec<Cell> = grid
            .cells
            .iter()
            .map(|cell| count(cell.cell, &cell.runs))
            .collect();
        report::report(&self.config, &cells, context)
    }
}

/// The cell at (cause, place, ratio), if the grid has it.
pub fn find(cells: &[Cell], cause: Cause, place: Place, ratio: f64) -> Option<&Cell> {
    cells
        .iter()
        .find(|cell| cell.cause == cause && cell.place == place && cell.ratio == ratio)
}
