//! A handler world's trace (a counterexample, a walk) driven against a real database in lockstep: each process
//! is a handler run ([`Stepped`]) over its own connection, making one call when the trace says so; a crash drops
//! the run and its connection with whatever transaction was open; a pause moves the database's logical clock as
//! the model's moved. After every step the real effect count must equal the model's, and every reply sent must be
//! the model's: the same handler code, the same outcome, at the same step. Background workers run the same way,
//! each on its own connection: a wake starts its run, a crash drops it.

use super::stepped::Stepped;
use crate::check::Model;
use crate::handler::api::{Activation, Clock, Handler, Reply, Request, Store, StoreResult, Worker};
use crate::handler::lost::Failure;
use crate::handler::world::{no_request, HandlerAction, HandlerState, HandlerWorld, Message};
use crate::stores::postgres::{Postgres, PostgresStore};
use crate::stores::sql::{SqlConnection, SqlStore};
use crate::stores::sqlite::{Sqlite, SqliteStore};
use std::path::Path;

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

/// The code a process runs: the world's handler on a request, or a background worker's activation.
enum Code<'a, H, W> {
    Handler(&'a H),
    Worker(&'a W),
}

impl<H: Handler, W: Worker> Handler for Code<'_, H, W> {
    async fn handle<S: Store>(&self, store: &mut S, request: &Request) -> Reply {
        match self {
            Code::Handler(handler) => handler.handle(store, request).await,
            Code::Worker(worker) => Activation(*worker).handle(store, request).await,
        }
    }
}

/// Each process's run in progress, by process (server processes, then workers).
type Runs<'a, H, W, S> = Vec<Option<Stepped<Code<'a, H, W>, S>>>;

/// Drive `actions` of `world` against `backend`, step by step; an error names the step where real code and
/// model parted.
pub fn drive<H: Handler, W: Worker, B: Backend>(
    world: &HandlerWorld<H, W>,
    backend: &B,
    actions: &[HandlerAction],
) -> Result<Lockstep, String> {
    let mut state: HandlerState = world.init_state();
    let mut runs: Runs<H, W, B::Store> = (0..state.procs.len()).map(|_| None).collect();
    let mut seen = Lockstep::default();
    for (index, action) in actions.iter().enumerate() {
        let step = index + 1;
        let fail = |what: String| format!("step {step}: {what}");
        let model_reply = about_to_reply(&state, action);
        let observed = world.apply(&mut state, action);
        // Time moves with pauses and Retry-After waits: every connection reads the model's clock.
        backend.clock().set_ms(state.store.now_ms);
        let sent = act(world, backend, &state, action, &mut runs, model_reply).map_err(fail)?;
        if let Some(reply) = sent {
            seen.replies.push((step, reply));
        }
        same_counts(backend, &state, &mut seen).map_err(fail)?;
        if observed.has(crate::builtin::Event::DuplicateEffect) {
            seen.model_duplicate_at.get_or_insert(step);
        }
    }
    Ok(seen)
}

/// The real counterpart of one action on the processes' runs: a delivery or a wake starts a run on a new
/// connection, a step makes one call (or compares the reply the model sends), a crash drops the run, a fault
/// fails the next call. The reply a server process sent in this step, if any.
fn act<'a, H: Handler, W: Worker, B: Backend>(
    world: &'a HandlerWorld<H, W>,
    backend: &B,
    state: &HandlerState,
    action: &HandlerAction,
    runs: &mut Runs<'a, H, W, B::Store>,
    model_reply: Option<Reply>,
) -> Result<Option<Reply>, String> {
    match action {
        HandlerAction::DeliverRequest {
            message: Message::Request { from, attempt },
            proc,
        } => {
            let store = backend.connect().map_err(|e| e.to_string())?;
            let request = world.request_in(state, *from, *attempt);
            let code = Code::Handler(world.handler_code());
            runs[*proc as usize] = Some(Stepped::new(code, store, request));
        }
        HandlerAction::Wake { worker } => {
            let store = backend.connect().map_err(|e| e.to_string())?;
            let slot = (world.server_processes() + worker) as usize;
            let code = Code::Worker(world.worker_code());
            runs[slot] = Some(Stepped::new(code, store, no_request()));
        }
        HandlerAction::Step { proc, .. } => {
            let real = running(runs, *proc)?.step().err();
            if let Some(model_reply) = model_reply {
                if real.as_ref() != Some(&model_reply) {
                    return Err(format!("real reply {real:?}, model {model_reply:?}"));
                }
                runs[*proc as usize] = None;
                return Ok((!world.is_worker(*proc)).then_some(model_reply));
            }
        }
        HandlerAction::Crash { proc } => runs[*proc as usize] = None,
        HandlerAction::Fail { proc } => {
            running(runs, *proc)?.fail_next();
        }
        HandlerAction::CallFault { proc, fault } => {
            let run = running(runs, *proc)?;
            match world.declared_call_fault(*fault as usize).failure {
                Failure::NotMade => run.fail_next(),
                Failure::AnswerLost => run.lose_next_answer(),
            };
        }
        _ => {}
    }
    Ok(None)
}

/// Process `proc`'s run, which a step or a fault needs.
fn running<T>(runs: &mut [Option<T>], proc: u8) -> Result<&mut T, String> {
    let run = runs[proc as usize].as_mut();
    run.ok_or_else(|| "no handler running".to_string())
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

/// How a SQL backend opens a connection reading a clock.
type Connect<C> = dyn Fn(&Clock) -> StoreResult<SqlStore<C>> + Send;

/// A SQL database (`crate::stores::sql`): a connection per process, and one more that counts the effects.
pub struct SqlBackend<C> {
    connect: Box<Connect<C>>,
    clock: Clock,
    observer: SqlStore<C>,
}

impl<C: SqlConnection> SqlBackend<C> {
    /// A backend whose connections `connect` opens (the tables made).
    fn new(
        connect: impl Fn(&Clock) -> StoreResult<SqlStore<C>> + Send + 'static,
    ) -> StoreResult<Self> {
        let clock = Clock::default();
        Ok(SqlBackend {
            observer: connect(&clock)?,
            connect: Box::new(connect),
            clock,
        })
    }
}

impl<C: SqlConnection + 'static> Backend for SqlBackend<C> {
    type Store = SqlStore<C>;
    fn connect(&self) -> StoreResult<Self::Store> {
        (self.connect)(&self.clock)
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

/// SQLite, one file (and its side file).
pub type SqliteBackend = SqlBackend<Sqlite>;

impl SqliteBackend {
    /// A new database at `path`.
    pub fn create(path: &Path) -> StoreResult<SqliteBackend> {
        SqliteStore::create(path)?;
        let path = path.to_path_buf();
        SqlBackend::new(move |clock| SqliteStore::open(&path, clock.clone()))
    }
}

/// PostgreSQL.
pub type PostgresBackend = SqlBackend<Postgres>;

impl PostgresBackend {
    /// The database behind `params`, with the tables created.
    pub fn create(params: &str) -> StoreResult<PostgresBackend> {
        PostgresStore::create(params)?;
        let params = params.to_string();
        SqlBackend::new(move |clock| PostgresStore::connect(&params, clock.clone()))
    }
}
