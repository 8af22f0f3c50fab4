//! The message-queue world's server role (docs/src/domain.md section 5): a consumer with an inbox, and the broker's
//! producer dedup. What is new against the HTTP world: the producer republishing an event (a fault), the broker
//! deciding whether the copy becomes a new message, and the consumer's inbox placed in, after or before the
//! effect's transaction. The rules themselves are `protocol::queue`'s, shared with the dedup-window experiment.

use super::action::Action;
use super::config::Fault;
use super::described::DescribedStep;
use super::events::{Event, Events};
use super::state::*;
use super::world::{Queue, QueueWorld, Server, Transition};
use crate::protocol::queue::{self, OnDelivery};
use crate::protocol::{status, KeyScope, Lease, Producer, QueueConfig};

// Indexes into `State::budgets` of the queue's own faults.
pub(super) const REPUBLISHES: usize = Fault::Republishes.index();
pub(super) const WINDOW_EXPIRIES: usize = Fault::WindowExpiries.index();
pub(super) const PRODUCER_RESTARTS: usize = Fault::ProducerRestarts.index();

impl Server for Queue {
    fn key_for(world: &QueueWorld, client: u8, op: u8, attempt: u8) -> Key {
        world.inbox_key(client, op, attempt, 0)
    }

    /// Inbox rows are written completed: nothing is ever in_progress, so there is no lease.
    #[inline]
    fn lease(&self) -> Lease {
        Lease::None
    }

    fn key_scope(&self) -> KeyScope {
        KeyScope::PerClient
    }

    fn handler_step(
        world: &QueueWorld,
        state: &mut State,
        proc: u8,
        job: Job,
        events: &mut Events,
    ) {
        match job.step {
            JobStep::Claim => world.receive_step(state, proc, job, events),
            JobStep::Commit => world.commit_step(state, proc, job, events),
            JobStep::CompleteKv { payload } => {
                world.complete_record(state, &job.request, payload);
                state.procs[proc as usize] = Proc::Busy(Job { step: ack(), ..job });
            }
            JobStep::Insert | JobStep::Provider | JobStep::Effect | JobStep::Respond { .. } => {
                unreachable!("{:?} is not a consumer's own step", job.step)
            }
        }
    }

    fn handler_error(_world: &QueueWorld, _state: &mut State, _proc: u8) {
        unreachable!("a queue world's consumer does not fail with a 500 (the builder refuses handler-errors)")
    }

