//! Seeded random walks with swarm testing: each seed first lets the model draw its own variant
//! (`Model::swarm`: for the built-in worlds, a budget between zero and the model's for every fault kind), then
//! walks choosing uniformly among the enabled actions. The generator is ChaCha8 (rand_chacha), seeded with the
//! walk's seed alone, so a seed is the whole reproduction.

use super::judge::PathJudge;
use super::model::Model;
use super::plan::Plan;
use super::property::Kind;
use super::{Method, PropertyReport, Report, Verdict};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rayon::prelude::*;

/// One walk's findings.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WalkResult<A> {
    pub seed: u64,
    /// Per property (model order): the path up to where it was decided (a violation, or a `sometimes` witness).
    pub decided: Vec<Option<Vec<A>>>,
    pub steps: usize,
    /// Whether the walk ended at rest (rather than at the step bound).
    pub finished: bool,
}

/// Walk one seed of `model` for at most `max_depth` steps.
pub fn walk_seed<M: Model>(model: &M, seed: u64, max_depth: u32) -> WalkResult<M::Action> {
    let plan = Plan::new(model);
    walk(model, &plan, seed, max_depth).0
}

fn walk<M: Model>(
    model: &M,
    plan: &Plan<M>,
    seed: u64,
    max_depth: u32,
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
    for _ in 0..=max_depth {
        walked.actions(&state, &mut actions);
        let at_rest = actions.iter().all(|action| walked.is_fault(&state, action));
        judge.visit(&state, at_rest);
        if at_rest {
            finished = true;
            break;
        }
        if path.len() == max_depth as usize {
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
    pub first: u64,
    pub count: u64,
    pub shard: Option<(u64, u64)>,
}

impl Seeds {
    pub fn list(&self) -> Vec<u64> {
        (0..self.count)
            .filter(|offset| self.shard.is_none_or(|(k, n)| offset % n == k - 1))
            .map(|offset| self.first.wrapping_add(offset))
            .collect()
    }
}

/// Run the seeds (in parallel; results are merged in seed order, so the report does not depend on threads).
/// Per property the path kept is the shortest, the lowest seed among equally short ones.
pub(crate) fn simulate<M: Model>(
    model: &M,
    seeds: &Seeds,
    max_depth: u32,
    on_progress: &(dyn Fn(u64) + Sync),
) -> Report<M> {
    let plan = Plan::new(model);
    let seeds = seeds.list();
    let results: Vec<(WalkResult<M::Action>, M::Obs)> = seeds
        .par_iter()
        .map(|&seed| {
            let result = walk(model, &plan, seed, max_depth);
            on_progress(1);
            result
        })
        .collect();
    let mut best: Vec<Option<(u64, Vec<M::Action>)>> = vec![None; plan.properties.len()];
    let mut observed = M::Obs::default();
    let (mut steps, mut cut_walks) = (0u64, 0u64);
    for (result, walk_observed) in results {
        steps += result.steps as u64;
        cut_walks += u64::from(!result.finished);
        observed = super::Observation::union(observed, walk_observed);
        for (slot, decided) in best.iter_mut().zip(result.decided) {
            let Some(path) = decided else { continue };
            if slot.as_ref().is_none_or(|(_, kept)| path.len() < kept.len()) {
                *slot = Some((result.seed, path));
            }
        }
    }
    let properties = plan
        .properties
        .iter()
        .zip(best)
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
        observed,
        states: steps,
        transitions: steps,
        depth: max_depth,
        complete: false,
        stopped_by: None,
        visited_bytes: 0,
        peak_bytes: 0,
        walks: seeds.len() as u64,
        cut_walks,
    }
}
