//! Exhaustive breadth-first search. Level by level: each level's states are expanded in parallel (rayon), then
//! merged in their original order, so the result (state numbering, counterexamples) is the same whatever the
//! thread count. Breadth-first order makes every counterexample a shortest one.

use super::fingerprint::{state_fingerprint, FingerprintSet};
use super::path::{rebuild_path, rebuild_path_reduced};
use super::Verdict;
use crate::model::{Action, Event, Events, Property, PropertyKind, State, World};
use rayon::prelude::*;
use std::collections::BTreeMap;

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
}

/// A node of the search tree: how it was first reached. Enough to rebuild any path, in 8 bytes.
#[derive(Clone, Copy)]
struct Node {
    parent: u32,
    action_index: u16,
}

const ROOT: u32 = u32::MAX;
/// States expanded per parallel batch: bounds the memory held by not-yet-merged successors.
const BATCH_STATES: usize = 4096;

struct Successor {
    action_index: u16,
    state: State,
    fingerprint: u64,
}

struct Expansion {
    /// Successors not known before this batch.
    successors: Vec<Successor>,
    /// Liveness properties violated here, if this state is quiescent.
    at_rest_violations: Vec<Property>,
    transitions: u64,
    /// Union of the events of every outgoing transition.
    seen_events: Events,
    /// Outgoing transitions that violate a safety property: (action index, events).
    violations: Vec<(u16, Events)>,
}

fn violates_safety(events: Events) -> bool {
    Property::ALL
        .into_iter()
        .any(|property| property.kind() == PropertyKind::Always && property.violated_by(events))
}

/// Expand one state. Successors already in `visited` (from earlier batches) are dropped here, in parallel, so
/// the sequential merge only handles states that may be new.
fn expand(world: &World, state: &State, visited: &FingerprintSet, symmetry: bool) -> Expansion {
    let mut actions = Vec::new();
    world.actions(state, &mut actions);
    let quiescent = actions.iter().all(|action| world.is_fault(state, action));
    let at_rest_violations = if quiescent {
        Property::ALL
            .into_iter()
            .filter(|property| property.kind() == PropertyKind::Eventually)
            .filter(|property| property.violated_at_rest(world, state))
            .collect()
    } else {
        Vec::new()
    };
    let mut successors = Vec::with_capacity(actions.len());
    let mut seen_events = Events::default();
    let mut violations = Vec::new();
    for (index, action) in actions.iter().enumerate() {
        let (mut next, events) = world.next_state(state, action);
        if symmetry {
            next = world.canonicalize(&next).0;
        }
        seen_events = seen_events.union(events);
        if violates_safety(events) {
            violations.push((index as u16, events));
        }
        let fingerprint = state_fingerprint(&next);
        if !visited.contains(&fingerprint) {
            successors.push(Successor {
                action_index: index as u16,
                state: next,
                fingerprint,
            });
        }
    }
    Expansion {
        successors,
        at_rest_violations,
        transitions: actions.len() as u64,
        seen_events,
        violations,
    }
}

/// Explore every state reachable within the bounds. `on_progress(states, depth)` is called after each batch.
pub fn explore(
    world: &World,
    options: &BfsOptions,
    on_progress: &mut dyn FnMut(u64, u32),
) -> BfsReport {
    let mut visited = FingerprintSet::default();
    let mut nodes: Vec<Node> = Vec::new();
    let mut found: BTreeMap<Property, (u32, Option<u16>)> = BTreeMap::new();
    let mut reached = Events::default();
    let mut transitions = 0u64;
    let mut stopped_by = None;

    let mut init = world.init_state();
    if options.symmetry {
        init = world.canonicalize(&init).0;
    }
    visited.insert(state_fingerprint(&init));
    nodes.push(Node {
        parent: ROOT,
        action_index: 0,
    });
    let mut frontier: Vec<(u32, State)> = vec![(0, init)];
    let mut depth = 0u32;
    let mut deepest_expanded = 0u32;

    'levels: while !frontier.is_empty() {
        if depth >= options.max_depth {
            let can_move = frontier.iter().any(|(_, state)| {
                let mut actions = Vec::new();
                world.actions(state, &mut actions);
                !actions.is_empty()
            });
            if can_move {
                stopped_by = Some(format!("max-depth {} reached", options.max_depth));
            }
            break;
        }
        deepest_expanded = depth;
        let mut next_frontier = Vec::new();
        for batch in frontier.chunks(BATCH_STATES) {
            let known = &visited;
            let expansions: Vec<Expansion> = batch
                .par_iter()
                .map(|(_, state)| expand(world, state, known, options.symmetry))
                .collect();
            for ((parent, _), expansion) in batch.iter().zip(expansions) {
                for property in expansion.at_rest_violations {
                    found.entry(property).or_insert((*parent, None));
                }
                transitions += expansion.transitions;
                reached = reached.union(expansion.seen_events);
                for (action_index, events) in expansion.violations {
                    for property in Property::ALL {
                        if property.kind() == PropertyKind::Always && property.violated_by(events) {
                            found
                                .entry(property)
                                .or_insert((*parent, Some(action_index)));
                        }
                    }
                }
                for successor in expansion.successors {
                    if visited.insert(successor.fingerprint) {
                        let id = nodes.len() as u32;
                        nodes.push(Node {
                            parent: *parent,
                            action_index: successor.action_index,
                        });
                        next_frontier.push((id, successor.state));
                    }
                }
            }
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
            let memory = estimated_bytes(visited.capacity(), nodes.capacity(), next_frontier.len());
            if memory >= options.max_memory_bytes {
                stopped_by = Some(format!(
                    "max-memory {} bytes reached",
                    options.max_memory_bytes
                ));
                break 'levels;
            }
        }
        frontier = next_frontier;
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
    }
}

/// Bytes held by the visited set, the node table and the frontier (states are ~200 bytes with their heap parts).
fn estimated_bytes(visited_capacity: usize, nodes_capacity: usize, frontier_len: usize) -> u64 {
    let visited = visited_capacity as u64 * 9; // 8-byte fingerprint + 1 control byte per slot
    let nodes = nodes_capacity as u64 * std::mem::size_of::<Node>() as u64;
    let frontier = frontier_len as u64 * 256;
    visited + nodes + frontier
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
