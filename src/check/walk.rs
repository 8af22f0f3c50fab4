//! Seeded random walks with swarm testing: each seed first draws its own fault mix (a budget between zero and the
//! model's for every fault kind), then walks choosing uniformly among the enabled actions. The generator is
//! ChaCha8 (rand_chacha), seeded with the walk's seed alone, so a seed is the whole reproduction.

use super::Verdict;
use crate::model::{Action, Faults, Property, PropertyKind, World};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rayon::prelude::*;
use std::collections::BTreeMap;

#[derive(Clone, Debug)]
pub struct SimulateOptions {
    pub first_seed: u64,
    pub seeds: u64,
    /// Steps per walk at most.
    pub max_depth: u32,
    /// Run only shard `k` of `n` (1-based): the seeds whose offset from `first_seed` is `k - 1` modulo `n`. The
    /// shards of one run partition its seeds, so a job array can run them and `retrylab merge` combine them.
    pub shard: Option<(u64, u64)>,
}

/// One walk's findings.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WalkResult {
    pub seed: u64,
    /// The fault budgets this seed drew.
    pub faults: Faults,
    /// The path up to the first violation of each property.
    pub violations: BTreeMap<Property, Vec<Action>>,
    pub steps: usize,
    pub reached: crate::model::Events,
    /// Whether the walk ended at rest (rather than at `max_depth`).
    pub finished: bool,
}

/// Draw this seed's fault mix: each budget uniformly between 0 and the model's.
fn swarm_faults(world: &World, rng: &mut ChaCha8Rng) -> Faults {
    let mut budgets = world.faults.as_array();
    for budget in budgets.iter_mut() {
        *budget = rng.random_range(0..=*budget);
    }
    Faults::from_array(budgets)
}

pub fn walk_seed(world: &World, seed: u64, max_depth: u32) -> WalkResult {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let faults = swarm_faults(world, &mut rng);
    // Walk in a world with the drawn (smaller) budgets. Its paths are paths of the declared world too, since
    // every budget only shrank, so a trace found here replays against the model file as written.
    let swarm = World {
        faults,
        ..world.clone()
    };
    let mut state = swarm.init_state();
    let mut path = Vec::new();
    let mut actions = Vec::new();
    let mut violations = BTreeMap::new();
    let mut reached = crate::model::Events::default();
    let mut finished = false;
    for _ in 0..max_depth {
        swarm.actions(&state, &mut actions);
        if actions.iter().all(|action| swarm.is_fault(&state, action)) {
            for property in Property::ALL {
                if property.kind() == PropertyKind::Eventually
                    && property.violated_at_rest(&swarm, &state)
                {
                    violations.entry(property).or_insert_with(|| path.clone());
                }
            }
            finished = true;
            break;
        }
        let action = actions[rng.random_range(0..actions.len())];
        let (next, events) = swarm.next_state(&state, &action);
        path.push(action);
        reached = reached.union(events);
        for property in Property::ALL {
            if property.violated_by(events) {
                violations.entry(property).or_insert_with(|| path.clone());
            }
        }
        state = next;
    }
    WalkResult {
        seed,
        faults,
        violations,
        steps: path.len(),
        reached,
        finished,
    }
}

#[derive(Clone, Debug)]
pub struct SimulateReport {
    /// `violated` where some walk violated the property, `incomplete` otherwise: walks never prove anything.
    pub verdicts: BTreeMap<Property, Verdict>,
    /// Shortest counterexample per property (the lowest seed among equally short ones), with its seed.
    pub counterexamples: BTreeMap<Property, (u64, Vec<Action>)>,
    pub reached: crate::model::Events,
    pub walks: u64,
    pub steps: u64,
    /// Walks cut by `max_depth` before coming to rest.
    pub cut_walks: u64,
}

/// Run the seeds (in parallel; results are merged in seed order, so the report does not depend on threads).
pub fn simulate(
    world: &World,
    options: &SimulateOptions,
    on_progress: &(dyn Fn(u64) + Sync),
) -> SimulateReport {
    let seeds: Vec<u64> = (0..options.seeds)
        .filter(|offset| options.shard.is_none_or(|(k, n)| offset % n == k - 1))
        .map(|offset| options.first_seed.wrapping_add(offset))
        .collect();
    let walks = seeds.len() as u64;
    let results: Vec<WalkResult> = seeds
        .par_iter()
        .map(|&seed| {
            let result = walk_seed(world, seed, options.max_depth);
            on_progress(1);
            result
        })
        .collect();
    let mut counterexamples: BTreeMap<Property, (u64, Vec<Action>)> = BTreeMap::new();
    let mut reached = crate::model::Events::default();
    let mut steps = 0u64;
    let mut cut_walks = 0u64;
    for result in results {
        steps += result.steps as u64;
        cut_walks += u64::from(!result.finished);
        reached = reached.union(result.reached);
        for (property, path) in result.violations {
            let better = match counterexamples.get(&property) {
                Some((_, best)) => path.len() < best.len(),
                None => true,
            };
            if better {
                counterexamples.insert(property, (result.seed, path));
            }
        }
    }
    let verdicts = Property::ALL
        .into_iter()
        .map(|property| {
            let verdict = if counterexamples.contains_key(&property) {
                Verdict::Violated
            } else {
                Verdict::Incomplete
            };
            (property, verdict)
        })
        .collect();
    SimulateReport {
        verdicts,
        counterexamples,
        reached,
        walks,
        steps,
        cut_walks,
    }
}
