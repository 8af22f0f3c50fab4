//! `eventually` on the whole state graph, cycles and joins included (see `property` for the semantics).
//!
//! For each property, the bad states are the greatest set B of non-goal states such that each is at rest, or has
//! a non-fault successor in B: from a state of B some non-fault path avoids the goal forever (it ends at rest or
//! goes round a cycle inside B). It is computed by removing, from all non-goal states, those whose non-fault
//! successors have all been removed (a counter per state, predecessors by a reverse index). States left
//! unexpanded by a bounded search count as good, so a violation found is real. The property is violated when
//! the initial state, or a state a fault leads to, is in B.

use super::expand::{Edge, GraphUnit, Step};
use std::collections::HashMap;

/// The state graph as far as it was explored: node ids in search order.
#[derive(Default)]
pub(crate) struct Graph {
    /// Per node: goal mask, at rest, expanded.
    nodes: Vec<(u32, bool, bool)>,
    /// Fingerprint of every node, in id order.
    fingerprints: Vec<u64>,
    edges: Vec<Edge>,
    fault_edges: Vec<Edge>,
}

/// Where a violation starts and how it goes on: the step into the start state (`None`: the initial state),
/// then the action indices of the non-fault steps, and where the cycle closes, if it does.
pub(crate) struct Lasso {
    pub into_start: Option<Step>,
    pub suffix: Vec<u16>,
    pub cycle_from: Option<usize>,
}

impl Graph {
    pub fn add_node_fingerprint(&mut self, fingerprint: u64) {
        self.fingerprints.push(fingerprint);
        self.nodes.push((0, false, false));
    }

    pub fn add_unit(&mut self, unit: &GraphUnit) {
        for &(id, goals, at_rest) in &unit.nodes {
            self.nodes[id as usize] = (goals, at_rest, true);
        }
        self.edges.extend_from_slice(&unit.edges);
        self.fault_edges.extend_from_slice(&unit.fault_edges);
    }

    /// Bytes held: the vectors' lengths, as their pages past the length are never touched (a large vector's
    /// reallocation moves pages, it does not copy them).
    pub fn held_bytes(&self) -> u64 {
        (self.nodes.len() * size_of::<(u32, bool, bool)>()
            + self.fingerprints.len() * 8
            + (self.edges.len() + self.fault_edges.len()) * size_of::<Edge>()) as u64
    }

    /// Node ids of the edges' targets (a target the search never stored is `u32::MAX`).
    fn resolve(&self, edges: &[Edge]) -> Vec<u32> {
        let ids: HashMap<u64, u32> = self
            .fingerprints
            .iter()
            .enumerate()
            .map(|(id, fingerprint)| (*fingerprint, id as u32))
            .collect();
        edges
            .iter()
            .map(|edge| ids.get(&edge.child).copied().unwrap_or(u32::MAX))
            .collect()
    }

    /// Whether some cycle of non-fault edges exists among expanded states (Kahn's algorithm).
    pub fn has_non_fault_cycle(&self) -> bool {
        let targets = self.resolve(&self.edges);
        let mut indegree = vec![0u32; self.nodes.len()];
        for &target in targets.iter().filter(|target| **target != u32::MAX) {
            indegree[target as usize] += 1;
        }
        let out = self.out_index();
        let mut ready: Vec<u32> = (0..self.nodes.len() as u32)
            .filter(|node| indegree[*node as usize] == 0)
            .collect();
        let mut removed = 0usize;
        while let Some(node) = ready.pop() {
            removed += 1;
            for edge in out.edges_of(node) {
                let target = targets[edge];
                if target != u32::MAX {
                    indegree[target as usize] -= 1;
                    if indegree[target as usize] == 0 {
                        ready.push(target);
                    }
                }
            }
        }
        removed < self.nodes.len()
    }

