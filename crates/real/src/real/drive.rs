//! The built-in world's traces driven against real stores through the library's article handler
//! (`handler::designs::article`, with the world's knobs): each action of a trace found by the model checker
//! becomes calls the handler makes on a real store, step by step, and the two are compared after every step. The
//! protocol's decisions live in the handler alone; this module only maps the model's steps onto its calls.
//!
//! Each process runs the handler by `crate::runner`'s `Stepped` (replay, `handler::next_step`): the driver sees every call before it makes
//! it, so it can stop at the model's step boundaries, which are the handler's transaction boundaries:
//! - `DeliverRequest { request, proc }`: process `proc` starts the handler (no call yet);
//! - `Step { proc }` at `Claim`: the claim's transaction (`now`, `BEGIN` .. `COMMIT`); a handler that then
//!   answers (200, 409, 422) answers in this step. Select-then-insert: the SELECT's transaction, and its
//!   INSERT's at `Insert`. At `Effect`: nothing yet (the model's effect transaction is open and uncommitted; the
//!   real one is opened at `Commit`, so that no transaction spans two model steps and no worker waits for another's
//!   write lock). At `Commit`: the payment's transaction, to its `COMMIT` or, fenced, its `ROLLBACK` (the handler
//!   then claims again, as the model's). At `Respond`: the reply is compared with the model's;
//! - `Crash { proc }`: the handler and its connection are dropped; one at `Commit` first opens its payment
//!   transaction and writes the payment, so the store really rolls it back;
//! - `Fail { proc }`: the handler's next call fails (at `Commit`, the one after the payment is written); the
//!   handler's own error path applies `on-error`, and its 500 is sent at `Respond`;
//! - `ExpireKey { key }`: the article's TTL reaper (`reap_completed`);
//! - `ExpireLease { key }`: the key's clock moves on by the lease. Each key has its own clock (set on the store
//!   before each of its handler's steps), so one key's expiry does not age another's claim;
//! - client and network actions touch no store.
//!
//! After every step the real payments must equal the model's (count, and which operation each belongs to), every
//! key's record must match (in_progress, or completed with the same status and payment), every answer must equal
//! the model's (status and payment id), and every handler must be at the model's step.

use crate::builtin::{
    Action, Event, HttpWorld, JobStep, Key, OpRef, Payment, Proc, RecordStatus, State, World,
};
use crate::handler::designs::article::{self, ArticleKnobs, Record};
use crate::handler::replay::Next;
use crate::handler::{Answer, Call, Reply, Request, Store, StoreError};
use crate::protocol::{status, Lease};
use crate::runner::lockstep::Backend;
use crate::runner::run_now;
use crate::runner::stepped::{is_effect, is_transaction_end, Stepped};
use std::collections::{BTreeMap, BTreeSet};

/// Where a real handler is; mirrors the model's `JobStep`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    Claim,
    Insert,
    Effect,
    Commit,
    Respond,
}

/// A handler in progress on one process, and the model's request it serves (ghost data included: which
/// operation it belongs to).
struct Running<C> {
    model_request: crate::builtin::Request,
    run: Stepped<ArticleKnobs, C>,
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
    /// Handlers that died inside their payment transaction, which the real store rolled back.
    pub rolled_back_crashes: usize,
    /// Completions the handler's fencing refused, sending it back to its claim.
    pub fenced_refusals: usize,
    /// What each step called on the real store, one line per step.
    pub log: Vec<String>,
}

/// Why the article's handler cannot stand in for this world, if it cannot: it keeps the key table in the same
/// database as the effect and makes no external provider call.
pub fn unsupported(world: &World) -> Option<String> {
    use crate::builtin::{KeyStore as ModelKeyStore, Provider};
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

/// The article's knobs for a world: its protocol and its `on-error`.
pub fn knobs(world: &HttpWorld) -> ArticleKnobs {
    ArticleKnobs {
        protocol: world.server().protocol(),
        on_error: world.server().on_error(),
    }
}

/// The handler's request for a model request: the model's key scope and value as client and key, and the body
/// as the model file wrote it (so raw and normalised fingerprints match the model's).
pub fn real_request(world: &HttpWorld, request: &crate::builtin::Request) -> Request {
    Request::new(
        format!("scope-{}", request.key.scope),
        format!("key-{}", request.key.value),
        world.body_text(request.body),
    )
}

/// Drives one model world and the article's handler on one real store in lockstep.
pub struct Driver<'a, B: Backend> {
    world: &'a HttpWorld,
    backend: &'a B,
    knobs: ArticleKnobs,
    /// Reads records and runs the TTL reaper.
    observer: B::Store,
    state: State,
    handlers: Vec<Option<Running<B::Store>>>,
    key_clock_ms: BTreeMap<Key, u64>,
    keys_seen: BTreeSet<Key>,
    /// Which operation each real payment belongs to, by payment id (the real store does not know operations).
    ledger: BTreeMap<u64, OpRef>,
    report: DriveReport,
    enabled: Vec<Action>,
}

