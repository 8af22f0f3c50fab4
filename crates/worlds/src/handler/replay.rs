//! Running opaque async handler code step by step, with a visited set. A future cannot be cloned or hashed, but
//! a deterministic handler is a function of its request and the answers to its calls so far. So a process's
//! state is that pair, and to learn what it does next the handler is run again from the start against a
//! `ReplayStore`: the first calls get their recorded answers at once, the next call is recorded and left
//! pending, and one poll tells whether the handler now waits on that call or has returned its reply. Handlers
//! are short (a few calls), so re-running the prefix costs microseconds. No async runtime is involved: one
//! poll with a waker that does nothing.

use super::api::{Handler, Reply, Request, SetMode, Store, StoreError, StoreResult};
use super::calls::{Answer, Call};
use std::future::Future;
use std::pin::pin;
use std::task::{Context, Poll, Waker};

/// What a handler does after the calls answered so far.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Next {
    /// It waits on this call.
    Call(Call),
    /// It has returned.
    Reply(Reply),
}

/// The handler made a different call on replay than the one recorded: it is not deterministic.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NotDeterministic {
    /// 1-based number of the call that differed.
    pub call: usize,
    pub recorded: Call,
    pub replayed: Call,
}

impl std::fmt::Display for NotDeterministic {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "the handler is not deterministic: given the same answers, its call {} was {:?} once and {:?} \
             on replay (does it read a clock, a random number or a global?)",
            self.call, self.recorded, self.replayed
        )
    }
}

/// Run `handler` on `request` with `answered` as the answers to its first calls; what it does next.
pub fn next_step<H: Handler>(
    handler: &H,
    request: &Request,
    answered: &[(Call, Answer)],
) -> Result<Next, Box<NotDeterministic>> {
    let mut store = ReplayStore {
        answered,
        position: 0,
        next: None,
        diverged: None,
    };
    let reply = {
        let future = pin!(handler.handle(&mut store, request));
        let mut context = Context::from_waker(Waker::noop());
        future.poll(&mut context)
    };
    if let Some(diverged) = store.diverged {
        return Err(Box::new(diverged));
    }
    match (reply, store.next) {
        (Poll::Ready(reply), _) => Ok(Next::Reply(reply)),
        (Poll::Pending, Some(call)) => Ok(Next::Call(call)),
        (Poll::Pending, None) => panic!(
            "the handler awaited something that is not a store call (handlers may only await their store)"
        ),
    }
}

/// Answers recorded calls at once, records the next one and never answers it.
struct ReplayStore<'a> {
    answered: &'a [(Call, Answer)],
    position: usize,
    next: Option<Call>,
    diverged: Option<NotDeterministic>,
}

impl ReplayStore<'_> {
    async fn exchange(&mut self, call: Call) -> Answer {
        match self.answered.get(self.position) {
            Some((recorded, answer)) if *recorded == call => {
                self.position += 1;
                answer.clone()
            }
            Some((recorded, _)) => {
                self.diverged = Some(NotDeterministic {
                    call: self.position + 1,
                    recorded: recorded.clone(),
                    replayed: call,
                });
                std::future::pending().await
            }
            None => {
                self.next = Some(call);
                std::future::pending().await
            }
        }
    }
}

fn unit(answer: Answer) -> StoreResult<()> {
    match answer {
        Answer::Failed(error) => Err(error),
        _ => Ok(()),
    }
}

fn flag(answer: Answer) -> StoreResult<bool> {
    match answer {
        Answer::Flag(flag) => Ok(flag),
        Answer::Failed(error) => Err(error),
        other => unreachable!("a flag answer, not {other:?}"),
    }
}

fn row(answer: Answer) -> StoreResult<Option<String>> {
    match answer {
        Answer::Row(row) => Ok(row),
        Answer::Failed(error) => Err(error),
        other => unreachable!("a row answer, not {other:?}"),
    }
}

fn text(answer: Answer) -> StoreResult<String> {
    match answer {
        Answer::Text(text) => Ok(text),
        Answer::Failed(error) => Err(error),
        other => unreachable!("a text answer, not {other:?}"),
    }
}

fn keys(answer: Answer) -> StoreResult<Vec<String>> {
    match answer {
        Answer::Keys(keys) => Ok(keys),
        Answer::Failed(error) => Err(error),
        other => unreachable!("a keys answer, not {other:?}"),
    }
}

fn number(answer: Answer) -> StoreResult<u64> {
    match answer {
        Answer::Id(value) | Answer::Time(value) => Ok(value),
        Answer::Failed(error) => Err(error),
        other => unreachable!("a number answer, not {other:?}"),
    }
}

