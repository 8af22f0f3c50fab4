//! The properties, by the names users write in model files, and the scenarios a passing model must reach.

use super::events::{Event, Events};
use super::state::{ClientPhase, OpOutcome, RecordStatus, State};

/// When a property is judged.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PropertyKind {
    /// On every transition (safety).
    Always,
    /// At every quiescent state, where nothing but faults can happen (liveness once faults stop: the state space
    /// is finite and acyclic, so every fault-free continuation ends in such a state).
    Eventually,
}

/// A property of the built-in world. Its name in model files, traces, reports and JSON is the variant's in
/// kebab case (`no-duplicate-effect`), derived here once: `Display`, `FromStr` and `name` all use it.
#[derive(
    Clone,
    Copy,
    Debug,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    strum::Display,
    strum::EnumString,
    strum::EnumIter,
    strum::AsRefStr,
    strum::IntoStaticStr,
)]
#[strum(serialize_all = "kebab-case")]
pub enum WorldProperty {
    NoDuplicateEffect,
    NoLostEffect,
    ConsistentReplay,
    NoCrossClientResponse,
    ConflictCodes,
    NoStuckKey,
    EventuallyResolves,
}

impl WorldProperty {
    /// Every property, in declaration order (the order of reports and tables).
    pub fn all() -> impl Iterator<Item = WorldProperty> {
        <WorldProperty as strum::IntoEnumIterator>::iter()
    }

    pub fn name(self) -> &'static str {
        self.into()
    }

    pub fn by_name(name: &str) -> Option<WorldProperty> {
        name.parse().ok()
    }

    /// Every property's name, comma-separated (what an unknown name is told it could have been).
    pub fn names() -> String {
        WorldProperty::all()
            .map(WorldProperty::name)
            .collect::<Vec<_>>()
            .join(", ")
    }

    pub fn kind(self) -> PropertyKind {
        match self {
            WorldProperty::NoStuckKey | WorldProperty::EventuallyResolves => {
                PropertyKind::Eventually
            }
            _ => PropertyKind::Always,
        }
    }

    pub fn description(self) -> &'static str {
        match self {
            WorldProperty::NoDuplicateEffect => "at most one effect per logical operation",
            WorldProperty::NoLostEffect => "no success is reported for an operation without an effect",
            WorldProperty::ConsistentReplay => "every success for an operation carries the same response",
            WorldProperty::NoCrossClientResponse => "no client receives another client's response",
            WorldProperty::ConflictCodes => "422 only for a changed body; 409 only while the original is in flight (with a lease: until it expires)",
            WorldProperty::NoStuckKey => "after faults stop, no key stays in_progress forever",
            WorldProperty::EventuallyResolves => {
                "after faults stop, every operation ends in one success or one definite failure"
            }
        }
    }

    /// The events that violate this (safety) property when a transition has one of them; none for liveness.
    pub const fn violating_events(self) -> Events {
        match self {
            WorldProperty::NoDuplicateEffect => Events::of(&[Event::DuplicateEffect]),
            WorldProperty::NoLostEffect => Events::of(&[Event::SuccessWithoutEffect]),
            WorldProperty::ConsistentReplay => Events::of(&[Event::InconsistentReplay]),
            WorldProperty::NoCrossClientResponse => Events::of(&[Event::CrossClientResponse]),
            WorldProperty::ConflictCodes => {
                Events::of(&[Event::MismatchForSameBody, Event::ConflictWithoutOwner])
            }
            WorldProperty::NoStuckKey | WorldProperty::EventuallyResolves => Events::of(&[]),
        }
    }

    /// Whether a transition with these events violates this (safety) property.
    pub fn violated_by(self, events: Events) -> bool {
        events.intersects(self.violating_events())
    }

    /// Events that violate some safety property: a transition without any needs no further look.
    pub fn any_violating_events() -> Events {
        WorldProperty::all().fold(Events::default(), |all, property| {
            all.union(property.violating_events())
        })
    }

    /// Whether a quiescent state violates this (liveness) property.
    pub fn violated_at_rest(self, state: &State) -> bool {
        match self {
            // An in_progress record whose lease ran out is not stuck: the next request for the key takes it over.
            WorldProperty::NoStuckKey => state.store.records.values().any(|record| {
                matches!(
                    record.status,
                    RecordStatus::InProgress {
                        lease_expired: false,
                        ..
                    }
                )
            }),
            WorldProperty::EventuallyResolves => state.clients.iter().any(|client| {
                client.phase != ClientPhase::Done
                    || client
                        .outcomes
                        .iter()
                        .any(|outcome| matches!(outcome, OpOutcome::Pending | OpOutcome::GaveUp))
            }),
            _ => false,
        }
    }
}
