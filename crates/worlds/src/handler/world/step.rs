//! The handler world's transitions: which actions are enabled, and what each does.

use super::requests::Reaction;
use super::*;
use crate::builtin::{Event, Events};
use crate::handler::api::{Handler, Worker};
use crate::handler::calls::{Answer, Call};
use crate::handler::replay::Next;
use crate::handler::sim::NO_OPERATION;
use crate::protocol::status;

impl<H: Handler, W: Worker> HandlerWorld<H, W> {
    /// Every enabled action, in a fixed order: clients, deliveries, process steps, then faults.
    pub(super) fn enabled(&self, state: &HandlerState, out: &mut Vec<HandlerAction>) {
        // Early timeouts pushed: the only faults before `enabled_faults` (at rest: nothing else, `time`).
        let mut early = 0;
        for (index, client) in state.clients.iter().enumerate() {
            let client_id = index as u8;
            match client.phase {
                Phase::Ready { .. } => out.push(HandlerAction::Send { client: client_id }),
                Phase::Waiting => {
                    let alive = self.attempt_alive(state, client_id);
                    if !alive || state.budgets.has(EARLY_TIMEOUTS_AT) {
                        early += usize::from(alive);
                        out.push(HandlerAction::Timeout { client: client_id })
                    }
                }
                _ => {}
            }
        }
        let servers = &state.procs[..self.processes as usize];
        let idle = servers.iter().position(Option::is_none);
        for message in state.network.keys() {
            match message {
                Message::Request { .. } => {
                    if let Some(proc) = idle {
                        out.push(HandlerAction::DeliverRequest {
                            message: message.clone(),
                            proc: proc as u8,
                        });
                    }
                }
                Message::Response { .. } => out.push(HandlerAction::DeliverResponse {
                    message: message.clone(),
                }),
            }
        }
        for (index, job) in state.procs.iter().enumerate() {
            if let Some(job) = job {
                let ready = match job.next() {
                    Next::Call(call) => state.store.enabled(index as u8, call, job.txn.as_ref()),
                    Next::Reply(_) => true,
                };
                if ready {
                    out.push(HandlerAction::Step {
                        proc: index as u8,
                        made: job.prefix.made(),
                    });
                }
            }
        }
        for (worker, wake) in state.wake.iter().enumerate() {
            if *wake && state.procs[self.processes as usize + worker].is_none() {
                out.push(HandlerAction::Wake {
                    worker: worker as u8,
                });
            }
        }
        // Every action pushed so far, bar early timeouts, is a non-fault one.
        if self.later_enabled(state, out.len() > early) {
            out.push(HandlerAction::Later);
        }
        self.enabled_faults(state, out);
    }

    fn enabled_faults(&self, state: &HandlerState, out: &mut Vec<HandlerAction>) {
        for message in state.network.keys() {
            let (drop, duplicate) = match message {
                Message::Request { .. } => (DROP_REQUESTS_AT, DUPLICATE_REQUESTS_AT),
                Message::Response { .. } => (DROP_RESPONSES_AT, usize::MAX),
            };
            if state.budgets.has(drop) {
                out.push(HandlerAction::Drop {
                    message: message.clone(),
                });
            }
            if duplicate != usize::MAX && state.budgets.has(duplicate) {
                out.push(HandlerAction::Duplicate {
                    message: message.clone(),
                });
            }
        }
        let busy = state.procs.iter().any(Option::is_some);
        if state.budgets.has(CRASHES_AT) {
            for (index, job) in state.procs.iter().enumerate() {
                if job.is_some() {
                    out.push(HandlerAction::Crash { proc: index as u8 });
                }
            }
        }
        if busy && state.budgets.has(PAUSES_AT) {
            out.push(HandlerAction::Pause);
        }
        if state.budgets.has(CALL_FAILURES_AT) {
            for (index, job) in state.procs.iter().enumerate() {
                if matches!(job, Some(job) if matches!(job.next(), Next::Call(_))) {
                    out.push(HandlerAction::Fail { proc: index as u8 });
                }
            }
        }
        self.enabled_call_faults(state, out);
    }

