//! The retrylab world as a stateright model, shared by `vs_stateright` and `scale`: the very same transition
//! relation (`actions` / `next_state`), so equal unique-state counts show that both checkers searched the same
//! space. Included by path (`#[path]`), not through `support`, which `scaling` uses without stateright.

use retrylab::builtin::{Action, State, World};
use stateright::{Model, Property};

pub struct Stateright(pub World);

pub fn no_duplicate_effect(state: &State) -> bool {
    state.store.payments.iter().all(|(_, count)| *count <= 1)
}

impl Model for Stateright {
    type State = State;
    type Action = Action;

    fn init_states(&self) -> Vec<State> {
        vec![self.0.init_state()]
    }

    fn actions(&self, state: &State, actions: &mut Vec<Action>) {
        self.0.actions(state, actions);
    }

    fn next_state(&self, state: &State, action: Action) -> Option<State> {
        Some(self.0.next_state(state, &action).0)
    }

    fn properties(&self) -> Vec<Property<Self>> {
        vec![Property::always(
            "no-duplicate-effect",
            |_, state: &State| no_duplicate_effect(state),
        )]
    }
}
