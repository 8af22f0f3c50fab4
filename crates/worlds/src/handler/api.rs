//! What a handler is written against: the store interface (a transactional database with unique keys and an
//! effect table, a key-value store with TTLs, an external provider, a clock) and the request and reply types.
//!
//! A handler is ordinary async Rust over `S: Store`. Every store call is a step boundary: the checker may crash
//! the process there (its open transaction is lost, what was committed stays), pause it (leases and TTLs may
//! expire meanwhile) or run another process first. In production the same code runs on SQLite or PostgreSQL,
//! where each call simply happens.
//!
//! Values are JSON text. Keys and table names are strings. A handler must be deterministic: the same request and
//! the same answers to its calls must make the same calls (no clock but `now_ms`, no randomness, no globals).

use std::collections::BTreeMap;
use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// Logical time in milliseconds, shared by a database's connections: a checker trace moves it, so leases and
/// TTLs run out for real exactly where they did in the model.
#[derive(Clone, Debug, Default)]
pub struct Clock(Arc<AtomicU64>);

impl Clock {
    pub fn now_ms(&self) -> u64 {
        self.0.load(Ordering::SeqCst)
    }

    pub fn set_ms(&self, now_ms: u64) {
        self.0.store(now_ms, Ordering::SeqCst);
    }
}

/// A request as the server sees it: who sent it (key scope), its idempotency key, its JSON body and its other
/// headers (an API key, a principal), which a world's request hook sets per attempt (`world::requests`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Request {
    pub client: String,
    pub key: String,
    pub body: String,
    /// Header names in lower case (HTTP names are case-insensitive), in byte order: hashing and printing see
    /// them in one order whatever order they were set in.
    pub headers: BTreeMap<String, String>,
}

impl Request {
    /// A request with no headers.
    pub fn new(client: impl Into<String>, key: impl Into<String>, body: impl Into<String>) -> Self {
        Request {
            client: client.into(),
            key: key.into(),
            body: body.into(),
            headers: BTreeMap::new(),
        }
    }

    /// The same request with header `name` (any case) set to `value`.
    pub fn with_header(mut self, name: &str, value: impl Into<String>) -> Self {
        self.headers.insert(name.to_ascii_lowercase(), value.into());
        self
    }

    /// Header `name`'s value (any case), if the request carries it.
    pub fn header(&self, name: &str) -> Option<&str> {
        match self.headers.get(name) {
            Some(value) => Some(value),
            None => self
                .headers
                .get(&name.to_ascii_lowercase())
                .map(String::as_str),
        }
    }
}

/// What the handler answers: an HTTP status and a JSON body.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Reply {
    pub status: u16,
    pub body: String,
}

impl Reply {
    pub fn new(status: u16, body: impl Into<String>) -> Reply {
        Reply {
            status,
            body: body.into(),
        }
    }
}

/// How a `kv_set` writes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SetMode {
    /// Only when the key is absent (Redis `NX`).
    pub if_absent: bool,
    /// Expire after this many milliseconds (Redis `PX`), in the same command.
    pub ttl_ms: Option<u64>,
}

/// When a key set at `now_ms` with `ttl_ms` expires, as the SQL stores keep it (a signed 64-bit column): a TTL
/// too long to add is "never" (the largest time), not a wrapped sum in the past that expires the key at once
/// (`serve --lease-ms 18446744073709551615` once let separate-kv pay twice).
pub fn expires_at_ms(now_ms: u64, ttl_ms: u64) -> i64 {
    i64::try_from(now_ms.saturating_add(ttl_ms)).unwrap_or(i64::MAX)
}

/// A store call that could not be made.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum StoreError {
    /// `commit` or `rollback` without an open transaction, or `begin` inside one. (A row call outside a
    /// transaction is not an error: it autocommits, see [`Store`].)
    NoTransaction,
    /// The database refused (a constraint, a lost connection): the transaction is rolled back.
    Refused(String),
}

impl std::fmt::Display for StoreError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StoreError::NoTransaction => write!(f, "no open transaction"),
            StoreError::Refused(reason) => write!(f, "refused: {reason}"),
        }
    }
}

impl std::error::Error for StoreError {}

pub type StoreResult<T> = Result<T, StoreError>;

