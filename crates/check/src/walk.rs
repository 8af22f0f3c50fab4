//! Seeded random walks with swarm testing: each seed first lets the model draw its own variant
//! (`Model::swarm`: for the built-in worlds, a budget between zero and the model's for every fault kind), then
//! walks choosing uniformly among the enabled actions. The generator is ChaCha8 (rand_chacha), seeded with the
//! walk's seed alone, so a seed is the whole reproduction.

use super::judge::PathJudge;
use super::model::Model;
use super::plan::Plan;
use super::property::Kind;
use super::{Method, PropertyReport, Report, StoppedBy, Verdict};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rayon::prelude::*;

/// One walk's findings.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WalkResult<A> {
    /// The walk's seed.
    pub seed: u64,
    /// Per property (model order): the path up to where it was decided (a violation, or a `sometimes` witness).
    pub decided: Vec<Option<Vec<A>>>,
    /// Steps walked.
    pub steps: usize,
    /// Whether the walk ended at rest (rather than at the step bound).
    pub finished: bool,
}

/// Walk one seed of `model` for at most `depth_max` steps.
pub fn walk_seed<M: Model>(model: &M, seed: u64, depth_max: u32) -> WalkResult<M::Action> {
    let plan = Plan::new(model);
    walk(model, &plan, seed, depth_max).0
}

fn walk<M: Model>(
    model: &M,
    plan: &Plan<M>,
    seed: u64,
    depth_max: u32,
) -> (WalkResult<M::Action>, M::Obs) {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    // Walk the swarm variant: its paths are paths of the model too, so a trace found here replays against the
    // model as written.
    let swarm = model.swarm(&mut rng);
    let walked = swarm.as_ref().unwrap_or(model);
    let mut judge = PathJudge::new(walked, plan);
    let mut state = walked.init_state();
    let mut path = Vec::new();
    let mut actions = Vec::new();
    let mut finished = false;
    for _ in 0..=depth_max {
        super::model::enabled(walked, &state, &mut actions);
        let at_rest = actions.iter().all(|action| walked.is_fault(&state, action));
        judge.visit(&state, at_rest);
        if at_rest {
            finished = true;
            break;
        }
        if path.len() == depth_max as usize {
            break;
        }
        let action = actions[rng.random_range(0..actions.len())].clone();
        let fault = walked.is_fault(&state, &action);
        let observed = walked.apply(&mut state, &action);
        judge.transition(observed, fault);
        path.push(action);
    }
    judge.finish(finished);
    let decided = judge
        .at_step
        .iter()
        .map(|at| at.map(|steps| path[..steps].to_vec()))
        .collect();
    let result = WalkResult {
        seed,
        decided,
        steps: path.len(),
        finished,
    };
    (result, judge.observed)
}

/// Which seeds a run walks: `count` seeds from `first`, or shard `k` of `n` of them (1-based: the seeds whose
/// offset from `first` is `k - 1` modulo `n`). The shards of one run partition its seeds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Seeds {
    /// The first seed.
    pub first: u64,
    /// How many seeds in all.
    pub count: u64,
    /// `Some((k, n))`: only shard k of n (1-based).
    pub shard: Option<(u64, u64)>,
}

impl Seeds {
    /// How many seeds this run (or shard) walks.
    pub fn len(&self) -> u64 {
        match self.shard {
            None => self.count,
            Some((k, n)) => {
                assert!(k >= 1 && k <= n, "a shard is K/N with 1 <= K <= N");
                self.count / n + u64::from(k - 1 < self.count % n)
            }
        }
    }

    /// Whether this run walks no seed.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The `index`-th seed walked (0-based, below `len()`): computed, never listed, so a run of 2^64 seeds
    /// takes no memory for them.
    pub fn nth(&self, index: u64) -> u64 {
        assert!(index < self.len(), "seed index {index} of {}", self.len());
        // Below count, so neither this nor the shard's offset overflows.
        let offset = match self.shard {
            None => index,
            Some((k, n)) => index * n + (k - 1),
        };
        self.first.wrapping_add(offset)
    }

    /// Every seed walked, in order (for small runs and tests; a run walks them without this list).
    pub fn list(&self) -> Vec<u64> {
        (0..self.len()).map(|index| self.nth(index)).collect()
    }
}

/// Seeds walked in parallel at once: enough to keep every core busy, few enough that a chunk's results (about
/// 110 bytes a walk) stay small whatever the run's seed count.
const CHUNK_SEEDS_MAX: u64 = 4096;

/// What a run keeps of its walks: per property the best path so far, and counters.
struct Summary<M: Model> {
    best: Vec<Option<(u64, Vec<M::Action>)>>,
    observed: M::Obs,
    steps: u64,
    walks: u64,
    cut_walks: u64,
}

impl<M: Model> Summary<M> {
    fn new(properties: usize) -> Self {
        Summary {
            best: vec![None; properties],
            observed: M::Obs::default(),
            steps: 0,
            walks: 0,
            cut_walks: 0,
        }
    }

    /// Merge one walk, in seed order: a path replaces the kept one only if strictly shorter, so among equally
    /// short paths the first seed walked wins.
    fn add(&mut self, result: WalkResult<M::Action>, observed: M::Obs) {
        // Saturating: a caller that cannot bound seeds x depth gets a pinned total, never a wrapped one.
        self.steps = self.steps.saturating_add(result.steps as u64);
        self.walks += 1;
        self.cut_walks += u64::from(!result.finished);
        self.observed = super::Observation::union(self.observed, observed);
        for (slot, decided) in self.best.iter_mut().zip(result.decided) {
            let Some(path) = decided else { continue };
            if slot
                .as_ref()
                .is_none_or(|(_, kept)| path.len() < kept.len())
            {
                *slot = Some((result.seed, path));
            }
        }
    }

