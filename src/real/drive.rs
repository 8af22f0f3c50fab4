//! Model traces driven against real code: each action of a trace found by the model checker becomes calls of a
//! real [`KeyStore`], step by step, and the two are compared after every step.
//!
//! The mapping (the model's `JobStep`s are the stores' explicit steps):
//! - `DeliverRequest { request, proc }`: process `proc` starts a handler for the request (no store call yet);
//! - `Step { proc }` at `Claim`: [`KeyStore::claim`] (unique index) or [`KeyStore::claim_lookup`]
//!   (select-then-insert, followed at once by [`KeyStore::claim_finish`] when the look-up does not execute);
//!   at `Insert`: [`KeyStore::claim_finish`]; at `Effect`: nothing yet (the effect transaction is open, nothing is
//!   committed); at `Commit`: [`KeyStore::complete`] (a refusal sends the handler back to `Claim`, as in the
//!   model); at `Respond`: the reply is compared with the model's;
//! - `Crash { proc }`: the handler is forgotten; one that was inside its effect transaction really opens it and
//!   abandons it ([`StoreFlow::Crash`]), so the store rolls the payment back;
//! - `Fail { proc }`: [`KeyStore::fail`] with the world's `on-error` (the handler then answers 500);
//! - `ExpireKey { key }`: [`KeyStore::expire_key`] (the TTL reaper);
//! - `ExpireLease { key }`: the key's clock moves forward by the lease (time is passed in: each key has its own
//!   clock, so one key's expiry does not age another's claim);
//! - client and network actions (`Send`, `Timeout`, `DeliverResponse`, `Drop`, `Duplicate`) touch no store.
//!
//! After every step the real payments must equal the model's (count, and which operation each belongs to), every
//! answer must equal the model's (status and payment id), and every handler must be at the model's step.

use super::{ClaimToken, Claimed, Completion, KeyStore, Reply, Request, StoreError, StoreFlow};
use crate::model::{
    Action, Event, HttpWorld, JobStep, Key, OpRef, Proc, Record, RecordStatus, State, World,
};
use crate::protocol::{status, Lease};
use std::collections::BTreeMap;

/// Where a real handler is; mirrors the model's `JobStep`.
#[derive(Clone, Debug)]
enum Phase {
    Claim,
    Insert(super::ClaimLookup),
    Effect(ClaimToken),
    Commit(ClaimToken),
    Respond(Reply),
}

#[derive(Clone, Debug)]
struct Handler {
    /// The model's request (ghost data included: which operation it belongs to).
    model_request: crate::model::Request,
    request: Request,
    phase: Phase,
}

/// Why driving stopped.
#[derive(Debug, thiserror::Error)]
pub enum DriveError {
    #[error("step {step}: the store failed: {error}")]
    Store { step: usize, error: StoreError },
    #[error("step {step}: the action {action:?} is not enabled in the model")]
    NotEnabled { step: usize, action: Action },
    #[error("step {step} ({action:?}): real code and model differ: {detail}")]
    Diverged {
        step: usize,
        action: Action,
        detail: String,
    },
}

/// What driving a whole trace showed.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DriveReport {
    pub steps_driven: usize,
    /// The 1-based step at which the model recorded a second effect for an operation, if any.
    pub model_duplicate_at: Option<usize>,
    /// The 1-based step after which the real store held a second payment for an operation, if any.
    pub real_duplicate_at: Option<usize>,
    /// Real payments per operation at the end.
    pub real_payments_per_op: BTreeMap<OpRef, usize>,
    /// Handlers that died inside their effect transaction, which the real store rolled back.
    pub rolled_back_crashes: usize,
    /// Completions the real store refused (fencing), sending the handler back to its claim.
    pub fenced_refusals: usize,
    /// What each step called on the real store, one line per step.
    pub log: Vec<String>,
}

/// Why the real stores cannot stand in for this world, if they cannot: they keep the key table in the same
/// database as the effect and make no external provider call.
pub fn unsupported(world: &World) -> Option<String> {
    use crate::model::{KeyStore as ModelKeyStore, Provider};
    let Some(world) = world.http() else {
        return Some("a message-queue world (broker and consumer inbox)".to_string());
    };
    let key_store = world.server().key_store();
    if key_store != ModelKeyStore::SameDatabase {
        return Some(format!("key store {key_store:?}"));
    }
    if world.provider() != Provider::None {
        return Some(format!("provider {:?}", world.provider()));
    }
    None
}

/// The real request for a model request: the store sees scope and key value as `client_id` and `key`, and the
/// body as the model file wrote it (so raw and normalised fingerprints match the model's).
pub fn real_request(world: &HttpWorld, request: &crate::model::Request) -> Request {
    let text = world.body_text(request.body);
    let body = serde_json::from_str(text).unwrap_or(serde_json::Value::Null);
    let (client_id, key) = real_key(&request.key);
    Request {
        client_id,
        key,
        body,
        raw_body: text.as_bytes().to_vec(),
    }
}

