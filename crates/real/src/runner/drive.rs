//! Running handlers on a real store, one call at a time, so that a checker trace (process 1 makes a call, then
//! process 2, then process 1 crashes...) can be replayed against a real database in the same order. Each
//! process's handler is a live future over a `Gated` store that makes one more call each time it is allowed to,
//! and waits otherwise; a crash drops the future (and with it the process's connection and open transaction).

use crate::handler::api::{Handler, Reply, Request, SetMode, Store, StoreError, StoreResult};
use std::cell::Cell;
use std::future::Future;
use std::pin::{pin, Pin};
use std::rc::Rc;
use std::task::{Context, Poll, Waker};

/// Run a handler to its reply on a store whose calls complete at once (a real database).
pub fn run_to_reply<H: Handler, S: Store>(handler: &H, store: &mut S, request: &Request) -> Reply {
    let mut future = pin!(handler.handle(store, request));
    match future
        .as_mut()
        .poll(&mut Context::from_waker(Waker::noop()))
    {
        Poll::Ready(reply) => reply,
        Poll::Pending => panic!("a handler awaited something other than its store's calls"),
    }
}

/// Calls allowed so far and calls made, shared between a `Gated` store and its driver.
#[derive(Clone, Default)]
pub struct Gate {
    allowed: Rc<Cell<usize>>,
    made: Rc<Cell<usize>>,
    fail_next: Rc<Cell<Turn>>,
}

/// How the next call allowed through goes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Turn {
    /// It is made and answered.
    #[default]
    Made,
    /// It fails without being made.
    NotMade,
    /// It is made, and the handler gets the same error as for `NotMade` (a timeout: it cannot tell which).
    AnswerLost,
}

impl Turn {
    /// The handler's result of `call` (a lazy future: not polled, the call is not made).
    async fn outcome<T>(self, call: impl Future<Output = StoreResult<T>>) -> StoreResult<T> {
        match self {
            Turn::Made => call.await,
            Turn::NotMade => Err(injected()),
            Turn::AnswerLost => {
                let _ = call.await;
                Err(injected())
            }
        }
    }
}

impl Gate {
    pub fn allow_one(&self) {
        self.allowed.set(self.allowed.get() + 1);
    }

    /// Let the next call through as a failure: it is not made, and the handler gets an error.
    pub fn fail_one(&self) {
        self.next_one(Turn::NotMade);
    }

    /// Let the next call through as `turn` says.
    pub fn next_one(&self, turn: Turn) {
        self.fail_next.set(turn);
        self.allow_one();
    }

    pub fn made(&self) -> usize {
        self.made.get()
    }
}

/// A store that forwards a call only when its gate allows one more.
pub struct Gated<S> {
    pub inner: S,
    gate: Gate,
}

impl<S> Gated<S> {
    pub fn new(inner: S, gate: Gate) -> Gated<S> {
        Gated { inner, gate }
    }

    /// Wait until one more call is allowed, then count it; how it goes.
    async fn turn(&self) -> Turn {
        std::future::poll_fn(|_| {
            if self.gate.made.get() < self.gate.allowed.get() {
                self.gate.made.set(self.gate.made.get() + 1);
                Poll::Ready(self.gate.fail_next.take())
            } else {
                Poll::Pending
            }
        })
        .await
    }
}

fn injected() -> StoreError {
    StoreError::Refused("injected failure".to_string())
}