    /// Scenario events, and the broker's redelivery of a copy the consumer was processing (an original's
    /// redelivery is its delivery loop's timeout).
    fn crashed(_world: &QueueWorld, state: &mut State, job: &Job, events: &mut Events) {
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

    /// The enabled republishes, after the shared faults.
    fn extra_actions(world: &QueueWorld, state: &State, out: &mut Vec<Action>) {
        if !state.budgets.has(REPUBLISHES) {
            return;
        }
        let late_ok = state.budgets.has(WINDOW_EXPIRIES);
        let mut variants: Vec<(bool, bool)> = Vec::with_capacity(3);
        match world.server.config.producer {
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
                if state.budgets.has(PRODUCER_RESTARTS) {
                    variants.push((false, true));
                }
            }
        }
        for client in 0..world.clients.count {
            if republish_target(state, client).is_some() {
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

    fn apply_extra(world: &QueueWorld, state: &mut State, action: &Action, events: &mut Events) {
        let Action::Republish {
            client,
            late,
            restarted,
        } = *action
        else {
            unreachable!("{action:?} is not a queue world's own action")
        };
        world.republish(state, client, late, restarted, events);
    }

    fn view(world: &QueueWorld, state: &State) -> crate::check::StateView {
        world.state_view(state)
    }

    fn describe(world: &QueueWorld, transition: &Transition) -> DescribedStep {
        world.describe_queue(transition)
    }
}

/// The operation a republish of `client` would copy: its latest published event, if any.
pub(super) fn republish_target(state: &State, client: u8) -> Option<u8> {
    let client_state = &state.clients[client as usize];
    match client_state.phase {
        ClientPhase::Done => Some(client_state.op.saturating_sub(1)),
        _ if client_state.attempts > 0 => Some(client_state.op),
        _ => client_state.op.checked_sub(1),
    }
}

impl QueueWorld {
    fn config(&self) -> &QueueConfig {
        &self.server.config
    }

    /// The inbox key the consumer derives from delivery `attempt` (0 for a copy) of copy `copy` of operation
    /// `op` of `client`.
    pub(super) fn inbox_key(&self, client: u8, op: u8, attempt: u8, copy: u8) -> Key {
        let event = self.clients.operations[op as usize].key;
        Key {
            scope: client,
            value: queue::inbox_key(self.config().dedup_key, event, attempt, copy),
        }
    }

    fn republish(
        &self,
        state: &mut State,
        client: u8,
        late: bool,
        restarted: bool,
        events: &mut Events,
    ) {
        state.budgets.spend(REPUBLISHES);
        if late {
            state.budgets.spend(WINDOW_EXPIRIES);
        }
        if restarted && self.config().producer == Producer::Client {
            state.budgets.spend(PRODUCER_RESTARTS);
        }
        let Some(op) = republish_target(state, client) else {
            return;
        };
        if !queue::broker_accepts(self.config().producer_dedup, late, restarted) {
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
            key: self.inbox_key(client, op, 0, copy),
            body: self.clients.operations[op as usize].body,
            copy,
        };
        *state.network.get_or_insert(Message::Request(request), 0) += 1;
    }

    /// The consumer receives a delivery: it looks up the inbox row, then acks without processing, or commits
    /// what its inbox placement commits before the effect and starts on the effect.
    fn receive_step(&self, state: &mut State, proc: u8, mut job: Job, events: &mut Events) {
        let request = job.request;
        let inbox = self.config().inbox;
        let row_found = state.store.records.contains_key(&request.key);
        if queue::on_delivery(inbox, row_found) == OnDelivery::AckWithoutProcessing {
            events.add(Event::Replay);
            self.respond(state, proc, &request, status::OK_REPLAY, None, events);
            return;
        }
        for commit in inbox.commits().iter().take_while(|commit| !commit.effect) {
            debug_assert!(
                commit.inbox_row,
                "a commit before the effect only holds the inbox row"
            );
            self.complete_record(state, &request, None);
        }
        job.step = self.first_work_step();
        state.procs[proc as usize] = Proc::Busy(job);
    }

    /// The effect's commit, with the inbox row when they share a transaction; a row committed after the
    /// effect is a later step (`CompleteKv`), where a crash can split the two.
    fn commit_step(&self, state: &mut State, proc: u8, mut job: Job, events: &mut Events) {
        let request = job.request;
        let commits = self.config().inbox.commits();
        let at = commits
            .iter()
            .position(|commit| commit.effect)
            .expect("every inbox placement commits the effect");
        let commit = commits[at];
        if commit.refused(state.store.records.contains_key(&request.key)) {
            // The unique key refuses our inbox row: the whole transaction, effect included, rolls back.
            events.add(Event::InboxConflict);
            self.respond(state, proc, &request, status::OK_REPLAY, None, events);
            return;
        }
        let payload = self.commit_effect(state, request.from, events);
        if commit.inbox_row {
            self.complete_record(state, &request, payload);
        }
        job.step = match commits.get(at + 1) {
            Some(later) => {
                debug_assert!(later.inbox_row && !later.effect);
                JobStep::CompleteKv { payload }
            }
            None => ack(),
        };
        state.procs[proc as usize] = Proc::Busy(job);
    }
}

/// The ack a consumer sends once it processed a message (an ack carries no payload).
fn ack() -> JobStep {
    JobStep::Respond {
        code: status::CREATED,
        payload: None,
    }
}
