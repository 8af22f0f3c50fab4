//! The twin of the client's-part declaration: the same set declared under global key scope, where two clients'
//! operations share a key, is wrong, and the checked mode catches it. There a key belongs to no one client: a
//! process of client 2 may hold the claim on the key whose lease expiry is client 1's, so crashing it turns the
//! expiry from a pause (a fault that spends its budget) into time passing, and the two orders differ. And the
//! real declaration, checked, keeps the verdicts of the design it is made for.

use super::super::checked::properties;
use super::super::events::Events;
use super::super::world::{HttpWorld, World};
use super::*;
use crate::check::{self, checked_mode_complaint, Model as _, Por, Verdict};

/// A world declaring the smallest client's part whatever its key scope.
struct Careless(HttpWorld);

impl check::Model for Careless {
    type State = State;
    type Action = Action;
    type Obs = Events;

    fn init_state(&self) -> State {
        self.0.init_state()
    }

    fn actions(&self, state: &State, out: &mut Vec<Action>) {
        self.0.actions(state, out)
    }

    fn apply(&self, state: &mut State, action: &Action) -> Events {
        self.0.apply(state, action)
    }

    fn is_fault(&self, state: &State, action: &Action) -> bool {
        self.0.is_fault(state, action)
    }

    fn properties(&self) -> Vec<check::Property<Self>> {
        properties()
    }

    fn acyclic(&self) -> bool {
        true
    }

    fn independent_of_rest(&self, state: &State, action: &Action) -> bool {
        self.0.independent_of_rest(state, action)
    }

    fn persistent_set(&self, state: &State, actions: &[Action], out: &mut Vec<usize>) {
        self.0.smallest_part(state, actions, out)
    }
}

fn lease_fenced() -> HttpWorld {
    let path = crate::repository_file("models/lease-fenced.toml");
    match crate::spec::load_model(&path)
        .expect("a shipped model")
        .world
    {
        World::Http(http) => http,
        World::Queue(_) => panic!("an HTTP model"),
    }
}

#[test]
fn the_declared_part_keeps_every_verdict_on_the_lease_fenced_design() {
    let world = lease_fenced();
    let full = world.checker().bfs();
    let reduced = world.checker().por(Por::Checked).bfs();
    assert_eq!(full.verdicts(), reduced.verdicts());
    assert!(
        reduced.states < full.states,
        "{} {}",
        reduced.states,
        full.states
    );
    assert_eq!(reduced.verdict("no-duplicate-effect"), Verdict::Holds);
}

#[test]
fn a_part_declared_where_clients_share_a_key_is_caught_by_the_checked_mode() {
    let global = World::Http(lease_fenced())
        .to_builder()
        .key_scope(KeyScope::Global)
        .build()
        .expect("a valid knob");
    let World::Http(global) = global else {
        panic!("an HTTP world")
    };
    let careless = Careless(global);
    let message = checked_mode_complaint(&careless).expect("checked mode tests the declaration");
    assert!(
        message.contains("in the declared persistent set")
            && message.contains("is not independent of ExpireLease")
            && message.contains("the two orders reach different states"),
        "{message}"
    );
}
