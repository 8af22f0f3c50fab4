//! The properties, by the names users write in model files, and the scenarios a passing model must reach.

use super::events::{Event, Events};
use super::state::{ClientPhase, Outcome, RecordStatus, State};

/// When a property is judged.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PropertyKind {
    /// On every transition (safety).
    Always,
    /// At every quiescent state, where nothing but faults can happen (liveness once faults stop: the state space
    /// is finite and acyclic, so every fault-free continuation ends in such a state).
    Eventually,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Property {
    NoDuplicateEffect,
    NoLostEffect,
    ConsistentReplay,
    NoCrossClientResponse,
    ConflictCodes,
    NoStuckKey,
    EventuallyResolves,
}

impl Property {
    pub const ALL: [Property; 7] = [
        Property::NoDuplicateEffect,
        Property::NoLostEffect,
        Property::ConsistentReplay,
        Property::NoCrossClientResponse,
        Property::ConflictCodes,
        Property::NoStuckKey,
        Property::EventuallyResolves,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Property::NoDuplicateEffect => "no-duplicate-effect",
            Property::NoLostEffect => "no-lost-effect",
            Property::ConsistentReplay => "consistent-replay",
            Property::NoCrossClientResponse => "no-cross-client-response",
            Property::ConflictCodes => "conflict-codes",
            Property::NoStuckKey => "no-stuck-key",
            Property::EventuallyResolves => "eventually-resolves",
        }
    }

    pub fn by_name(name: &str) -> Option<Property> {
        Property::ALL
            .into_iter()
            .find(|property| property.name() == name)
    }

    pub fn kind(self) -> PropertyKind {
        match self {
            Property::NoStuckKey | Property::EventuallyResolves => PropertyKind::Eventually,
            _ => PropertyKind::Always,
        }
    }

    pub fn description(self) -> &'static str {
        match self {
            Property::NoDuplicateEffect => "at most one effect per logical operation",
            Property::NoLostEffect => "no success is reported for an operation without an effect",
            Property::ConsistentReplay => "every success for an operation carries the same response",
            Property::NoCrossClientResponse => "no client receives another client's response",
            Property::ConflictCodes => "422 only for a changed body; 409 only while the original is in flight (with a lease: until it expires)",
            Property::NoStuckKey => "after faults stop, no key stays in_progress forever",
            Property::EventuallyResolves => {
                "after faults stop, every operation ends in one success or one definite failure"
            }
        }
    }

    /// The events that violate this (safety) property when a transition has one of them; none for liveness.
    pub const fn violating_events(self) -> Events {
        match self {
            Property::NoDuplicateEffect => Events::of(&[Event::DuplicateEffect]),
            Property::NoLostEffect => Events::of(&[Event::SuccessWithoutEffect]),
            Property::ConsistentReplay => Events::of(&[Event::InconsistentReplay]),
            Property::NoCrossClientResponse => Events::of(&[Event::CrossClientResponse]),
            Property::ConflictCodes => {
                Events::of(&[Event::MismatchForSameBody, Event::ConflictWithoutOwner])
            }
            Property::NoStuckKey | Property::EventuallyResolves => Events::of(&[]),
        }
    }

    /// Whether a transition with these events violates this (safety) property.
    pub fn violated_by(self, events: Events) -> bool {
        events.intersects(self.violating_events())
    }

    /// Events that violate some safety property: a transition without any needs no further look.
    pub fn any_violating_events() -> Events {
        Property::ALL
            .into_iter()
            .fold(Events::default(), |all, property| {
                all.union(property.violating_events())
            })
    }

    /// Whether a quiescent state violates this (liveness) property.
    pub fn violated_at_rest(self, state: &State) -> bool {
        match self {
            // An in_progress record whose lease ran out is not stuck: the next request for the key takes it over.
            Property::NoStuckKey => state.store.records.values().any(|record| {
                matches!(
                    record.status,
                    RecordStatus::InProgress {
                        lease_expired: false,
                        ..
                    }
                )
            }),
            Property::EventuallyResolves => state.clients.iter().any(|client| {
                client.phase != ClientPhase::Done
                    || client
                        .outcomes
                        .iter()
                        .any(|outcome| matches!(outcome, Outcome::Pending | Outcome::GaveUp))
            }),
            _ => false,
        }
    }
}
