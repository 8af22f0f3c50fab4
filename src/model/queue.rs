//! The message-queue world (DOMAIN.md section 5), as knobs on the same state machine: a client is a producer with
//! the broker's delivery loop for its event (an attempt is a delivery, a timeout a visibility timeout, a response
//! the consumer's ack), a server process is a consumer, a payment is the consumer's effect, a record is an inbox
//! row. What is new here: the producer republishing an event and the broker's producer dedup deciding whether the
//! copy becomes a new message, and the consumer's inbox placed in, after or before the effect's transaction.

use super::action::Action;
use super::config::{DedupKey, Inbox, Producer, ProducerDedup, QueueConfig, World};
use super::events::{Event, Events};
use super::state::*;
use super::step::{PRODUCER_RESTARTS, REPUBLISHES, WINDOW_EXPIRIES};
use crate::protocol::status;

/// Keys of republished copies under `dedup-key = "delivery-number"` start here, above every attempt number
/// (queue worlds allow at most this many attempts), so no copy shares a delivery number with a delivery.
pub const COPY_DELIVERY_BASE: u8 = 8;

impl World {
    /// The inbox key the consumer derives from delivery `attempt` (0 for a copy) of copy `copy` of operation
    /// `op`. Keys are small integers: only equality matters.
    pub(super) fn queue_key(
        &self,
        queue: &QueueConfig,
        client: u8,
        op: u8,
        attempt: u8,
        copy: u8,
    ) -> Key {
        let base = self.clients.operations[op as usize].key;
        let value = match queue.dedup_key {
            DedupKey::EventId => base,
            DedupKey::Offset => base.wrapping_mul(16).wrapping_add(copy),
            DedupKey::DeliveryNumber if copy == 0 => base.wrapping_mul(16).wrapping_add(attempt),
            DedupKey::DeliveryNumber => base
                .wrapping_mul(16)
                .wrapping_add(COPY_DELIVERY_BASE + copy),
        };
        Key {
            scope: client,
            value,
        }
    }

    /// The operation a republish of `client` would copy: its latest published event, if any.
    pub(super) fn republish_target(&self, state: &State, client: u8) -> Option<u8> {
        let client_state = &state.clients[client as usize];
        match client_state.phase {
            ClientPhase::Done => Some(client_state.op.saturating_sub(1)),
            _ if client_state.attempts > 0 => Some(client_state.op),
            _ => client_state.op.checked_sub(1),
        }
    }

    /// The enabled republishes (faults), after the other actions.
    pub(super) fn queue_actions(&self, queue: &QueueConfig, state: &State, out: &mut Vec<Action>) {
        if state.budgets[REPUBLISHES] == 0 {
            return;
        }
        let late_ok = state.budgets[WINDOW_EXPIRIES] > 0;
        let mut variants: Vec<(bool, bool)> = Vec::with_capacity(3);
        match queue.producer {
            // A relay republishes only after it crashed, so always from a new session.
            Producer::OutboxRelay => {
                variants.push((false, true));
                if late_ok {
                    variants.push((true, true));
                }
            }
            Producer::Client => {
                variants.push((false, false));
                if late_ok {
                    variants.push((true, false));
                }
                if state.budgets[PRODUCER_RESTARTS] > 0 {
                    variants.push((false, true));
                }
            }
        }
        for client in 0..self.clients.count {
            if self.republish_target(state, client).is_some() {
                for (late, restarted) in &variants {
                    out.push(Action::Republish {
                        client,
                        late: *late,
                        restarted: *restarted,
                    });
                }
            }
        }
    }

    /// Whether the broker accepts a republish as a new message.
    pub fn broker_accepts(queue: &QueueConfig, late: bool, restarted: bool) -> bool {
        match queue.producer_dedup {
            ProducerDedup::None => true,
            // The window is keyed by message id, whoever sends it: only time gets a copy through.
            ProducerDedup::Window => late,
            // The session dedups by (producer id, sequence), however late: only a new producer id gets through.
            ProducerDedup::Session => restarted,
        }
    }

