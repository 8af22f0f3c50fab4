//! One unit of parallel work: expand a few hundred frontier states, judge what their transitions observe, and
//! sort the successors by visited-set shard; then the round's inserts, one task per shard.

use super::fingerprint::state_fingerprint;
use super::level::{Level, Successors, UnitStates};
use super::model::{Model, Observation};
use super::parts::{PartSpans, ALL_PARTS};
use super::plan::Plan;
use super::por::{self, Reduction};
use super::visited::{shard_of, Visited, SHARDS};
use rayon::prelude::*;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

/// A transition, by its parent's id and the index of its action among the parent's enabled ones.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Step {
    pub parent: u32,
    pub action_index: u16,
}

/// An edge of the state graph, its target by fingerprint (kept only when a property needs the graph).
#[derive(Clone, Copy)]
pub(crate) struct Edge {
    pub step: Step,
    pub child: u64,
}

/// The part of the state graph a unit saw.
#[derive(Default)]
pub(crate) struct GraphUnit {
    /// Expanded states: (id, goal mask, at rest).
    pub nodes: Vec<(u32, u32, bool)>,
    /// Non-fault transitions.
    pub edges: Vec<Edge>,
    /// Fault transitions (where faults may stop).
    pub fault_edges: Vec<Edge>,
}

/// What one unit produced. Kept from round to round so its buffers are reused.
pub(crate) struct Output<M: Model> {
    pub successors: Successors<M>,
    /// The unit's frontier states, decompressed.
    pub unit_states: UnitStates,
    /// Indices into `successors.candidates`, by visited-set shard.
    pub by_shard: [Vec<u32>; SHARDS],
    /// Set by the shard that inserted the candidate's fingerprint first.
    pub is_new: Vec<AtomicBool>,
    /// How many of them are new: each shard adds its count once, so the round can number the new states
    /// without reading every flag again.
    new_count: AtomicUsize,
    pub transitions: u64,
    /// States expanded with a reduced set (partial-order reduction).
    pub reduced_states: u64,
    /// Union of what every outgoing transition observed.
    pub observed: M::Obs,
    /// Transitions that observe something a step-based `always` forbids.
    pub violations: Vec<(Step, M::Obs)>,
    /// Transitions that observed something no earlier transition of this unit did (first witnesses).
    pub firsts: Vec<(Step, M::Obs)>,
    /// Findings of state-judged properties: (parent id, action index or `None` for the parent itself, property
    /// index), the first per property in this unit.
    pub found: Vec<(u32, Option<u16>, usize)>,
    pub graph: GraphUnit,
}

impl<M: Model> Default for Output<M> {
    fn default() -> Self {
        Output {
            successors: Successors::default(),
            unit_states: UnitStates::default(),
            by_shard: Default::default(),
            is_new: Vec::new(),
            new_count: AtomicUsize::new(0),
            transitions: 0,
            reduced_states: 0,
            observed: M::Obs::default(),
            violations: Vec::new(),
            firsts: Vec::new(),
            found: Vec::new(),
            graph: GraphUnit::default(),
        }
    }
}

/// What `expand_unit` reads.
pub(crate) struct UnitInput<'a, M: Model> {
    pub model: &'a M,
    pub plan: &'a Plan<M>,
    pub level: &'a Level<M>,
    pub visited: &'a Visited,
    pub symmetry: bool,
    pub record_graph: bool,
    pub reduction: Reduction,
}

impl<M: Model> Output<M> {
    fn clear(&mut self) {
        self.successors.clear();
        self.by_shard.iter_mut().for_each(Vec::clear);
        self.transitions = 0;
        self.reduced_states = 0;
        self.observed = M::Obs::default();
        self.violations.clear();
        self.firsts.clear();
        self.found.clear();
        self.graph.nodes.clear();
        self.graph.edges.clear();
        self.graph.fault_edges.clear();
    }

    /// Record a state-judged finding unless this unit has one for the property already.
    fn find(&mut self, seen: &mut [bool], parent: u32, action_index: Option<u16>, property: usize) {
        if !seen[property] {
            seen[property] = true;
            self.found.push((parent, action_index, property));
        }
    }
}

/// A frontier state being expanded: its id, itself, its packing and where its parts lie in it.
struct Parent<'a, M: Model> {
    id: u32,
    state: &'a M::State,
    bytes: &'a [u8],
    spans: &'a PartSpans,
}

