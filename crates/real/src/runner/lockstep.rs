//! A handler world's trace (a counterexample, a walk) driven against a real database in lockstep: each process
//! is a live handler future over its own connection, making one call when the trace says so; a crash drops the
//! future and its connection with whatever transaction was open; a pause moves the database's logical clock as
//! the model's moved. After every step the real effect count must equal the model's, and every reply sent must be
//! the model's: the same handler code, the same outcome, at the same step. Background workers run the same way,
//! each on its own connection: a wake starts its run, a crash drops it.

use crate::check::Model;
use crate::handler::api::{Activation, Clock, Handler, Reply, Store, StoreResult, Worker};
use crate::handler::lost::Failure;
use crate::handler::world::{no_request, HandlerAction, HandlerState, HandlerWorld, Message};
use crate::runner::drive::{Running, Turn};

/// A real database the trace runs on.
pub trait Backend {
    type Store: Store + 'static;
    /// A new connection (one per process, and a fresh one after a crash).
    fn connect(&self) -> StoreResult<Self::Store>;
    /// Committed effect rows, all tables.
    fn effects(&self) -> StoreResult<usize>;
    /// Charges made at the provider.
    fn charges(&self) -> StoreResult<usize>;
    /// The clock every connection reads.
    fn clock(&self) -> &Clock;
    /// Calls other services acted on (`Store::external_call`).
    fn calls(&self) -> StoreResult<usize>;
}

/// What the lockstep run saw.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Lockstep {
    /// Effect rows after each step, real (they equal the model's, or the run stopped with an error).
    pub effects_per_step: Vec<usize>,
    /// Provider charges after each step, real (likewise).
    pub charges_per_step: Vec<usize>,
    /// The first step (1-based) after which some operation had two effects in the model, if any.
    pub model_duplicate_at: Option<usize>,
    /// The replies sent (real and model alike), with their steps.
    pub replies: Vec<(usize, Reply)>,
    /// Calls other services acted on after each step, real (likewise).
    pub calls_per_step: Vec<usize>,
}

/// Drive `actions` of `world` against `backend`, step by step; an error names the step where real code and
/// model parted.
pub fn drive<H: Handler, W: Worker, B: Backend>(
    world: &HandlerWorld<H, W>,
    backend: &B,
    actions: &[HandlerAction],
) -> Result<Lockstep, String> {
    let activation = Activation(world.worker_code());
    let mut state: HandlerState = world.init_state();
    let mut live: Vec<Option<Running>> = (0..state.procs.len()).map(|_| None).collect();
    let mut seen = Lockstep::default();
    let fail = |step: usize, what: String| format!("step {step}: {what}");
    for (index, action) in actions.iter().enumerate() {
        let step = index + 1;
        let model_reply = about_to_reply(&state, action);
        let observed = world.apply(&mut state, action);
        // Time moves with pauses and Retry-After waits: every connection reads the model's clock.
        backend.clock().set_ms(state.store.now_ms);
        match action {
            HandlerAction::DeliverRequest {
                message: Message::Request { from, attempt },
                proc,
            } => {
                let store = backend.connect().map_err(|e| fail(step, e.to_string()))?;
                let request = world.request_in(&state, *from, *attempt);
                live[*proc as usize] = Some(Running::start(world.handler_code(), store, request));
            }
            HandlerAction::Wake { worker } => {
                let store = backend.connect().map_err(|e| fail(step, e.to_string()))?;
                let slot = (world.server_processes() + worker) as usize;
                live[slot] = Some(Running::start(&activation, store, no_request()));
            }
            HandlerAction::Step { proc, .. } => {
                let running = live[*proc as usize]
                    .as_mut()
                    .ok_or_else(|| fail(step, "no handler running".into()))?;
                let real = running.step(false).cloned();
                if let Some(model_reply) = &model_reply {
                    if real.as_ref() != Some(model_reply) {
                        return Err(fail(
                            step,
                            format!("real reply {real:?}, model {model_reply:?}"),
                        ));
                    }
                    if !world.is_worker(*proc) {
                        seen.replies.push((step, model_reply.clone()));
                    }
                    live[*proc as usize] = None;
                }
            }
            HandlerAction::Crash { proc } => live[*proc as usize] = None,
            HandlerAction::Fail { proc } => {
                live[*proc as usize]
                    .as_mut()
                    .ok_or_else(|| fail(step, "no handler running".into()))?
                    .step(true);
            }
            HandlerAction::CallFault { proc, fault } => {
                let turn = match world.declared_call_fault(*fault as usize).failure {
                    Failure::NotMade => Turn::NotMade,
                    Failure::AnswerLost => Turn::AnswerLost,
                };
                live[*proc as usize]
                    .as_mut()
                    .ok_or_else(|| fail(step, "no handler running".into()))?
                    .step_as(turn);
            }
            _ => {}
        }
        same_counts(backend, &state, &mut seen).map_err(|what| fail(step, what))?;
        if observed.has(crate::builtin::Event::DuplicateEffect) {
            seen.model_duplicate_at.get_or_insert(step);
        }
    }
    Ok(seen)
}

