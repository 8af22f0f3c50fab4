//! Timeline text for queue worlds: the same transitions as the HTTP world, in a broker's vocabulary (producer,
//! delivery, visibility timeout, consumer, inbox row, ack, dead-letter queue).

use super::action::Action;
use super::described::{kind_of_action, DescribedStep, Party, StepKind};
use super::events::{Event, Events};
use super::queue::republish_target;
use super::state::*;
use super::step::EARLY_TIMEOUTS;
use super::world::{QueueWorld, Transition};
use crate::protocol::{DedupKey, Inbox, Producer, ProducerDedup, Provider};

impl QueueWorld {
    pub(super) fn event_name(&self, op: OpRef) -> String {
        if self.clients.operations.len() == 1 {
            format!("E{}", op.client + 1)
        } else {
            format!("E{}.{}", op.client + 1, op.op + 1)
        }
    }

    pub(super) fn delivery_name(&self, request: &Request) -> String {
        if request.copy == 0 {
            format!(
                "{} delivery {}",
                self.event_name(request.from),
                request.attempt
            )
        } else {
            format!(
                "{} copy {} (republished)",
                self.event_name(request.from),
                request.copy
            )
        }
    }

    pub(super) fn inbox_key_name(&self, key: Key) -> String {
        match self.server.config.dedup_key {
            DedupKey::EventId if self.clients.operations.len() == 1 => {
                format!("event id E{}", key.scope + 1)
            }
            DedupKey::EventId => format!("event id E{}.{}", key.scope + 1, key.value),
            DedupKey::Offset => format!("offset {}", key.value),
            DedupKey::DeliveryNumber => format!("delivery tag {}", key.value),
        }
    }

    /// Describe a transition of a queue world.
    pub(super) fn describe_queue(&self, transition: &Transition) -> DescribedStep {
        let (before, action, after, events) = transition.parts();
        let mut step = match *action {
            Action::Step { proc } => self.describe_queue_step(transition, proc),
            Action::Timeout { client } if !events.has(Event::RetryAfterTimeout) => {
                DescribedStep::new(
                    StepKind::GiveUp { client },
                    self.queue_action_text(transition),
                )
            }
            _ => DescribedStep::new(kind_of_action(action), self.queue_action_text(transition)),
        };
        step.violations = self.queue_violations(before, after, events);
        step
    }

    /// The text of a step that is not a consumer's handler step.
    fn queue_action_text(&self, transition: &Transition) -> String {
        let (before, action, after, events) = transition.parts();
        match *action {
            Action::Send { client } => {
                let state = &after.clients[client as usize];
                let (op, body) = self.sent(client, state);
                format!(
                    "producer C{} publishes {} {}: the broker makes it visible (delivery {})",
                    client + 1,
                    self.event_name(op),
                    body,
                    state.attempts
                )
            }
            Action::Timeout { client } => {
                let was = &before.clients[client as usize];
                let op = OpRef { client, op: was.op };
                let slow =
                    if after.budgets.left(EARLY_TIMEOUTS) < before.budgets.left(EARLY_TIMEOUTS) {
                        " while the consumer is only slow"
                    } else {
                        ""
                    };
                if events.has(Event::RetryAfterTimeout) {
                    format!(
                        "visibility timeout of {} delivery {} EXPIRES{slow} (no ack): the broker redelivers it as delivery {}",
                        self.event_name(op),
                        was.attempts,
                        was.attempts + 1
                    )
                } else {
                    format!(
                        "visibility timeout of {} delivery {} expires{slow}, maximum receive count reached: moved to the DEAD-LETTER QUEUE",
                        self.event_name(op),
                        was.attempts
                    )
                }
            }
            Action::DeliverRequest { request, proc } => format!(
                "consumer P{} receives {} ({})",
                proc + 1,
                self.delivery_name(&request),
                self.inbox_key_name(request.key)
            ),
            Action::DeliverResponse { response } => {
                let was = &before.clients[response.to.client as usize];
                let now = &after.clients[response.to.client as usize];
                let reaction = if was == now {
                    "ignored (that delivery was already given up on)"
                } else {
                    "message deleted"
                };
                format!(
                    "the broker receives the ack for {} delivery {}: {reaction}",
                    self.event_name(response.to),
                    response.attempt
                )
            }
            Action::Step { proc } => self.describe_queue_step(transition, proc).text,
            _ => self.queue_fault_text(transition),
        }
    }

