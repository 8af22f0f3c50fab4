//! The checker builder: bounds and knobs, then one of the three runs. Used the same way by the CLI, the tests and
//! the examples: `model.checker().threads(2).states_max(1_000_000).bfs().assert_properties()`.

use super::judge::PathJudge;
use super::model::Model;
use super::plan::Plan;
use super::por::Por;
use super::walk::Seeds;
use super::{bfs, path, walk, Method, PropertyReport, Report, Trace, Verdict};
use std::time::Duration;

/// Bounds of one run. A run cut short by any of them is `incomplete`, never `holds`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Bounds {
    /// Stop once this many unique states are known.
    pub states_max: u64,
    /// Do not expand states at this depth (walks: steps per walk).
    pub depth_max: u32,
    /// Stop once the search's own structures would exceed this many bytes (estimated).
    pub memory_bytes_max: u64,
    /// Stop after this much wall-clock time (the one bound that makes a run depend on the machine).
    pub timeout: Option<Duration>,
    /// Stop as soon as this property is violated (the others are then `incomplete` unless decided too).
    pub stop_on: Option<String>,
    /// Merge symmetric states (`Model::canonicalize`).
    pub symmetry: bool,
    /// Partial-order reduction (`Model::independent_of_rest`).
    pub por: Por,
    /// Compress a level's packed states once the level before it held this many bytes of them (16 MiB by
    /// default: below that, memory hardly matters and compressing costs time). Results never depend on it.
    pub compress_levels_from_bytes: u64,
}

impl Default for Bounds {
    fn default() -> Self {
        Bounds {
            states_max: 20_000_000,
            depth_max: 500,
            memory_bytes_max: 8 << 30,
            timeout: None,
            stop_on: None,
            symmetry: false,
            por: Por::Off,
            compress_levels_from_bytes: 16 << 20,
        }
    }
}

/// Progress of a run: unique states and the level being expanded (walks: walks done, 0).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Progress {
    /// Unique states found so far.
    pub states: u64,
    /// The level being expanded.
    pub depth: u32,
}

/// A trace whose action at `step` (1-based) is not enabled where the trace has got to, and why
/// (`Model::why_not_enabled`: for a handler, the call the trace made and the one this design makes there).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Diverged {
    /// The 1-based step whose action is not enabled.
    pub step: usize,
    /// Why not, in the model's words.
    pub reason: String,
}

impl std::fmt::Display for Diverged {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "the trace diverges at step {}: {}",
            self.step, self.reason
        )
    }
}

/// A run of the checker on one model: bounds, threads, symmetry and reduction set by its builder methods, then
/// `.bfs()`, `.walks()` or `.replay()`.
#[must_use = "a checker does nothing until .bfs(), .walks() or .replay() runs it"]
pub struct Checker<'a, M: Model> {
    model: &'a M,
    threads: Option<usize>,
    bounds: Bounds,
    shard: Option<(u64, u64)>,
    progress: Option<Box<dyn Fn(Progress) + Sync + 'a>>,
}

impl<'a, M: Model> Checker<'a, M> {
    /// A checker with no bounds, one thread per core, no symmetry and no reduction.
    pub fn new(model: &'a M) -> Self {
        Checker {
            model,
            threads: None,
            bounds: Bounds::default(),
            shard: None,
            progress: None,
        }
    }

    /// Worker threads (default: the current rayon pool, all cores unless one is installed). Results do not
    /// depend on it.
    pub fn threads(mut self, threads: usize) -> Self {
        assert!(threads > 0, "threads must be at least 1");
        self.threads = Some(threads);
        self
    }

    /// Stop (incomplete) once this many unique states are found.
    pub fn states_max(mut self, states_max: u64) -> Self {
        self.bounds.states_max = states_max;
        self
    }

    /// Expand no level deeper than this (incomplete if a state there has successors).
    pub fn depth_max(mut self, depth_max: u32) -> Self {
        self.bounds.depth_max = depth_max;
        self
    }

    /// Stop (incomplete) before the search's own structures hold more than this many MiB.
    pub fn memory_mib_max(mut self, mebibytes: u64) -> Self {
        self.bounds.memory_bytes_max = mebibytes.saturating_mul(1 << 20);
        self
    }

