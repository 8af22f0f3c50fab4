//! From what a search found to each property's verdict and path.

use super::expand::Output;
use super::graph::Graph;
use super::model::{Model, Observation};
use super::nodes::NodeLog;
use super::path::{rebuild_path, rebuild_path_reduced};
use super::plan::Plan;
use super::property::Kind;
use super::{PropertyReport, Verdict};

/// Per property, the first finding in search order: a node (`None` step: the node itself is the violation or
/// the witness) or a transition out of it.
pub(crate) struct Found<M: Model> {
    first: Vec<Option<(u32, Option<u16>)>>,
    names: Vec<String>,
    pub observed: M::Obs,
}

impl<M: Model> Found<M> {
    pub fn new(plan: &Plan<M>) -> Found<M> {
        Found {
            first: vec![None; plan.properties.len()],
            names: plan
                .properties
                .iter()
                .map(|property| property.name.clone())
                .collect(),
            observed: M::Obs::default(),
        }
    }

    fn record(&mut self, property: usize, node: u32, action_index: Option<u16>) {
        self.first[property].get_or_insert((node, action_index));
    }

    pub fn violated(&self, property: usize) -> bool {
        self.first[property].is_some()
    }

    pub fn name(&self, property: usize) -> &str {
        &self.names[property]
    }

    /// State-based properties on the initial state (node 0).
    pub fn judge_initial(&mut self, plan: &Plan<M>, model: &M, init: &M::State) {
        for &(property, predicate) in &plan.always_state {
            if !predicate(model, init) {
                self.record(property, 0, None);
            }
        }
        for &(property, predicate) in &plan.sometimes_state {
            if predicate(model, init) {
                self.record(property, 0, None);
            }
        }
    }

    /// A unit's findings, in search order.
    pub fn merge(&mut self, plan: &Plan<M>, out: &Output<M>) {
        for &(parent, action_index, property) in &out.found {
            self.record(property, parent, action_index);
        }
        for &(step, observed) in &out.violations {
            for &(property, mask) in &plan.always_observed {
                if observed.intersects(mask) {
                    self.record(property, step.parent, Some(step.action_index));
                }
            }
        }
        if self.observed.union(out.observed) != self.observed {
            for &(step, observed) in &out.firsts {
                for &(property, mask) in &plan.sometimes_observed {
                    if observed.intersects(mask) {
                        self.record(property, step.parent, Some(step.action_index));
                    }
                }
            }
        }
        self.observed = self.observed.union(out.observed);
    }
}

/// Every property's verdict and path after a search.
pub(crate) fn judge_bfs<M: Model>(
    model: &M,
    plan: &Plan<M>,
    found: &Found<M>,
    nodes: &NodeLog,
    graph: Option<&Graph>,
    complete: bool,
    symmetry: bool,
) -> Vec<PropertyReport<M::Action>> {
    let rebuild = |indices: &[u16]| {
        if symmetry {
            rebuild_path_reduced(model, indices)
        } else {
            rebuild_path(model, indices)
        }
    };
    plan.properties
        .iter()
        .enumerate()
        .map(|(index, property)| {
            let mut report = PropertyReport {
                name: property.name.clone(),
                kind: property.kind,
                verdict: Verdict::Incomplete,
                path: None,
                cycle_from: None,
                seed: None,
                at_step: None,
            };
            let graph_bit = plan
                .graph
                .iter()
                .position(|graph_index| *graph_index == index);
            let finding = match graph_bit {
                Some(bit) => graph
                    .expect("graph-judged properties keep the graph")
                    .violation(bit as u32)
                    .map(|lasso| {
                        let mut indices = match lasso.into_start {
                            None => Vec::new(),
                            Some(step) => nodes.step_indices(step),
                        };
                        let prefix = indices.len();
                        indices.extend(&lasso.suffix);
                        report.cycle_from = lasso.cycle_from.map(|at| prefix + at);
                        indices
                    }),
                None => found.first[index].map(|(node, last)| {
                    let mut indices = nodes.path_indices(node);
                    indices.extend(last);
                    indices
                }),
            };
            report.verdict = match (property.kind, finding.is_some(), complete) {
                (Kind::Sometimes, true, _) => Verdict::Holds,
                (Kind::Sometimes, false, true) => Verdict::Violated,
                (_, true, _) => Verdict::Violated,
                (_, false, true) => Verdict::Holds,
                (_, false, false) => Verdict::Incomplete,
            };
            report.path = finding.map(|indices| rebuild(&indices));
            report
        })
        .collect()
}