    /// The text of a fault or an expiry, in the broker's words.
    fn queue_fault_text(&self, transition: &Transition) -> String {
        let (before, _, after, events) = transition.parts();
        match *transition.action {
            Action::Drop { message } => match message {
                Message::Request(request) => format!(
                    "{} is LOST on its way to the consumer (the broker waits for the visibility timeout)",
                    self.delivery_name(&request)
                ),
                Message::Response(response) => format!(
                    "the ack for {} delivery {} is LOST",
                    self.event_name(response.to),
                    response.attempt
                ),
            },
            Action::Duplicate { message } => match message {
                Message::Request(request) => {
                    format!("the broker delivers {} TWICE", self.delivery_name(&request))
                }
                Message::Response(response) => format!(
                    "the ack for {} delivery {} is duplicated",
                    self.event_name(response.to),
                    response.attempt
                ),
            },
            Action::Crash { proc } => self.queue_crash_text(before, proc),
            Action::Republish {
                client,
                late,
                restarted,
            } => self.describe_republish(before, after, client, late, restarted, events),
            Action::ExpireKey { key } => format!(
                "the inbox row for {} is PRUNED (its retention is shorter than redelivery)",
                self.inbox_key_name(key)
            ),
            Action::Fail { proc } => format!("consumer P{} fails", proc + 1),
            Action::ExpireLease { key } => {
                format!("lease on {} expires", self.inbox_key_name(key))
            }
            // The caller describes every other action itself.
            _ => unreachable!("not a fault or an expiry: {:?}", transition.action),
        }
    }

    /// A consumer crash: where in its handler, and whether the broker will redeliver a republished copy.
    fn queue_crash_text(&self, before: &State, proc: u8) -> String {
        let queue = self.server.config;
        let (what, copy) = match before.procs[proc as usize] {
            Proc::Busy(job) => {
                let what = match job.step {
                    JobStep::Claim => " before reading the inbox",
                    JobStep::Provider | JobStep::Effect if queue.inbox == Inbox::BeforeEffect => {
                        " after committing the inbox row, BEFORE the effect"
                    }
                    JobStep::Provider => " before the external call",
                    JobStep::Effect => " before opening the effect's transaction",
                    JobStep::Commit => " before committing (the open transaction is lost)",
                    JobStep::CompleteKv { .. } => {
                        " after committing the effect, BEFORE writing the inbox row"
                    }
                    JobStep::Respond { .. } => " after committing, before acking",
                    JobStep::Insert => "",
                };
                let copy = if job.request.copy > 0 {
                    format!("; the broker will redeliver copy {}", job.request.copy)
                } else {
                    String::new()
                };
                (what, copy)
            }
            Proc::Idle => ("", String::new()),
        };
        format!(
            "consumer P{} CRASHES{what} and restarts empty{copy}",
            proc + 1
        )
    }

    /// The violations a step of a queue world shows, one note each.
    fn queue_violations(&self, before: &State, after: &State, events: Events) -> Vec<String> {
        let duplicate = if self.provider != Provider::None
            && after.store.provider_charges.len() > before.store.provider_charges.len()
        {
            "DUPLICATE EFFECT: the external call for this event happened twice"
        } else {
            "DUPLICATE EFFECT: this event has now been processed twice"
        };
        super::describe::violation_notes(events, duplicate, &QUEUE_VIOLATIONS)
    }

    fn describe_republish(
        &self,
        before: &State,
        after: &State,
        client: u8,
        late: bool,
        restarted: bool,
        events: Events,
    ) -> String {
        let op = OpRef {
            client,
            op: republish_target(before, client).unwrap_or(0),
        };
        let queue = self.server.config;
        let event = self.event_name(op);
        let late_text = if late {
            " AFTER the broker's dedup window"
        } else {
            ""
        };
        let cause = match (queue.producer, restarted) {
            (Producer::OutboxRelay, _) => format!(
                "the outbox relay CRASHES after publishing {event} and before marking its outbox row sent; restarted, it publishes the row again{late_text}"
            ),
            (Producer::Client, true) => format!(
                "producer C{} RESTARTS (a new session) and publishes {event} again{late_text}",
                client + 1
            ),
            (Producer::Client, false) => format!(
                "producer C{} lost its publish ack and publishes {event} again{late_text}",
                client + 1
            ),
        };
        if events.has(Event::ProducerDeduplicated) {
            let why = match queue.producer_dedup {
                ProducerDedup::Window => "the dedup window recognises the message id and drops it",
                ProducerDedup::Session => {
                    "the producer session recognises the sequence number and drops it"
                }
                ProducerDedup::None => "dropped",
            };
            format!("{cause}: {why}")
        } else {
            let copy = after.clients[client as usize].copies;
            let key = self.inbox_key(client, op.op, 0, copy);
            let reason = match queue.producer_dedup {
                ProducerDedup::None => "the broker has no producer dedup",
                ProducerDedup::Window => "the window no longer holds its id",
                ProducerDedup::Session => "a new session has new sequence numbers",
            };
            format!(
                "{cause}: {reason}, so it becomes a NEW message, copy {copy} ({})",
                self.inbox_key_name(key)
            )
        }
    }

