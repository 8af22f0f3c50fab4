//! Paths through the state space: rebuilt from action indices, and turned into a numbered timeline.

use crate::model::{Action, Events, State, World};
use serde::{Deserialize, Serialize};

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