impl<'a, B: Backend> Driver<'a, B> {
    /// `backend` must be a fresh store (no rows, no payments).
    pub fn new(world: &'a HttpWorld, backend: &'a B) -> Result<Driver<'a, B>, DriveError> {
        let observer = backend
            .connect()
            .map_err(|error| DriveError::Store { step: 0, error })?;
        Ok(Driver {
            world,
            backend,
            knobs: knobs(world),
            observer,
            state: world.init_state(),
            handlers: (0..world.processes()).map(|_| None).collect(),
            key_clock_ms: BTreeMap::new(),
            keys_seen: BTreeSet::new(),
            ledger: BTreeMap::new(),
            report: DriveReport::default(),
            enabled: Vec::new(),
        })
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
        let line = self.real_step(step, action, &next, events)?;
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

    /// The real calls for one model action; one line saying what they did.
    fn real_step(
        &mut self,
        step: usize,
        action: Action,
        next: &State,
        events: crate::builtin::Events,
    ) -> Result<String, DriveError> {
        let diverged = |detail: String| DriveError::Diverged {
            step,
            action,
            detail,
        };
        let store_error = |error| DriveError::Store { step, error };
        Ok(match action {
            Action::DeliverRequest { request, proc } => {
                self.keys_seen.insert(request.key);
                let connection = self.backend.connect().map_err(store_error)?;
                let run = Stepped::new(self.knobs, connection, real_request(self.world, &request));
                self.handlers[proc as usize] = Some(Running {
                    model_request: request,
                    run,
                    phase: Phase::Claim,
                });
                format!("process {proc}: handler starts")
            }
            Action::Step { proc } => {
                let expected = expected_answer(&self.state, next, proc, events);
                let answer = self.step_handler(proc).map_err(diverged)?;
                let summary = answer
                    .as_ref()
                    .map(|reply| reply_summary(&self.ledger, reply));
                if summary != expected {
                    return Err(diverged(format!(
                        "process {proc} answered {summary:?}, the model {expected:?}"
                    )));
                }
                self.describe(proc, answer.as_ref())
            }
            Action::Crash { proc } => self.crash(proc).map_err(diverged)?,
            Action::ExpireLease { key } => {
                let lease_ms = match self.knobs.protocol.lease {
                    Lease::Ms(lease_ms) => lease_ms,
                    Lease::None => return Err(diverged("a lease expired without a lease".into())),
                };
                *self.key_clock_ms.entry(key).or_insert(0) += lease_ms;
                format!("clock of key {}/{} +{lease_ms} ms", key.scope, key.value)
            }
            Action::Fail { proc } => self.fail(proc).map_err(diverged)?,
            Action::ExpireKey { key } => {
                self.set_clock(&key);
                let record_key = record_key_of(&key);
                let reaped = run_now(article::reap_completed(&mut self.observer, &record_key))
                    .map_err(store_error)?;
                format!("TTL reaper on {record_key}: forgotten {reaped}")
            }
            Action::Republish { .. } => {
                return Err(diverged(
                    "the article's handler knows no broker or producer".into(),
                ))
            }
            Action::Send { .. }
            | Action::Timeout { .. }
            | Action::DeliverResponse { .. }
            | Action::Drop { .. }
            | Action::Duplicate { .. } => "(client or network only)".to_string(),
        })
    }

    fn set_clock(&self, key: &Key) {
        let now_ms = self.key_clock_ms.get(key).copied().unwrap_or(0);
        self.backend.clock().set_ms(now_ms);
    }

