//! Exhaustive breadth-first search. Level by level, in rounds of a few thousand states: a round's states are
//! expanded in parallel (rayon), its new successors are inserted into the sharded visited set in parallel (one
//! task per shard, in search order), and the round is merged in its original order. The result (state numbering,
//! counterexamples) is therefore the same whatever the thread count. Breadth-first order makes every
//! counterexample of an `always` property a shortest one.

use super::expand::{expand_unit, insert_round, keep_new_round, Output, UnitInput};
use super::fingerprint::state_fingerprint;
use super::graph::Graph;
use super::level::{Level, UnitStates, UNIT_STATES};
use super::model::{Model, ACYCLIC_CHECK_STATES};
use super::nodes::NodeLog;
use super::plan::Plan;
use super::por::Reduction;
use super::verdicts::{judge_bfs, Found};
use super::visited::Visited;
use super::{Bounds, Report, StoppedBy};
use rayon::prelude::*;
use std::time::Instant;

/// Node ids are 32-bit: a search stops, incomplete, before it would number more states than this. The margin
/// is more than one unit of work can add (256 states, each with at most 2^16 actions).
pub(crate) const NODES_MAX: u64 = u32::MAX as u64 - (1 << 25);
/// Units per round. After each round the visited set is updated, the bounds are checked and progress is
/// reported, so this also bounds the memory held by not-yet-merged successors.
const ROUND_UNITS: usize = 32;

/// Everything a search accumulates.
struct Search<M: Model> {
    visited: Visited,
    nodes: NodeLog,
    found: Found<M>,
    transitions: u64,
    reduced_states: u64,
    stopped_by: Option<StoppedBy>,
    peak_bytes: u64,
    rss_peak_bytes: Option<u64>,
    /// Bytes held after the last round, and the most one unit of work has added.
    held_bytes: u64,
    unit_growth_bytes: u64,
    graph: Option<Graph>,
    /// The graph is kept only to check `Model::acyclic` (debug builds): dropped past `ACYCLIC_CHECK_STATES`.
    graph_for_acyclic_check: bool,
}

/// Explore every state reachable within the bounds. `on_progress(states, depth)` is called after each round.
pub(crate) fn explore<M: Model>(
    model: &M,
    bounds: &Bounds,
    on_progress: &mut dyn FnMut(u64, u32),
) -> Report<M> {
    let plan = Plan::new(model);
    let reduction = Reduction::new(model, &plan, bounds.por);
    let started = Instant::now();
    let check_acyclic = cfg!(debug_assertions) && model.acyclic();
    let mut search = Search::new(&plan, check_acyclic);
    let stop_on = stop_on_index(&plan, bounds);
    let mut frontier = search.start(model, &plan, bounds);
    let mut next_frontier = Level::<M>::default();
    let mut outputs: Vec<Output<M>> = Vec::new();
    let mut depth = 0u32;
    let mut deepest_expanded = 0u32;
    while !frontier.is_empty() {
        if depth >= bounds.depth_max {
            if can_move(model, &frontier) {
                search.stopped_by = Some(StoppedBy::MaxDepth(bounds.depth_max));
            }
            break;
        }
        deepest_expanded = depth;
        let level = LevelRun {
            model,
            plan: &plan,
            bounds,
            reduction,
            stop_on,
            started,
            depth,
        };
        search.stopped_by = search.expand_level(
            &level,
            &mut frontier,
            &mut next_frontier,
            &mut outputs,
            on_progress,
        );
        if search.stopped_by.is_some() {
            break;
        }
        std::mem::swap(&mut frontier, &mut next_frontier);
        depth += 1;
    }
    if check_acyclic {
        search.check_acyclic();
    }
    search.into_report(model, &plan, bounds.symmetry, deepest_expanded)
}

/// The index of the property `bounds.stop_on` names, if it names one. Panics on a name the model lacks.
fn stop_on_index<M: Model>(plan: &Plan<M>, bounds: &Bounds) -> Option<usize> {
    bounds.stop_on.as_ref().map(|name| {
        plan.properties
            .iter()
            .position(|property| property.name == *name)
            .unwrap_or_else(|| panic!("stop_on: no property named '{name}'"))
    })
}

/// What expanding one level needs besides the search's own state.
struct LevelRun<'a, M: Model> {
    model: &'a M,
    plan: &'a Plan<M>,
    bounds: &'a Bounds,
    reduction: Reduction,
    stop_on: Option<usize>,
    started: Instant,
    depth: u32,
}

