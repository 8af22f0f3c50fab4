//! The grid of (strategy, clients, run) as an [`Experiment`], and the per-cell summaries.

use rand_chacha::ChaCha8Rng;

use super::world::{simulate_run, AwsError, AwsParams, RunOutcome, CLIENTS_MAX};
use crate::backoff::{Backoff, BackoffError, Strategy};
use crate::grid::{sweep, Context, Experiment, Grid, RunAt};
use crate::output::Output;
use crate::sim::stats::{estimate, Estimate};

/// Upper bound on runs per cell (stream ids reserve 24 bits for the run index).
pub const RUNS_MAX: u32 = 1_000_000;

/// The post's seed (2015) and runs per cell (100).
pub const SEED_DEFAULT: u64 = 2015;
pub const RUNS_DEFAULT: u32 = 100;

/// The grid: strategies x client counts, and the world's fixed parameters. Seed and runs per
/// cell are the sweep's.
#[derive(Clone, Debug, PartialEq)]
pub struct SweepConfig {
    pub strategies: Vec<Strategy>,
    pub clients: Vec<u32>,
    pub params: AwsParams,
}

impl SweepConfig {
    /// The post's grid: its five strategies, 10..=190 clients in steps of 10.
    pub fn post() -> Self {
        SweepConfig {
            strategies: Strategy::POST.to_vec(),
            clients: (1..=19).map(|i| i * 10).collect(),
            params: AwsParams::POST,
        }
    }

    pub fn validate(&self) -> Result<(), SweepError> {
        if self.strategies.is_empty() || self.clients.is_empty() {
            return Err(SweepError::Empty);
        }
        if let Some(&bad) = self
            .clients
            .iter()
            .find(|c| !(1..=CLIENTS_MAX).contains(*c))
        {
            return Err(SweepError::Aws(AwsError::Clients(bad)));
        }
        for &strategy in &self.strategies {
            self.backoff(strategy)?;
        }
        Ok(())
    }

    fn backoff(&self, strategy: Strategy) -> Result<Backoff, BackoffError> {
        Backoff::new(strategy, self.params.base_ms, self.params.cap_ms)
    }
}

