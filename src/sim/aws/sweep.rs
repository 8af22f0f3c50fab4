//! The grid of (strategy, clients, run), run in parallel with a result independent of threads.

use rayon::prelude::*;

use super::model::{simulate_run, AwsError, AwsParams, RunOutcome, CLIENTS_MAX};
use crate::backoff::{Backoff, BackoffError, Strategy};
use crate::sim::kernel::run_rng;
use crate::sim::stats::{estimate, Estimate};

/// Upper bound on runs per cell (stream ids reserve 24 bits for the run index).
pub const RUNS_MAX: u32 = 1_000_000;

#[derive(Clone, Debug, PartialEq)]
pub struct SweepConfig {
    pub strategies: Vec<Strategy>,
    pub clients: Vec<u32>,
    pub runs: u32,
    pub seed: u64,
    pub params: AwsParams,
}

impl SweepConfig {
    /// The post's grid: its five strategies, 10..=190 clients in steps of 10, 100 runs each.
    pub fn post(seed: u64) -> Self {
        SweepConfig {
            strategies: Strategy::POST.to_vec(),
            clients: (1..=19).map(|i| i * 10).collect(),
            runs: 100,
            seed,
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
        if !(1..=RUNS_MAX).contains(&self.runs) {
            return Err(SweepError::Runs(self.runs));
        }
        for &strategy in &self.strategies {
            self.backoff(strategy)?;
        }
        Ok(())
    }

    fn backoff(&self, strategy: Strategy) -> Result<Backoff, BackoffError> {
        Backoff::new(strategy, self.params.base_ms, self.params.cap_ms)
    }

    /// Number of runs in the whole sweep.
    pub fn run_count(&self) -> u64 {
        self.strategies.len() as u64 * self.clients.len() as u64 * u64::from(self.runs)
    }
}

#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum SweepError {
    #[error("the sweep needs at least one strategy and one client count")]
    Empty,
    #[error("runs must be in 1..={RUNS_MAX}, got {0}")]
    Runs(u32),
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

/// Runs every (strategy, clients, run) on the current rayon pool. Records come back in grid
/// order (strategy, then clients, then run) whatever the thread count, because each run owns
/// its generator and `collect` keeps input order. `on_run_done` is called once per run, from
/// any thread (for a progress bar).
pub fn run_sweep(
    config: &SweepConfig,
    on_run_done: &(dyn Fn() + Sync),
) -> Result<Vec<RunRecord>, SweepError> {
    config.validate()?;
    let mut jobs = Vec::with_capacity(config.run_count() as usize);
    for &strategy in &config.strategies {
        let backoff = config.backoff(strategy)?;
        for &clients in &config.clients {
            for run_index in 0..config.runs {
                jobs.push((backoff, clients, run_index));
            }
        }
    }
    jobs.par_iter()
        .with_max_len(1)
        .map(|&(backoff, clients, run_index)| {
            let stream = stream_id(backoff.strategy(), clients, run_index);
            let mut rng = run_rng(config.seed, stream);
            let outcome = simulate_run(backoff, clients, &config.params, &mut rng)?;
            on_run_done();
            Ok(RunRecord {
                strategy: backoff.strategy(),
                clients,
                run_index,
                stream,
                outcome,
            })
        })
        .collect()
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
