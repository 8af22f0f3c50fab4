//! The worlds as `check::Model`s: the seven properties by the names model files use, the scenarios as
//! `sometimes` properties (a model file's `reached = [...]`), and the hooks the explorer's speed rests on
//! (packing, symmetry, one event bitmask per transition). `WorldOf<S>` is the model; `World` forwards to
//! whichever world it holds (one branch per call, on a value that never changes during a search).

use super::action::Action;
use super::config::Faults;
use super::events::{Event, Events};
use super::properties::{PropertyKind, WorldProperty};
use super::state::State;
use super::world::{dispatch, Server, Transition, World, WorldOf};
use crate::check::{self, Observation};
use rand::Rng;
use rand_chacha::ChaCha8Rng;

impl Observation for Events {
    #[inline]
    fn union(self, other: Events) -> Events {
        Events::union(self, other)
    }

    #[inline]
    fn intersects(self, other: Events) -> bool {
        Events::intersects(self, other)
    }
}

/// The liveness predicates at rest, as plain functions (a property holds a function pointer).
fn no_stuck_key<M>(_world: &M, state: &State) -> bool {
    !WorldProperty::NoStuckKey.violated_at_rest(state)
}

fn eventually_resolves<M>(_world: &M, state: &State) -> bool {
    !WorldProperty::EventuallyResolves.violated_at_rest(state)
}

/// The check property for one of the seven, for any model over the shared state and events.
pub fn check_property<M>(property: WorldProperty) -> check::Property<M>
where
    M: check::Model<State = State, Obs = Events>,
{
    match (property.kind(), property) {
        (PropertyKind::Always, _) => {
            check::Property::always_unobserved(property.name(), property.violating_events())
        }
        (PropertyKind::Eventually, WorldProperty::NoStuckKey) => {
            check::Property::eventually_at_rest(property.name(), no_stuck_key::<M>)
        }
        (PropertyKind::Eventually, _) => {
            check::Property::eventually_at_rest(property.name(), eventually_resolves::<M>)
        }
    }
}

/// The seven properties, then one `sometimes` per scenario.
pub(super) fn properties<M>() -> Vec<check::Property<M>>
where
    M: check::Model<State = State, Obs = Events>,
{
    let mut properties: Vec<_> = WorldProperty::all().map(check_property).collect();
    properties.extend(Event::scenarios().map(|scenario| {
        check::Property::sometimes_observed(scenario.scenario_name(), Events::of(&[scenario]))
    }));
    properties
}

/// The hooks both impls write alike: the shared types, the transition relation through the type's inherent
/// methods, the packing (the state is shared, so is its encoding) and the properties.
macro_rules! shared_hooks {
    ($world:ty) => {
        type State = State;
        type Action = Action;
        type Obs = Events;

        fn init_state(&self) -> State {
            <$world>::init_state(self)
        }

        #[inline]
        fn actions(&self, state: &State, out: &mut Vec<Action>) {
            <$world>::actions(self, state, out)
        }

        #[inline]
        fn apply(&self, state: &mut State, action: &Action) -> Events {
            <$world>::apply(self, state, action)
        }

        #[inline]
        fn is_fault(&self, state: &State, action: &Action) -> bool {
            <$world>::is_fault(self, state, action)
        }

        fn properties(&self) -> Vec<check::Property<Self>> {
            properties()
        }

        const PACKED: bool = true;

        #[inline]
        fn pack(&self, state: &State, out: &mut Vec<u8>) {
            super::pack::pack(state, out)
        }

        #[inline]
        fn unpack_into(&self, bytes: &[u8], state: &mut State) {
            super::pack::unpack_into(bytes, state)
        }

        #[inline]
        fn unpack_parts(&self, bytes: &[u8], state: &mut State, spans: &mut check::PartSpans) {
            super::pack::unpack_parts(bytes, state, spans)
        }

        #[inline]
        fn pack_successor(
            &self,
            next: &State,
            touched: u32,
            parent: &[u8],
            spans: &check::PartSpans,
            out: &mut Vec<u8>,
        ) {
            super::parts::pack_successor(next, touched, parent, spans, out)
        }

        #[inline]
        fn restore(&self, next: &mut State, state: &State, touched: u32) {
            super::parts::restore(next, state, touched)
        }
    };
}

impl<S: Server> check::Model for WorldOf<S> {
    shared_hooks!(WorldOf<S>);

    #[inline]
    fn apply_touching(&self, state: &mut State, action: &Action) -> (Events, u32) {
        WorldOf::apply_touching(self, state, action)
    }

    /// Every non-fault action makes progress that is never undone (attempts and tokens only grow, messages are
    /// consumed, handler steps advance or restart with a new claim), and faults have budgets.
    fn acyclic(&self) -> bool {
        true
    }

    fn canonicalize(&self, state: &State) -> Option<State> {
        Some(WorldOf::canonicalize(self, state).0)
    }

    #[inline]
    fn canonicalize_in_place(&self, state: &mut State) {
        WorldOf::canonicalize_in_place(self, state)
    }

    #[inline]
    fn independent_of_rest(&self, state: &State, action: &Action) -> bool {
        WorldOf::independent_of_rest(self, state, action)
    }

    fn persistent_set(&self, state: &State, actions: &[Action], out: &mut Vec<usize>) {
        WorldOf::persistent_set(self, state, actions, out)
    }

    fn describe_step(&self, before: &State, action: &Action, after: &State, obs: Events) -> String {
        let transition = Transition {
            before,
            action,
            after,
            events: obs,
        };
        S::describe(self, &transition).line()
    }

    fn view(&self, state: &State) -> check::StateView {
        S::view(self, state)
    }

    /// Swarm testing: every fault budget drawn between zero and the model's.
    fn swarm(&self, rng: &mut ChaCha8Rng) -> Option<Self> {
        let budgets = self.faults.as_array();
        Some(WorldOf {
            faults: Faults::from_array(budgets.map(|budget| rng.random_range(0..=budget))),
            ..self.clone()
        })
    }
}

impl check::Model for World {
    shared_hooks!(World);

    #[inline]
    fn apply_touching(&self, state: &mut State, action: &Action) -> (Events, u32) {
        dispatch!(self, world => world.apply_touching(state, action))
    }

    fn acyclic(&self) -> bool {
        dispatch!(self, world => check::Model::acyclic(world))
    }

    fn canonicalize(&self, state: &State) -> Option<State> {
        dispatch!(self, world => check::Model::canonicalize(world, state))
    }

    #[inline]
    fn canonicalize_in_place(&self, state: &mut State) {
        dispatch!(self, world => check::Model::canonicalize_in_place(world, state))
    }

    #[inline]
    fn independent_of_rest(&self, state: &State, action: &Action) -> bool {
        dispatch!(self, world => world.independent_of_rest(state, action))
    }

    fn persistent_set(&self, state: &State, actions: &[Action], out: &mut Vec<usize>) {
        dispatch!(self, world => world.persistent_set(state, actions, out))
    }

    fn describe_step(&self, before: &State, action: &Action, after: &State, obs: Events) -> String {
        dispatch!(self, world => check::Model::describe_step(world, before, action, after, obs))
    }

    fn view(&self, state: &State) -> check::StateView {
        dispatch!(self, world => check::Model::view(world, state))
    }

    fn swarm(&self, rng: &mut ChaCha8Rng) -> Option<Self> {
        match self {
            World::Http(world) => check::Model::swarm(world, rng).map(World::Http),
            World::Queue(world) => check::Model::swarm(world, rng).map(World::Queue),
        }
    }
}