    /// Whether the client's current attempt is still on its way (request, handler, or response).
    pub(super) fn attempt_alive(&self, state: &HandlerState, client: u8) -> bool {
        let current = &state.clients[client as usize];
        let op = Op {
            client,
            op: current.op,
        };
        let attempt = current.attempts;
        let in_network = state.network.keys().any(|message| match message {
            Message::Request { from, attempt: a } => *from == op && *a == attempt,
            Message::Response { to, attempt: a, .. } => *to == op && *a == attempt,
        });
        let in_server = state
            .procs
            .iter()
            .flatten()
            .any(|job| job.task.serving() == Some((op, attempt)));
        in_network || in_server
    }

    /// Apply an enabled action in place; with workers, wake them all if it changed what they could see.
    pub(super) fn step(&self, state: &mut HandlerState, action: &HandlerAction) -> Events {
        if self.workers == 0 {
            return self.step_alone(state, action);
        }
        let before = state.store.clone();
        let events = self.step_alone(state, action);
        if state.store.differs(&before) {
            state.wake.iter_mut().for_each(|wake| *wake = true);
        }
        events
    }

    fn step_alone(&self, state: &mut HandlerState, action: &HandlerAction) -> Events {
        let mut events = Events::default();
        match action {
            HandlerAction::Send { client } => self.send(state, *client, &mut events),
            HandlerAction::Timeout { client } => {
                if self.attempt_alive(state, *client) {
                    state.budgets.spend(EARLY_TIMEOUTS_AT);
                }
                if state.clients[*client as usize].attempts < self.attempts_max {
                    events.add(Event::RetryAfterTimeout);
                    self.send(state, *client, &mut events);
                } else if self.stays_patient(state, *client) {
                    state.clients[*client as usize].phase = Phase::Patient;
                } else {
                    finish(state, *client, OpOutcome::GaveUp, self.bodies.len());
                }
            }
            HandlerAction::DeliverRequest { message, proc } => {
                self.deliver(state, message, *proc, &mut events)
            }
            HandlerAction::DeliverResponse { message } => {
                take(state, message);
                self.receive(state, message, &mut events);
            }
            HandlerAction::Step { proc, .. } => self.run_call(state, *proc, &mut events),
            HandlerAction::Wake { worker } => self.wake(state, *worker),
            HandlerAction::Drop { message } => {
                take(state, message);
                let (budget, event) = match message {
                    Message::Request { .. } => (DROP_REQUESTS_AT, Event::LostRequest),
                    Message::Response { .. } => (DROP_RESPONSES_AT, Event::LostResponse),
                };
                state.budgets.spend(budget);
                events.add(event);
            }
            HandlerAction::Duplicate { message } => {
                *state.network.entry(message.clone()).or_insert(0) += 1;
                state.budgets.spend(DUPLICATE_REQUESTS_AT);
                events.add(Event::DuplicatedRequest);
            }
            HandlerAction::Crash { proc } => self.crash(state, *proc, &mut events),
            HandlerAction::Pause => {
                state.budgets.spend(PAUSES_AT);
                state.store.now_ms += self.pause_ms;
                events.add(Event::SlowOwner);
            }
            HandlerAction::Fail { proc } => {
                state.budgets.spend(CALL_FAILURES_AT);
                events.add(Event::HandlerError);
                self.fail_call(state, *proc);
            }
            HandlerAction::Later => self.later(state),
            HandlerAction::CallFault { proc, fault } => {
                self.call_fault(state, *proc, *fault, &mut events)
            }
        }
        events
    }

    /// A worker begins a run: it has seen what there is to see until something changes again.
    fn wake(&self, state: &mut HandlerState, worker: u8) {
        state.wake[worker as usize] = false;
        let task = Task::Work {
            ghost: NO_OPERATION,
        };
        let prefix = self.start(&task, state);
        state.procs[(self.processes + worker) as usize] = Some(Job {
            task,
            prefix,
            txn: None,
        });
    }

    /// A process dies with its open transaction; a worker is restarted (it will run again).
    fn crash(&self, state: &mut HandlerState, proc: u8, events: &mut Events) {
        state.budgets.spend(CRASHES_AT);
        let job = state.procs[proc as usize].take().expect("a busy process");
        if self.is_worker(proc) {
            state.wake[(proc - self.processes) as usize] = true;
        } else if job.answered().iter().any(|(call, _)| *call == Call::Commit) {
            events.add(Event::CrashAfterClaim);
        }
        state.store.crashed(proc);
    }