    /// A consumer's handler step: with whom it talks (the inbox and effect tables, the external call, or the
    /// broker when it acks), and what it did.
    fn describe_queue_step(&self, transition: &Transition, proc: u8) -> DescribedStep {
        let (_, _, _, events) = transition.parts();
        let Proc::Busy(job) = transition.before.procs[proc as usize] else {
            let kind = StepKind::Handler {
                proc,
                with: Party::Store,
            };
            return DescribedStep::new(kind, format!("P{} has nothing to do", proc + 1));
        };
        let with = match job.step {
            JobStep::Claim if events.has(Event::Replay) => Party::Network,
            JobStep::Respond { .. } => Party::Network,
            JobStep::Provider => Party::Provider,
            _ => Party::Store,
        };
        let text = self.queue_step_text(transition, proc, job);
        DescribedStep::new(StepKind::Handler { proc, with }, text)
    }

    fn queue_step_text(&self, transition: &Transition, proc: u8, job: Job) -> String {
        let (before, _, after, events) = transition.parts();
        let who = format!("P{}", proc + 1);
        let request = job.request;
        let key = self.inbox_key_name(request.key);
        let event = self.event_name(request.from);
        let queue = self.server.config;
        let acked = || self.ack_text(transition, &request);
        let effect_number = Payment {
            op: job.request.from,
            execution: after.effects_of(job.request.from) as u8,
        };
        match job.step {
            JobStep::Claim if events.has(Event::Replay) => {
                format!(
                    "{who} finds the inbox row for {key}: already processed, {} without processing",
                    acked()
                )
            }
            JobStep::Claim => match queue.inbox {
                Inbox::None => format!("{who} starts processing {event} (no inbox)"),
                Inbox::BeforeEffect => format!(
                    "{who} inserts and commits the inbox row for {key}, BEFORE the effect"
                ),
                _ => format!("{who} finds no inbox row for {key}: processes {event}"),
            },
            JobStep::Provider => {
                if after.store.provider_charges.len() > before.store.provider_charges.len() {
                    format!("{who} makes the external call for {event} (an e-mail): SENT, no transaction can take it back")
                } else {
                    format!("{who} makes the external call for {event}: the provider recognises its idempotency key, nothing sent again")
                }
            }
            JobStep::Effect => {
                format!("{who} begins the transaction and applies {event}'s effect (not committed)")
            }
            JobStep::Commit if events.has(Event::InboxConflict) => format!(
                "{who} commits: its inbox row for {key} violates the unique key (another consumer committed {event}), ROLLED BACK with the effect; {}",
                acked()
            ),
            JobStep::Commit => match queue.inbox {
                Inbox::SameTransaction => format!(
                    "{who} commits effect {effect_number} and the inbox row for {key} in one transaction"
                ),
                Inbox::AfterEffect => format!(
                    "{who} commits effect {effect_number} (the inbox row is a separate, later transaction)"
                ),
                Inbox::None => format!("{who} commits effect {effect_number} (no inbox)"),
                Inbox::BeforeEffect => format!("{who} commits effect {effect_number}"),
            },
            JobStep::CompleteKv { .. } => format!(
                "{who} writes the inbox row for {key} (a second transaction, after the effect)"
            ),
            JobStep::Respond { .. } => format!("{who} {}", acked()),
            JobStep::Insert => format!("{who} inserts"),
        }
    }

    /// A consumer acks `request`'s delivery: a copy's ack deletes it; an ack after the broker redelivered
    /// (no response of this attempt newly sent) is too late.
    fn ack_text(&self, transition: &Transition, request: &Request) -> String {
        let (before, _, after, _) = transition.parts();
        let sent = after.network.keys().any(|message| {
            matches!(message, Message::Response(response)
                if response.to == request.from && response.attempt == request.attempt
                    && !before.network.contains_key(message))
        });
        if request.copy > 0 {
            "acks (the copy is deleted)".to_string()
        } else if sent {
            format!("acks {}", self.delivery_name(request))
        } else {
            format!(
                "acks {}, too late: the broker already redelivered it",
                self.delivery_name(request)
            )
        }
    }
}

/// What a queue world's violations say, but for the duplicate effect (its text depends on the step).
const QUEUE_VIOLATIONS: [(Event, &str); 2] = [
    (
        Event::SuccessWithoutEffect,
        "LOST EFFECT: acked, but this event was never processed",
    ),
    (
        Event::InconsistentReplay,
        "INCONSISTENT REPLAY: another ack for this event said otherwise",
    ),
];