    pub(super) fn republish(
        &self,
        queue: &QueueConfig,
        state: &mut State,
        client: u8,
        late: bool,
        restarted: bool,
        events: &mut Events,
    ) {
        state.budgets[REPUBLISHES] -= 1;
        if late {
            state.budgets[WINDOW_EXPIRIES] -= 1;
        }
        if restarted && queue.producer == Producer::Client {
            state.budgets[PRODUCER_RESTARTS] -= 1;
        }
        let Some(op) = self.republish_target(state, client) else {
            return;
        };
        if !World::broker_accepts(queue, late, restarted) {
            events.add(Event::ProducerDeduplicated);
            return;
        }
        events.add(Event::Republished);
        let client_state = &mut state.clients[client as usize];
        client_state.copies += 1;
        let copy = client_state.copies;
        let request = Request {
            from: OpRef { client, op },
            attempt: 0,
            key: self.queue_key(queue, client, op, 0, copy),
            body: self.clients.operations[op as usize].body,
            copy,
        };
        *state.network.get_or_insert(Message::Request(request), 0) += 1;
    }

    /// A consumer crashed: scenario events, and the broker's redelivery of a copy it was processing (an
    /// original's redelivery is its delivery loop's timeout).
    pub(super) fn queue_crash(&self, state: &mut State, job: &Job, events: &mut Events) {
        match job.step {
            JobStep::Provider | JobStep::Effect | JobStep::Commit => {
                events.add(Event::CrashAfterClaim)
            }
            JobStep::CompleteKv { .. } => events.add(Event::CrashBeforeAck),
            JobStep::Respond { code, .. } if code == status::CREATED => {
                events.add(Event::CrashBeforeAck)
            }
            _ => {}
        }
        if job.request.copy > 0 {
            *state
                .network
                .get_or_insert(Message::Request(job.request), 0) += 1;
        }
    }

    /// One consumer step in a queue world. Provider and effect steps are the HTTP world's.
    pub(super) fn run_queue_step(
        &self,
        queue: &QueueConfig,
        state: &mut State,
        proc: u8,
        mut job: Job,
        events: &mut Events,
    ) -> bool {
        let request = job.request;
        let inbox_row = state.store.records.contains_key(&request.key);
        match job.step {
            JobStep::Claim => {
                if queue.inbox != Inbox::None && inbox_row {
                    // Already processed (or, before-effect, at least recorded): ack without processing.
                    events.add(Event::Replay);
                    self.respond(state, proc, &request, status::OK_REPLAY, None, events);
                    return true;
                }
                if queue.inbox == Inbox::BeforeEffect {
                    self.write_inbox_row(state, &request, None);
                }
                job.step = self.first_work_step();
            }
            JobStep::Commit => {
                if queue.inbox == Inbox::SameTransaction && inbox_row {
                    // The unique key refuses our inbox row: the whole transaction, effect included, rolls back.
                    events.add(Event::InboxConflict);
                    self.respond(state, proc, &request, status::OK_REPLAY, None, events);
                    return true;
                }
                if state.effects_of(request.from) > 0 {
                    events.add(Event::DuplicateEffect);
                }
                state.store.payments.push(request.from);
                let payload = Some(state.store.payments.len() as u8);
                job.step = match queue.inbox {
                    Inbox::SameTransaction => {
                        self.write_inbox_row(state, &request, payload);
                        ack()
                    }
                    Inbox::AfterEffect => JobStep::CompleteKv { payload },
                    Inbox::None | Inbox::BeforeEffect => ack(),
                };
            }
            JobStep::CompleteKv { payload } => {
                self.write_inbox_row(state, &request, payload);
                job.step = ack();
            }
            _ => return false,
        }
        state.procs[proc as usize] = Proc::Busy(job);
        true
    }

    fn write_inbox_row(&self, state: &mut State, request: &Request, payload: Option<u8>) {
        let record = Record {
            fingerprint: self.fingerprints[request.body as usize],
            body: request.body,
            op: request.from,
            status: RecordStatus::Completed {
                code: status::CREATED,
                payload,
            },
        };
        state.store.records.insert(request.key, record);
    }
}

/// The ack a consumer sends once it processed a message (an ack carries no payload).
fn ack() -> JobStep {
    JobStep::Respond {
        code: status::CREATED,
        payload: None,
    }
}
