//! Paths through the state space: rebuilt from action indices, and turned into a numbered timeline.

use crate::model::{Action, Events, State, World};
use serde::{Deserialize, Serialize};

/// Re-run a path found on canonical states (symmetry reduction) and return it as actions of the unreduced model.
/// `sigma` maps the real state to the canonical one at each step; the path's actions are picked in canonical
/// terms and translated back.
pub fn rebuild_path_reduced(world: &World, indices: &[u16]) -> Vec<Action> {
    let mut real = world.init_state();
    let (mut canonical, mut sigma) = world.canonicalize(&real);
    let mut enabled = Vec::new();
    let mut real_enabled = Vec::new();
    let mut actions = Vec::with_capacity(indices.len());
    for &index in indices {
        world.actions(&canonical, &mut enabled);
        let chosen = enabled[index as usize];
        let mut action = sigma.action_back(world, &chosen);
        // The unreduced model hands a request to the lowest idle process; idle processes are interchangeable, so
        // swap the labels of the two idle ones and keep going.
        if let Action::DeliverRequest { request, proc } = action {
            world.actions(&real, &mut real_enabled);
            let lowest = real_enabled.iter().find_map(|candidate| match candidate {
                Action::DeliverRequest { proc, .. } => Some(*proc),
                _ => None,
            });
            if let Some(lowest) = lowest.filter(|lowest| *lowest != proc) {
                sigma.swap_procs(proc, lowest);
                action = Action::DeliverRequest {
                    request,
                    proc: lowest,
                };
            }
        }
        real = world.next_state(&real, &action).0;
        let successor = world.next_state(&canonical, &chosen).0;
        let (next_canonical, tau) = world.canonicalize(&successor);
        sigma = sigma.then(&tau);
        canonical = next_canonical;
        actions.push(action);
    }
    actions
}

/// Re-run a path given as "the i-th enabled action" at each step, returning the actions.
pub fn rebuild_path(world: &World, indices: &[u16]) -> Vec<Action> {
    let mut state = world.init_state();
    let mut enabled = Vec::new();
    let mut actions = Vec::with_capacity(indices.len());
    for &index in indices {
        world.actions(&state, &mut enabled);
        let action = enabled[index as usize];
        state = world.next_state(&state, &action).0;
        actions.push(action);
    }
    actions
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TimelineStep {
    pub step: usize,
    pub action: Action,
    pub text: String,
}

/// Run `actions` from the initial state, checking each is enabled, and describe every step.
/// Returns the timeline, the final state and the events of each step, or the 1-based step that diverged.
pub fn timeline(
    world: &World,
    actions: &[Action],
) -> Result<(Vec<TimelineStep>, State, Vec<Events>), usize> {
    let mut state = world.init_state();
    let mut enabled = Vec::new();
    let mut steps = Vec::with_capacity(actions.len());
    let mut all_events = Vec::with_capacity(actions.len());
    for (index, action) in actions.iter().enumerate() {
        world.actions(&state, &mut enabled);
        if !enabled.contains(action) {
            return Err(index + 1);
        }
        let (next, events) = world.next_state(&state, action);
        let text = world.describe(&state, action, &next, events);
        steps.push(TimelineStep {
            step: index + 1,
            action: *action,
            text,
        });
        all_events.push(events);
        state = next;
    }
    Ok((steps, state, all_events))
}
