//! One handler's connection in `retrylab serve`: the database (SQLite or PostgreSQL, the handler module's
//! stores), the key-value calls either in that database's side store or in Redis (`--keys`), and the
//! `--crash-at` failpoint counting the request's store calls.

use super::crash_at::{CrashAt, CRASH_EXIT_CODE};
use crate::handler::{Clock, SetMode, Store, StoreResult};
use crate::stores::postgres::PostgresStore;
use crate::stores::redis::RedisKv;
use crate::stores::sqlite::SqliteStore;
use std::path::PathBuf;

/// Where the tables and effects live (`--store`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Database {
    Sqlite(PathBuf),
    /// Connection parameters or a `postgres://` URL.
    Postgres(String),
}

/// Where the key-value calls go (`--keys`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Keys {
    /// The database's own key-value table (for SQLite its side file, which no transaction of the database
    /// covers, like Redis; for PostgreSQL a table of the same database).
    SameDatabase,
    /// A Redis server, `redis://HOST:PORT`.
    Redis(String),
}

enum Db {
    Sqlite(SqliteStore),
    Postgres(PostgresStore),
}

pub struct Connection {
    db: Db,
    kv: Option<RedisKv>,
    crash_at: Option<CrashAt>,
    /// Store calls of the current request, all and by name.
    calls: usize,
    calls_named: Vec<(&'static str, usize)>,
}

impl Database {
    /// Create the tables (once, before connections are opened).
    pub fn create(&self) -> StoreResult<()> {
        match self {
            Database::Sqlite(path) => {
                SqliteStore::create(path)?;
                // A service's SQLite runs in WAL mode: readers are not blocked by the writer and see the last
                // commit, as under PostgreSQL's MVCC (in the rollback journal a read waits out every commit,
                // which serialises requests and hides the races a real deployment has). The mode is stored in
                // the file, so every later connection has it.
                let connection = rusqlite::Connection::open(path)
                    .map_err(|e| crate::handler::StoreError::Refused(e.to_string()))?;
                connection
                    .query_row("PRAGMA journal_mode=WAL", [], |_| Ok(()))
                    .map_err(|e| crate::handler::StoreError::Refused(e.to_string()))
            }
            Database::Postgres(params) => PostgresStore::create(params),
        }
    }
}

impl Connection {
    pub fn open(
        database: &Database,
        keys: &Keys,
        clock: Clock,
        crash_at: Option<CrashAt>,
    ) -> StoreResult<Connection> {
        let db = match database {
            Database::Sqlite(path) => Db::Sqlite(SqliteStore::open(path, clock)?),
            Database::Postgres(params) => Db::Postgres(PostgresStore::connect(params, clock)?),
        };
        let kv = match keys {
            Keys::SameDatabase => None,
            Keys::Redis(url) => Some(RedisKv::connect(url)?),
        };
        Ok(Connection {
            db,
            kv,
            crash_at,
            calls: 0,
            calls_named: Vec::new(),
        })
    }

    /// Start counting a new request's calls.
    pub fn new_request(&mut self) {
        self.calls = 0;
        self.calls_named.clear();
    }

    /// Touch the tables once (a new PostgreSQL backend loads its catalog on its first queries, which takes
    /// milliseconds: a warm pool has done that before the first request).
    pub fn warm(&mut self) -> StoreResult<()> {
        self.effects_total()?;
        crate::runner::run_now(self.get("warm", "warm"))?;
        self.new_request();
        Ok(())
    }

    /// Committed payment effects.
    pub fn effects_total(&mut self) -> StoreResult<usize> {
        match &mut self.db {
            Db::Sqlite(store) => store.effects_total(),
            Db::Postgres(store) => store.effects_total(),
        }
    }