/// The reply a step is about to send, read before the model moves on (no copy of the whole state).
fn about_to_reply(state: &HandlerState, action: &HandlerAction) -> Option<Reply> {
    let HandlerAction::Step { proc, .. } = action else {
        return None;
    };
    match state.procs[*proc as usize].as_ref().map(|job| job.next()) {
        Some(crate::handler::Next::Reply(reply)) => Some(reply.clone()),
        _ => None,
    }
}

/// The real effect rows and provider charges, which must be the model's; recorded in `seen`.
fn same_counts<B: Backend>(
    backend: &B,
    state: &HandlerState,
    seen: &mut Lockstep,
) -> Result<(), String> {
    let effects = backend.effects().map_err(|e| e.to_string())?;
    let charges = backend.charges().map_err(|e| e.to_string())?;
    let (model_effects, model_charges) = (state.store.effects.len(), state.store.charges.len());
    if effects != model_effects {
        return Err(format!(
            "{effects} effect rows for real, {model_effects} in the model"
        ));
    }
    if charges != model_charges {
        return Err(format!(
            "{charges} provider charges for real, {model_charges} in the model"
        ));
    }
    let (calls, model_calls) = (
        backend.calls().map_err(|e| e.to_string())?,
        state.store.calls.len(),
    );
    if calls != model_calls {
        return Err(format!(
            "{calls} external calls for real, {model_calls} in the model"
        ));
    }
    seen.effects_per_step.push(effects);
    seen.charges_per_step.push(charges);
    seen.calls_per_step.push(calls);
    Ok(())
}

/// SQLite, one file (and its side file), a connection per process, and one more that counts the effects.
pub struct SqliteBackend {
    path: std::path::PathBuf,
    clock: Clock,
    observer: crate::stores::sqlite::SqliteStore,
}

impl SqliteBackend {
    /// A new database at `path`.
    pub fn create(path: &std::path::Path) -> StoreResult<SqliteBackend> {
        crate::stores::sqlite::SqliteStore::create(path)?;
        let clock = Clock::default();
        Ok(SqliteBackend {
            path: path.to_path_buf(),
            observer: crate::stores::sqlite::SqliteStore::open(path, clock.clone())?,
            clock,
        })
    }
}

impl Backend for SqliteBackend {
    type Store = crate::stores::sqlite::SqliteStore;
    fn connect(&self) -> StoreResult<Self::Store> {
        crate::stores::sqlite::SqliteStore::open(&self.path, self.clock.clone())
    }
    fn effects(&self) -> StoreResult<usize> {
        self.observer.effects_total()
    }
    fn charges(&self) -> StoreResult<usize> {
        self.observer.charges_total()
    }
    fn calls(&self) -> StoreResult<usize> {
        self.observer.calls_total()
    }
    fn clock(&self) -> &Clock {
        &self.clock
    }
}

/// PostgreSQL, a connection per process, and one more that counts the effects.
pub struct PostgresBackend {
    params: String,
    clock: Clock,
    observer: std::cell::RefCell<crate::stores::postgres::PostgresStore>,
}

impl PostgresBackend {
    /// The database behind `params`, with the tables created.
    pub fn create(params: &str) -> StoreResult<PostgresBackend> {
        crate::stores::postgres::PostgresStore::create(params)?;
        let clock = Clock::default();
        let observer = crate::stores::postgres::PostgresStore::connect(params, clock.clone())?;
        Ok(PostgresBackend {
            params: params.to_string(),
            clock,
            observer: std::cell::RefCell::new(observer),
        })
    }
}

impl Backend for PostgresBackend {
    type Store = crate::stores::postgres::PostgresStore;
    fn connect(&self) -> StoreResult<Self::Store> {
        crate::stores::postgres::PostgresStore::connect(&self.params, self.clock.clone())
    }
    fn effects(&self) -> StoreResult<usize> {
        self.observer.borrow_mut().effects_total()
    }
    fn charges(&self) -> StoreResult<usize> {
        self.observer.borrow_mut().charges_total()
    }
    fn calls(&self) -> StoreResult<usize> {
        self.observer.borrow_mut().calls_total()
    }
    fn clock(&self) -> &Clock {
        &self.clock
    }
}
