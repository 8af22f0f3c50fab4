//! Paths through the state space: rebuilt from action indices, and turned into a numbered timeline.

use super::model::Model;
use serde::{Deserialize, Serialize};

/// Re-run a path given as "the i-th enabled action" at each step, returning the actions.
pub fn rebuild_path<M: Model>(model: &M, indices: &[u16]) -> Vec<M::Action> {
    let mut state = model.init_state();
    let mut enabled = Vec::new();
    let mut actions = Vec::with_capacity(indices.len());
    for &index in indices {
        super::model::enabled(model, &state, &mut enabled);
        let action = enabled[index as usize].clone();
        model.apply(&mut state, &action);
        actions.push(action);
    }
    actions
}

/// The canonical form of a state, as the search stores it (`Model::canonicalize_in_place`; the state itself
/// when the model has no symmetry).
pub fn canonical<M: Model>(model: &M, state: &M::State) -> M::State {
    let mut canonical = state.clone();
    model.canonicalize_in_place(&mut canonical);
    canonical
}

/// Re-run a path found on canonical states (symmetry reduction) and return it as actions of the unreduced
/// model: at each step, the first real action whose successor has the canonical form the reduced search
/// reached. One exists, since the real state is symmetric to the canonical one and the transition relation
/// respects the symmetry.
pub fn rebuild_path_reduced<M: Model>(model: &M, indices: &[u16]) -> Vec<M::Action> {
    let mut real = model.init_state();
    let mut reduced = canonical(model, &real);
    let mut enabled = Vec::new();
    let mut real_enabled = Vec::new();
    let mut actions = Vec::with_capacity(indices.len());
    for &index in indices {
        super::model::enabled(model, &reduced, &mut enabled);
        let mut successor = reduced.clone();
        model.apply(&mut successor, &enabled[index as usize]);
        let target = canonical(model, &successor);
        super::model::enabled(model, &real, &mut real_enabled);
        let (action, next) = real_enabled
            .iter()
            .find_map(|action| {
                let mut next = real.clone();
                model.apply(&mut next, action);
                (canonical(model, &next) == target).then(|| (action.clone(), next))
            })
            .expect("a symmetric model has a real action for every reduced one");
        actions.push(action);
        real = next;
        reduced = target;
    }
    actions
}

/// One step of a timeline.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TimelineStep<A> {
    /// The 1-based step number.
    pub step: usize,
    /// The action taken.
    pub action: A,
    /// The action described in the model's words (`Model::describe`).
    pub text: String,
}

/// A path run from the initial state: each step described, the states after each step, and what each observed.
pub struct Run<M: Model> {
    /// Every step of the path, in order.
    pub steps: Vec<TimelineStep<M::Action>>,
    /// `states[0]` is the initial state; `states[i]` the state after step `i`.
    pub states: Vec<M::State>,
    /// What each step observed (`Model::observe`), one per step.
    pub observed: Vec<M::Obs>,
}

impl<M: Model> Run<M> {
    /// The state the path ends in.
    pub fn last_state(&self) -> &M::State {
        self.states.last().expect("a run has its initial state")
    }
}

/// Run `actions` from the initial state, checking each is enabled, and describe every step. Returns the run, or
/// the 1-based step whose action is not enabled.
pub fn timeline<M: Model>(model: &M, actions: &[M::Action]) -> Result<Run<M>, usize> {
    let mut state = model.init_state();
    let mut enabled = Vec::new();
    let mut run = Run {
        steps: Vec::with_capacity(actions.len()),
        states: Vec::with_capacity(actions.len() + 1),
        observed: Vec::with_capacity(actions.len()),
    };
    run.states.push(state.clone());
    for (index, action) in actions.iter().enumerate() {
        super::model::enabled(model, &state, &mut enabled);
        if !enabled.contains(action) {
            return Err(index + 1);
        }
        let before = state.clone();
        let observed = model.apply(&mut state, action);
        run.steps.push(TimelineStep {
            step: index + 1,
            action: action.clone(),
            text: model.describe_step(&before, action, &state, observed),
        });
        run.observed.push(observed);
        run.states.push(state.clone());
    }
    Ok(run)
}