    /// The boundary after a call: exit here if it is `--crash-at`'s step.
    fn after(&mut self, name: &'static str) {
        self.calls += 1;
        let named = match self.calls_named.iter_mut().find(|(n, _)| *n == name) {
            Some((_, count)) => {
                *count += 1;
                *count
            }
            None => {
                self.calls_named.push((name, 1));
                1
            }
        };
        if let Some(at) = &self.crash_at {
            if at.reached(name, self.calls, named) {
                eprintln!(
                    "crash-at: exiting after store call {} ({name} #{named})",
                    self.calls
                );
                std::process::exit(CRASH_EXIT_CODE);
            }
        }
    }
}

/// A database call on whichever database is open, then the step boundary.
macro_rules! db_call {
    ($self:ident, $name:expr, $method:ident($($arg:expr),*)) => {{
        let result = match &mut $self.db {
            Db::Sqlite(store) => store.$method($($arg),*).await,
            Db::Postgres(store) => store.$method($($arg),*).await,
        };
        $self.after($name);
        result
    }};
}

/// A key-value call on Redis when configured, else on the database's own key-value store.
macro_rules! kv_call {
    ($self:ident, $name:expr, $redis:ident, $method:ident($($arg:expr),*)) => {{
        let result = match &mut $self.kv {
            Some(kv) => kv.$redis($($arg),*),
            None => match &mut $self.db {
                Db::Sqlite(store) => store.$method($($arg),*).await,
                Db::Postgres(store) => store.$method($($arg),*).await,
            },
        };
        $self.after($name);
        result
    }};
}

impl Store for Connection {
    async fn begin(&mut self) -> StoreResult<()> {
        db_call!(self, "begin", begin())
    }
    async fn commit(&mut self) -> StoreResult<()> {
        db_call!(self, "commit", commit())
    }
    async fn rollback(&mut self) -> StoreResult<()> {
        db_call!(self, "rollback", rollback())
    }
    async fn insert_if_absent(&mut self, table: &str, key: &str, value: &str) -> StoreResult<bool> {
        db_call!(
            self,
            "insert-if-absent",
            insert_if_absent(table, key, value)
        )
    }
    async fn get(&mut self, table: &str, key: &str) -> StoreResult<Option<String>> {
        db_call!(self, "get", get(table, key))
    }
    async fn update(
        &mut self,
        table: &str,
        key: &str,
        value: &str,
        expected: Option<&str>,
    ) -> StoreResult<bool> {
        db_call!(self, "update", update(table, key, value, expected))
    }
    async fn delete(&mut self, table: &str, key: &str) -> StoreResult<bool> {
        db_call!(self, "delete", delete(table, key))
    }
    async fn scan(&mut self, table: &str) -> StoreResult<Vec<String>> {
        db_call!(self, "scan", scan(table))
    }
    async fn insert_effect(&mut self, table: &str, value: &str) -> StoreResult<u64> {
        db_call!(self, "insert-effect", insert_effect(table, value))
    }
    async fn kv_set(&mut self, key: &str, value: &str, mode: SetMode) -> StoreResult<bool> {
        kv_call!(self, "kv-set", set, kv_set(key, value, mode))
    }
    async fn kv_get(&mut self, key: &str) -> StoreResult<Option<String>> {
        kv_call!(self, "kv-get", get, kv_get(key))
    }
    async fn kv_del(&mut self, key: &str) -> StoreResult<bool> {
        kv_call!(self, "kv-del", del, kv_del(key))
    }
    async fn kv_expire(&mut self, key: &str, ttl_ms: u64) -> StoreResult<bool> {
        kv_call!(self, "kv-expire", expire, kv_expire(key, ttl_ms))
    }
    async fn provider_charge(
        &mut self,
        idempotency_key: Option<&str>,
        body: &str,
    ) -> StoreResult<String> {
        db_call!(
            self,
            "provider-charge",
            provider_charge(idempotency_key, body)
        )
    }
    async fn now_ms(&mut self) -> StoreResult<u64> {
        db_call!(self, "now", now_ms())
    }
    async fn external_call(
        &mut self,
        call: &str,
        idempotency_key: Option<&str>,
        body: &str,
    ) -> StoreResult<String> {
        db_call!(
            self,
            "external-call",
            external_call(call, idempotency_key, body)
        )
    }
}