/// Expand the states `unit` of the level into `out`; `insert_round` and `keep_new` then drop the successors
/// visited before.
pub(crate) fn expand_unit<M: Model>(
    input: &UnitInput<M>,
    unit: std::ops::Range<usize>,
    out: &mut Output<M>,
) {
    let UnitInput { model, level, .. } = *input;
    out.clear();
    let mut seen = vec![false; input.plan.properties.len()];
    let mut actions = Vec::with_capacity(32);
    let mut state = model.init_state();
    let mut next = model.init_state();
    let mut scratch = Vec::new();
    let mut explored = Vec::with_capacity(32);
    let mut spans = PartSpans::default();
    let mut unit_states = std::mem::take(&mut out.unit_states);
    level.read_unit(unit.clone(), &mut unit_states);
    for index in unit {
        let parent = level.first_id + index as u32;
        let bytes = level.load_parts(model, &unit_states, index, &mut state, &mut spans);
        super::model::enabled(model, &state, &mut actions);
        let at_rest = judge_parent(input, &state, &actions, parent, &mut seen, out);
        let reduced = input.reduction.reduce
            && !at_rest
            && choose(
                input,
                &state,
                &actions,
                &mut next,
                &mut scratch,
                &mut explored,
            );
        if !reduced {
            explored.clear();
            explored.extend(0..actions.len());
        }
        out.reduced_states += u64::from(reduced);
        out.transitions += explored.len() as u64;
        // One copy of the parent per state; each action's successor is made in it and put back after, but for
        // the last, whose copy the next state's replaces (a model without parts copies in full to put back).
        next.clone_from(&state);
        let from = Parent {
            id: parent,
            state: &state,
            bytes,
            spans: &spans,
        };
        for (position, &action_index) in explored.iter().enumerate() {
            let touched = expand_action(
                input,
                &from,
                &actions,
                action_index,
                &mut next,
                &mut seen,
                out,
            );
            if position + 1 < explored.len() {
                model.restore(&mut next, &state, touched);
            }
        }
    }
    out.unit_states = unit_states;
    by_shard(out);
}

/// The successor of `parent` by action `action_index`, made in `next` (equal to the parent before): judged,
/// and recorded as a candidate. Returns the parts it touched, for the caller to put back.
#[inline]
fn expand_action<M: Model>(
    input: &UnitInput<M>,
    parent: &Parent<'_, M>,
    actions: &[M::Action],
    action_index: usize,
    next: &mut M::State,
    seen: &mut [bool],
    out: &mut Output<M>,
) -> u32 {
    let UnitInput { model, plan, .. } = *input;
    let action = &actions[action_index];
    let (observed, mut touched) = model.apply_touching(next, action);
    if input.symmetry {
        model.canonicalize_in_place(next);
        touched = ALL_PARTS;
    }
    let step = Step {
        parent: parent.id,
        action_index: action_index as u16,
    };
    if out.observed.union(observed) != out.observed {
        out.observed = out.observed.union(observed);
        out.firsts.push((step, observed));
    }
    if observed.intersects(plan.violating) {
        out.violations.push((step, observed));
    }
    judge_state(plan, model, next, step, seen, out);
    let fingerprint = out.successors.push(
        model,
        next,
        (parent.bytes, parent.spans, touched),
        parent.id,
        action_index as u16,
    );
    if input.record_graph {
        record_edge(model, parent.state, action, step, fingerprint, out);
    }
    touched
}

/// A frontier state's own findings: whether it is at rest (only faults enabled), the `eventually`
/// properties it violates if so, and its node of the graph when one is kept.
#[inline]
fn judge_parent<M: Model>(
    input: &UnitInput<M>,
    state: &M::State,
    actions: &[M::Action],
    parent: u32,
    seen: &mut [bool],
    out: &mut Output<M>,
) -> bool {
    let UnitInput { model, plan, .. } = *input;
    let at_rest = actions.iter().all(|action| model.is_fault(state, action));
    if at_rest {
        for &(property, predicate) in &plan.at_rest {
            if !predicate(model, state) {
                out.find(seen, parent, None, property);
            }
        }
    }
    if input.record_graph {
        let goals = plan.goals(model, state, at_rest);
        out.graph.nodes.push((parent, goals, at_rest));
    }
    at_rest
}

/// The transition `step` of the graph, among the fault edges (where faults may stop) or the others.
#[inline]
fn record_edge<M: Model>(
    model: &M,
    state: &M::State,
    action: &M::Action,
    step: Step,
    child: u64,
    out: &mut Output<M>,
) {
    let edge = Edge { step, child };
    if model.is_fault(state, action) {
        out.graph.fault_edges.push(edge);
    } else {
        out.graph.edges.push(edge);
    }
}

