//! The idempotency-key handler as a server role: claim the key (`INSERT OR IGNORE`, or SELECT then INSERT),
//! decide from the stored record (`protocol::decide`), commit the payment with the completion (subject to
//! fencing), or, with a separate key store, complete the key in a second write.

use super::described::DescribedStep;
use super::events::{Event, Events};
use super::state::*;
use super::world::{Http, HttpWorld, Server, Transition};
use crate::protocol::{
    self, status, Claim, Decision, KeyPolicy, KeyScope, KeyStore, Lease, OnError, RecordState,
};

impl Server for Http {
    const SERVER_STAYS_INSIDE: bool = true;

    fn key_for(world: &HttpWorld, client: u8, op: u8, attempt: u8) -> Key {
        let base = world.clients.operations[op as usize].key;
        let value = match world.clients.key_policy {
            KeyPolicy::PerOperation => base,
            // A fresh key per attempt; keys of different attempts never collide.
            KeyPolicy::PerAttempt => base.wrapping_mul(16).wrapping_add(attempt),
        };
        let scope = match world.server.key_scope {
            KeyScope::PerClient => client,
            KeyScope::Global => 0,
        };
        Key { scope, value }
    }

    #[inline]
    fn lease(&self) -> Lease {
        self.protocol.lease
    }

    fn key_scope(&self) -> KeyScope {
        self.key_scope
    }

    fn handler_step(world: &HttpWorld, state: &mut State, proc: u8, job: Job, events: &mut Events) {
        match job.step {
            JobStep::Claim => world.claim_step(state, proc, job, events),
            JobStep::Insert => world.insert_step(state, proc, job, events),
            JobStep::Commit => world.commit_step(state, proc, job, events),
            JobStep::CompleteKv { payload } => {
                world.complete_kv_step(state, proc, job, payload, events)
            }
            JobStep::Provider | JobStep::Effect | JobStep::Respond { .. } => {
                unreachable!("{:?} is a shared step", job.step)
            }
        }
    }

    /// The handler raised: the open transaction rolls back, `on-error` decides the key's fate, the client gets 500.
    fn handler_error(world: &HttpWorld, state: &mut State, proc: u8) {
        let Proc::Busy(mut job) = state.procs[proc as usize] else {
            return;
        };
        let key = job.request.key;
        let mine = matches!(
            state.store.records.get(&key).map(|record| record.status),
            Some(RecordStatus::InProgress { token, .. }) if Some(token) == job.token
        );
        if mine {
            match world.server.on_error {
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

    fn view(world: &HttpWorld, state: &State) -> crate::check::StateView {
        world.state_view(state)
    }

    fn describe(world: &HttpWorld, transition: &Transition) -> DescribedStep {
        world.describe_http(transition)
    }
}

impl HttpWorld {
    /// unique-index: the atomic claim and the decision; select-then-insert: the SELECT and the decision.
    fn claim_step(&self, state: &mut State, proc: u8, mut job: Job, events: &mut Events) {
        let request = job.request;
        let fingerprint = self.fingerprints[request.body as usize];
        let stored = state.store.records.get(&request.key).copied();
        let view = stored.map(|record| (record.fingerprint, record_view(&record)));
        let decision = protocol::decide(&fingerprint, view.as_ref().map(|(fp, st)| (fp, st)));
        let refusal = match decision {
            Decision::Execute | Decision::TakeOver => {
                if self.server.protocol.claim == Claim::SelectThenInsert {
                    job.step = JobStep::Insert;
                } else {
                    if decision == Decision::TakeOver {
                        events.add(Event::LeaseTakeover);
                    }
                    job.token = Some(self.claim(state, &request));
                    job.step = self.first_work_step();
                }
                state.procs[proc as usize] = Proc::Busy(job);
                return;
            }
            Decision::Replay((stored_code, payload)) => {
                events.add(Event::Replay);
                let code = status::replay_status(stored_code);
                self.respond(state, proc, &request, code, payload, events);
                return;
            }
            Decision::InProgress => {
                events.add(Event::Conflict);
                if let Some(Record {
                    status: RecordStatus::InProgress { token, .. },
                    ..
                }) = stored
                {
                    // With a lease the 409 is honest until the lease runs out (the server cannot tell a dead
                    // owner from a slow one); without one, a dead owner's 409 never ends.
                    if !state.owner_alive(request.key, token)
                        && !self.server.protocol.lease.is_some()
                    {
                        events.add(Event::ConflictWithoutOwner);
                    }
                }
                status::CONFLICT_IN_PROGRESS
            }
            Decision::BodyMismatch => {
                events.add(Event::BodyMismatch);
                if stored.is_some_and(|record| {
                    self.body_classes[record.body as usize]
                        == self.body_classes[request.body as usize]
                }) {
                    events.add(Event::MismatchForSameBody);
                }
                status::UNPROCESSABLE_BODY_MISMATCH
            }
        };
        self.respond(state, proc, &request, refusal, None, events);
    }

    /// select-then-insert only: no unique index, so the INSERT goes through whatever happened since the SELECT.
    fn insert_step(&self, state: &mut State, proc: u8, mut job: Job, events: &mut Events) {
        let request = job.request;
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

    /// Commit the payment: with the completion in one transaction (refused by fencing if the claim was taken
    /// over), or alone when the keys live in a separate store.
    fn commit_step(&self, state: &mut State, proc: u8, mut job: Job, events: &mut Events) {
        let request = job.request;
        let record_token = claim_token(state, &request.key);
        let my_token = job.token.expect("a job at Commit holds a claim");
        let fencing = self.server.protocol.fencing;
        if self.server.key_store == KeyStore::SeparateKv {
            // The database knows nothing of the key: it commits the payment alone.
            let payload = self.commit_effect(state, request.from, events);
            job.step = JobStep::CompleteKv { payload };
        } else if protocol::may_complete(fencing, &my_token, record_token.as_ref()) {
            let payload = self.commit_effect(state, request.from, events);
            self.complete_record(state, &request, payload);
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

    /// Separate key store only: mark the key completed, a second write after the database commit.
    fn complete_kv_step(
        &self,
        state: &mut State,
        proc: u8,
        mut job: Job,
        payload: Option<Payment>,
        events: &mut Events,
    ) {
        let request = job.request;
        let record_token = claim_token(state, &request.key);
        let my_token = job.token.expect("a job completing holds a claim");
        if protocol::may_complete(
            self.server.protocol.fencing,
            &my_token,
            record_token.as_ref(),
        ) {
            self.complete_record(state, &request, payload);
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

    /// Write an in_progress record owned by a fresh token (the claim), and return the token: the key's version
    /// column, bumped (it survives the row's deletion, so a token is never issued twice for a key).
    fn claim(&self, state: &mut State, request: &Request) -> u8 {
        let version = state.store.versions.get_or_insert(request.key, 0);
        *version += 1;
        let token = *version;
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
}

/// The token of the claim that holds `key` in_progress, if any.
fn claim_token(state: &State, key: &Key) -> Option<u8> {
    match state.store.records.get(key).map(|record| record.status) {
        Some(RecordStatus::InProgress { token, .. }) => Some(token),
        _ => None,
    }
}

fn record_view(record: &Record) -> RecordState<(u16, Option<Payment>)> {
    match record.status {
        RecordStatus::InProgress { lease_expired, .. } => RecordState::InProgress { lease_expired },
        RecordStatus::Completed { code, payload } => RecordState::Completed {
            response: (code, payload),
        },
    }
}