/// Drives one model world and one real store in lockstep.
pub struct Driver<'a> {
    world: &'a HttpWorld,
    /// `stores[p]` is process p's handle on the store: one connection each (SQLite), or one shared store.
    stores: Vec<&'a dyn KeyStore>,
    state: State,
    handlers: Vec<Option<Handler>>,
    key_clock_ms: BTreeMap<Key, u64>,
    /// Which operation each real payment belongs to, by payment id (the real store does not know operations).
    ledger: BTreeMap<u64, OpRef>,
    report: DriveReport,
    enabled: Vec<Action>,
}

impl<'a> Driver<'a> {
    /// `stores` must hold one handle per server process of `world`, all on one fresh store.
    pub fn new(world: &'a HttpWorld, stores: Vec<&'a dyn KeyStore>) -> Driver<'a> {
        assert_eq!(
            stores.len(),
            world.processes() as usize,
            "one store handle per process"
        );
        Driver {
            world,
            stores,
            state: world.init_state(),
            handlers: vec![None; world.processes() as usize],
            key_clock_ms: BTreeMap::new(),
            ledger: BTreeMap::new(),
            report: DriveReport::default(),
            enabled: Vec::new(),
        }
    }

    /// The model state reached so far.
    pub fn state(&self) -> &State {
        &self.state
    }

    /// Drive every action of `actions`, then return the report.
    pub fn drive_all(mut self, actions: &[Action]) -> Result<DriveReport, DriveError> {
        for action in actions {
            self.drive(*action)?;
        }
        Ok(self.report)
    }

    pub fn into_report(self) -> DriveReport {
        self.report
    }

    /// Drive one action: the model's transition and the matching real calls, then compare.
    pub fn drive(&mut self, action: Action) -> Result<(), DriveError> {
        let step = self.report.steps_driven + 1;
        self.world.actions(&self.state, &mut self.enabled);
        if !self.enabled.contains(&action) {
            return Err(DriveError::NotEnabled { step, action });
        }
        let (next, events) = self.world.next_state(&self.state, &action);
        let store_error = |error| DriveError::Store { step, error };
        let diverged = |detail: String| DriveError::Diverged {
            step,
            action,
            detail,
        };
        let line = match action {
            Action::DeliverRequest { request, proc } => {
                self.handlers[proc as usize] = Some(Handler {
                    model_request: request,
                    request: real_request(self.world, &request),
                    phase: Phase::Claim,
                });
                format!("process {proc}: handler starts")
            }
            Action::Step { proc } => {
                let expected = expected_answer(&self.state, &next, proc, events);
                let answer = self.step_handler(proc).map_err(store_error)?;
                if answer.as_ref().map(reply_summary) != expected {
                    return Err(diverged(format!(
                        "process {proc} answered {:?}, the model {expected:?}",
                        answer.as_ref().map(reply_summary)
                    )));
                }
                let phase = self.handlers[proc as usize].as_ref().map(|h| &h.phase);
                format!("process {proc}: {}", describe(phase, answer.as_ref()))
            }
            Action::Crash { proc } => {
                let crashed = self.handlers[proc as usize].take();
                match crashed {
                    Some(Handler {
                        request,
                        model_request,
                        phase: Phase::Commit(token),
                    }) => {
                        let now_ms = self.now_ms(&model_request.key);
                        let store = self.stores[proc as usize];
                        match store.complete_with(&request, token, now_ms, &mut || StoreFlow::Crash)
                        {
                            Err(StoreError::Crashed) | Ok(Completion::Refused) => {}
                            Ok(Completion::Created(reply)) => {
                                return Err(diverged(format!(
                                    "a crashed handler committed {reply:?}"
                                )))
                            }
                            Err(error) => return Err(store_error(error)),
                        }
                        self.report.rolled_back_crashes += 1;
                        format!("process {proc}: dies inside its effect transaction (rolled back)")
                    }
                    _ => format!("process {proc}: dies"),
                }
            }
            Action::ExpireLease { key } => {
                let lease_ms = match self.world.server().protocol().lease {
                    Lease::Ms(lease_ms) => lease_ms,
                    Lease::None => return Err(diverged("a lease expired without a lease".into())),
                };
                *self.key_clock_ms.entry(key).or_insert(0) += lease_ms;
                format!("clock of key {}/{} +{lease_ms} ms", key.scope, key.value)
            }
            Action::Fail { proc } => {
                let handler = self.handlers[proc as usize].as_mut();
                let Some(handler) = handler else {
                    return Err(diverged(format!("process {proc} has no handler to fail")));
                };
                let token = match handler.phase {
                    Phase::Effect(token) | Phase::Commit(token) => token,
                    _ => return Err(diverged(format!("process {proc} fails outside its work"))),
                };
                let store = self.stores[proc as usize];
                let reply = store
                    .fail(&handler.request, token, self.world.server().on_error())
                    .map_err(store_error)?;
                handler.phase = Phase::Respond(reply);
                format!(
                    "process {proc}: handler fails (500), on-error {:?}",
                    self.world.server().on_error()
                )
            }
            Action::ExpireKey { key } => {
                let (client_id, key_text) = real_key(&key);
                self.stores[0]
                    .expire_key(&client_id, &key_text)
                    .map_err(store_error)?;
                format!("TTL reaper deletes completed key {client_id}/{key_text}")
            }
            Action::Republish { .. } => {
                return Err(diverged(
                    "real stores do not model a broker or a producer".into(),
                ))
            }
            Action::Send { .. }
            | Action::Timeout { .. }
            | Action::DeliverResponse { .. }
            | Action::Drop { .. }
            | Action::Duplicate { .. } => "(client or network only)".to_string(),
        };
        self.state = next;
        self.report.steps_driven = step;
        self.report
            .log
            .push(format!("{step:>3} {action:?}: {line}"));
        if events.has(Event::DuplicateEffect) && self.report.model_duplicate_at.is_none() {
            self.report.model_duplicate_at = Some(step);
        }
        self.compare(step, action)
    }

    fn now_ms(&self, key: &Key) -> u64 {
        self.key_clock_ms.get(key).copied().unwrap_or(0)
    }

    /// Run process `proc`'s next real step; returns the reply if the handler answered (and so ended).
    fn step_handler(&mut self, proc: u8) -> Result<Option<Reply>, StoreError> {
        let store = self.stores[proc as usize];
        let Some(mut handler) = self.handlers[proc as usize].take() else {
            return Ok(None);
        };
        let now_ms = self.now_ms(&handler.model_request.key);
        let request = &handler.request;
        let next_phase = match handler.phase {
            Phase::Claim => {
                let lookup = store.claim_lookup(request, now_ms)?;
                if lookup
                    .0
                    .as_ref()
                    .is_some_and(|decision| decision.executes())
                {
                    Phase::Insert(lookup)
                } else {
                    match store.claim_finish(request, lookup, now_ms)? {
                        Claimed::Owner { token, .. } => Phase::Effect(token),
                        Claimed::Answered(reply) => return Ok(Some(reply)),
                    }
                }
            }
            Phase::Insert(lookup) => match store.claim_finish(request, lookup, now_ms)? {
                Claimed::Owner { token, .. } => Phase::Effect(token),
                Claimed::Answered(reply) => return Ok(Some(reply)),
            },
            Phase::Effect(token) => Phase::Commit(token),
            Phase::Commit(token) => match store.complete(request, token, now_ms)? {
                Completion::Created(reply) => {
                    if let Some(id) = payment_id(&reply) {
                        self.ledger.insert(id, handler.model_request.from);
                    }
                    Phase::Respond(reply)
                }
                Completion::Refused => {
                    self.report.fenced_refusals += 1;
                    Phase::Claim
                }
            },
            Phase::Respond(reply) => return Ok(Some(reply)),
        };
        handler.phase = next_phase;
        self.handlers[proc as usize] = Some(handler);
        Ok(None)
    }

    /// Compare the real store and handlers with the model state after a step.
    fn compare(&mut self, step: usize, action: Action) -> Result<(), DriveError> {
        let diverged = |detail: String| DriveError::Diverged {
            step,
            action,
            detail,
        };
        let payments = self.stores[0]
            .payments()
            .map_err(|error| DriveError::Store { step, error })?;
        let mut real_owners = Vec::with_capacity(payments.len());
        for payment in &payments {
            match self.ledger.get(&payment.payment_id) {
                Some(op) => real_owners.push(*op),
                None => {
                    return Err(diverged(format!(
                        "payment {} has no handler",
                        payment.payment_id
                    )))
                }
            }
        }
        if real_owners[..] != self.state.store.payments[..] {
            return Err(diverged(format!(
                "real payments by operation {real_owners:?}, the model's {:?}",
                self.state.store.payments
            )));
        }
        let mut per_op: BTreeMap<OpRef, usize> = BTreeMap::new();
        for op in real_owners {
            *per_op.entry(op).or_insert(0) += 1;
        }
        if per_op.values().any(|count| *count > 1) && self.report.real_duplicate_at.is_none() {
            self.report.real_duplicate_at = Some(step);
        }
        self.report.real_payments_per_op = per_op;
        self.compare_records(step, action)?;
        for (proc, model_proc) in self.state.procs.iter().enumerate() {
            let real = self.handlers[proc].as_ref().map(|h| phase_name(&h.phase));
            let model = match model_proc {
                Proc::Idle => None,
                Proc::Busy(job) => Some(job_step_name(&job.step)),
            };
            if real != model {
                return Err(diverged(format!(
                    "process {proc} is at {real:?} in real code, {model:?} in the model"
                )));
            }
        }
        Ok(())
    }
}