    /// Run process `proc`'s next model step; the reply if the handler answered (and so ended).
    fn step_handler(&mut self, proc: u8) -> Result<Option<Reply>, String> {
        let Some(mut running) = self.handlers[proc as usize].take() else {
            return Ok(None);
        };
        self.set_clock(&running.model_request.key);
        let claim = self.knobs.protocol.claim;
        running.phase = match running.phase {
            Phase::Claim | Phase::Insert => {
                self.run_until(&mut running, is_transaction_end)?;
                match running.run.next() {
                    Next::Reply(reply) => return Ok(Some(reply)),
                    Next::Call(_)
                        if running.phase == Phase::Claim
                            && claim == crate::protocol::Claim::SelectThenInsert =>
                    {
                        Phase::Insert
                    }
                    Next::Call(_) => Phase::Effect,
                }
            }
            Phase::Effect => Phase::Commit,
            Phase::Commit => match self.run_until(&mut running, is_transaction_end)? {
                Call::Rollback => {
                    self.report.fenced_refusals += 1;
                    Phase::Claim
                }
                _ => Phase::Respond,
            },
            Phase::Respond => match running.run.next() {
                Next::Reply(reply) => return Ok(Some(reply)),
                Next::Call(call) => return Err(format!("process {proc} still calls {call:?}")),
            },
        };
        self.handlers[proc as usize] = Some(running);
        Ok(None)
    }

    /// The model's crash: the handler and its connection are dropped (at `Commit`, with the payment written).
    fn crash(&mut self, proc: u8) -> Result<String, String> {
        let Some(mut running) = self.handlers[proc as usize].take() else {
            return Ok(format!("process {proc}: dies idle"));
        };
        if running.phase != Phase::Commit {
            return Ok(format!("process {proc}: dies"));
        }
        self.set_clock(&running.model_request.key);
        self.run_until(&mut running, is_effect)?;
        drop(running);
        self.report.rolled_back_crashes += 1;
        Ok(format!(
            "process {proc}: dies inside its payment transaction (rolled back)"
        ))
    }

    /// The model's handler error: the next call fails, and the handler's error path runs to its 500.
    fn fail(&mut self, proc: u8) -> Result<String, String> {
        let mut running = self.handlers[proc as usize]
            .take()
            .ok_or_else(|| format!("process {proc} has no handler to fail"))?;
        self.set_clock(&running.model_request.key);
        if running.phase == Phase::Commit {
            self.run_until(&mut running, is_effect)?;
        }
        if !running.run.fail_next() {
            return Err(format!("process {proc} fails after answering"));
        }
        // The error path (rollback, `on-error`) runs to the 500, which is sent at `Respond`.
        self.run_until(&mut running, |_| false)
            .expect_err("a handler that answers");
        running.phase = Phase::Respond;
        self.handlers[proc as usize] = Some(running);
        Ok(format!(
            "process {proc}: handler fails, on-error {:?}",
            self.knobs.on_error
        ))
    }

    /// Make calls until one for which `stop` holds has been made (payments go into the ledger); that call. A
    /// reply first is a divergence.
    fn run_until(
        &mut self,
        running: &mut Running<B::Store>,
        stop: impl Fn(&Call) -> bool,
    ) -> Result<Call, String> {
        loop {
            let (call, answer) = running
                .run
                .step()
                .map_err(|reply| format!("the handler answered {reply:?} before its step ended"))?;
            if let (Call::InsertEffect { .. }, Answer::Id(id)) = (call, answer) {
                self.ledger.insert(*id, running.model_request.from);
            }
            if stop(call) {
                return Ok(call.clone());
            }
        }
    }

    fn describe(&self, proc: u8, answer: Option<&Reply>) -> String {
        let phase = self.handlers[proc as usize].as_ref().map(|h| h.phase);
        let what = match (phase, answer) {
            (_, Some(reply)) => format!("answers {:?}", reply_summary(&self.ledger, reply)),
            (Some(Phase::Insert), None) => "SELECT found the key free: will INSERT".to_string(),
            (Some(Phase::Effect), None) => "owns the key".to_string(),
            (Some(Phase::Commit), None) => "payment transaction to come".to_string(),
            (Some(Phase::Respond), None) => "committed payment and completion".to_string(),
            (Some(Phase::Claim), None) => "completion refused (fenced): claims again".to_string(),
            (None, None) => "idle".to_string(),
        };
        format!("process {proc}: {what}")
    }

