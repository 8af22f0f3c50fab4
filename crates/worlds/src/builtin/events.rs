//! What one transition did that a property or a scenario cares about. Computed by `step` alongside the next
//! state, so that properties about events (a 422 for an unchanged body) need no history in the state.

/// One observation. The first group are violations of safety properties; the second are scenarios that a model
/// which holds must show it reached (no vacuous passes). A scenario's name in model files, reports and JSON
/// is its variant's in kebab case (`crash-after-claim`), derived here once.
#[derive(
    Clone,
    Copy,
    Debug,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    strum::EnumIter,
    strum::EnumString,
    strum::IntoStaticStr,
)]
#[strum(serialize_all = "kebab-case")]
#[repr(u8)]
pub enum Event {
    /// An effect committed for an operation that already had one.
    DuplicateEffect,
    /// A success response sent for an operation with no effect.
    SuccessWithoutEffect,
    /// A success response whose payload differs from an earlier success for the same operation.
    InconsistentReplay,
    /// A response carrying another client's effect.
    CrossClientResponse,
    /// A 422 for a body that did not change.
    MismatchForSameBody,
    /// A 409 while nobody was executing the original request.
    ConflictWithoutOwner,

    // Scenarios.
    /// A process crashed while holding a claim, before committing.
    CrashAfterClaim,
    /// A response was dropped.
    LostResponse,
    /// A request was dropped.
    LostRequest,
    /// A request was duplicated by the network.
    DuplicatedRequest,
    /// A request was taken by a process while another process was handling an attempt of the same operation.
    ParallelRetry,
    /// A client gave up waiting for an attempt and sent another.
    RetryAfterTimeout,
    /// A 200 replayed a stored response.
    Replay,
    /// A 409 was sent.
    Conflict,
    /// A 422 was sent.
    BodyMismatch,
    /// An in_progress record with an expired lease was taken over.
    LeaseTakeover,
    /// A lease expired while its owner was alive (paused).
    SlowOwner,
    /// Fencing refused a stale owner's completion.
    FencedCompletion,
    /// A handler failed with a 500.
    HandlerError,
    /// A completed key expired.
    KeyExpired,
    /// The provider was called a second time for one operation.
    ProviderRetried,
    /// Queue worlds: the broker accepted a republished event as a new message.
    Republished,
    /// Queue worlds: the broker's producer dedup (window or session) dropped a republished event.
    ProducerDeduplicated,
    /// Queue worlds: a consumer's inbox insert hit the unique key at commit (another consumer had committed the
    /// event), so its transaction, effect included, rolled back.
    InboxConflict,
    /// Queue worlds: a consumer crashed after its effect committed and before it acked.
    CrashBeforeAck,
    /// Handler worlds with a request hook: a retry's request (key, body or headers) differs from the attempt
    /// before it. Not in `scenarios`: no model file can show it.
    RequestChanged,
    /// Handler worlds with a reaction: a client retried after a 4xx other than 409 and 429. Not in
    /// `scenarios` either.
    ClientErrorRetried,
    /// Handler worlds: a call was made and its answer lost (`handler::CallFault::answer_lost`). Not in
    /// `scenarios`: no model-file world has the fault, so no model file can ask for it.
    AnswerLost,
}

impl Event {
    /// The scenarios a model file can ask for (`reached = [...]`), in declaration order: every event but the
    /// violations and the three only handler worlds can show.
    pub fn scenarios() -> impl Iterator<Item = Event> {
        <Event as strum::IntoEnumIterator>::iter().filter(|event| event.in_model_files())
    }

    fn in_model_files(self) -> bool {
        !matches!(
            self,
            Event::DuplicateEffect
                | Event::SuccessWithoutEffect
                | Event::InconsistentReplay
                | Event::CrossClientResponse
                | Event::MismatchForSameBody
                | Event::ConflictWithoutOwner
                | Event::RequestChanged
                | Event::ClientErrorRetried
                | Event::AnswerLost
        )
    }

    /// The scenario's name in model files (`reached = [...]`).
    pub fn scenario_name(self) -> &'static str {
        self.into()
    }

    /// Whether a world of this kind (a queue world, or an HTTP one) can witness this scenario at all: the queue
    /// scenarios need a broker, and a queue world has no 409, 422, lease or fencing.
    pub fn in_world(self, queue: bool) -> bool {
        match self {
            Event::Republished
            | Event::ProducerDeduplicated
            | Event::InboxConflict
            | Event::CrashBeforeAck => queue,
            Event::Conflict
            | Event::BodyMismatch
            | Event::LeaseTakeover
            | Event::SlowOwner
            | Event::FencedCompletion => !queue,
            _ => true,
        }
    }

    pub fn scenario_by_name(name: &str) -> Option<Event> {
        name.parse()
            .ok()
            .filter(|event: &Event| event.in_model_files())
    }

    const fn bit(self) -> u32 {
        1 << (self as u8)
    }
}

/// A set of events (a bitset: cheap to compute on every transition).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Events(u32);

impl Events {
    /// The set of `events`.
    pub const fn of(events: &[Event]) -> Events {
        let mut bits = 0;
        let mut index = 0;
        while index < events.len() {
            bits |= events[index].bit();
            index += 1;
        }
        Events(bits)
    }

    /// Whether the two sets share an event.
    pub fn intersects(self, other: Events) -> bool {
        self.0 & other.0 != 0
    }

    pub fn add(&mut self, event: Event) {
        self.0 |= event.bit();
    }

    pub fn has(self, event: Event) -> bool {
        self.0 & event.bit() != 0
    }

    pub fn union(self, other: Events) -> Events {
        Events(self.0 | other.0)
    }

    pub fn is_empty(self) -> bool {
        self.0 == 0
    }
}
