//! The shared parts' transition relation: which actions are enabled, and what each one does, for clients, the
//! lossy network, server processes (scheduling, crashes, the provider call, the effect's write, the response)
//! and the ghost ledger. What a process does at its other handler steps is its server role's (`Server`).

use super::action::Action;
use super::budget::Budgets;
use super::config::Fault;
use super::events::{Event, Events};
use super::sorted_map::SortedMap;
use super::state::*;
use super::world::{Server, WorldOf};
use crate::protocol::{status, Provider};
use smallvec::smallvec;

// Indexes into `State::budgets`. The queue world's own are in `queue.rs`.
const DROP_REQUESTS: usize = Fault::DropRequests.index();
pub(super) const DROP_RESPONSES: usize = Fault::DropResponses.index();
const DUPLICATE_REQUESTS: usize = Fault::DuplicateRequests.index();
pub(super) const DUPLICATE_RESPONSES: usize = Fault::DuplicateResponses.index();
pub(super) const CRASHES: usize = Fault::Crashes.index();
const PAUSES: usize = Fault::Pauses.index();
pub(super) const EARLY_TIMEOUTS: usize = Fault::EarlyTimeouts.index();
pub(super) const HANDLER_ERRORS: usize = Fault::HandlerErrors.index();
const KEY_EXPIRIES: usize = Fault::KeyExpiries.index();

impl<S: Server> WorldOf<S> {
    pub fn init_state(&self) -> State {
        let clients = (0..self.clients.count)
            .map(|_| ClientState {
                op: 0,
                attempts: 0,
                charged: 0,
                phase: ClientPhase::Ready {
                    after_conflict: false,
                },
                outcomes: smallvec![OpOutcome::Pending; self.clients.operations.len()],
                copies: 0,
            })
            .collect();
        State {
            clients,
            network: SortedMap::new(),
            procs: smallvec![Proc::Idle; self.processes as usize],
            store: Store::default(),
            first_success: SortedMap::new(),
            budgets: Budgets::new(self.faults.as_array()),
        }
    }

    /// Every enabled action, in a fixed order: clients, deliveries, process steps, then faults.
    pub fn actions(&self, state: &State, out: &mut Vec<Action>) {
        out.clear();
        for (index, client) in state.clients.iter().enumerate() {
            let client_id = index as u8;
            match client.phase {
                ClientPhase::Ready { after_conflict } => {
                    if self.may_send(state, client_id, after_conflict) {
                        out.push(Action::Send { client: client_id });
                    }
                }
                ClientPhase::Waiting => {
                    if self.may_time_out(state, client_id) {
                        out.push(Action::Timeout { client: client_id });
                    }
                }
                ClientPhase::Done => {}
            }
        }
        for message in state.network.keys() {
            match message {
                Message::Request(request) => {
                    // Any idle process may take it: deliveries to different processes then commute. Under
                    // symmetry the choices are one state (idle processes are alike), so they cost transitions,
                    // not states.
                    for (proc, _) in state
                        .procs
                        .iter()
                        .enumerate()
                        .filter(|(_, proc)| **proc == Proc::Idle)
                    {
                        out.push(Action::DeliverRequest {
                            request: *request,
                            proc: proc as u8,
                        });
                    }
                }
                Message::Response(response) => out.push(Action::DeliverResponse {
                    response: *response,
                }),
            }
        }
        for (index, proc) in state.procs.iter().enumerate() {
            if matches!(proc, Proc::Busy(_)) {
                out.push(Action::Step { proc: index as u8 });
            }
        }
        self.fault_actions(state, out);
    }