    /// Bytes held by the kept paths.
    fn kept_bytes(&self) -> u64 {
        let actions: usize = self.best.iter().flatten().map(|(_, path)| path.len()).sum();
        (actions * std::mem::size_of::<M::Action>()) as u64
    }
}

/// The most one walk can hold until it is merged: its path and a prefix of it per property, at full depth.
fn walk_bytes_max<M: Model>(properties: usize, depth_max: u32) -> u64 {
    let fixed = std::mem::size_of::<WalkResult<M::Action>>()
        + std::mem::size_of::<M::Obs>()
        + properties * std::mem::size_of::<Option<Vec<M::Action>>>();
    let paths = (properties as u64 + 1)
        .saturating_mul(u64::from(depth_max))
        .saturating_mul(std::mem::size_of::<M::Action>() as u64);
    paths.saturating_add(fixed as u64).max(1)
}

/// Run the seeds in chunks (each in parallel, merged in seed order, so the report does not depend on threads),
/// keeping only the summary: memory does not grow with the seed count. Per property the path kept is the
/// shortest, the first seed among equally short ones. A chunk that could exceed `memory_bytes_max` is not
/// started: the run stops, incomplete.
pub(crate) fn simulate<M: Model>(
    model: &M,
    seeds: &Seeds,
    depth_max: u32,
    memory_bytes_max: u64,
    on_progress: &(dyn Fn(u64) + Sync),
) -> Report<M> {
    let plan = Plan::new(model);
    let mut summary = Summary::<M>::new(plan.properties.len());
    let walk_bytes = walk_bytes_max::<M>(plan.properties.len(), depth_max);
    let total = seeds.len();
    let mut stopped_by = None;
    while summary.walks < total {
        let room = memory_bytes_max.saturating_sub(summary.kept_bytes());
        let chunk = (total - summary.walks)
            .min(CHUNK_SEEDS_MAX)
            .min(room / walk_bytes);
        if chunk == 0 {
            stopped_by = Some(StoppedBy::MaxMemory(memory_bytes_max));
            break;
        }
        let from = summary.walks;
        let results: Vec<(WalkResult<M::Action>, M::Obs)> = (0..chunk)
            .into_par_iter()
            .map(|index| {
                let result = walk(model, &plan, seeds.nth(from + index), depth_max);
                on_progress(1);
                result
            })
            .collect();
        for (result, observed) in results {
            summary.add(result, observed);
        }
    }
    report(&plan, summary, depth_max, stopped_by)
}

fn report<M: Model>(
    plan: &Plan<M>,
    summary: Summary<M>,
    depth_max: u32,
    stopped_by: Option<StoppedBy>,
) -> Report<M> {
    let properties = plan
        .properties
        .iter()
        .zip(summary.best)
        .map(|(property, best)| PropertyReport {
            name: property.name.clone(),
            kind: property.kind,
            verdict: match (property.kind, best.is_some()) {
                (Kind::Sometimes, true) => Verdict::Holds,
                (_, true) => Verdict::Violated,
                (_, false) => Verdict::Incomplete,
            },
            seed: best.as_ref().map(|(seed, _)| *seed),
            path: best.map(|(_, path)| path),
            cycle_from: None,
            at_step: None,
        })
        .collect();
    Report {
        method: Method::Walks,
        properties,
        observed: summary.observed,
        states: summary.steps,
        transitions: summary.steps,
        depth: depth_max,
        complete: false,
        stopped_by,
        visited_bytes: 0,
        peak_bytes: 0,
        rss_peak_bytes: None,
        walks: summary.walks,
        cut_walks: summary.cut_walks,
        reduced_states: 0,
    }
}

#[cfg(test)]
mod tests {
    use super::Seeds;

    #[test]
    fn seeds_are_computed_as_the_shards_partition_them() {
        for count in [0, 1, 7, 12] {
            for n in 1..=5 {
                let mut all: Vec<u64> = (1..=n)
                    .flat_map(|k| {
                        let seeds = Seeds {
                            first: u64::MAX - 3,
                            count,
                            shard: Some((k, n)),
                        };
                        let listed: Vec<u64> = (0..count)
                            .filter(|offset| offset % n == k - 1)
                            .map(|offset| seeds.first.wrapping_add(offset))
                            .collect();
                        assert_eq!(seeds.list(), listed, "{k}/{n} of {count}");
                        listed
                    })
                    .collect();
                all.sort_unstable();
                let whole = Seeds {
                    first: u64::MAX - 3,
                    count,
                    shard: None,
                };
                let mut expected = whole.list();
                expected.sort_unstable();
                assert_eq!(all, expected);
            }
        }
        let huge = Seeds {
            first: 5,
            count: u64::MAX,
            shard: Some((3, 4)),
        };
        assert_eq!(huge.len(), u64::MAX / 4 + 1, "offsets 2, 6, ..., 2^64 - 2");
        assert_eq!(
            huge.nth(huge.len() - 1),
            5u64.wrapping_add((huge.len() - 1) * 4 + 2)
        );
    }
}