/// Whether some state of the level has an enabled action (a depth bound that cut nothing is no cut).
fn can_move<M: Model>(model: &M, level: &Level<M>) -> bool {
    let mut actions = Vec::new();
    let mut state = model.init_state();
    let mut unit = UnitStates::default();
    (0..level.len()).step_by(UNIT_STATES).any(|start| {
        let range = start..(start + UNIT_STATES).min(level.len());
        level.read_unit(range.clone(), &mut unit);
        range.into_iter().any(|index| {
            level.load(model, &unit, index, &mut state);
            super::model::enabled(model, &state, &mut actions);
            !actions.is_empty()
        })
    })
}

impl<M: Model> Search<M> {
    fn new(plan: &Plan<M>, check_acyclic: bool) -> Self {
        Search {
            visited: Visited::new(),
            nodes: NodeLog::default(),
            found: Found::new(plan),
            transitions: 0,
            reduced_states: 0,
            stopped_by: None,
            peak_bytes: 0,
            rss_peak_bytes: None,
            held_bytes: 0,
            unit_growth_bytes: 0,
            graph: (!plan.graph.is_empty() || check_acyclic).then(Graph::default),
            graph_for_acyclic_check: plan.graph.is_empty(),
        }
    }

    /// The initial state (canonical under symmetry), judged and numbered as the root: the first level.
    fn start(&mut self, model: &M, plan: &Plan<M>, bounds: &Bounds) -> Level<M> {
        let mut init = model.init_state();
        if bounds.symmetry {
            if let Some(canonical) = model.canonicalize(&init) {
                init = canonical;
            }
        }
        self.found.judge_initial(plan, model, &init);
        let mut frontier = Level::<M>::default();
        frontier.push(model, &init);
        let fingerprint = state_fingerprint(model, &init, &mut Vec::new());
        self.visited.insert(fingerprint);
        self.nodes.push_root();
        if let Some(graph) = &mut self.graph {
            graph.add_node_fingerprint(fingerprint);
        }
        frontier
    }

    /// Expand every state of `frontier` into `next`, round by round; why the search must stop, if it must.
    fn expand_level(
        &mut self,
        level: &LevelRun<'_, M>,
        frontier: &mut Level<M>,
        next: &mut Level<M>,
        outputs: &mut Vec<Output<M>>,
        on_progress: &mut dyn FnMut(u64, u32),
    ) -> Option<StoppedBy> {
        let bounds = level.bounds;
        let units: Vec<std::ops::Range<usize>> = (0..frontier.len())
            .step_by(UNIT_STATES)
            .map(|start| start..(start + UNIT_STATES).min(frontier.len()))
            .collect();
        next.clear(self.nodes.len() as u32);
        let mut done = 0;
        while done < units.len() {
            let round = &units[done..(done + self.round_units(bounds)).min(units.len())];
            done += round.len();
            if outputs.len() < round.len() {
                outputs.resize_with(round.len(), Output::default);
            }
            let outputs = &mut outputs[..round.len()];
            let input = UnitInput {
                model: level.model,
                plan: level.plan,
                level: frontier,
                visited: &self.visited,
                symmetry: bounds.symmetry,
                record_graph: self.graph.is_some(),
                reduction: level.reduction,
            };
            outputs
                .par_iter_mut()
                .zip(round.par_iter())
                .for_each(|(out, unit)| expand_unit(&input, unit.clone(), out));
            insert_round(&mut self.visited, outputs);
            let compress = frontier.next_compressed(bounds.compress_levels_from_bytes);
            keep_new_round(outputs, next.len(), compress);
            self.merge(level.plan, outputs, next);
            frontier.free_before(round.last().map_or(0, |unit| unit.end));
            on_progress(self.nodes.len() as u64, level.depth);
            if let Some(reason) = self.stop_reason(bounds, level.stop_on, level.started) {
                return Some(reason);
            }
            self.measure(frontier, next, outputs, round.len());
            if self.peak_bytes >= bounds.memory_bytes_max {
                return Some(StoppedBy::MaxMemory(bounds.memory_bytes_max));
            }
        }
        None
    }

    /// Units the next round expands: near `max-states` or `max-memory`, fewer, so the search stops close to the
    /// bound.
    fn round_units(&self, bounds: &Bounds) -> usize {
        let remaining = bounds
            .states_max
            .min(NODES_MAX)
            .saturating_sub(self.nodes.len() as u64);
        ((remaining / (4 * UNIT_STATES as u64)) as usize)
            .clamp(1, ROUND_UNITS)
            .min(self.units_within(bounds.memory_bytes_max))
    }

