//! The transition relation: which actions are enabled, and what each one does.

use super::action::Action;
use super::config::{KeyScope, KeyStore, OnError, Provider, World};
use super::events::{Event, Events};
use super::sorted_map::SortedMap;
use super::state::*;
use crate::protocol::{self, status, Decision, KeyPolicy, RecordState};
use smallvec::smallvec;

const DROP_REQUESTS: usize = 0;
const DROP_RESPONSES: usize = 1;
const DUPLICATE_REQUESTS: usize = 2;
const DUPLICATE_RESPONSES: usize = 3;
const CRASHES: usize = 4;
const PAUSES: usize = 5;
const EARLY_TIMEOUTS: usize = 6;
const HANDLER_ERRORS: usize = 7;
const KEY_EXPIRIES: usize = 8;
pub(super) const REPUBLISHES: usize = 9;
pub(super) const WINDOW_EXPIRIES: usize = 10;
pub(super) const PRODUCER_RESTARTS: usize = 11;

impl World {
    pub fn init_state(&self) -> State {
        let clients = (0..self.clients.count)
            .map(|_| ClientState {
                op: 0,
                attempts: 0,
                charged: 0,
                phase: ClientPhase::Ready {
                    after_conflict: false,
                },
                outcomes: smallvec![Outcome::Pending; self.clients.operations.len()],
                copies: 0,
            })
            .collect();
        State {
            clients,
            network: SortedMap::new(),
            procs: smallvec![Proc::Idle; self.processes as usize],
            store: Store::default(),
            first_success: SortedMap::new(),
            budgets: self.faults.as_array(),
        }
    }

