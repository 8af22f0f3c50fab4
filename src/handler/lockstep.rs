//! A handler world's trace (a counterexample, a walk) driven against a real database in lockstep: each process
//! is a live handler future over its own connection, making one call when the trace says so; a crash drops the
//! future and its connection with whatever transaction was open; a pause moves the database's logical clock as
//! the model's moved. After every step the real effect count must equal the model's, and every reply sent must be
//! the model's: the same handler code, the same outcome, at the same step.

use super::api::{Clock, Handler, Reply, Request, Store, StoreResult};
use super::drive::{Gate, Gated};
use super::world::{HandlerAction, HandlerState, HandlerWorld, Message};
use crate::check::Model;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, Waker};

/// A real database the trace runs on.
pub trait Backend {
    type Store: Store + 'static;
    /// A new connection (one per process, and a fresh one after a crash).
    fn connect(&self) -> StoreResult<Self::Store>;
    /// Committed effect rows, all tables.
    fn effects(&self) -> StoreResult<usize>;
    /// The clock every connection reads.
    fn clock(&self) -> &Clock;
}

/// What the lockstep run saw.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Lockstep {
    /// Effect rows after each step, real (they equal the model's, or the run stopped with an error).
    pub effects_per_step: Vec<usize>,
    /// The first step (1-based) after which some operation had two effects in the model, if any.
    pub model_duplicate_at: Option<usize>,
    /// The replies sent (real and model alike), with their steps.
    pub replies: Vec<(usize, Reply)>,
}

/// A process's handler in flight: a future that owns its connection and request.
struct Live<'a> {
    future: Pin<Box<dyn Future<Output = Reply> + 'a>>,
    gate: Gate,
    reply: Option<Reply>,
}

impl<'a> Live<'a> {
    fn start<H: Handler, S: Store + 'a>(handler: &'a H, store: S, request: Request) -> Live<'a> {
        let gate = Gate::default();
        let mut store = Gated::new(store, gate.clone());
        let future = Box::pin(async move { handler.handle(&mut store, &request).await });
        Live {
            future,
            gate,
            reply: None,
        }
    }

    /// One more call (or the return); `fail`: the call fails instead.
    fn step(&mut self, fail: bool) {
        if self.reply.is_none() {
            if fail {
                self.gate.fail_one();
            } else {
                self.gate.allow_one();
            }
            if let Poll::Ready(reply) = self
                .future
                .as_mut()
                .poll(&mut Context::from_waker(Waker::noop()))
            {
                self.reply = Some(reply);
            }
        }
    }
}

/// Drive `actions` of `world` against `backend`, step by step; an error names the step where real code and
/// model parted.
pub fn drive<H: Handler, B: Backend>(
    world: &HandlerWorld<H>,
    backend: &B,
    actions: &[HandlerAction],
) -> Result<Lockstep, String> {
    let mut state: HandlerState = world.init_state();
    let mut live: Vec<Option<Live>> = (0..state.procs.len()).map(|_| None).collect();
    let mut seen = Lockstep::default();
    let fail = |step: usize, what: String| format!("step {step}: {what}");
    for (index, action) in actions.iter().enumerate() {
        let step = index + 1;
        let before = state.clone();
        let observed = world.apply(&mut state, action);
        // Time moves with pauses and Retry-After waits: every connection reads the model's clock.
        backend.clock().set_ms(state.store.now_ms);
        match action {
            HandlerAction::DeliverRequest {
                message: Message::Request { from, attempt },
                proc,
            } => {
                let store = backend.connect().map_err(|e| fail(step, e.to_string()))?;
                let request = world.request(from.client, from.op, *attempt);
                live[*proc as usize] = Some(Live::start(&world.handler, store, request));
            }
            HandlerAction::Step { proc } => {
                let running = live[*proc as usize]
                    .as_mut()
                    .ok_or_else(|| fail(step, "no handler running".into()))?;
                running.step(false);
                let answered = before.procs[*proc as usize].as_ref().map(|job| &job.next);
                if let Some(super::Next::Reply(model_reply)) = answered {
                    let real = running.reply.clone();
                    if real.as_ref() != Some(model_reply) {
                        return Err(fail(
                            step,
                            format!("real reply {real:?}, model {model_reply:?}"),
                        ));
                    }
                    seen.replies.push((step, model_reply.clone()));
                    live[*proc as usize] = None;
                }
            }
            HandlerAction::Crash { proc } => live[*proc as usize] = None,
            HandlerAction::Fail { proc } => live[*proc as usize]
                .as_mut()
                .ok_or_else(|| fail(step, "no handler running".into()))?
                .step(true),
            _ => {}
        }
        let real = backend.effects().map_err(|e| fail(step, e.to_string()))?;
        if real != state.store.effects.len() {
            return Err(fail(
                step,
                format!(
                    "{real} effect rows for real, {} in the model",
                    state.store.effects.len()
                ),
            ));
        }
        seen.effects_per_step.push(real);
        if observed.has(crate::model::Event::DuplicateEffect) {
            seen.model_duplicate_at.get_or_insert(step);
        }
    }
    Ok(seen)
}

/// SQLite, one file (and its side file), a connection per process.
pub struct SqliteBackend {
    path: std::path::PathBuf,
    clock: Clock,
}

impl SqliteBackend {
    /// A new database at `path`.
    pub fn create(path: &std::path::Path) -> StoreResult<SqliteBackend> {
        super::sqlite::SqliteStore::create(path)?;
        Ok(SqliteBackend {
            path: path.to_path_buf(),
            clock: Clock::default(),
        })
    }
}

impl Backend for SqliteBackend {
    type Store = super::sqlite::SqliteStore;
    fn connect(&self) -> StoreResult<Self::Store> {
        super::sqlite::SqliteStore::open(&self.path, self.clock.clone())
    }
    fn effects(&self) -> StoreResult<usize> {
        self.connect()?.effects_total()
    }
    fn clock(&self) -> &Clock {
        &self.clock
    }
}

/// PostgreSQL, a connection per process.
pub struct PostgresBackend {
    params: String,
    clock: Clock,
}

impl PostgresBackend {
    /// The database behind `params`, with the tables created.
    pub fn create(params: &str) -> StoreResult<PostgresBackend> {
        super::postgres::PostgresStore::create(params)?;
        Ok(PostgresBackend {
            params: params.to_string(),
            clock: Clock::default(),
        })
    }
}

impl Backend for PostgresBackend {
    type Store = super::postgres::PostgresStore;
    fn connect(&self) -> StoreResult<Self::Store> {
        super::postgres::PostgresStore::connect(&self.params, self.clock.clone())
    }
    fn effects(&self) -> StoreResult<usize> {
        self.connect()?.effects_total()
    }
    fn clock(&self) -> &Clock {
        &self.clock
    }
}
