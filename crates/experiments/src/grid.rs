//! The grid of an experiment: cells (parameters), each run `runs` times, every run on its own
//! generator `run_rng(seed, stream)`. Runs go in parallel on the current rayon pool and come back
//! in grid order (cell, then run), so nothing depends on the thread count.

use rand_chacha::ChaCha8Rng;
use rayon::prelude::*;

use super::output::Output;
use crate::sim::run_rng;

/// One experiment: its grid, one seeded run, and what the runs make.
pub trait Experiment: Sync {
    /// The parameters of one cell of the grid.
    type Cell: Clone + Send + Sync;
    /// What one run measured.
    type Run: Send;

    /// The binary's name (`results/<name>/` by default).
    fn name(&self) -> &'static str;

    /// The cells, in output order.
    fn cells(&self) -> Vec<Self::Cell>;

    /// The generator stream of the run of `cell` at `at`: distinct for every run of the grid, so
    /// each run is independent and replays alone from (seed, stream).
    fn stream(&self, cell: &Self::Cell, at: RunAt) -> u64;

    /// One run of `cell`, drawing only from `rng`.
    fn run(&self, cell: &Self::Cell, rng: &mut ChaCha8Rng) -> Result<Self::Run, String>;

    /// Simulated events of a run, for the events/s figure on stderr (0: not counted).
    fn event_count(_run: &Self::Run) -> u64 {
        0
    }

    /// The binary's own flags that differ from their defaults, rendered, for the command that
    /// regenerates the output.
    fn flags(&self) -> Vec<String> {
        Vec::new()
    }

    /// Summaries, claims, tables, charts and the README from every cell's runs.
    fn report(
        &self,
        grid: &Grid<Self::Cell, Self::Run>,
        context: &Context,
    ) -> Result<Output, String>;
}

/// Where a run is in the grid.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RunAt {
    pub cell_index: usize,
    pub run_index: u32,
    pub runs_per_cell: u32,
}

/// The runs of one cell, in run order.
#[derive(Clone, Debug, PartialEq)]
pub struct CellRuns<C, R> {
    pub cell: C,
    pub runs: Vec<R>,
}

/// Every cell's runs, in cell order.
#[derive(Clone, Debug, PartialEq)]
pub struct Grid<C, R> {
    pub seed: u64,
    pub cells: Vec<CellRuns<C, R>>,
}

impl<C, R> Grid<C, R> {
    /// Every run of every cell, with its cell.
    pub fn runs(&self) -> impl Iterator<Item = (&C, &R)> {
        self.cells
            .iter()
            .flat_map(|cell| cell.runs.iter().map(move |run| (&cell.cell, run)))
    }
}

/// What a report needs besides the runs.
#[derive(Clone, Debug, PartialEq)]
pub struct Context {
    pub seed: u64,
    pub runs: u32,
    /// The command that regenerates this output (for the README).
    pub command: String,
}

impl Context {
    /// A context for reports made outside a binary (tests, examples).
    pub fn plain(name: &str, seed: u64, runs: u32) -> Self {
        Context {
            seed,
            runs,
            command: format!("cargo run --release --bin {name}"),
        }
    }
}

/// Jobs per parallel task: one at a time for small grids (even balance when runs differ in cost
/// by orders of magnitude), more for grids of many cheap runs (less scheduling per run).
fn jobs_per_task(job_count: usize) -> usize {
    job_count.div_ceil(4096).max(1)
}

/// Runs every cell `runs` times. `on_run_done` is called once per run, from any thread (a
/// progress bar).
pub fn sweep<E: Experiment>(
    experiment: &E,
    seed: u64,
    runs: u32,
    on_run_done: &(dyn Fn() + Sync),
) -> Result<Grid<E::Cell, E::Run>, String> {
    if runs == 0 {
        return Err("an experiment needs at least one run per cell".into());
    }
    let cells = experiment.cells();
    let per_cell = runs as usize;
    let job_count = cells.len() * per_cell;
    let results = (0..job_count)
        .into_par_iter()
        .with_max_len(jobs_per_task(job_count))
        .map(|job| {
            let at = RunAt {
                cell_index: job / per_cell,
                run_index: (job % per_cell) as u32,
                runs_per_cell: runs,
            };
            let cell = &cells[at.cell_index];
            let mut rng = run_rng(seed, experiment.stream(cell, at));
            let run = experiment.run(cell, &mut rng);
            on_run_done();
            run
        })
        .collect::<Result<Vec<E::Run>, String>>()?;
    let mut results = results.into_iter();
    let cells = cells
        .into_iter()
        .map(|cell| CellRuns {
            cell,
            runs: results.by_ref().take(per_cell).collect(),
        })
        .collect();
    Ok(Grid { seed, cells })
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::Rng;

    /// Cells 0..4, a run draws one number: enough to see order and streams.
    struct Draws;

    impl Experiment for Draws {
        type Cell = u32;
        type Run = (u32, u64);
        fn name(&self) -> &'static str {
            "draws"
        }
        fn cells(&self) -> Vec<u32> {
            (0..4).collect()
        }
        fn stream(&self, cell: &u32, at: RunAt) -> u64 {
            u64::from(*cell) << 32 | u64::from(at.run_index)
        }
        fn run(&self, cell: &u32, rng: &mut ChaCha8Rng) -> Result<(u32, u64), String> {
            Ok((*cell, rng.random()))
        }
        fn report(&self, _: &Grid<u32, (u32, u64)>, _: &Context) -> Result<Output, String> {
            Ok(Output::default())
        }
    }

    #[test]
    fn runs_come_back_in_grid_order_whatever_the_thread_count() {
        let pooled = |threads| {
            rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .unwrap()
                .install(|| sweep(&Draws, 9, 5, &|| {}).unwrap())
        };
        let one = pooled(1);
        assert_eq!(one, pooled(3));
        assert_eq!(one.cells.len(), 4);
        for (index, cell) in one.cells.iter().enumerate() {
            assert_eq!(cell.cell, index as u32);
            assert!(cell.runs.iter().all(|run| run.0 == cell.cell));
            // Every run has its own stream: no two draws alike.
            let first = cell.runs[0].1;
            assert!(cell.runs[1..].iter().all(|run| run.1 != first));
            // And each replays alone from (seed, stream).
            let at = RunAt {
                cell_index: index,
                run_index: 3,
                runs_per_cell: 5,
            };
            let again: u64 = run_rng(9, Draws.stream(&cell.cell, at)).random();
            assert_eq!(again, cell.runs[3].1);
        }
        assert_ne!(one, sweep(&Draws, 10, 5, &|| {}).unwrap());
        assert!(sweep(&Draws, 9, 0, &|| {}).is_err());
    }
}
