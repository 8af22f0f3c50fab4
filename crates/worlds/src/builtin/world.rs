//! The worlds: shared parts (clients, a lossy network, server processes, the store, the ghost ledger) and a
//! server role that says what a process does with what it receives. `WorldOf<S>` is a world for role `S`; the
//! two built-in roles are `Http` (an idempotency-key handler) and `Queue` (a broker's consumer with an inbox).
//! `World` is either, for callers that take whatever a model file describes.
//!
//! Worlds are made by `WorldBuilder::build`, which validates; their fields are private, so a world cannot
//! change after validation (`to_builder` makes a changed copy).

use super::action::Action;
use super::config::{Body, ClientsConfig, Faults};
use super::described::DescribedStep;
use super::events::Events;
use super::state::{Job, Key, State};
use crate::protocol::{KeyScope, KeyStore, Lease, OnError, ProtocolConfig, Provider, QueueConfig};
use std::fmt::Debug;

/// The server-side role of a world: the handler steps that are not shared, the key a request carries, and
/// the role's own faults. Everything else (clients, network, the provider call, the effect's write, the response
/// and its check against the ghost ledger) is the shared parts', in `step.rs`.
pub trait Server: Clone + Debug + PartialEq + Eq + Send + Sync + Sized {
    /// The key that attempt `attempt` (1-based) of operation `op` of `client` carries.
    fn key_for(world: &WorldOf<Self>, client: u8, op: u8, attempt: u8) -> Key;

    /// How long an in_progress record protects its key (clients honour it as Retry-After after a 409).
    fn lease(&self) -> Lease;

    /// Whether the role's handler steps, crashes and handler errors touch only processes and the store (never
    /// a client or the network but through the shared response), so that together they may form a persistent
    /// set (`independence.rs`). A consumer's crash puts its delivery back on the network: not the queue's.
    const SERVER_STAYS_INSIDE: bool = false;

    /// How keys are scoped: symmetry relabels a per-client key along with its client.
    fn key_scope(&self) -> KeyScope;

    /// Run `job`'s next step on `proc`, for every step but the shared ones (provider call, effect write,
    /// response): the claim or the inbox look-up, the commit, a completion written after it.
    fn handler_step(
        world: &WorldOf<Self>,
        state: &mut State,
        proc: u8,
        job: Job,
        events: &mut Events,
    );

    /// The handler of `proc` fails (a 500) at a step boundary after its claim.
    fn handler_error(world: &WorldOf<Self>, state: &mut State, proc: u8);

    /// What a crash of a process running `job` adds to the shared crash (which loses the job).
    fn crashed(_world: &WorldOf<Self>, _state: &mut State, _job: &Job, _events: &mut Events) {}

    /// The role's own faults, enabled in `state`, after the shared faults and before lease expiries.
    fn extra_actions(_world: &WorldOf<Self>, _state: &State, _out: &mut Vec<Action>) {}

    /// Apply one of the role's own faults.
    fn apply_extra(
        _world: &WorldOf<Self>,
        _state: &mut State,
        action: &Action,
        _events: &mut Events,
    ) {
        unreachable!("{action:?} is not an action of this world")
    }

    /// One line for people: what a transition did.
    fn describe(world: &WorldOf<Self>, transition: &Transition) -> DescribedStep;

    /// The state as the trace explorer shows it (`view.rs`: the shared panels in the role's names).
    fn view(world: &WorldOf<Self>, state: &State) -> crate::check::StateView;
}

/// One transition, for its description: `action`, taken in `before`, led to `after` with `events`.
#[derive(Clone, Copy, Debug)]
pub struct Transition<'a> {
    pub before: &'a State,
    pub action: &'a Action,
    pub after: &'a State,
    pub events: Events,
}

impl<'a> Transition<'a> {
    /// Before, action, after, events.
    pub fn parts(&self) -> (&'a State, &'a Action, &'a State, Events) {
        (self.before, self.action, self.after, self.events)
    }
}

/// A validated world with server role `S`. Bodies are interned: operations with the same body text share a
/// body index, and `fingerprints[body]` is the (interned) fingerprint the protocol computes for it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WorldOf<S> {
    pub(super) clients: ClientsConfig,
    pub(super) processes: u8,
    pub(super) faults: Faults,
    pub(super) provider: Provider,
    pub(super) bodies: Vec<Body>,
    /// The semantic class of each body: bodies with equal normalised JSON share a class (the ghost notion of
    /// "the same body", whatever the fingerprint policy sees).
    pub(super) body_classes: Vec<u8>,
    pub(super) fingerprints: Vec<u8>,
    pub(super) server: S,
}