#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum SweepError {
    #[error("the sweep needs at least one strategy and one client count")]
    Empty,
    #[error("runs must be in 1..={RUNS_MAX}, got {0}")]
    Runs(u32),
    #[error("{0}")]
    Run(String),
    #[error(transparent)]
    Backoff(#[from] BackoffError),
    #[error(transparent)]
    Aws(#[from] AwsError),
}

/// A stable number per strategy, so a run's stream does not depend on which other strategies
/// are in the sweep or in which order.
pub fn strategy_tag(strategy: Strategy) -> u64 {
    match strategy {
        Strategy::None => 1,
        Strategy::Constant => 2,
        Strategy::Exponential => 3,
        Strategy::EqualJitter => 4,
        Strategy::FullJitter => 5,
        Strategy::Decorrelated { growth } => 0x100 + u64::from(growth),
        Strategy::DecorrelatedCapped { growth } => 0x200 + u64::from(growth),
    }
}

/// The generator stream of one run: strategy tag, client count and run index packed into
/// disjoint bit fields (16 | 24 | 24), so every run of every cell is independent and replayable.
pub fn stream_id(strategy: Strategy, clients: u32, run_index: u32) -> u64 {
    (strategy_tag(strategy) << 48) | (u64::from(clients) << 24) | u64::from(run_index)
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RunRecord {
    pub strategy: Strategy,
    pub clients: u32,
    pub run_index: u32,
    pub stream: u64,
    pub outcome: RunOutcome,
}

/// The aws-jitter experiment: the grid, and whether the strategies beyond the post are in it.
#[derive(Clone, Debug, PartialEq)]
pub struct AwsJitter {
    pub config: SweepConfig,
    /// Only the post's five strategies.
    pub post_only: bool,
    /// Whether `--clients` was given (the README's command repeats it).
    pub clients_given: bool,
}

impl AwsJitter {
    pub fn new(config: SweepConfig) -> Result<Self, SweepError> {
        config.validate()?;
        Ok(AwsJitter {
            config,
            post_only: true,
            clients_given: false,
        })
    }
}

impl Experiment for AwsJitter {
    type Cell = (Backoff, u32);
    type Run = RunOutcome;

    fn name(&self) -> &'static str {
        "aws-jitter"
    }

    fn cells(&self) -> Vec<(Backoff, u32)> {
        let mut cells = Vec::new();
        for &strategy in &self.config.strategies {
            // Validated in `new`.
            let backoff = self.config.backoff(strategy).expect("a validated strategy");
            cells.extend(
                self.config
                    .clients
                    .iter()
                    .map(|&clients| (backoff, clients)),
            );
        }
        cells
    }

    fn stream(&self, &(backoff, clients): &(Backoff, u32), at: RunAt) -> u64 {
        stream_id(backoff.strategy(), clients, at.run_index)
    }

    fn run(
        &self,
        &(backoff, clients): &(Backoff, u32),
        rng: &mut ChaCha8Rng,
    ) -> Result<RunOutcome, String> {
        simulate_run(backoff, clients, &self.config.params, rng).map_err(|e| e.to_string())
    }

    fn event_count(run: &RunOutcome) -> u64 {
        run.event_count
    }

    fn flags(&self) -> Vec<String> {
        let mut flags = Vec::new();
        if self.clients_given {
            let list: Vec<String> = self.config.clients.iter().map(u32::to_string).collect();
            flags.push(format!("--clients {}", list.join(",")));
        }
        if self.post_only {
            flags.push("--post-only".into());
        }
        flags
    }

    fn report(
        &self,
        grid: &Grid<(Backoff, u32), RunOutcome>,
        context: &Context,
    ) -> Result<Output, String> {
        super::report::report(self, &records(grid), context)
    }
}

/// Every run as a record, in grid order.
pub fn records(grid: &Grid<(Backoff, u32), RunOutcome>) -> Vec<RunRecord> {
    let mut records = Vec::new();
    for cell in &grid.cells {
        let (backoff, clients) = cell.cell;
        for (run_index, outcome) in cell.runs.iter().enumerate() {
            let run_index = run_index as u32;
            records.push(RunRecord {
                strategy: backoff.strategy(),
                clients,
                run_index,
                stream: stream_id(backoff.strategy(), clients, run_index),
                outcome: *outcome,
            });
        }
    }
    records
}

/// Runs every (strategy, clients, run) of `config` on the current rayon pool, `runs` per cell,
/// and returns the records in grid order (strategy, then clients, then run) whatever the thread
/// count. `on_run_done` is called once per run, from any thread (for a progress bar).
pub fn run_sweep(
    config: &SweepConfig,
    seed: u64,
    runs: u32,
    on_run_done: &(dyn Fn() + Sync),
) -> Result<Vec<RunRecord>, SweepError> {
    if !(1..=RUNS_MAX).contains(&runs) {
        return Err(SweepError::Runs(runs));
    }
    let experiment = AwsJitter::new(config.clone())?;
    let grid = sweep(&experiment, seed, runs, on_run_done).map_err(SweepError::Run)?;
    Ok(records(&grid))
}

/// Summary of the runs of one (strategy, clients) cell.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CellSummary {
    pub strategy: Strategy,
    pub clients: u32,
    pub runs: u32,
    pub calls: Estimate,
    pub time_ms: Estimate,
    pub latency_ms_p50: Estimate,
    pub latency_ms_p99: Estimate,
    pub event_count: u64,
}

impl CellSummary {
    /// A cell with exact figures (no spread, two runs): the claims' tests build the worlds they judge from these,
    /// p50 latency half the time and p99 the time.
    pub fn exact(strategy: Strategy, clients: u32, calls: f64, time_ms: f64) -> CellSummary {
        let exact = |mean| Estimate {
            mean,
            sd: 0.0,
            ci95: 0.0,
        };
        CellSummary {
            strategy,
            clients,
            runs: 2,
            calls: exact(calls),
            time_ms: exact(time_ms),
            latency_ms_p50: exact(time_ms / 2.0),
            latency_ms_p99: exact(time_ms),
            event_count: 0,
        }
    }
}

/// One summary per cell, in the order cells first appear in `records`.
pub fn summarise(records: &[RunRecord]) -> Vec<CellSummary> {
    records
        .chunk_by(|a, b| (a.strategy, a.clients) == (b.strategy, b.clients))
        .map(|cell| {
            let column = |f: fn(&RunOutcome) -> f64| -> Estimate {
                estimate(&cell.iter().map(|r| f(&r.outcome)).collect::<Vec<_>>())
            };
            CellSummary {
                strategy: cell[0].strategy,
                clients: cell[0].clients,
                runs: cell.len() as u32,
                calls: column(|o| o.call_count as f64),
                time_ms: column(|o| o.time_ms),
                latency_ms_p50: column(|o| o.latency_ms_p50),
                latency_ms_p99: column(|o| o.latency_ms_p99),
                event_count: cell.iter().map(|r| r.outcome.event_count).sum(),
            }
        })
        .collect()
}

/// The summary of one cell, if present.
pub fn find_cell(cells: &[CellSummary], strategy: Strategy, clients: u32) -> Option<&CellSummary> {
    cells
        .iter()
        .find(|c| c.strategy == strategy && c.clients == clients)
}