impl Driver<'_> {
    /// Every key's record: in the model a record per key; in the store the key's latest row. Same keys, same
    /// status (in_progress, or completed with the same payment).
    fn compare_records(&self, step: usize, action: Action) -> Result<(), DriveError> {
        let rows = self.stores[0]
            .rows()
            .map_err(|error| DriveError::Store { step, error })?;
        let mut real: BTreeMap<(String, String), Option<(u16, u64)>> = BTreeMap::new();
        for row in &rows {
            let completed_payment = row
                .response
                .as_ref()
                .map(|response| (response.status, response.payment_id().unwrap_or(0)));
            real.insert((row.client_id.clone(), row.key.clone()), completed_payment);
        }
        let mut model = BTreeMap::new();
        for (key, record) in &self.state.store.records {
            let completed_payment = match record.status {
                RecordStatus::InProgress { .. } => None,
                RecordStatus::Completed { code, payload } => {
                    Some((code, payload.map_or(0, u64::from)))
                }
            };
            model.insert(real_key(key), completed_payment);
        }
        if real != model {
            return Err(DriveError::Diverged {
                step,
                action,
                detail: format!(
                    "records (key -> completed status and payment) are {real:?} in real code, {model:?} in the model"
                ),
            });
        }
        Ok(())
    }
}