    /// The enabled faults (and lease expiries), after every other action, into `out`.
    fn fault_actions(&self, state: &State, out: &mut Vec<Action>) {
        for message in state.network.keys() {
            let (drop_budget, duplicate_budget) = match message {
                Message::Request(_) => (DROP_REQUESTS, DUPLICATE_REQUESTS),
                Message::Response(_) => (DROP_RESPONSES, DUPLICATE_RESPONSES),
            };
            if state.budgets.has(drop_budget) {
                out.push(Action::Drop { message: *message });
            }
            if state.budgets.has(duplicate_budget) {
                out.push(Action::Duplicate { message: *message });
            }
        }
        if state.budgets.has(CRASHES) {
            for (index, proc) in state.procs.iter().enumerate() {
                if matches!(proc, Proc::Busy(_)) {
                    out.push(Action::Crash { proc: index as u8 });
                }
            }
        }
        if state.budgets.has(HANDLER_ERRORS) {
            for (index, proc) in state.procs.iter().enumerate() {
                if let Proc::Busy(job) = proc {
                    if matches!(
                        job.step,
                        JobStep::Provider | JobStep::Effect | JobStep::Commit
                    ) {
                        out.push(Action::Fail { proc: index as u8 });
                    }
                }
            }
        }
        if state.budgets.has(KEY_EXPIRIES) {
            for (key, record) in &state.store.records {
                if matches!(record.status, RecordStatus::Completed { .. }) {
                    out.push(Action::ExpireKey { key: *key });
                }
            }
        }
        S::extra_actions(self, state, out);
        if self.server.lease().is_some() {
            for (key, record) in &state.store.records {
                if let RecordStatus::InProgress {
                    token,
                    lease_expired: false,
                } = record.status
                {
                    if !state.owner_alive(*key, token) || state.budgets.has(PAUSES) {
                        out.push(Action::ExpireLease { key: *key });
                    }
                }
            }
        }
    }

    /// Faults are what the healing phase switches off; liveness is judged where only faults remain.
    pub fn is_fault(&self, state: &State, action: &Action) -> bool {
        match action {
            Action::Drop { .. }
            | Action::Duplicate { .. }
            | Action::Crash { .. }
            | Action::Fail { .. }
            | Action::ExpireKey { .. }
            | Action::Republish { .. } => true,
            Action::Timeout { client } => attempt_alive(state, *client),
            Action::ExpireLease { key } => {
                match state.store.records.get(key).map(|record| record.status) {
                    Some(RecordStatus::InProgress { token, .. }) => state.owner_alive(*key, token),
                    _ => false,
                }
            }
            _ => false,
        }
    }

    fn may_send(&self, state: &State, client: u8, after_conflict: bool) -> bool {
        let client_state = &state.clients[client as usize];
        if client_state.charged >= self.clients.attempts_max {
            return false;
        }
        // Retry-After: told 409 by a server with a lease, the client waits until the lease is over (or the record
        // completed). Without a lease the server has nothing to tell, and the client retries at once.
        if after_conflict && self.server.lease().is_some() {
            // The key the 409 answered: the last attempt's (under per-attempt keys the next one's was never
            // claimed, so looking it up would never wait).
            let key = self.key_for(client, client_state.op, client_state.attempts);
            if let Some(record) = state.store.records.get(&key) {
                if matches!(
                    record.status,
                    RecordStatus::InProgress {
                        lease_expired: false,
                        ..
                    }
                ) {
                    return false;
                }
            }
        }
        true
    }

    fn may_time_out(&self, state: &State, client: u8) -> bool {
        !attempt_alive(state, client) || state.budgets.has(EARLY_TIMEOUTS)
    }

    /// The state after `action`, and what happened. `action` must be enabled in `state`.
    pub fn next_state(&self, state: &State, action: &Action) -> (State, Events) {
        let mut next = state.clone();
        let events = self.apply(&mut next, action);
        (next, events)
    }