    /// The first lasso (in search order of its start) of the property whose goal is bit `bit`, if any.
    pub fn violation(&self, bit: u32) -> Option<Lasso> {
        let targets = self.resolve(&self.edges);
        let bad = self.bad_states(bit, &targets);
        let out = self.out_index();
        let start = if bad[0] {
            Some((None, 0))
        } else {
            let fault_targets = self.resolve(&self.fault_edges);
            self.fault_edges
                .iter()
                .zip(&fault_targets)
                .filter(|(_, target)| **target != u32::MAX && bad[**target as usize])
                .map(|(edge, target)| (Some(edge.step), *target))
                .min_by_key(|(step, _)| *step)
        };
        let (into_start, start) = start?;
        let (suffix, cycle_from) = self.walk_bad(start, &bad, &targets, &out);
        Some(Lasso {
            into_start,
            suffix,
            cycle_from,
        })
    }

    /// The greatest set of non-goal states each at rest or with a non-fault successor in the set.
    fn bad_states(&self, bit: u32, targets: &[u32]) -> Vec<bool> {
        let nodes = self.nodes.len();
        let mut bad: Vec<bool> = self
            .nodes
            .iter()
            .map(|(goals, _, expanded)| *expanded && goals & (1 << bit) == 0)
            .collect();
        let mut successors_in = vec![0u32; nodes];
        let mut predecessors: Vec<Vec<u32>> = vec![Vec::new(); nodes];
        for (edge, &target) in self.edges.iter().zip(targets) {
            let parent = edge.step.parent as usize;
            if target != u32::MAX && bad[parent] && bad[target as usize] {
                successors_in[parent] += 1;
                predecessors[target as usize].push(parent as u32);
            }
        }
        let mut removed: Vec<u32> = (0..nodes as u32)
            .filter(|node| {
                let (_, at_rest, _) = self.nodes[*node as usize];
                bad[*node as usize] && !at_rest && successors_in[*node as usize] == 0
            })
            .collect();
        while let Some(node) = removed.pop() {
            bad[node as usize] = false;
            for &parent in &predecessors[node as usize] {
                let (_, at_rest, _) = self.nodes[parent as usize];
                successors_in[parent as usize] -= 1;
                if bad[parent as usize] && !at_rest && successors_in[parent as usize] == 0 {
                    removed.push(parent);
                }
            }
        }
        bad
    }

    /// From a bad state, follow the first non-fault edge that stays bad, until rest or a repeated state.
    fn walk_bad(
        &self,
        start: u32,
        bad: &[bool],
        targets: &[u32],
        out: &OutIndex,
    ) -> (Vec<u16>, Option<usize>) {
        let mut position: HashMap<u32, usize> = HashMap::new();
        let mut suffix = Vec::new();
        let mut node = start;
        loop {
            if let Some(at) = position.insert(node, suffix.len()) {
                return (suffix, Some(at));
            }
            let (_, at_rest, _) = self.nodes[node as usize];
            if at_rest {
                return (suffix, None);
            }
            let next = out
                .edges_of(node)
                .find(|edge| targets[*edge] != u32::MAX && bad[targets[*edge] as usize])
                .expect("a bad state not at rest has a bad non-fault successor");
            suffix.push(self.edges[next].step.action_index);
            node = targets[next];
        }
    }

    /// Edges grouped by parent (they arrive in search order: parents ascending).
    fn out_index(&self) -> OutIndex {
        let mut first = vec![0usize; self.nodes.len() + 1];
        for edge in &self.edges {
            first[edge.step.parent as usize + 1] += 1;
        }
        for node in 0..self.nodes.len() {
            first[node + 1] += first[node];
        }
        OutIndex { first }
    }
}

/// Edge indices by parent: edges of node `n` are `first[n]..first[n + 1]`.
struct OutIndex {
    first: Vec<usize>,
}

impl OutIndex {
    fn edges_of(&self, node: u32) -> impl Iterator<Item = usize> {
        self.first[node as usize]..self.first[node as usize + 1]
    }
}