    /// The process's next call fails without being made; a failed commit loses the transaction.
    pub(in crate::handler) fn fail_call(&self, state: &mut HandlerState, proc: u8) {
        let mut job = state.procs[proc as usize].take().expect("a busy process");
        let Next::Call(call) = job.next() else {
            unreachable!("a process waiting on a call")
        };
        if *call == Call::Commit && job.txn.take().is_some() {
            state.store.crashed(proc);
        }
        job.prefix = self.next(
            &job.task,
            &job.prefix,
            crate::handler::replay::refused("injected failure"),
        );
        state.procs[proc as usize] = Some(job);
    }

    fn send(&self, state: &mut HandlerState, client: u8, events: &mut Events) {
        // Leaving an attempt closes its connection: late responses to it can no longer arrive.
        state.network.retain(
            |message, _| !matches!(message, Message::Response { to, .. } if to.client == client),
        );
        let current = &mut state.clients[client as usize];
        if let (
            Phase::Ready {
                after_conflict: true,
            },
            Some(wait),
        ) = (current.phase, self.retry_after_ms)
        {
            state.store.now_ms += wait;
        }
        current.attempts += 1;
        current.phase = Phase::Waiting;
        let (from, attempt) = (
            Op {
                client,
                op: current.op,
            },
            current.attempts,
        );
        *state
            .network
            .entry(Message::Request { from, attempt })
            .or_insert(0) += 1;
        if self.request_changed(state, from, attempt) {
            events.add(Event::RequestChanged);
        }
    }

    fn deliver(&self, state: &mut HandlerState, message: &Message, proc: u8, events: &mut Events) {
        take(state, message);
        let Message::Request { from, attempt } = *message else {
            unreachable!("a request")
        };
        let serving = |job: &Job| job.task.serving().is_some_and(|(op, _)| op == from);
        if state.procs.iter().flatten().any(serving) {
            events.add(Event::ParallelRetry);
        }
        let task = Task::Serve { from, attempt };
        let prefix = self.start(&task, state);
        state.procs[proc as usize] = Some(Job {
            task,
            prefix,
            txn: None,
        });
    }

    /// The process makes its next store call, or sends its reply (a worker: ends its run).
    pub(in crate::handler) fn run_call(
        &self,
        state: &mut HandlerState,
        proc: u8,
        events: &mut Events,
    ) {
        let mut job = state.procs[proc as usize].take().expect("a busy process");
        let op = job.task.ghost();
        let prefix = job.prefix.clone();
        match prefix.next() {
            Next::Call(call) => {
                let (effects, charges) = (state.store.effects_of(op), state.store.charges_of(op));
                let calls = state.store.calls_of(op, call);
                let answer = state.store.execute(proc, op, call, &mut job.txn);
                if op != NO_OPERATION {
                    if state.store.effects_of(op) > effects.max(1)
                        || state.store.charges_of(op) > charges.max(1)
                        || state.store.calls_of(op, call) > calls.max(1)
                    {
                        events.add(Event::DuplicateEffect);
                    }
                    // Called again for the operation, whether or not the provider charged again.
                    if (matches!(call, Call::ProviderCharge { .. }) && charges > 0) || calls > 0 {
                        events.add(Event::ProviderRetried);
                    }
                }
                adopt(state, &mut job, call, &answer);
                job.prefix = self.next(&job.task, &prefix, answer);
                state.procs[proc as usize] = Some(job);
            }
            Next::Reply(reply) => {
                // A handler that returns with a transaction open: it is rolled back (as a connection would).
                if job.txn.is_some() {
                    state.store.crashed(proc);
                }
                if job.task.serving().is_some() {
                    self.respond(state, &job, reply.clone(), events);
                }
            }
        }
    }

