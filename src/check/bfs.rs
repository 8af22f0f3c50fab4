//! Exhaustive breadth-first search. Level by level, in rounds of a few thousand states: a round's states are
//! expanded in parallel (rayon), its new successors are inserted into the sharded visited set in parallel (one
//! task per shard, in search order), and the round is merged in its original order. The result (state numbering,
//! counterexamples) is therefore the same whatever the thread count. Breadth-first order makes every
//! counterexample a shortest one.

use super::fingerprint::packed_fingerprint;
use super::path::{rebuild_path, rebuild_path_reduced};
use super::visited::{shard_of, Visited, SHARDS};
use super::Verdict;
use crate::model::{
    pack, unpack, unpack_into, Action, Event, Events, Property, PropertyKind, State, World,
};
use rayon::prelude::*;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};

/// Bounds and knobs of one search.
#[derive(Clone, Debug)]
pub struct BfsOptions {
    /// Stop (incomplete) once this many unique states are known.
    pub max_states: u64,
    /// Do not expand states at this depth (incomplete if any of them could move).
    pub max_depth: u32,
    /// Stop (incomplete) once the search's own structures would exceed this many bytes (estimated).
    pub max_memory_bytes: u64,
    /// Stop as soon as this property is violated (the others are then `incomplete` unless violated too): for
    /// tests and users who only want to see one bug.
    pub stop_on: Option<Property>,
    /// Merge states that differ only by which client or server process is which (see `model::symmetry`).
    pub symmetry: bool,
}

impl Default for BfsOptions {
    fn default() -> Self {
        BfsOptions {
            max_states: 20_000_000,
            max_depth: 500,
            max_memory_bytes: 8 << 30,
            stop_on: None,
            symmetry: false,
        }
    }
}

/// What a search found.
#[derive(Clone, Debug)]
pub struct BfsReport {
    pub verdicts: BTreeMap<Property, Verdict>,
    /// Shortest counterexample per violated property.
    pub counterexamples: BTreeMap<Property, Vec<Action>>,
    /// Scenarios seen on some transition.
    pub reached: Events,
    pub states: u64,
    pub transitions: u64,
    /// Depth of the deepest level expanded.
    pub depth: u32,
    pub complete: bool,
    /// Why the search stopped early, if it did.
    pub stopped_by: Option<String>,
    /// Bytes held by the visited set at the end (fingerprint tables).
    pub visited_bytes: u64,
    /// The most bytes the search's own structures held at once (visited set, node table, frontier, buffers).
    pub peak_bytes: u64,
}

/// A node of the search tree: how it was first reached. Enough to rebuild any path, in 8 bytes.
#[derive(Clone, Copy)]
struct Node {
    parent: u32,
    action_index: u16,
}

const ROOT: u32 = u32::MAX;
/// Frontier states per unit of parallel work: small enough to balance two to eight cores on a level of a few
/// thousand states, large enough that a unit's bookkeeping is noise.
const UNIT_STATES: usize = 256;
/// Units per round. After each round the visited set is updated, the bounds are checked and progress is
/// reported, so this also bounds the memory held by not-yet-merged successors.
const ROUND_UNITS: usize = 32;

/// The states of one level, ids consecutive from `first_id`, packed (`model::pack`): a quarter of their
/// in-memory size, so the frontier moves four times fewer bytes. Two of these are reused level after level
/// (fresh buffers per level cost page faults).
#[derive(Default)]
struct Level {
    bytes: Vec<u8>,
    /// Where each state's packing lies in `bytes`.
    spans: Vec<(u32, u32)>,
    first_id: u32,
}

impl Level {
    fn state(&self, index: usize) -> State {
        unpack(self.packed(index))
    }

    fn packed(&self, index: usize) -> &[u8] {
        let (start, end) = self.spans[index];
        &self.bytes[start as usize..end as usize]
    }

    fn clear(&mut self, first_id: u32) {
        self.bytes.clear();
        self.spans.clear();
        self.first_id = first_id;
    }