    /// The key client `client` sends for attempt `attempt` (1-based) of operation `op`.
    pub fn key_for(&self, client: u8, op: u8, attempt: u8) -> Key {
        if let Some(queue) = &self.queue {
            return self.queue_key(queue, client, op, attempt, 0);
        }
        let base = self.clients.operations[op as usize].key;
        let value = match self.clients.key_policy {
            KeyPolicy::PerOperation => base,
            // A fresh key per attempt; keys of different attempts never collide.
            KeyPolicy::PerAttempt => base.wrapping_mul(16).wrapping_add(attempt),
        };
        let scope = match self.key_scope {
            KeyScope::PerClient => client,
            KeyScope::Global => 0,
        };
        Key { scope, value }
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
        let idle = state.procs.iter().position(|proc| *proc == Proc::Idle);
        for message in state.network.keys() {
            match message {
                Message::Request(request) => {
                    if let Some(proc) = idle {
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
        for message in state.network.keys() {
            let (drop_budget, duplicate_budget) = match message {
                Message::Request(_) => (DROP_REQUESTS, DUPLICATE_REQUESTS),
                Message::Response(_) => (DROP_RESPONSES, DUPLICATE_RESPONSES),
            };
            if state.budgets[drop_budget] > 0 {
                out.push(Action::Drop { message: *message });
            }
            if state.budgets[duplicate_budget] > 0 {
                out.push(Action::Duplicate { message: *message });
            }
        }
        if state.budgets[CRASHES] > 0 {
            for (index, proc) in state.procs.iter().enumerate() {
                if matches!(proc, Proc::Busy(_)) {
                    out.push(Action::Crash { proc: index as u8 });
                }
            }
        }
        if state.budgets[HANDLER_ERRORS] > 0 {
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
        if state.budgets[KEY_EXPIRIES] > 0 {
            for (key, record) in &state.store.records {
                if matches!(record.status, RecordStatus::Completed { .. }) {
                    out.push(Action::ExpireKey { key: *key });
                }
            }
        }
        if let Some(queue) = &self.queue {
            self.queue_actions(queue, state, out);
        }
        if self.protocol.lease.is_some() {
            for (key, record) in &state.store.records {
                if let RecordStatus::InProgress {
                    token,
                    lease_expired: false,
                } = record.status
                {
                    if !state.owner_alive(token) || state.budgets[PAUSES] > 0 {
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
                    Some(RecordStatus::InProgress { token, .. }) => state.owner_alive(token),
                    _ => false,
                }
            }
            _ => false,
        }
    }

    fn may_send(&self, state: &State, client: u8, after_conflict: bool) -> bool {
        let client_state = &state.clients[client as usize];
        if client_state.charged >= self.clients.max_attempts {
            return false;
        }
        // Retry-After: told 409 by a server with a lease, the client waits until the lease is over (or the record
        // completed). Without a lease the server has nothing to tell, and the client retries at once.
        if after_conflict && self.protocol.lease.is_some() {
            let key = self.key_for(client, client_state.op, client_state.attempts + 1);
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
        !attempt_alive(state, client) || state.budgets[EARLY_TIMEOUTS] > 0
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
                    next.budgets[EARLY_TIMEOUTS] -= 1;
                }
                let charged = next.clients[client as usize].charged;
                if charged < self.clients.max_attempts {
                    events.add(Event::RetryAfterTimeout);
                    self.send(next, client);
                } else {
                    self.finish_op(next, client, Outcome::GaveUp);
                }
            }
            Action::DeliverRequest { request, proc } => {
                take_message(&mut next.network, &Message::Request(request));
                let parallel = next.procs.iter().any(|other| match other {
                    Proc::Busy(job) => job.request.from == request.from,
                    Proc::Idle => false,
                });
                if parallel {
                    events.add(Event::ParallelRetry);
                }
                next.procs[proc as usize] = Proc::Busy(Job {
                    request,
                    step: JobStep::Claim,
                    token: None,
                });
            }
            Action::DeliverResponse { response } => {
                take_message(&mut next.network, &Message::Response(response));
                self.receive(next, response);
            }
            Action::Step { proc } => self.run_step(next, proc, &mut events),
            Action::Drop { message } => {
                take_message(&mut next.network, &message);
                match message {
                    Message::Request(_) => {
                        next.budgets[DROP_REQUESTS] -= 1;
                        events.add(Event::LostRequest);
                    }
                    Message::Response(_) => {
                        next.budgets[DROP_RESPONSES] -= 1;
                        events.add(Event::LostResponse);
                    }
                }
            }
            Action::Duplicate { message } => {
                *next.network.get_or_insert(message, 0) += 1;
                match message {
                    Message::Request(_) => {
                        next.budgets[DUPLICATE_REQUESTS] -= 1;
                        events.add(Event::DuplicatedRequest);
                    }
                    Message::Response(_) => next.budgets[DUPLICATE_RESPONSES] -= 1,
                }
            }
            Action::Crash { proc } => {
                next.budgets[CRASHES] -= 1;
                if let Proc::Busy(job) = next.procs[proc as usize] {
                    if job.token.is_some() && !matches!(job.step, JobStep::Respond { .. }) {
                        events.add(Event::CrashAfterClaim);
                    }
                    if self.queue.is_some() {
                        self.queue_crash(next, &job, &mut events);
                    }
                }
                next.procs[proc as usize] = Proc::Idle;
            }
            Action::Republish {
                client,
                late,
                restarted,
            } => {
                if let Some(queue) = &self.queue {
                    self.republish(queue, next, client, late, restarted, &mut events);
                }
            }
            Action::Fail { proc } => {
                next.budgets[HANDLER_ERRORS] -= 1;
                events.add(Event::HandlerError);
                self.fail(next, proc);
            }
            Action::ExpireKey { key } => {
                next.budgets[KEY_EXPIRIES] -= 1;
                events.add(Event::KeyExpired);
                next.store.records.remove(&key);
            }
            Action::ExpireLease { key } => {
                let alive = match next.store.records.get(&key).map(|record| record.status) {
                    Some(RecordStatus::InProgress { token, .. }) => next.owner_alive(token),
                    _ => false,
                };
                if alive {
                    next.budgets[PAUSES] -= 1;
                    events.add(Event::SlowOwner);
                }
                if let Some(record) = next.store.records.get_mut(&key) {
                    if let RecordStatus::InProgress { token, .. } = record.status {
                        record.status = RecordStatus::InProgress {
                            token,
                            lease_expired: true,
                        };
                    }
                }
            }
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

    fn finish_op(&self, state: &mut State, client: u8, outcome: Outcome) {
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
            response.code == status::CONFLICT_IN_PROGRESS && self.protocol.lease.is_some();
        let retries_left = retry_after || client_state.charged < self.clients.max_attempts;
        if status::is_success(response.code) {
            self.finish_op(
                state,
                client,
                Outcome::Succeeded {
                    payload: response.payload,
                },
            );
        } else if status::is_definite_failure(response.code) {
            self.finish_op(
                state,
                client,
                Outcome::Failed {
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
            self.finish_op(state, client, Outcome::GaveUp);
        }
    }

    fn run_step(&self, state: &mut State, proc: u8, events: &mut Events) {
        let Proc::Busy(mut job) = state.procs[proc as usize] else {
            return;
        };
        if let Some(queue) = &self.queue {
            if self.run_queue_step(queue, state, proc, job, events) {
                return;
            }
        }
        let request = job.request;
        match job.step {
            JobStep::Claim => {
                let fingerprint = self.fingerprints[request.body as usize];
                let stored = state.store.records.get(&request.key).copied();
                let view = stored.map(|record| (record.fingerprint, record_view(&record)));
                let decision =
                    protocol::decide(&fingerprint, view.as_ref().map(|(fp, st)| (fp, st)));
                match decision {
                    Decision::Execute | Decision::TakeOver => {
                        if self.uses_select_then_insert() {
                            job.step = JobStep::Insert;
                        } else {
                            if decision == Decision::TakeOver {
                                events.add(Event::LeaseTakeover);
                            }
                            job.token = Some(self.claim(state, &request));
                            job.step = self.first_work_step();
                        }
                        state.procs[proc as usize] = Proc::Busy(job);
                    }
                    Decision::Replay((stored_code, payload)) => {
                        events.add(Event::Replay);
                        let code = status::replay_status(stored_code);
                        self.respond(state, proc, &request, code, payload, events);
                    }
                    Decision::InProgress => {
                        events.add(Event::Conflict);
                        if let Some(Record {
                            status: RecordStatus::InProgress { token, .. },
                            ..
                        }) = stored
                        {
                            // With a lease the 409 is honest until the lease runs out (the server cannot tell a
                            // dead owner from a slow one); without one, a dead owner's 409 never ends.
                            if !state.owner_alive(token) && !self.protocol.lease.is_some() {
                                events.add(Event::ConflictWithoutOwner);
                            }
                        }
                        self.respond(
                            state,
                            proc,
                            &request,
                            status::CONFLICT_IN_PROGRESS,
                            None,
                            events,
                        );
                    }
                    Decision::BodyMismatch => {
                        events.add(Event::BodyMismatch);
                        if stored.is_some_and(|record| {
                            self.body_classes[record.body as usize]
                                == self.body_classes[request.body as usize]
                        }) {
                            events.add(Event::MismatchForSameBody);
                        }
                        self.respond(
                            state,
                            proc,
                            &request,
                            status::UNPROCESSABLE_BODY_MISMATCH,
                            None,
                            events,
                        );
                    }
                }
            }
            JobStep::Insert => {
                // No unique index: the INSERT goes through whatever happened since our SELECT.
                let previous = state
                    .store
                    .records
                    .get(&request.key)
                    .map(|record| record.status);
                if let Some(RecordStatus::InProgress {
                    lease_expired: true,
                    ..
                }) = previous
                {
                    events.add(Event::LeaseTakeover);
                }
                job.token = Some(self.claim(state, &request));
                job.step = self.first_work_step();
                state.procs[proc as usize] = Proc::Busy(job);
            }
            JobStep::Provider => {
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
            JobStep::CompleteKv { payload } => {
                let record_token = match state
                    .store
                    .records
                    .get(&request.key)
                    .map(|record| record.status)
                {
                    Some(RecordStatus::InProgress { token, .. }) => Some(token),
                    _ => None,
                };
                let my_token = job.token.expect("a job completing holds a claim");
                if protocol::may_complete(self.protocol.fencing, &my_token, record_token.as_ref()) {
                    let fingerprint = self.fingerprints[request.body as usize];
                    let completed = RecordStatus::Completed {
                        code: status::CREATED,
                        payload,
                    };
                    let record = Record {
                        fingerprint,
                        body: request.body,
                        op: request.from,
                        status: completed,
                    };
                    state.store.records.insert(request.key, record);
                } else {
                    // Fencing guards the key store, but the payment is already committed in the database.
                    events.add(Event::FencedCompletion);
                }
                job.step = JobStep::Respond {
                    code: status::CREATED,
                    payload,
                };
                state.procs[proc as usize] = Proc::Busy(job);
            }
            JobStep::Effect => {
                job.step = JobStep::Commit;
                state.procs[proc as usize] = Proc::Busy(job);
            }
            JobStep::Commit => {
                let record_token = match state
                    .store
                    .records
                    .get(&request.key)
                    .map(|record| record.status)
                {
                    Some(RecordStatus::InProgress { token, .. }) => Some(token),
                    _ => None,
                };
                let my_token = job.token.expect("a job at Commit holds a claim");
                if self.key_store == KeyStore::SeparateKv {
                    // The database knows nothing of the key: it commits the payment alone.
                    if state.effects_of(request.from) > 0 {
                        events.add(Event::DuplicateEffect);
                    }
                    state.store.payments.push(request.from);
                    let payload = Some(state.store.payments.len() as u8);
                    job.step = JobStep::CompleteKv { payload };
                } else if protocol::may_complete(
                    self.protocol.fencing,
                    &my_token,
                    record_token.as_ref(),
                ) {
                    if state.effects_of(request.from) > 0 {
                        events.add(Event::DuplicateEffect);
                    }
                    state.store.payments.push(request.from);
                    let payload = Some(state.store.payments.len() as u8);
                    let fingerprint = self.fingerprints[request.body as usize];
                    state.store.records.insert(
                        request.key,
                        Record {
                            fingerprint,
                            body: request.body,
                            op: request.from,
                            status: RecordStatus::Completed {
                                code: status::CREATED,
                                payload,
                            },
                        },
                    );
                    job.step = JobStep::Respond {
                        code: status::CREATED,
                        payload,
                    };
                } else {
                    // The claim was taken over: the transaction rolls back and the handler starts again.
                    events.add(Event::FencedCompletion);
                    job.token = None;
                    job.step = JobStep::Claim;
                }
                state.procs[proc as usize] = Proc::Busy(job);
            }
            JobStep::Respond { code, payload } => {
                self.respond(state, proc, &request, code, payload, events)
            }
        }
    }

    /// The step after a successful claim.
    pub(super) fn first_work_step(&self) -> JobStep {
        match self.provider {
            Provider::None => JobStep::Effect,
            _ => JobStep::Provider,
        }
    }

    /// The handler raised: the open transaction rolls back, `on-error` decides the key's fate, the client gets 500.
    fn fail(&self, state: &mut State, proc: u8) {
        let Proc::Busy(mut job) = state.procs[proc as usize] else {
            return;
        };
        let key = job.request.key;
        let mine = matches!(
            state.store.records.get(&key).map(|record| record.status),
            Some(RecordStatus::InProgress { token, .. }) if Some(token) == job.token
        );
        if mine {
            match self.on_error {
                OnError::StoreResponse => {
                    if let Some(record) = state.store.records.get_mut(&key) {
                        record.status = RecordStatus::Completed {
                            code: status::INTERNAL_ERROR,
                            payload: None,
                        };
                    }
                }
                OnError::DeleteKey => {
                    state.store.records.remove(&key);
                }
                OnError::KeepInProgress => {}
            }
        }
        job.token = None;
        job.step = JobStep::Respond {
            code: status::INTERNAL_ERROR,
            payload: None,
        };
        state.procs[proc as usize] = Proc::Busy(job);
    }

    /// Write an in_progress record owned by a fresh token (the claim), and return the token.
    fn claim(&self, state: &mut State, request: &Request) -> u8 {
        let token = state.store.next_token;
        state.store.next_token += 1;
        let record = Record {
            fingerprint: self.fingerprints[request.body as usize],
            body: request.body,
            op: request.from,
            status: RecordStatus::InProgress {
                token,
                lease_expired: false,
            },
        };
        state.store.records.insert(request.key, record);
        token
    }

    /// Send a response, check it against the ghost ledger, and free the process.
    pub(super) fn respond(
        &self,
        state: &mut State,
        proc: u8,
        request: &Request,
        code: u16,
        payload: Option<u8>,
        events: &mut Events,
    ) {
        if status::is_success(code) {
            let op = request.from;
            if state.effects_of(op) == 0 {
                events.add(Event::SuccessWithoutEffect);
            }
            if let Some(payment) = payload {
                let owner = state.store.payments[payment as usize - 1];
                if owner.client != op.client {
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

fn record_view(record: &Record) -> RecordState<(u16, Option<u8>)> {
    match record.status {
        RecordStatus::InProgress { lease_expired, .. } => RecordState::InProgress { lease_expired },
        RecordStatus::Completed { code, payload } => RecordState::Completed {
            response: (code, payload),
        },
    }
}

fn take_message(network: &mut SortedMap<Message, u8, 8>, message: &Message) {
    if let Some(count) = network.get_mut(message) {
        *count -= 1;
        if *count == 0 {
            network.remove(message);
        }
    }
}
