//! A step as data: what kind of step it was, who took part, what it violated, and its text. The timeline prints
//! the text with the violations appended; the report draws diagrams from the kind and the violations, so no
//! layer has to search the English for "GIVES UP".

use super::action::Action;
use super::properties::WorldProperty;
use super::state::{Key, OpRef, State};
use super::world::{Server, Transition, World, WorldOf};
use crate::check;

/// Who takes part in a step, in the order a sequence diagram draws them (left to right): clients, the network,
/// server processes, the store, the payment provider.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Party {
    Client(u8),
    Network,
    Proc(u8),
    Store,
    Provider,
}

impl Party {
    /// The header people read (C1, Network, P1, Store, Provider).
    pub fn label(self) -> String {
        match self {
            Party::Client(client) => format!("C{}", u16::from(client) + 1),
            Party::Network => "Network".to_string(),
            Party::Proc(proc) => format!("P{}", u16::from(proc) + 1),
            Party::Store => "Store".to_string(),
            Party::Provider => "Provider".to_string(),
        }
    }
}

/// What kind of step it was.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StepKind {
    /// A client sends an attempt (its first, or a retry after a timeout).
    Send { client: u8 },
    /// A client stops for good without a definite answer: attempts exhausted (queue worlds: dead-lettered).
    GiveUp { client: u8 },
    /// The network hands a message to a process or a client.
    Deliver { to: Party },
    /// A handler step of `proc` with the store, the provider, or answering into the network.
    Handler { proc: u8, with: Party },
    /// The network loses or duplicates a message.
    NetworkFault,
    /// A process crashes, or its handler fails.
    ProcessFault { proc: u8 },
    /// A key's TTL or a lease runs out.
    Expiry,
    /// A producer publishes an event again (queue worlds).
    Republish { client: u8 },
}

/// One step of a timeline.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DescribedStep {
    pub kind: StepKind,
    /// What happened, without the violations.
    pub text: String,
    /// What this step violated ("DUPLICATE EFFECT: ..."), one note each.
    pub violations: Vec<String>,
}

/// How a timeline line sets a violation off from the step's text.
const MARKER: &str = "   <-- ";

impl DescribedStep {
    pub fn new(kind: StepKind, text: String) -> DescribedStep {
        DescribedStep {
            kind,
            text,
            violations: Vec::new(),
        }
    }

    /// The timeline line: the text, then each violation after an arrow.
    pub fn line(&self) -> String {
        let mut line = self.text.clone();
        for violation in &self.violations {
            line.push_str(MARKER);
            line.push_str(violation);
        }
        line
    }
}

impl<S: Server> WorldOf<S> {
    /// `transition` as data.
    pub fn described(&self, transition: &Transition) -> DescribedStep {
        S::describe(self, transition)
    }
}

impl World {
    /// Each step of `run` (a path of this world, from `check::timeline`) as data.
    pub fn described_steps(&self, run: &check::Run<World>) -> Vec<DescribedStep> {
        run.steps
            .iter()
            .enumerate()
            .map(|(index, step)| {
                let transition = Transition {
                    before: &run.states[index],
                    action: &step.action,
                    after: &run.states[index + 1],
                    events: run.observed[index],
                };
                match self {
                    World::Http(world) => world.described(&transition),
                    World::Queue(world) => world.described(&transition),
                }
            })
            .collect()
    }

    /// What fails a liveness property in `state` (at rest): the first key stuck in_progress, or the first
    /// operation that never resolves; `None` for a safety property or a state where it holds. The short form of
    /// [`World::unresolved`]'s first item.
    pub fn liveness_culprit(&self, property: WorldProperty, state: &State) -> Option<String> {
        self.unresolved(property, state)
            .first()
            .map(|unresolved| unresolved.short())
    }

    pub(super) fn key_label(&self, key: Key) -> String {
        match self {
            World::Http(world) => world.key_name(key),
            World::Queue(world) => world.inbox_key_name(key),
        }
    }

    pub(super) fn op_label(&self, op: OpRef) -> String {
        match self {
            World::Http(_) => format!("C{}.op{}", op.client + 1, op.op + 1),
            World::Queue(world) => world.event_name(op),
        }
    }
}

/// The kind of a step of `action` by the action alone; the describers refine timeouts (retry or give up) and
/// handler steps (with whom).
pub(super) fn kind_of_action(action: &Action) -> StepKind {
    match *action {
        Action::Send { client } | Action::Timeout { client } => StepKind::Send { client },
        Action::DeliverRequest { proc, .. } => StepKind::Deliver {
            to: Party::Proc(proc),
        },
        Action::DeliverResponse { response } => StepKind::Deliver {
            to: Party::Client(response.to.client),
        },
        Action::Step { proc } => StepKind::Handler {
            proc,
            with: Party::Store,
        },
        Action::Drop { .. } | Action::Duplicate { .. } => StepKind::NetworkFault,
        Action::Crash { proc } | Action::Fail { proc } => StepKind::ProcessFault { proc },
        Action::ExpireKey { .. } | Action::ExpireLease { .. } => StepKind::Expiry,
        Action::Republish { client, .. } => StepKind::Republish { client },
    }
}