    fn push(&mut self, packed: &[u8]) {
        let start = self.bytes.len() as u32;
        self.bytes.extend_from_slice(packed);
        self.spans.push((start, self.bytes.len() as u32));
    }

    /// Append a round's new states (each output's packed back to back in its `bytes`).
    fn append_round(&mut self, outputs: &[Output]) {
        for out in outputs {
            let offset = self.bytes.len() as u32;
            self.bytes.extend_from_slice(&out.bytes);
            self.spans.extend(
                out.candidates
                    .iter()
                    .map(|candidate| (offset + candidate.span.0, offset + candidate.span.1)),
            );
        }
    }

    fn held_bytes(&self) -> usize {
        self.bytes.capacity() + self.spans.capacity() * size_of::<(u32, u32)>()
    }
}

#[derive(Clone, Copy)]
struct Candidate {
    fingerprint: u64,
    parent: u32,
    action_index: u16,
    /// Where its packing lies in the output's `bytes`.
    span: (u32, u32),
}

/// What one unit produced. Kept from round to round so its buffers are reused.
#[derive(Default)]
struct Output {
    /// Packings of the successors not visited before this round (and some bytes of dropped ones).
    bytes: Vec<u8>,
    /// Those successors, in search order; after the merge, only the new ones.
    candidates: Vec<Candidate>,
    /// Indices into `candidates`, by visited-set shard.
    by_shard: [Vec<u32>; SHARDS],
    /// Set by the shard that inserted the candidate's fingerprint first.
    is_new: Vec<AtomicBool>,
    transitions: u64,
    /// Union of the events of every outgoing transition.
    seen_events: Events,
    /// Outgoing transitions that violate a safety property: (parent id, action index, events).
    violations: Vec<(u32, u16, Events)>,
    /// Liveness properties violated at quiescent parents: (parent id, property).
    at_rest: Vec<(u32, Property)>,
}

/// Expand the states `units` of `level` into `out`. Successors already visited are dropped here, in
/// parallel, so the merge only sees states that may be new.
fn expand_unit(
    world: &World,
    level: &Level,
    unit: std::ops::Range<usize>,
    visited: &Visited,
    symmetry: bool,
    out: &mut Output,
) {
    let violating = Property::any_violating_events();
    out.bytes.clear();
    out.candidates.clear();
    out.by_shard.iter_mut().for_each(Vec::clear);
    out.transitions = 0;
    out.seen_events = Events::default();
    out.violations.clear();
    out.at_rest.clear();
    let mut actions = Vec::with_capacity(32);
    let mut state = world.init_state();
    let mut next = world.init_state();
    for index in unit {
        let parent = level.first_id + index as u32;
        unpack_into(level.packed(index), &mut state);
        world.actions(&state, &mut actions);
        if actions.iter().all(|action| world.is_fault(&state, action)) {
            for property in Property::ALL {
                if property.kind() == PropertyKind::Eventually
                    && property.violated_at_rest(world, &state)
                {
                    out.at_rest.push((parent, property));
                }
            }
        }
        out.transitions += actions.len() as u64;
        for (index, action) in actions.iter().enumerate() {
            next.clone_from(&state);
            let events = world.apply(&mut next, action);
            if symmetry {
                next = world.canonicalize(&next).0;
            }
            out.seen_events = out.seen_events.union(events);
            if events.intersects(violating) {
                out.violations.push((parent, index as u16, events));
            }
            let start = out.bytes.len();
            pack(&next, &mut out.bytes);
            out.candidates.push(Candidate {
                fingerprint: packed_fingerprint(&out.bytes[start..]),
                parent,
                action_index: index as u16,
                span: (start as u32, out.bytes.len() as u32),
            });
        }
    }
    // Drop the successors visited before this round, in a second pass: a tight loop of independent lookups
    // lets the processor overlap their cache misses, where one lookup right after each packing could not.
    let known: Vec<bool> = out
        .candidates
        .iter()
        .map(|candidate| visited.contains(candidate.fingerprint))
        .collect();
    let mut kept = 0;
    for (index, known) in known.into_iter().enumerate() {
        if !known {
            let candidate = out.candidates[index];
            out.by_shard[shard_of(candidate.fingerprint)].push(kept as u32);
            out.candidates[kept] = candidate;
            kept += 1;
        }
    }
    out.candidates.truncate(kept);
    out.is_new.clear();
    out.is_new
        .resize_with(out.candidates.len(), || AtomicBool::new(false));
}