    /// Check a reply against the ghost ledger and send it (to a client still waiting on that attempt).
    fn respond(
        &self,
        state: &mut HandlerState,
        job: &Job,
        reply: super::Reply,
        events: &mut Events,
    ) {
        let (from, attempt) = job.task.serving().expect("a server process");
        if status::is_success(reply.status) {
            let ghost = from.ghost();
            let calls = state.store.calls.iter().filter(|(_, _, op)| *op == ghost);
            if state.store.effects_of(ghost) + state.store.charges_of(ghost) + calls.count() == 0 {
                events.add(Event::SuccessWithoutEffect);
            }
            match state.first_success.get(&from) {
                Some(first) if first.body != reply.body => events.add(Event::InconsistentReplay),
                Some(_) => {}
                None => {
                    state.first_success.insert(from, reply.clone());
                }
            }
        }
        match reply.status {
            status::OK_REPLAY => events.add(Event::Replay),
            status::CONFLICT_IN_PROGRESS => events.add(Event::Conflict),
            _ => {}
        }
        let client = &state.clients[from.client as usize];
        let current =
            client.phase == Phase::Waiting && client.op == from.op && client.attempts == attempt;
        if current {
            let message = Message::Response {
                to: from,
                attempt,
                reply,
            };
            *state.network.entry(message).or_insert(0) += 1;
        }
    }

    fn receive(&self, state: &mut HandlerState, message: &Message, events: &mut Events) {
        let Message::Response { to, attempt, reply } = message else {
            unreachable!("a response")
        };
        let client = &state.clients[to.client as usize];
        if !(client.phase == Phase::Waiting && client.op == to.op && client.attempts == *attempt) {
            return; // an answer to an abandoned attempt
        }
        let operations = self.bodies.len();
        // How the client reacts: `requests` (2xx succeeds, 409/429/5xx retried, by default).
        match self.reaction(reply.status) {
            Reaction::Succeed => finish(
                state,
                to.client,
                OpOutcome::Succeeded(reply.clone()),
                operations,
            ),
            Reaction::Fail => finish(
                state,
                to.client,
                OpOutcome::Failed(reply.status),
                operations,
            ),
            Reaction::Retry if client.attempts < self.attempts_max => {
                self.retrying(state, *to, reply.status, events);
                let after_conflict = reply.status == status::CONFLICT_IN_PROGRESS;
                state.clients[to.client as usize].phase = Phase::Ready { after_conflict };
            }
            Reaction::Retry
                if reply.status == status::CONFLICT_IN_PROGRESS
                    && self.stays_patient(state, to.client) =>
            {
                state.clients[to.client as usize].phase = Phase::Patient;
            }
            Reaction::Retry => finish(state, to.client, OpOutcome::GaveUp, operations),
        }
    }
}

/// A worker that read a record works, from then on, for that record's operation (the ghost ledger counts its
/// effects there).
fn adopt(state: &HandlerState, job: &mut Job, call: &Call, answer: &Answer) {
    if let (Task::Work { ghost }, Call::Get { table, key }, Answer::Row(Some(_))) =
        (&mut job.task, call, answer)
    {
        if let Some((_, owner)) = state.store.row(job.txn.as_ref(), table, key) {
            *ghost = owner;
        }
    }
}

fn take(state: &mut HandlerState, message: &Message) {
    if let Some(count) = state.network.get_mut(message) {
        *count -= 1;
        if *count == 0 {
            state.network.remove(message);
        }
    }
}

fn finish(state: &mut HandlerState, client: u8, outcome: OpOutcome, operations: usize) {
    state.network.retain(
        |message, _| !matches!(message, Message::Response { to, .. } if to.client == client),
    );
    let current = &mut state.clients[client as usize];
    current.outcomes[current.op as usize] = outcome;
    current.op += 1;
    current.attempts = 0;
    current.phase = if current.op as usize == operations {
        Phase::Done
    } else {
        Phase::Ready {
            after_conflict: false,
        }
    };
}

// Indexes into `HandlerState::budgets`.
pub(super) const DROP_REQUESTS_AT: usize = HandlerFault::DropRequests as usize;
pub(super) const DROP_RESPONSES_AT: usize = HandlerFault::DropResponses as usize;
pub(super) const DUPLICATE_REQUESTS_AT: usize = HandlerFault::DuplicateRequests as usize;
pub(super) const CRASHES_AT: usize = HandlerFault::Crashes as usize;
pub(super) const EARLY_TIMEOUTS_AT: usize = HandlerFault::EarlyTimeouts as usize;
pub(super) const PAUSES_AT: usize = HandlerFault::Pauses as usize;
pub(super) const CALL_FAILURES_AT: usize = HandlerFault::CallFailures as usize;