impl<S: Store> Store for Gated<S> {
    async fn begin(&mut self) -> StoreResult<()> {
        let turn = self.turn().await;
        turn.outcome(self.inner.begin()).await
    }
    async fn commit(&mut self) -> StoreResult<()> {
        let turn = self.turn().await;
        if turn == Turn::NotMade {
            // A commit that fails loses the transaction, as in the simulated store.
            let _ = self.inner.rollback().await;
        }
        turn.outcome(self.inner.commit()).await
    }
    async fn rollback(&mut self) -> StoreResult<()> {
        let turn = self.turn().await;
        turn.outcome(self.inner.rollback()).await
    }
    async fn insert_if_absent(&mut self, table: &str, key: &str, value: &str) -> StoreResult<bool> {
        let turn = self.turn().await;
        turn.outcome(self.inner.insert_if_absent(table, key, value))
            .await
    }
    async fn get(&mut self, table: &str, key: &str) -> StoreResult<Option<String>> {
        let turn = self.turn().await;
        turn.outcome(self.inner.get(table, key)).await
    }
    async fn update(
        &mut self,
        table: &str,
        key: &str,
        value: &str,
        expected: Option<&str>,
    ) -> StoreResult<bool> {
        let turn = self.turn().await;
        turn.outcome(self.inner.update(table, key, value, expected))
            .await
    }
    async fn delete(&mut self, table: &str, key: &str) -> StoreResult<bool> {
        let turn = self.turn().await;
        turn.outcome(self.inner.delete(table, key)).await
    }
    async fn scan(&mut self, table: &str) -> StoreResult<Vec<String>> {
        let turn = self.turn().await;
        turn.outcome(self.inner.scan(table)).await
    }
    async fn insert_effect(&mut self, table: &str, value: &str) -> StoreResult<u64> {
        let turn = self.turn().await;
        turn.outcome(self.inner.insert_effect(table, value)).await
    }
    async fn kv_set(&mut self, key: &str, value: &str, mode: SetMode) -> StoreResult<bool> {
        let turn = self.turn().await;
        turn.outcome(self.inner.kv_set(key, value, mode)).await
    }
    async fn kv_get(&mut self, key: &str) -> StoreResult<Option<String>> {
        let turn = self.turn().await;
        turn.outcome(self.inner.kv_get(key)).await
    }
    async fn kv_del(&mut self, key: &str) -> StoreResult<bool> {
        let turn = self.turn().await;
        turn.outcome(self.inner.kv_del(key)).await
    }
    async fn kv_expire(&mut self, key: &str, ttl_ms: u64) -> StoreResult<bool> {
        let turn = self.turn().await;
        turn.outcome(self.inner.kv_expire(key, ttl_ms)).await
    }
    async fn provider_charge(
        &mut self,
        idempotency_key: Option<&str>,
        body: &str,
    ) -> StoreResult<String> {
        let turn = self.turn().await;
        turn.outcome(self.inner.provider_charge(idempotency_key, body))
            .await
    }
    async fn now_ms(&mut self) -> StoreResult<u64> {
        let turn = self.turn().await;
        turn.outcome(self.inner.now_ms()).await
    }
    async fn external_call(
        &mut self,
        call: &str,
        idempotency_key: Option<&str>,
        body: &str,
    ) -> StoreResult<String> {
        let turn = self.turn().await;
        turn.outcome(self.inner.external_call(call, idempotency_key, body))
            .await
    }
}

/// A handler run in progress on a real store: a future that owns its connection and its request. Step it one
/// call at a time; dropping it drops the connection with whatever transaction was open (a crash).
pub struct Running<'a> {
    future: Pin<Box<dyn Future<Output = Reply> + 'a>>,
    gate: Gate,
    reply: Option<Reply>,
}

impl<'a> Running<'a> {
    /// Start `handler` on `request` over `store` (no call is made yet).
    pub fn start<H: Handler, S: Store + 'a>(
        handler: &'a H,
        store: S,
        request: Request,
    ) -> Running<'a> {
        let gate = Gate::default();
        let mut store = Gated::new(store, gate.clone());
        let future = Box::pin(async move { handler.handle(&mut store, &request).await });
        Running {
            future,
            gate,
            reply: None,
        }
    }

    /// Let the handler make its next call (`fail`: the call fails instead of being made), or return; its reply
    /// once it has one.
    pub fn step(&mut self, fail: bool) -> Option<&Reply> {
        self.step_as(if fail { Turn::NotMade } else { Turn::Made })
    }

    /// Let the handler make its next call as `turn` says (made, not made, or made with its answer lost).
    pub fn step_as(&mut self, turn: Turn) -> Option<&Reply> {
        if self.reply.is_none() {
            self.gate.next_one(turn);
            let mut context = Context::from_waker(Waker::noop());
            if let Poll::Ready(reply) = self.future.as_mut().poll(&mut context) {
                self.reply = Some(reply);
            }
        }
        self.reply.as_ref()
    }

    /// Calls made so far.
    pub fn calls(&self) -> usize {
        self.gate.made()
    }
}