/// The storage a handler talks to. Table rows and effects are read and written inside a transaction
/// (`begin` .. `commit`) or, outside one, each call is a transaction of its own (autocommit: committed at once,
/// kept through a crash, taking the write lock for that one call), as a statement sent without `BEGIN` is on
/// SQLite and PostgreSQL; the three stores agree, and `tests/handlers/handlers.rs` drives them in lockstep. The key-value
/// store, the provider and the clock are outside any transaction.
#[allow(async_fn_in_trait)] // handlers are generic over the store; nothing needs `Send` futures
pub trait Store {
    async fn begin(&mut self) -> StoreResult<()>;
    async fn commit(&mut self) -> StoreResult<()>;
    async fn rollback(&mut self) -> StoreResult<()>;
    /// Insert under a unique key unless a row has it; whether it was inserted.
    async fn insert_if_absent(&mut self, table: &str, key: &str, value: &str) -> StoreResult<bool>;
    async fn get(&mut self, table: &str, key: &str) -> StoreResult<Option<String>>;
    /// Overwrite a row; with `expected`, only when its current value is exactly that (compare-and-set, fencing).
    /// Whether it was written (false: no such row, or the value differed).
    async fn update(
        &mut self,
        table: &str,
        key: &str,
        value: &str,
        expected: Option<&str>,
    ) -> StoreResult<bool>;
    async fn delete(&mut self, table: &str, key: &str) -> StoreResult<bool>;
    /// The keys of a table's rows, in byte order (how a background worker finds its work: a completer lists
    /// the records, then reads each one). Inside a transaction it sees that transaction's own writes.
    async fn scan(&mut self, table: &str) -> StoreResult<Vec<String>>;
    /// Insert an effect row (a payment); returns its id, 1-based in commit order of the table.
    async fn insert_effect(&mut self, table: &str, value: &str) -> StoreResult<u64>;
    /// SET (with NX and a TTL as `mode` says); whether it was written.
    async fn kv_set(&mut self, key: &str, value: &str, mode: SetMode) -> StoreResult<bool>;
    async fn kv_get(&mut self, key: &str) -> StoreResult<Option<String>>;
    async fn kv_del(&mut self, key: &str) -> StoreResult<bool>;
    /// EXPIRE: give an existing key a TTL; whether it existed.
    async fn kv_expire(&mut self, key: &str, ttl_ms: u64) -> StoreResult<bool>;
    /// Charge at the external provider, with an idempotency key or none; returns the charge id. With a key the
    /// provider charges once per key and answers a repeat with the first charge's id.
    async fn provider_charge(
        &mut self,
        idempotency_key: Option<&str>,
        body: &str,
    ) -> StoreResult<String>;
    /// The current time in milliseconds (logical in the checker: only lease and TTL expiries move it).
    async fn now_ms(&mut self) -> StoreResult<u64>;
    /// A call to another service, by its name: the provider's `capture` or `refund`, a `webhook` to a
    /// merchant. Outside any transaction, like `provider_charge`, and counted the same way: each call the
    /// service acts on is an effect of the operation; with a key it acts once per (name, key) and answers a
    /// repeat with the first call's id. Returns that id, `NAME_N` (the N-th call of that name it acted on).
    async fn external_call(
        &mut self,
        call: &str,
        idempotency_key: Option<&str>,
        body: &str,
    ) -> StoreResult<String>;
}

/// A request handler: the server's logic, written once.
pub trait Handler: Sync {
    fn handle<S: Store>(&self, store: &mut S, request: &Request) -> impl Future<Output = Reply>;
}

/// A background worker: a process that runs without a request (a completer that finishes unfinished
/// operations, a reaper, an orphan sweeper), written like a handler. One `run` is one activation (one pass of a
/// periodic job); it finds its work in the store (`scan`, then `get`). The checker wakes a worker again after
/// anything it could see has changed (rows, the key-value store, the provider, the clock), may crash it between
/// any two calls (it is restarted), and keeps nothing of it between runs: a worker remembers only what it wrote.
pub trait Worker: Sync {
    fn run<S: Store>(&self, store: &mut S) -> impl Future<Output = ()>;
}

/// No background workers.
#[derive(Clone, Copy, Debug, Default)]
pub struct NoWorker;

impl Worker for NoWorker {
    async fn run<S: Store>(&self, _store: &mut S) {}
}

/// A worker as a handler of no request, so that the replay and the real drivers run it unchanged. Its reply
/// (status 0) only says that the run ended.
pub struct Activation<'a, W>(pub &'a W);

impl<W: Worker> Handler for Activation<'_, W> {
    async fn handle<S: Store>(&self, store: &mut S, _request: &Request) -> Reply {
        self.0.run(store).await;
        Reply::new(0, "")
    }
}