/// The store's (client_id, key) for a model key.
fn real_key(key: &Key) -> (String, String) {
    (format!("scope-{}", key.scope), format!("key-{}", key.value))
}

/// The answer the model gave in this step for process `proc`, as (status, payment id), if it answered.
fn expected_answer(
    before: &State,
    after: &State,
    proc: u8,
    events: crate::model::Events,
) -> Option<(u16, Option<u64>)> {
    let Proc::Busy(job) = before.procs[proc as usize] else {
        return None;
    };
    if after.procs[proc as usize] != Proc::Idle {
        return None;
    }
    match job.step {
        JobStep::Respond { code, payload } => Some((code, payload.map(u64::from))),
        _ if events.has(Event::Replay) => match before.store.records.get(&job.request.key) {
            Some(Record {
                status: RecordStatus::Completed { code, payload },
                ..
            }) => Some((status::replay_status(*code), payload.map(u64::from))),
            _ => Some((status::OK_REPLAY, None)),
        },
        _ if events.has(Event::Conflict) => Some((status::CONFLICT_IN_PROGRESS, None)),
        _ if events.has(Event::BodyMismatch) => Some((status::UNPROCESSABLE_BODY_MISMATCH, None)),
        _ => None,
    }
}

fn payment_id(reply: &Reply) -> Option<u64> {
    reply.body.get("payment_id").and_then(|id| id.as_u64())
}

fn reply_summary(reply: &Reply) -> (u16, Option<u64>) {
    (reply.status, payment_id(reply))
}

fn phase_name(phase: &Phase) -> &'static str {
    match phase {
        Phase::Claim => "claim",
        Phase::Insert(_) => "insert",
        Phase::Effect(_) => "effect",
        Phase::Commit(_) => "commit",
        Phase::Respond(_) => "respond",
    }
}

fn job_step_name(step: &JobStep) -> &'static str {
    match step {
        JobStep::Claim => "claim",
        JobStep::Insert => "insert",
        JobStep::Effect => "effect",
        JobStep::Commit => "commit",
        JobStep::Respond { .. } => "respond",
        JobStep::Provider => "provider",
        JobStep::CompleteKv { .. } => "complete-kv",
    }
}

fn describe(phase: Option<&Phase>, answer: Option<&Reply>) -> String {
    match (phase, answer) {
        (_, Some(reply)) => format!("answers {:?}", reply_summary(reply)),
        (Some(Phase::Insert(_)), None) => "SELECT found the key free: will INSERT".to_string(),
        (Some(Phase::Effect(token)), None) => format!("owns the key (claim token {})", token.0),
        (Some(Phase::Commit(_)), None) => {
            "effect transaction open (payment not committed)".to_string()
        }
        (Some(Phase::Respond(reply)), None) => {
            format!(
                "committed payment and completion: {:?}",
                reply_summary(reply)
            )
        }
        (Some(Phase::Claim), None) => "completion refused (fenced): claims again".to_string(),
        (None, None) => "idle".to_string(),
    }
}
