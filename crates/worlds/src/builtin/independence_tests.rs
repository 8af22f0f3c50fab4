//! The twin of the client's-part declaration: the same set declared without its first condition (no request
//! of the client in the network) is wrong, and the checked mode catches it. With the requests of two clients
//! waiting for the idle processes, the first client's part holds its deliveries, and each of them races the
//! other client's delivery to the same process: no action of the set stays enabled whatever else happens (no
//! key). And the real declaration, checked, keeps the verdicts of the design it is made for.

use super::super::checked::properties;
use super::super::events::Events;
use super::super::world::{HttpWorld, World};
use super::*;
use crate::check::{self, Model as _, Por, Verdict};

/// The lease-fenced design, declaring a client's part while its request waits for a process.
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

    /// The part of the first client with a request in the network, where the real declaration declares none.
    fn persistent_set(&self, state: &State, actions: &[Action], out: &mut Vec<usize>) {
        let requested = state.network.keys().find_map(|message| match message {
            Message::Request(request) => Some(request.from.client),
            Message::Response(_) => None,
        });
        let Some(client) = requested else {
            return;
        };
        let part = (0..actions.len()).filter(|&index| in_part(state, client, &actions[index]));
        if part
            .clone()
            .any(|index| !self.0.is_fault(state, &actions[index]))
        {
            out.extend(part);
        }
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
fn a_part_declared_with_a_request_in_the_network_is_caught_by_the_checked_mode() {
    let careless = Careless(lease_fenced());
    let caught = std::panic::catch_unwind(|| careless.checker().por(Por::Checked).bfs());
    let message = *caught
        .expect_err("checked mode tests the declaration")
        .downcast::<String>()
        .unwrap();
    assert!(
        message.contains("DeliverRequest")
            && message.contains("in the declared persistent set")
            && message.contains("no key"),
        "{message}"
    );
}
