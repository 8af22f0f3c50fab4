//! A run's outcome, decided the same way from the model's events and from what the real broker and database did:
//! the event duplicated, lost (acked with no effect), a second delivery or copy absorbed, or taken once.

use crate::builtin::{Event, Events, State};

/// What happened to the event, from the effects and the acks: the queue models' outcomes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum EventOutcome {
    /// It took effect twice (two effect rows, or two provider charges).
    Duplicated,
    /// A consumer acked it while it had no effect.
    Lost,
    /// A second delivery or copy came and was absorbed: by the inbox, the broker's dedup or the provider's key.
    Absorbed,
    /// It took effect once and nothing else came.
    Once,
    /// The trace ends before any effect.
    Nothing,
}

impl EventOutcome {
    pub fn name(self) -> &'static str {
        match self {
            EventOutcome::Duplicated => "duplicated",
            EventOutcome::Lost => "lost",
            EventOutcome::Absorbed => "absorbed",
            EventOutcome::Once => "once",
            EventOutcome::Nothing => "nothing yet",
        }
    }
}

/// Observations along a run, real or model, that decide its outcome.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct Seen {
    pub duplicated: bool,
    pub lost: bool,
    pub absorbed: bool,
    pub effects: usize,
}

impl Seen {
    pub fn outcome(self) -> EventOutcome {
        match self {
            Seen {
                duplicated: true, ..
            } => EventOutcome::Duplicated,
            Seen { lost: true, .. } => EventOutcome::Lost,
            Seen { absorbed: true, .. } => EventOutcome::Absorbed,
            Seen { effects: 0, .. } => EventOutcome::Nothing,
            _ => EventOutcome::Once,
        }
    }

    /// The model's observations of one transition.
    pub fn model(&mut self, events: Events, state: &State) {
        self.duplicated |= events.has(Event::DuplicateEffect);
        self.lost |= events.has(Event::SuccessWithoutEffect);
        let provider_absorbed =
            events.has(Event::ProviderRetried) && !events.has(Event::DuplicateEffect);
        self.absorbed |= events.has(Event::Replay)
            || events.has(Event::InboxConflict)
            || events.has(Event::ProducerDeduplicated)
            || provider_absorbed;
        self.effects = state.effects();
    }
}