/// Insert a round's candidates into the visited set, one task per shard, each in search order (units in order,
/// candidates in order), so that the first candidate of each new state is the one marked new.
fn insert_round(visited: &mut Visited, outputs: &[Output]) {
    visited.insert_by_shard(|shard, mut set| {
        for out in outputs {
            for &index in &out.by_shard[shard] {
                let index = index as usize;
                if set.insert(out.candidates[index].fingerprint) {
                    out.is_new[index].store(true, Ordering::Relaxed);
                }
            }
        }
    });
}

/// Keep only the candidates marked new.
/// Keep only the candidates marked new, and their packings, moved to the front of `bytes` in order, so the
/// merge appends the whole unit to the next level with one copy.
fn keep_new(out: &mut Output) {
    let mut kept = 0;
    let mut written = 0u32;
    for index in 0..out.candidates.len() {
        if !out.is_new[index].load(Ordering::Relaxed) {
            continue;
        }
        let mut candidate = out.candidates[index];
        let (start, end) = candidate.span;
        out.bytes
            .copy_within(start as usize..end as usize, written as usize);
        candidate.span = (written, written + end - start);
        written += end - start;
        out.candidates[kept] = candidate;
        kept += 1;
    }
    out.candidates.truncate(kept);
    out.bytes.truncate(written as usize);
}