    /// Stop (incomplete) after this much wall time: the verdicts are then not reproducible.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.bounds.timeout = Some(timeout);
        self
    }

    /// Search one representative per symmetry class (`Model::canonical`).
    pub fn symmetry(mut self, symmetry: bool) -> Self {
        self.bounds.symmetry = symmetry;
        self
    }

    /// Compress the frontier's levels once the level before held this many bytes of packed states (default
    /// 16 MiB; 0: every level). Memory and time depend on it, results do not.
    pub fn compress_levels_from_bytes(mut self, bytes: u64) -> Self {
        self.bounds.compress_levels_from_bytes = bytes;
        self
    }

    /// Partial-order reduction where the model declares independence (`check::por`); counterexamples may then
    /// be longer than the shortest.
    pub fn por(mut self, por: Por) -> Self {
        self.bounds.por = por;
        self
    }

    /// Stop at the first violation of this property (to see one bug without the whole space).
    pub fn stop_on(mut self, property: &str) -> Self {
        self.bounds.stop_on = Some(property.to_string());
        self
    }

    /// Every bound at once.
    pub fn bounds(mut self, bounds: Bounds) -> Self {
        self.bounds = bounds;
        self
    }

    /// Walks: run only shard `k` of `n` (1-based) of the seeds.
    pub fn shard(mut self, k: u64, n: u64) -> Self {
        assert!(k >= 1 && k <= n, "a shard is K/N with 1 <= K <= N");
        self.shard = Some((k, n));
        self
    }

    /// Called after each round of a search (on the calling thread) or after each walk (on any worker).
    pub fn on_progress(mut self, progress: impl Fn(Progress) + Sync + 'a) -> Self {
        self.progress = Some(Box::new(progress));
        self
    }

    fn run<T: Send>(&self, run: impl FnOnce() -> T + Send) -> T {
        match self.threads {
            None => run(),
            Some(threads) => rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .expect("a thread pool")
                .install(run),
        }
    }

    /// Exhaustive breadth-first search within the bounds: shortest counterexamples.
    pub fn bfs(self) -> Report<M> {
        let progress = &self.progress;
        self.run(|| {
            bfs::explore(self.model, &self.bounds, &mut |states, depth| {
                if let Some(progress) = progress {
                    progress(Progress { states, depth });
                }
            })
        })
    }

    /// `count` seeded random walks from seed `first_seed` (at most `depth_max` steps each). Memory does not grow
    /// with `count`; a run that `memory_mib_max` cuts short is incomplete (`stopped_by`). The step total saturates
    /// at `u64::MAX`: a caller with more than `u64::MAX / depth_max` seeds should refuse them first.
    pub fn walks(self, first_seed: u64, count: u64) -> Report<M> {
        let seeds = Seeds {
            first: first_seed,
            count,
            shard: self.shard,
        };
        let progress = &self.progress;
        let done = std::sync::atomic::AtomicU64::new(0);
        self.run(|| {
            let bounds = &self.bounds;
            walk::simulate(
                self.model,
                &seeds,
                bounds.depth_max,
                bounds.memory_bytes_max,
                &|walks| {
                    let states =
                        done.fetch_add(walks, std::sync::atomic::Ordering::Relaxed) + walks;
                    if let Some(progress) = progress {
                        progress(Progress { states, depth: 0 });
                    }
                },
            )
        })
    }

    /// Run a trace strictly (an action that is not enabled is an error) and judge every property on it.
    pub fn replay(self, trace: &Trace<M::Action>) -> Result<Report<M>, Diverged> {
        let actions: Vec<M::Action> = trace.steps.iter().map(|step| step.action.clone()).collect();
        replay_path(self.model, &actions, trace.cycle_from)
    }
}

/// Judge every property along one path; `cycle_from`: the path claims to end where it was after that many steps.
pub fn replay_path<M: Model>(
    model: &M,
    actions: &[M::Action],
    cycle_from: Option<usize>,
) -> Result<Report<M>, Diverged> {
    let run = path::timeline(model, actions).map_err(|step| diverged(model, actions, step))?;
    Ok(judge_run(model, &run, cycle_from))
}

/// Step `step` (1-based) of `actions` is not enabled: run the steps before it again (this is the error path) and
/// ask the model why.
pub fn diverged<M: Model>(model: &M, actions: &[M::Action], step: usize) -> Diverged {
    let before = path::timeline(model, &actions[..step - 1]).expect("the steps before it ran");
    Diverged {
        step,
        reason: model.why_not_enabled(before.last_state(), &actions[step - 1]),
    }
}

/// Judge every property along a path already run (`check::timeline`), so a caller that shows the timeline does
/// not run the path twice.
pub fn judge_run<M: Model>(model: &M, run: &path::Run<M>, cycle_from: Option<usize>) -> Report<M> {
    let actions: Vec<M::Action> = run.steps.iter().map(|step| step.action.clone()).collect();
    let plan = Plan::new(model);
    let mut judge = PathJudge::new(model, &plan);
    let mut enabled = Vec::new();
    let mut at_rest_end = false;
    for (index, state) in run.states.iter().enumerate() {
        super::model::enabled(model, state, &mut enabled);
        let at_rest = enabled.iter().all(|action| model.is_fault(state, action));
        judge.visit(state, at_rest);
        at_rest_end = at_rest;
        if let Some(action) = actions.get(index) {
            judge.transition(run.observed[index], model.is_fault(state, action));
        }
    }
    let closes_cycle = cycle_from.is_some_and(|from| {
        from >= judge.last_fault
            && from < actions.len()
            && path::canonical(model, &run.states[from]) == path::canonical(model, run.last_state())
    });
    judge.finish(at_rest_end || closes_cycle);
    let properties = plan
        .properties
        .iter()
        .zip(&judge.at_step)
        .map(|(property, at)| PropertyReport {
            name: property.name.clone(),
            kind: property.kind,
            verdict: match (property.kind, at) {
                (super::Kind::Sometimes, Some(_)) => Verdict::Holds,
                (_, Some(_)) => Verdict::Violated,
                (_, None) => Verdict::Incomplete,
            },
            path: at.map(|steps| actions[..steps].to_vec()),
            cycle_from: cycle_from.filter(|_| closes_cycle),
            seed: None,
            at_step: *at,
        })
        .collect();
    Report {
        method: Method::Replay,
        properties,
        observed: judge.observed,
        states: run.states.len() as u64,
        transitions: actions.len() as u64,
        depth: actions.len() as u32,
        complete: false,
        stopped_by: None,
        visited_bytes: 0,
        peak_bytes: 0,
        rss_peak_bytes: None,
        walks: 0,
        cut_walks: 0,
        reduced_states: 0,
    }
}