    /// The verdicts and figures of the finished (or stopped) search.
    fn into_report(self, model: &M, plan: &Plan<M>, symmetry: bool, depth: u32) -> Report<M> {
        let complete = self.stopped_by.is_none();
        let properties = judge_bfs(
            model,
            plan,
            &self.found,
            &self.nodes,
            self.graph.as_ref(),
            complete,
            symmetry,
        );
        Report {
            method: super::Method::Bfs,
            properties,
            observed: self.found.observed,
            states: self.nodes.len() as u64,
            transitions: self.transitions,
            depth,
            complete,
            stopped_by: self.stopped_by,
            visited_bytes: self.visited.bytes(),
            peak_bytes: self.peak_bytes,
            rss_peak_bytes: self.rss_peak_bytes,
            walks: 0,
            cut_walks: 0,
            reduced_states: self.reduced_states,
        }
    }

    /// Merge a round's outputs in order: findings, the new states' nodes, and their sealed packings.
    fn merge(&mut self, plan: &Plan<M>, outputs: &mut [Output<M>], next: &mut Level<M>) {
        for out in outputs.iter_mut() {
            self.transitions += out.transitions;
            self.reduced_states += out.reduced_states;
            self.found.merge(plan, out);
            if let Some(graph) = &mut self.graph {
                graph.add_unit(&out.graph);
                for candidate in &out.successors.candidates {
                    graph.add_node_fingerprint(candidate.fingerprint);
                }
            }
        }
        for out in outputs.iter() {
            for candidate in &out.successors.candidates {
                self.nodes.push(candidate.parent, candidate.action_index);
            }
        }
        let mut round: Vec<_> = outputs.iter_mut().map(|out| &mut out.successors).collect();
        next.append_round(&mut round);
        if self.graph_for_acyclic_check && self.nodes.len() as u64 > ACYCLIC_CHECK_STATES {
            self.graph = None;
        }
    }

    fn stop_reason(
        &self,
        bounds: &Bounds,
        stop_on: Option<usize>,
        started: Instant,
    ) -> Option<StoppedBy> {
        if let Some(target) = stop_on.filter(|target| self.found.violated(*target)) {
            return Some(StoppedBy::FirstViolation(
                self.found.name(target).to_string(),
            ));
        }
        if self.nodes.len() as u64 >= bounds.states_max {
            return Some(StoppedBy::MaxStates(bounds.states_max));
        }
        if self.nodes.len() as u64 >= NODES_MAX {
            return Some(StoppedBy::NodeIds(NODES_MAX));
        }
        if let Some(timeout) = bounds
            .timeout
            .filter(|timeout| started.elapsed() >= *timeout)
        {
            return Some(StoppedBy::Timeout(timeout.as_millis()));
        }
        None
    }

    /// Account the bytes the search holds now.
    fn measure(
        &mut self,
        frontier: &Level<M>,
        next: &Level<M>,
        outputs: &[Output<M>],
        units: usize,
    ) {
        let held: usize = frontier.held_bytes()
            + next.held_bytes()
            + outputs
                .iter()
                .map(|out| out.successors.held_bytes() + out.unit_states.held_bytes())
                .sum::<usize>();
        let memory = self.visited.bytes()
            + self.nodes.bytes()
            + held as u64
            + self.graph.as_ref().map_or(0, Graph::held_bytes);
        self.peak_bytes = self.peak_bytes.max(memory);
        let growth_per_unit = memory.saturating_sub(self.held_bytes) / units as u64;
        self.unit_growth_bytes = self.unit_growth_bytes.max(growth_per_unit);
        self.held_bytes = memory;
        if let Some(resident) = super::resident::resident_bytes() {
            self.rss_peak_bytes = Some(self.rss_peak_bytes.unwrap_or(0).max(resident));
        }
    }

    /// Units the next round may expand without passing `memory_bytes_max`, judging by the most a unit has
    /// added so far (near the bound rounds shrink, so the search stops close to it).
    fn units_within(&self, memory_bytes_max: u64) -> usize {
        let room = memory_bytes_max.saturating_sub(self.held_bytes);
        (room / self.unit_growth_bytes.max(1)).clamp(1, ROUND_UNITS as u64) as usize
    }

    /// Debug builds: a model that promises acyclicity must keep it (on searches small enough to keep edges of).
    fn check_acyclic(&self) {
        if let Some(graph) = &self.graph {
            assert!(
                !graph.has_non_fault_cycle(),
                "the model promises Model::acyclic, but a cycle of non-fault actions was found"
            );
        }
    }
}