/// Explore every state reachable within the bounds. `on_progress(states, depth)` is called after each round.
pub fn explore(
    world: &World,
    options: &BfsOptions,
    on_progress: &mut dyn FnMut(u64, u32),
) -> BfsReport {
    let mut visited = Visited::new();
    let mut nodes: Vec<Node> = Vec::new();
    let mut found: BTreeMap<Property, (u32, Option<u16>)> = BTreeMap::new();
    let mut reached = Events::default();
    let mut transitions = 0u64;
    let mut stopped_by = None;
    let mut peak_bytes = 0u64;

    let mut init = world.init_state();
    if options.symmetry {
        init = world.canonicalize(&init).0;
    }
    let mut init_bytes = Vec::new();
    pack(&init, &mut init_bytes);
    visited.insert(packed_fingerprint(&init_bytes));
    nodes.push(Node {
        parent: ROOT,
        action_index: 0,
    });
    let mut frontier = Level::default();
    frontier.push(&init_bytes);
    let mut next_frontier = Level::default();
    let mut outputs: Vec<Output> = Vec::new();
    let mut depth = 0u32;
    let mut deepest_expanded = 0u32;

    'levels: while !frontier.spans.is_empty() {
        if depth >= options.max_depth {
            let mut actions = Vec::new();
            let can_move = (0..frontier.spans.len()).any(|index| {
                world.actions(&frontier.state(index), &mut actions);
                !actions.is_empty()
            });
            if can_move {
                stopped_by = Some(format!("max-depth {} reached", options.max_depth));
            }
            break;
        }
        deepest_expanded = depth;
        let units: Vec<std::ops::Range<usize>> = (0..frontier.spans.len())
            .step_by(UNIT_STATES)
            .map(|start| start..(start + UNIT_STATES).min(frontier.spans.len()))
            .collect();
        next_frontier.clear(nodes.len() as u32);
        let mut done = 0;
        while done < units.len() {
            // Near `max-states`, smaller rounds, so the search stops close to the bound.
            let remaining = options.max_states.saturating_sub(nodes.len() as u64);
            let round_units =
                ((remaining / (4 * UNIT_STATES as u64)) as usize).clamp(1, ROUND_UNITS);
            let round = &units[done..(done + round_units).min(units.len())];
            done += round.len();
            if outputs.len() < round.len() {
                outputs.resize_with(round.len(), Output::default);
            }
            let outputs = &mut outputs[..round.len()];
            let known = &visited;
            let level = &frontier;
            outputs
                .par_iter_mut()
                .zip(round.par_iter())
                .for_each(|(out, unit)| {
                    expand_unit(world, level, unit.clone(), known, options.symmetry, out);
                });
            insert_round(&mut visited, outputs);
            outputs.par_iter_mut().for_each(keep_new);
            for out in outputs.iter_mut() {
                for &(parent, property) in &out.at_rest {
                    found.entry(property).or_insert((parent, None));
                }
                transitions += out.transitions;
                reached = reached.union(out.seen_events);
                for &(parent, action_index, events) in &out.violations {
                    for property in Property::ALL {
                        if property.violated_by(events) {
                            found
                                .entry(property)
                                .or_insert((parent, Some(action_index)));
                        }
                    }
                }
                nodes.extend(out.candidates.iter().map(|candidate| Node {
                    parent: candidate.parent,
                    action_index: candidate.action_index,
                }));
            }
            next_frontier.append_round(outputs);
            on_progress(nodes.len() as u64, depth);
            if let Some(target) = options.stop_on.filter(|target| found.contains_key(target)) {
                stopped_by = Some(format!(
                    "stopped at the first violation of {}",
                    target.name()
                ));
                break 'levels;
            }
            if nodes.len() as u64 >= options.max_states {
                stopped_by = Some(format!("max-states {} reached", options.max_states));
                break 'levels;
            }
            let held_bytes: usize = frontier.held_bytes()
                + next_frontier.held_bytes()
                + outputs
                    .iter()
                    .map(|out| {
                        out.bytes.capacity() + out.candidates.capacity() * size_of::<Candidate>()
                    })
                    .sum::<usize>();
            let memory =
                visited.bytes() + (nodes.capacity() * size_of::<Node>()) as u64 + held_bytes as u64;
            peak_bytes = peak_bytes.max(memory);
            if memory >= options.max_memory_bytes {
                stopped_by = Some(format!(
                    "max-memory {} bytes reached",
                    options.max_memory_bytes
                ));
                break 'levels;
            }
        }
        std::mem::swap(&mut frontier, &mut next_frontier);
        depth += 1;
    }

    let complete = stopped_by.is_none();
    let mut verdicts = BTreeMap::new();
    let mut counterexamples = BTreeMap::new();
    for property in Property::ALL {
        let verdict = match found.get(&property) {
            Some(&(node, last)) => {
                let mut indices = path_indices(&nodes, node);
                indices.extend(last);
                let path = if options.symmetry {
                    rebuild_path_reduced(world, &indices)
                } else {
                    rebuild_path(world, &indices)
                };
                counterexamples.insert(property, path);
                Verdict::Violated
            }
            None if complete => Verdict::Holds,
            None => Verdict::Incomplete,
        };
        verdicts.insert(property, verdict);
    }
    BfsReport {
        verdicts,
        counterexamples,
        reached,
        states: nodes.len() as u64,
        transitions,
        depth: deepest_expanded,
        complete,
        stopped_by,
        visited_bytes: visited.bytes(),
        peak_bytes,
    }
}

fn path_indices(nodes: &[Node], mut node: u32) -> Vec<u16> {
    let mut indices = Vec::new();
    while nodes[node as usize].parent != ROOT {
        indices.push(nodes[node as usize].action_index);
        node = nodes[node as usize].parent;
    }
    indices.reverse();
    indices
}

impl BfsReport {
    /// Whether the scenario was reached on some explored transition.
    pub fn reached(&self, scenario: Event) -> bool {
        self.reached.has(scenario)
    }

    /// Length of the shortest counterexample over all violated properties.
    pub fn shortest_counterexample(&self) -> Option<usize> {
        self.counterexamples.values().map(Vec::len).min()
    }
}