    /// `next_state` in place: the explorer reuses one scratch state per thread instead of cloning a fresh one
    /// (and dropping it) for every transition.
    pub fn apply(&self, next: &mut State, action: &Action) -> Events {
        let mut events = Events::default();
        match *action {
            Action::Send { client } => self.send(next, client),
            Action::Timeout { client } => {
                if attempt_alive(next, client) {
                    next.budgets.spend(EARLY_TIMEOUTS);
                }
                let charged = next.clients[client as usize].charged;
                if charged < self.clients.attempts_max {
                    events.add(Event::RetryAfterTimeout);
                    self.send(next, client);
                } else {
                    self.finish_op(next, client, OpOutcome::GaveUp);
                }
            }
            Action::DeliverRequest { request, proc } => {
                deliver_request(next, request, proc, &mut events)
            }
            Action::DeliverResponse { response } => {
                take_message(&mut next.network, &Message::Response(response));
                self.receive(next, response);
            }
            Action::Step { proc } => self.run_step(next, proc, &mut events),
            Action::Drop { message } => drop_message(next, message, &mut events),
            Action::Duplicate { message } => duplicate_message(next, message, &mut events),
            Action::Crash { proc } => {
                next.budgets.spend(CRASHES);
                if let Proc::Busy(job) = next.procs[proc as usize] {
                    if job.token.is_some() && !matches!(job.step, JobStep::Respond { .. }) {
                        events.add(Event::CrashAfterClaim);
                    }
                    S::crashed(self, next, &job, &mut events);
                }
                next.procs[proc as usize] = Proc::Idle;
            }
            Action::Republish { .. } => S::apply_extra(self, next, action, &mut events),
            Action::Fail { proc } => {
                next.budgets.spend(HANDLER_ERRORS);
                events.add(Event::HandlerError);
                S::handler_error(self, next, proc);
            }
            Action::ExpireKey { key } => {
                next.budgets.spend(KEY_EXPIRIES);
                events.add(Event::KeyExpired);
                next.store.records.remove(&key);
            }
            Action::ExpireLease { key } => expire_lease(next, key, &mut events),
        }
        events
    }

    fn send(&self, state: &mut State, client: u8) {
        purge_abandoned(state, client);
        let client_state = &mut state.clients[client as usize];
        client_state.attempts += 1;
        client_state.charged += 1;
        client_state.phase = ClientPhase::Waiting;
        let op = client_state.op;
        let attempt = client_state.attempts;
        let request = Request {
            from: OpRef { client, op },
            attempt,
            key: self.key_for(client, op, attempt),
            body: self.clients.operations[op as usize].body,
            copy: 0,
        };
        *state.network.get_or_insert(Message::Request(request), 0) += 1;
    }

    fn finish_op(&self, state: &mut State, client: u8, outcome: OpOutcome) {
        purge_abandoned(state, client);
        let client_state = &mut state.clients[client as usize];
        client_state.outcomes[client_state.op as usize] = outcome;
        client_state.op += 1;
        client_state.attempts = 0;
        client_state.charged = 0;
        client_state.phase = if client_state.op as usize == self.clients.operations.len() {
            ClientPhase::Done
        } else {
            ClientPhase::Ready {
                after_conflict: false,
            }
        };
    }

    fn receive(&self, state: &mut State, response: Response) {
        let client = response.to.client;
        let client_state = &state.clients[client as usize];
        let current = client_state.phase == ClientPhase::Waiting
            && client_state.op == response.to.op
            && client_state.attempts == response.attempt;
        if !current {
            return; // a late answer to an attempt the client already abandoned: its connection is gone
        }
        let retry_after =
            response.code == status::CONFLICT_IN_PROGRESS && self.server.lease().is_some();
        let retries_left = retry_after || client_state.charged < self.clients.attempts_max;
        if status::is_success(response.code) {
            self.finish_op(
                state,
                client,
                OpOutcome::Succeeded {
                    payload: response.payload,
                },
            );
        } else if status::is_definite_failure(response.code) {
            self.finish_op(
                state,
                client,
                OpOutcome::Failed {
                    code: response.code,
                },
            );
        } else if retries_left {
            let after_conflict = response.code == status::CONFLICT_IN_PROGRESS;
            let client_state = &mut state.clients[client as usize];
            if retry_after {
                client_state.charged -= 1;
            }
            client_state.phase = ClientPhase::Ready { after_conflict };
        } else {
            self.finish_op(state, client, OpOutcome::GaveUp);
        }
    }

    /// Run `proc`'s next handler step: the shared ones here, the rest by the server role.
    fn run_step(&self, state: &mut State, proc: u8, events: &mut Events) {
        let Proc::Busy(job) = state.procs[proc as usize] else {
            return;
        };
        match job.step {
            JobStep::Provider => self.call_provider(state, proc, job, events),
            JobStep::Effect => {
                // The effect's transaction is open and holds the payment row, uncommitted.
                let job = Job {
                    step: JobStep::Commit,
                    ..job
                };
                state.procs[proc as usize] = Proc::Busy(job);
            }
            JobStep::Respond { code, payload } => {
                self.respond(state, proc, &job.request, code, payload, events)
            }
            _ => S::handler_step(self, state, proc, job, events),
        }
    }

