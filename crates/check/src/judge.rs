//! Judging one path, state by state: what random walks and replay share. The rules are the explorer's (see
//! `property`): an `always` fails at the first bad state or step; a `sometimes` is witnessed at the first good
//! one; an `eventually` fails when, after the path's last fault, no state reaches the goal and the path either
//! comes to rest or closes a cycle.

use super::model::{Model, Observation};
use super::plan::Plan;

pub(crate) struct PathJudge<'a, M: Model> {
    model: &'a M,
    plan: &'a Plan<M>,
    /// Per property: the step (0: the initial state) at which it was decided.
    pub at_step: Vec<Option<usize>>,
    /// Per `eventually` property: no goal state since the last fault (or the start).
    pending: Vec<bool>,
    /// Steps taken so far.
    pub steps: usize,
    /// The step count when the last fault happened.
    pub last_fault: usize,
    pub observed: M::Obs,
}

impl<'a, M: Model> PathJudge<'a, M> {
    pub fn new(model: &'a M, plan: &'a Plan<M>) -> Self {
        PathJudge {
            model,
            plan,
            at_step: vec![None; plan.properties.len()],
            pending: vec![true; plan.properties.len()],
            steps: 0,
            last_fault: 0,
            observed: M::Obs::default(),
        }
    }

    fn decide(&mut self, property: usize) {
        self.at_step[property].get_or_insert(self.steps);
    }

    /// The path is in `state` (`at_rest`: only faults are enabled there).
    pub fn visit(&mut self, state: &M::State, at_rest: bool) {
        let model = self.model;
        for &(property, predicate) in &self.plan.always_state {
            if !predicate(model, state) {
                self.decide(property);
            }
        }
        for &(property, predicate) in &self.plan.sometimes_state {
            if predicate(model, state) {
                self.decide(property);
            }
        }
        for &index in &self.plan.eventually {
            if self.pending[index] && self.plan.properties[index].goal(model, state, at_rest) {
                self.pending[index] = false;
            }
        }
    }

    /// The path takes a step that observed `observed`; `fault`: the action was a fault.
    pub fn transition(&mut self, observed: M::Obs, fault: bool) {
        self.steps += 1;
        self.observed = self.observed.union(observed);
        for &(property, mask) in &self.plan.always_observed {
            if observed.intersects(mask) {
                self.decide(property);
            }
        }
        for &(property, mask) in &self.plan.sometimes_observed {
            if observed.intersects(mask) {
                self.decide(property);
            }
        }
        if fault {
            self.last_fault = self.steps;
            self.pending.iter_mut().for_each(|pending| *pending = true);
        }
    }

    /// The path ended, at rest or having closed a fault-free cycle (`ends`): decide the `eventually`
    /// properties whose goal was never reached after the last fault.
    pub fn finish(&mut self, ends: bool) {
        if !ends {
            return;
        }
        for index in self.plan.eventually.clone() {
            if self.pending[index] {
                self.decide(index);
            }
        }
    }
}