    /// Compare the real store and handlers with the model state after a step.
    fn compare(&mut self, step: usize, action: Action) -> Result<(), DriveError> {
        let diverged = |detail: String| DriveError::Diverged {
            step,
            action,
            detail,
        };
        let committed = self
            .backend
            .effects()
            .map_err(|error| DriveError::Store { step, error })?;
        let mut real_owners = Vec::with_capacity(committed);
        for id in 1..=committed as u64 {
            match self.ledger.get(&id) {
                Some(op) => real_owners.push(*op),
                None => return Err(diverged(format!("payment {id} has no handler"))),
            }
        }
        let mut per_op: BTreeMap<OpRef, usize> = BTreeMap::new();
        for op in real_owners {
            *per_op.entry(op).or_insert(0) += 1;
        }
        let model_per_op: BTreeMap<OpRef, usize> = self
            .state
            .store
            .payments
            .iter()
            .map(|(op, count)| (*op, *count as usize))
            .collect();
        if per_op != model_per_op {
            return Err(diverged(format!(
                "real payments per operation {per_op:?}, the model's {model_per_op:?}"
            )));
        }
        if per_op.values().any(|count| *count > 1) && self.report.real_duplicate_at.is_none() {
            self.report.real_duplicate_at = Some(step);
        }
        self.report.real_payments_per_op = per_op;
        self.compare_records(step, action)?;
        for (proc, model_proc) in self.state.procs.iter().enumerate() {
            let real = self.handlers[proc].as_ref().map(|h| phase_name(h.phase));
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

    /// Every key's record: the same keys, the same status (in_progress, or completed with the same status and
    /// payment).
    fn compare_records(&mut self, step: usize, action: Action) -> Result<(), DriveError> {
        let mut real = BTreeMap::new();
        let mut model = BTreeMap::new();
        let keys: BTreeSet<Key> = self
            .keys_seen
            .iter()
            .chain(self.state.store.records.keys())
            .copied()
            .collect();
        for key in keys {
            let row = run_now(self.observer.get(article::KEYS, &record_key_of(&key)))
                .map_err(|error| DriveError::Store { step, error })?;
            if let Some(text) = row {
                let summary = match Record::decode(&text) {
                    Some(Record::Completed { status, body, .. }) => {
                        Some((status, payment_named(&self.ledger, payment_id(&body))))
                    }
                    Some(Record::InProgress { .. }) => None,
                    None => {
                        return Err(DriveError::Diverged {
                            step,
                            action,
                            detail: format!("not a record: {text}"),
                        })
                    }
                };
                real.insert(key, summary);
            }
            if let Some(record) = self.state.store.records.get(&key) {
                let summary = match record.status {
                    RecordStatus::InProgress { .. } => None,
                    RecordStatus::Completed { code, payload } => Some((code, payload)),
                };
                model.insert(key, summary);
            }
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

/// The model key's record key in the article's table (as `article::record_key` makes it from the request).
fn record_key_of(key: &Key) -> String {
    format!("scope-{}/key-{}", key.scope, key.value)
}

/// The answer the model gave in this step for process `proc`, as (status, payment id), if it answered.
fn expected_answer(
    before: &State,
    after: &State,
    proc: u8,
    events: crate::builtin::Events,
) -> Option<(u16, Option<Payment>)> {
    let Proc::Busy(job) = before.procs[proc as usize] else {
        return None;
    };
    if after.procs[proc as usize] != Proc::Idle {
        return None;
    }
    match job.step {
        JobStep::Respond { code, payload } => Some((code, payload)),
        _ if events.has(Event::Replay) => match before.store.records.get(&job.request.key) {
            Some(crate::builtin::Record {
                status: RecordStatus::Completed { code, payload },
                ..
            }) => Some((status::replay_status(*code), *payload)),
            _ => Some((status::OK_REPLAY, None)),
        },
        _ if events.has(Event::Conflict) => Some((status::CONFLICT_IN_PROGRESS, None)),
        _ if events.has(Event::BodyMismatch) => Some((status::UNPROCESSABLE_BODY_MISMATCH, None)),
        _ => None,
    }
}

/// The payment id a reply's (or a stored response's) body reports; 0 when it reports none.
fn payment_id(body: &str) -> u64 {
    serde_json::from_str::<serde_json::Value>(body)
        .ok()
        .and_then(|value| value.get("payment_id").and_then(|id| id.as_u64()))
        .unwrap_or(0)
}

/// The model's name of real payment `id` (0: none): its operation, from the ledger, and its execution number,
/// its rank among that operation's real payments (ids grow in commit order).
fn payment_named(ledger: &BTreeMap<u64, OpRef>, id: u64) -> Option<Payment> {
    let op = *ledger.get(&id)?;
    let execution = ledger
        .range(..=id)
        .filter(|(_, owner)| **owner == op)
        .count();
    Some(Payment {
        op,
        execution: u8::try_from(execution).expect("fewer than 256 payments"),
    })
}

fn reply_summary(ledger: &BTreeMap<u64, OpRef>, reply: &Reply) -> (u16, Option<Payment>) {
    (reply.status, payment_named(ledger, payment_id(&reply.body)))
}

fn phase_name(phase: Phase) -> &'static str {
    match phase {
        Phase::Claim => "claim",
        Phase::Insert => "insert",
        Phase::Effect => "effect",
        Phase::Commit => "commit",
        Phase::Respond => "respond",
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