    /// The external provider call: it charges unless it recognises a derived key it has seen.
    fn call_provider(&self, state: &mut State, proc: u8, mut job: Job, events: &mut Events) {
        let request = job.request;
        let already = state.charges_of(request.from) > 0;
        if already {
            events.add(Event::ProviderRetried);
        }
        let deduplicated = self.provider == Provider::IdempotentDerivedKey
            && state
                .store
                .provider_charges
                .iter()
                .any(|(_, key)| *key == request.key);
        if !deduplicated {
            if already {
                events.add(Event::DuplicateEffect);
            }
            state
                .store
                .provider_charges
                .push((request.from, request.key));
        }
        job.step = JobStep::Effect;
        state.procs[proc as usize] = Proc::Busy(job);
    }

    /// Commit the effect (a payment row) for `op`, noting a second one; the new payment's id.
    pub(super) fn commit_effect(
        &self,
        state: &mut State,
        op: OpRef,
        events: &mut Events,
    ) -> Option<Payment> {
        let executions = state.store.payments.get_or_insert(op, 0);
        if *executions > 0 {
            events.add(Event::DuplicateEffect);
        }
        *executions += 1;
        Some(Payment {
            op,
            execution: *executions,
        })
    }

    /// Write `request`'s record as completed with 201 and `payload` (an idempotency record, an inbox row).
    pub(super) fn complete_record(
        &self,
        state: &mut State,
        request: &Request,
        payload: Option<Payment>,
    ) {
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

    /// The step after a successful claim.
    pub(super) fn first_work_step(&self) -> JobStep {
        match self.provider {
            Provider::None => JobStep::Effect,
            _ => JobStep::Provider,
        }
    }

    /// Send a response, check it against the ghost ledger, and free the process.
    pub(super) fn respond(
        &self,
        state: &mut State,
        proc: u8,
        request: &Request,
        code: u16,
        payload: Option<Payment>,
        events: &mut Events,
    ) {
        if status::is_success(code) {
            let op = request.from;
            if state.effects_of(op) == 0 {
                events.add(Event::SuccessWithoutEffect);
            }
            if let Some(payment) = payload {
                if payment.op.client != op.client {
                    events.add(Event::CrossClientResponse);
                }
            }
            match state.first_success.get(&op) {
                Some(first) if *first != payload => events.add(Event::InconsistentReplay),
                Some(_) => {}
                None => {
                    state.first_success.insert(op, payload);
                }
            }
        }
        // A response to an attempt its client abandoned goes nowhere: that connection is closed. (The ledger above
        // has recorded it; only its delivery is skipped, which the client would ignore anyway.)
        if is_current_attempt(state, request.from, request.attempt) {
            let response = Response {
                to: request.from,
                attempt: request.attempt,
                code,
                payload,
            };
            *state.network.get_or_insert(Message::Response(response), 0) += 1;
        }
        state.procs[proc as usize] = Proc::Idle;
    }
}

/// Whether anything of the client's current attempt is still on its way: its request in the network or in a
/// handler, or its response in the network. Timing out such an attempt is the "slow, not lost" fault.
fn attempt_alive(state: &State, client: u8) -> bool {
    let client_state = &state.clients[client as usize];
    let current = OpRef {
        client,
        op: client_state.op,
    };
    let attempt = client_state.attempts;
    let in_network = state.network.keys().any(|message| match message {
        Message::Request(request) => request.from == current && request.attempt == attempt,
        Message::Response(response) => response.to == current && response.attempt == attempt,
    });
    let in_server = state.procs.iter().any(|proc| match proc {
        Proc::Busy(job) => job.request.from == current && job.request.attempt == attempt,
        Proc::Idle => false,
    });
    in_network || in_server
}

/// The network hands `request` to idle process `proc`, which starts its handler.
fn deliver_request(state: &mut State, request: Request, proc: u8, events: &mut Events) {
    take_message(&mut state.network, &Message::Request(request));
    let parallel = state.procs.iter().any(|other| match other {
        Proc::Busy(job) => job.request.from == request.from,
        Proc::Idle => false,
    });
    if parallel {
        events.add(Event::ParallelRetry);
    }
    state.procs[proc as usize] = Proc::Busy(Job {
        request,
        step: JobStep::Claim,
        token: None,
    });
}

fn drop_message(state: &mut State, message: Message, events: &mut Events) {
    take_message(&mut state.network, &message);
    match message {
        Message::Request(_) => {
            state.budgets.spend(DROP_REQUESTS);
            events.add(Event::LostRequest);
        }
        Message::Response(_) => {
            state.budgets.spend(DROP_RESPONSES);
            events.add(Event::LostResponse);
        }
    }
}

fn duplicate_message(state: &mut State, message: Message, events: &mut Events) {
    *state.network.get_or_insert(message, 0) += 1;
    match message {
        Message::Request(_) => {
            state.budgets.spend(DUPLICATE_REQUESTS);
            events.add(Event::DuplicatedRequest);
        }
        Message::Response(_) => state.budgets.spend(DUPLICATE_RESPONSES),
    }
}

/// The lease on `key` runs out: a pause (a fault) when its owner is alive, otherwise just time.
fn expire_lease(state: &mut State, key: Key, events: &mut Events) {
    let alive = match state.store.records.get(&key).map(|record| record.status) {
        Some(RecordStatus::InProgress { token, .. }) => state.owner_alive(key, token),
        _ => false,
    };
    if alive {
        state.budgets.spend(PAUSES);
        events.add(Event::SlowOwner);
    }
    if let Some(record) = state.store.records.get_mut(&key) {
        if let RecordStatus::InProgress { token, .. } = record.status {
            record.status = RecordStatus::InProgress {
                token,
                lease_expired: true,
            };
        }
    }
}

/// Whether `attempt` of `op` is the one its client is waiting for.
fn is_current_attempt(state: &State, op: OpRef, attempt: u8) -> bool {
    let client = &state.clients[op.client as usize];
    client.phase == ClientPhase::Waiting && client.op == op.op && client.attempts == attempt
}

/// A client leaving its current attempt closes that connection: responses to it can no longer arrive. Removing
/// them at once (rather than letting the network deliver them to be ignored) keeps the same behaviours with
/// fewer states.
fn purge_abandoned(state: &mut State, client: u8) {
    state.network.retain(|message, _| !matches!(message, Message::Response(response) if response.to.client == client));
}

fn take_message(network: &mut SortedMap<Message, u8, 8>, message: &Message) {
    if let Some(count) = network.get_mut(message) {
        *count -= 1;
        if *count == 0 {
            network.remove(message);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::builtin::World;
    use crate::protocol::Lease;
    use std::collections::HashSet;

    /// Under per-attempt keys with a lease, a client told 409 waits while the key that answered is in_progress
    /// with a live lease: in every reachable state, never a `Send` then (and such states are reached).
    #[test]
    fn retry_after_waits_on_the_key_the_409_answered() {
        let path = crate::repository_file("models/per-attempt-duplicated-request.toml");
        let model = crate::spec::load_model(&path).expect("a shipped model");
        let world = model
            .world
            .to_builder()
            .lease(Lease::Ms(30_000))
            .build()
            .expect("a lease is a valid knob");
        let World::Http(http) = &world else {
            panic!("an HTTP model")
        };
        let mut seen = HashSet::new();
        let mut frontier = vec![world.init_state()];
        let mut waiting_states = 0;
        let mut actions = Vec::new();
        while let Some(state) = frontier.pop() {
            assert!(seen.len() < 100_000, "the model is small");
            if !seen.insert(state.clone()) {
                continue;
            }
            world.actions(&state, &mut actions);
            let client = &state.clients[0];
            let told_409 = client.phase
                == (ClientPhase::Ready {
                    after_conflict: true,
                });
            let live = told_409
                && matches!(
                    state
                        .store
                        .records
                        .get(&http.key_for(0, client.op, client.attempts))
                        .map(|record| record.status),
                    Some(RecordStatus::InProgress {
                        lease_expired: false,
                        ..
                    })
                );
            if live {
                waiting_states += 1;
                assert!(!actions.contains(&Action::Send { client: 0 }), "{state:?}");
            }
            for action in actions.clone() {
                frontier.push(world.next_state(&state, &action).0);
            }
        }
        assert!(waiting_states > 0, "a 409 under a live lease is reached");
    }
}