impl Store for ReplayStore<'_> {
    async fn begin(&mut self) -> StoreResult<()> {
        unit(self.exchange(Call::Begin).await)
    }
    async fn commit(&mut self) -> StoreResult<()> {
        unit(self.exchange(Call::Commit).await)
    }
    async fn rollback(&mut self) -> StoreResult<()> {
        unit(self.exchange(Call::Rollback).await)
    }
    async fn insert_if_absent(&mut self, table: &str, key: &str, value: &str) -> StoreResult<bool> {
        let (table, key, value) = (table.into(), key.into(), value.into());
        flag(
            self.exchange(Call::InsertIfAbsent { table, key, value })
                .await,
        )
    }
    async fn get(&mut self, table: &str, key: &str) -> StoreResult<Option<String>> {
        let (table, key) = (table.into(), key.into());
        row(self.exchange(Call::Get { table, key }).await)
    }
    async fn update(
        &mut self,
        table: &str,
        key: &str,
        value: &str,
        expected: Option<&str>,
    ) -> StoreResult<bool> {
        let (table, key, value) = (table.into(), key.into(), value.into());
        let expected = expected.map(str::to_string);
        flag(
            self.exchange(Call::Update {
                table,
                key,
                value,
                expected,
            })
            .await,
        )
    }
    async fn delete(&mut self, table: &str, key: &str) -> StoreResult<bool> {
        let (table, key) = (table.into(), key.into());
        flag(self.exchange(Call::Delete { table, key }).await)
    }
    async fn scan(&mut self, table: &str) -> StoreResult<Vec<String>> {
        let table = table.into();
        keys(self.exchange(Call::Scan { table }).await)
    }
    async fn insert_effect(&mut self, table: &str, value: &str) -> StoreResult<u64> {
        let (table, value) = (table.into(), value.into());
        number(self.exchange(Call::InsertEffect { table, value }).await)
    }
    async fn kv_set(&mut self, key: &str, value: &str, mode: SetMode) -> StoreResult<bool> {
        let (key, value) = (key.into(), value.into());
        flag(self.exchange(Call::KvSet { key, value, mode }).await)
    }
    async fn kv_get(&mut self, key: &str) -> StoreResult<Option<String>> {
        row(self.exchange(Call::KvGet { key: key.into() }).await)
    }
    async fn kv_del(&mut self, key: &str) -> StoreResult<bool> {
        flag(self.exchange(Call::KvDel { key: key.into() }).await)
    }
    async fn kv_expire(&mut self, key: &str, ttl_ms: u64) -> StoreResult<bool> {
        let key = key.into();
        flag(self.exchange(Call::KvExpire { key, ttl_ms }).await)
    }
    async fn provider_charge(
        &mut self,
        idempotency_key: Option<&str>,
        body: &str,
    ) -> StoreResult<String> {
        let idempotency_key = idempotency_key.map(str::to_string);
        let body = body.into();
        text(
            self.exchange(Call::ProviderCharge {
                idempotency_key,
                body,
            })
            .await,
        )
    }
    async fn now_ms(&mut self) -> StoreResult<u64> {
        number(self.exchange(Call::Now).await)
    }
    async fn external_call(
        &mut self,
        call: &str,
        idempotency_key: Option<&str>,
        body: &str,
    ) -> StoreResult<String> {
        let (call, body) = (call.to_string(), body.to_string());
        let idempotency_key = idempotency_key.map(str::to_string);
        text(
            self.exchange(Call::External {
                call,
                idempotency_key,
                body,
            })
            .await,
        )
    }
}

/// Errors of a store call as the handler sees them.
pub fn refused(reason: &str) -> Answer {
    Answer::Failed(StoreError::Refused(reason.to_string()))
}

/// Make `call` on a real store and record what it returned: how a runner that steps a handler by replay (the
/// built-in world's traces on real stores, `crate::real::drive`) executes the call the handler waits on.
pub async fn perform<S: Store>(store: &mut S, call: &Call) -> Answer {
    let answer = |result: StoreResult<Answer>| result.unwrap_or_else(Answer::Failed);
    match call {
        Call::Begin => answer(store.begin().await.map(|()| Answer::Done)),
        Call::Commit => answer(store.commit().await.map(|()| Answer::Done)),
        Call::Rollback => answer(store.rollback().await.map(|()| Answer::Done)),
        Call::InsertIfAbsent { table, key, value } => answer(
            store
                .insert_if_absent(table, key, value)
                .await
                .map(Answer::Flag),
        ),
        Call::Get { table, key } => answer(store.get(table, key).await.map(Answer::Row)),
        Call::Scan { table } => answer(store.scan(table).await.map(Answer::Keys)),
        Call::Update {
            table,
            key,
            value,
            expected,
        } => answer(
            store
                .update(table, key, value, expected.as_deref())
                .await
                .map(Answer::Flag),
        ),
        Call::Delete { table, key } => answer(store.delete(table, key).await.map(Answer::Flag)),
        Call::InsertEffect { table, value } => {
            answer(store.insert_effect(table, value).await.map(Answer::Id))
        }
        Call::KvSet { key, value, mode } => {
            answer(store.kv_set(key, value, *mode).await.map(Answer::Flag))
        }
        Call::KvGet { key } => answer(store.kv_get(key).await.map(Answer::Row)),
        Call::KvDel { key } => answer(store.kv_del(key).await.map(Answer::Flag)),
        Call::KvExpire { key, ttl_ms } => {
            answer(store.kv_expire(key, *ttl_ms).await.map(Answer::Flag))
        }
        Call::ProviderCharge {
            idempotency_key,
            body,
        } => answer(
            store
                .provider_charge(idempotency_key.as_deref(), body)
                .await
                .map(Answer::Text),
        ),
        Call::Now => answer(store.now_ms().await.map(Answer::Time)),
        Call::External {
            call,
            idempotency_key,
            body,
        } => answer(
            store
                .external_call(call, idempotency_key.as_deref(), body)
                .await
                .map(Answer::Text),
        ),
    }
}