/// The idempotency-key handler: claim, effect, commit with the completion, answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Http {
    pub(super) protocol: ProtocolConfig,
    pub(super) key_scope: KeyScope,
    pub(super) key_store: KeyStore,
    pub(super) on_error: OnError,
}

/// A message queue (docs/src/domain.md section 5): a client is a producer together with the broker's delivery loop for
/// its event (an attempt is a delivery, a response the consumer's ack, a timeout a visibility timeout,
/// `max-attempts` the broker's maximum receive count), a server process is a consumer, a payment is the
/// consumer's effect, a record is an inbox row.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Queue {
    pub(super) config: QueueConfig,
}

pub type HttpWorld = WorldOf<Http>;
pub type QueueWorld = WorldOf<Queue>;

/// Any built-in world: what a model file describes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum World {
    Http(HttpWorld),
    Queue(QueueWorld),
}

/// `dispatch!(world, w => expr)`: `expr` on whichever world `world` is.
macro_rules! dispatch {
    ($world:expr, $inner:ident => $body:expr) => {
        match $world {
            World::Http($inner) => $body,
            World::Queue($inner) => $body,
        }
    };
}
pub(super) use dispatch;

impl<S: Server> WorldOf<S> {
    pub fn clients(&self) -> &ClientsConfig {
        &self.clients
    }

    pub fn processes(&self) -> u8 {
        self.processes
    }

    pub fn faults(&self) -> Faults {
        self.faults
    }

    pub fn provider(&self) -> Provider {
        self.provider
    }

    /// Body `index` as the model file wrote it.
    pub fn body_text(&self, index: u8) -> &str {
        &self.bodies[index as usize].text
    }

    pub fn server(&self) -> &S {
        &self.server
    }

    /// The key client `client` sends for attempt `attempt` (1-based) of operation `op`.
    pub fn key_for(&self, client: u8, op: u8, attempt: u8) -> Key {
        S::key_for(self, client, op, attempt)
    }
}

impl Http {
    pub fn protocol(&self) -> ProtocolConfig {
        self.protocol
    }

    pub fn key_scope(&self) -> KeyScope {
        self.key_scope
    }

    pub fn key_store(&self) -> KeyStore {
        self.key_store
    }

    pub fn on_error(&self) -> OnError {
        self.on_error
    }
}

impl Queue {
    pub fn config(&self) -> QueueConfig {
        self.config
    }
}

impl World {
    pub fn clients(&self) -> &ClientsConfig {
        dispatch!(self, world => world.clients())
    }

    pub fn processes(&self) -> u8 {
        dispatch!(self, world => world.processes())
    }

    pub fn faults(&self) -> Faults {
        dispatch!(self, world => world.faults())
    }

    pub fn provider(&self) -> Provider {
        dispatch!(self, world => world.provider())
    }

    pub fn body_text(&self, index: u8) -> &str {
        dispatch!(self, world => world.body_text(index))
    }

    /// The idempotency-key world, if this is one.
    pub fn http(&self) -> Option<&HttpWorld> {
        match self {
            World::Http(world) => Some(world),
            World::Queue(_) => None,
        }
    }

    /// The queue world, if this is one.
    pub fn queue(&self) -> Option<&QueueWorld> {
        match self {
            World::Http(_) => None,
            World::Queue(world) => Some(world),
        }
    }

    pub fn init_state(&self) -> State {
        dispatch!(self, world => world.init_state())
    }

    pub fn actions(&self, state: &State, out: &mut Vec<Action>) {
        dispatch!(self, world => world.actions(state, out))
    }

    pub fn apply(&self, state: &mut State, action: &Action) -> Events {
        dispatch!(self, world => world.apply(state, action))
    }

    pub fn next_state(&self, state: &State, action: &Action) -> (State, Events) {
        dispatch!(self, world => world.next_state(state, action))
    }

    pub fn is_fault(&self, state: &State, action: &Action) -> bool {
        dispatch!(self, world => world.is_fault(state, action))
    }

    pub fn key_for(&self, client: u8, op: u8, attempt: u8) -> Key {
        dispatch!(self, world => world.key_for(client, op, attempt))
    }
}