/// Partial-order reduction: the actions to explore from `state` into `chosen`, if the model declares a reduced
/// set (and, on a model that does not promise acyclicity, none of their successors was visited before this
/// round: the cycle proviso). `false` when the state is to be expanded in full.
fn choose<M: Model>(
    input: &UnitInput<M>,
    state: &M::State,
    actions: &[M::Action],
    next: &mut M::State,
    scratch: &mut Vec<u8>,
    chosen: &mut Vec<usize>,
) -> bool {
    let model = input.model;
    if !por::reduced_set(model, state, actions, chosen) {
        return false;
    }
    if input.reduction.checked {
        por::check_declaration(model, input.plan, state, actions, chosen);
    }
    if input.reduction.proviso {
        for &index in chosen.iter() {
            next.clone_from(state);
            model.apply(next, &actions[index]);
            if input.symmetry {
                model.canonicalize_in_place(next);
            }
            if input
                .visited
                .contains(state_fingerprint(model, next, scratch))
            {
                return false;
            }
        }
    }
    true
}

/// The state-based `always` and `sometimes` properties on a successor.
#[inline]
fn judge_state<M: Model>(
    plan: &Plan<M>,
    model: &M,
    next: &M::State,
    step: Step,
    seen: &mut [bool],
    out: &mut Output<M>,
) {
    for &(property, predicate) in &plan.always_state {
        if !seen[property] && !predicate(model, next) {
            out.find(seen, step.parent, Some(step.action_index), property);
        }
    }
    for &(property, predicate) in &plan.sometimes_state {
        if !seen[property] && predicate(model, next) {
            out.find(seen, step.parent, Some(step.action_index), property);
        }
    }
}

/// Sort the unit's candidates by visited-set shard, for `insert_round`. Nothing is looked up here: a lookup
/// now and an insert later would read each new state's slot twice, and the insert answers both questions.
fn by_shard<M: Model>(out: &mut Output<M>) {
    for (index, candidate) in out.successors.candidates.iter().enumerate() {
        out.by_shard[shard_of(candidate.fingerprint)].push(index as u32);
    }
    out.is_new.clear();
    out.is_new
        .resize_with(out.successors.candidates.len(), || AtomicBool::new(false));
    out.new_count.store(0, Ordering::Relaxed);
}

/// How far ahead of its inserts a shard reads the slots the later ones will probe.
const INSERT_AHEAD: usize = 8;

/// Insert a round's candidates into the visited set, one task per shard, each in search order (units in order,
/// candidates in order), so that the first candidate of each new state is the one marked new.
pub(crate) fn insert_round<M: Model>(visited: &mut Visited, outputs: &[Output<M>]) {
    visited.insert_by_shard(|shard, mut set| {
        for out in outputs {
            let indices = &out.by_shard[shard];
            let mut new_count = 0;
            for (position, &index) in indices.iter().enumerate() {
                if let Some(&ahead) = indices.get(position + INSERT_AHEAD) {
                    set.touch(out.successors.candidates[ahead as usize].fingerprint);
                }
                let index = index as usize;
                if set.insert(out.successors.candidates[index].fingerprint) {
                    out.is_new[index].store(true, Ordering::Relaxed);
                    new_count += 1;
                }
            }
            out.new_count.fetch_add(new_count, Ordering::Relaxed);
        }
    });
}

/// Keep each unit's new candidates, sealed for the next level where they will lie in it (the round's first new
/// state at index `first`), the units in parallel.
pub(crate) fn keep_new_round<M: Model>(
    outputs: &mut [Output<M>],
    mut first: usize,
    compress: bool,
) {
    let firsts: Vec<usize> = outputs
        .iter()
        .map(|out| {
            let at = first;
            first += out.new_count.load(Ordering::Relaxed);
            at
        })
        .collect();
    outputs
        .par_iter_mut()
        .zip(firsts)
        .for_each(|(out, first)| keep_new(out, first, compress));
}

/// Keep only the candidates marked new, sealed for the level from its index `first` on (`Successors::seal`).
fn keep_new<M: Model>(out: &mut Output<M>, first: usize, compress: bool) {
    let is_new = &out.is_new;
    out.successors
        .retain(|index| is_new[index].load(Ordering::Relaxed));
    debug_assert_eq!(
        out.successors.candidates.len(),
        out.new_count.load(Ordering::Relaxed)
    );
    out.successors.seal(first, compress);
}
