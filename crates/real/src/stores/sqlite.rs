//! The store interface on SQLite (rusqlite, bundled): rows under a real primary key (`INSERT OR IGNORE` for
//! insert-if-absent), effects in a real table, `BEGIN IMMEDIATE` transactions (one writer at a time, as the
//! simulated store). The key-value store and the provider's charges live in a second database file beside it
//! (`<path>.side`): like Redis and a payment provider they are not part of the database's transactions, and
//! writing them never waits for its write lock. Time is a logical clock shared by the caller's connections, so a
//! checker trace replays with the same expiries.
//!
//! One `SqliteStore` is one connection: open one per worker, as a service opens one per handler. A crash is
//! dropping the connection with a transaction open (SQLite rolls it back).

use crate::handler::api::{Clock, SetMode, Store, StoreError, StoreResult};
use rusqlite::{params, Connection, OptionalExtension};
use std::path::Path;
use std::time::Duration;

const SCHEMA: &str = "
    CREATE TABLE IF NOT EXISTS handler_rows (
        tbl TEXT NOT NULL, key TEXT NOT NULL, value TEXT NOT NULL, PRIMARY KEY (tbl, key));
    CREATE TABLE IF NOT EXISTS handler_effects (
        tbl TEXT NOT NULL, id INTEGER NOT NULL, value TEXT NOT NULL, PRIMARY KEY (tbl, id));
";

const SIDE_SCHEMA: &str = "
    CREATE TABLE IF NOT EXISTS handler_kv (
        key TEXT PRIMARY KEY, value TEXT NOT NULL, expires_at_ms INTEGER);
    CREATE TABLE IF NOT EXISTS handler_charges (
        id INTEGER PRIMARY KEY AUTOINCREMENT, idempotency_key TEXT UNIQUE, body TEXT NOT NULL);
    CREATE TABLE IF NOT EXISTS handler_calls (
        call TEXT NOT NULL, number INTEGER NOT NULL, idempotency_key TEXT, body TEXT NOT NULL,
        PRIMARY KEY (call, number), UNIQUE (call, idempotency_key));
";

pub struct SqliteStore {
    connection: Connection,
    /// The key-value store and the provider.
    side: Connection,
    clock: Clock,
    in_transaction: bool,
}

fn refused(error: rusqlite::Error) -> StoreError {
    StoreError::Refused(error.to_string())
}

fn connect(path: &Path) -> StoreResult<Connection> {
    let connection = Connection::open(path).map_err(refused)?;
    connection
        .busy_timeout(Duration::from_secs(5))
        .map_err(refused)?;
    Ok(connection)
}

fn side_path(path: &Path) -> std::path::PathBuf {
    let mut name = path.as_os_str().to_os_string();
    name.push(".side");
    name.into()
}

fn changed(connection: &Connection, sql: &str, values: impl rusqlite::Params) -> StoreResult<bool> {
    connection
        .execute(sql, values)
        .map(|rows| rows > 0)
        .map_err(refused)
}

impl SqliteStore {
    /// Create the tables (once, before any connection is opened).
    pub fn create(path: &Path) -> StoreResult<()> {
        connect(path)?.execute_batch(SCHEMA).map_err(refused)?;
        connect(&side_path(path))?
            .execute_batch(SIDE_SCHEMA)
            .map_err(refused)
    }

    /// A connection to the database at `path` (made by `create`), reading time from `clock`.
    pub fn open(path: &Path, clock: Clock) -> StoreResult<SqliteStore> {
        Ok(SqliteStore {
            connection: connect(path)?,
            side: connect(&side_path(path))?,
            clock,
            in_transaction: false,
        })
    }

    /// Committed effect rows of a table, in id order.
    pub fn effects(&self, table: &str) -> StoreResult<Vec<String>> {
        let mut statement = self
            .connection
            .prepare("SELECT value FROM handler_effects WHERE tbl = ?1 ORDER BY id")
            .map_err(refused)?;
        let rows = statement
            .query_map(params![table], |row| row.get(0))
            .map_err(refused)?;
        rows.collect::<Result<_, _>>().map_err(refused)
    }

    /// Provider charges made so far.
    pub fn charges_total(&self) -> StoreResult<usize> {
        self.side
            .query_row("SELECT COUNT(*) FROM handler_charges", [], |row| {
                row.get::<_, i64>(0)
            })
            .map(|count| count as usize)
            .map_err(refused)
    }

    /// Calls other services acted on (`external_call`), all names.
    pub fn calls_total(&self) -> StoreResult<usize> {
        self.side
            .query_row("SELECT COUNT(*) FROM handler_calls", [], |row| {
                row.get::<_, i64>(0)
            })
            .map(|count| count as usize)
            .map_err(refused)
    }

    /// Committed effect rows, all tables.
    pub fn effects_total(&self) -> StoreResult<usize> {
        self.connection
            .query_row("SELECT COUNT(*) FROM handler_effects", [], |row| {
                row.get::<_, i64>(0)
            })
            .map(|count| count as usize)
            .map_err(refused)
    }

    fn now(&self) -> StoreResult<u64> {
        Ok(self.clock.now_ms())
    }

    fn changed(&self, sql: &str, values: impl rusqlite::Params) -> StoreResult<bool> {
        changed(&self.connection, sql, values)
    }

    fn side_changed(&self, sql: &str, values: impl rusqlite::Params) -> StoreResult<bool> {
        changed(&self.side, sql, values)
    }

    /// Drop expired keys (under the logical clock) before any key-value call.
    fn expire_kv(&self) -> StoreResult<()> {
        let now = self.now()? as i64;
        self.side_changed(
            "DELETE FROM handler_kv WHERE expires_at_ms IS NOT NULL AND expires_at_ms <= ?1",
            params![now],
        )
        .map(drop)
    }
}

impl Store for SqliteStore {
    async fn begin(&mut self) -> StoreResult<()> {
        if self.in_transaction {
            return Err(StoreError::NoTransaction);
        }
        self.connection
            .execute_batch("BEGIN IMMEDIATE")
            .map_err(refused)?;
        self.in_transaction = true;
        Ok(())
    }

    async fn commit(&mut self) -> StoreResult<()> {
        self.end("COMMIT")
    }

    async fn rollback(&mut self) -> StoreResult<()> {
        self.end("ROLLBACK")
    }

    async fn insert_if_absent(&mut self, table: &str, key: &str, value: &str) -> StoreResult<bool> {
        self.changed(
            "INSERT OR IGNORE INTO handler_rows (tbl, key, value) VALUES (?1, ?2, ?3)",
            params![table, key, value],
        )
    }

    async fn get(&mut self, table: &str, key: &str) -> StoreResult<Option<String>> {
        self.connection
            .query_row(
                "SELECT value FROM handler_rows WHERE tbl = ?1 AND key = ?2",
                params![table, key],
                |row| row.get(0),
            )
            .optional()
            .map_err(refused)
    }

    async fn update(
        &mut self,
        table: &str,
        key: &str,
        value: &str,
        expected: Option<&str>,
    ) -> StoreResult<bool> {
        match expected {
            None => self.changed(
                "UPDATE handler_rows SET value = ?3 WHERE tbl = ?1 AND key = ?2",
                params![table, key, value],
            ),
            Some(expected) => self.changed(
                "UPDATE handler_rows SET value = ?3 WHERE tbl = ?1 AND key = ?2 AND value = ?4",
                params![table, key, value, expected],
            ),
        }
    }

    async fn delete(&mut self, table: &str, key: &str) -> StoreResult<bool> {
        self.changed(
            "DELETE FROM handler_rows WHERE tbl = ?1 AND key = ?2",
            params![table, key],
        )
    }

    async fn scan(&mut self, table: &str) -> StoreResult<Vec<String>> {
        // TEXT compares with BINARY collation by default: byte order, as the simulated store's.
        let mut statement = self
            .connection
            .prepare("SELECT key FROM handler_rows WHERE tbl = ?1 ORDER BY key")
            .map_err(refused)?;
        let keys = statement
            .query_map(params![table], |row| row.get(0))
            .map_err(refused)?;
        keys.collect::<Result<_, _>>().map_err(refused)
    }

    async fn insert_effect(&mut self, table: &str, value: &str) -> StoreResult<u64> {
        // Numbered per table in commit order: writers are serialised, so the next number is stable.
        self.connection
            .query_row(
                "INSERT INTO handler_effects (tbl, id, value)
                 SELECT ?1, COALESCE(MAX(id), 0) + 1, ?2 FROM handler_effects WHERE tbl = ?1
                 RETURNING id",
                params![table, value],
                |row| row.get::<_, i64>(0),
            )
            .map(|id| id as u64)
            .map_err(refused)
    }

    async fn kv_set(&mut self, key: &str, value: &str, mode: SetMode) -> StoreResult<bool> {
        self.expire_kv()?;
        let expires = match mode.ttl_ms {
            Some(ttl) => Some(crate::handler::api::expires_at_ms(self.now()?, ttl)),
            None => None,
        };
        let verb = if mode.if_absent {
            "INSERT OR IGNORE"
        } else {
            "INSERT OR REPLACE"
        };
        self.side_changed(
            &format!("{verb} INTO handler_kv (key, value, expires_at_ms) VALUES (?1, ?2, ?3)"),
            params![key, value, expires],
        )
    }

    async fn kv_get(&mut self, key: &str) -> StoreResult<Option<String>> {
        self.expire_kv()?;
        self.side
            .query_row(
                "SELECT value FROM handler_kv WHERE key = ?1",
                params![key],
                |row| row.get(0),
            )
            .optional()
            .map_err(refused)
    }

    async fn kv_del(&mut self, key: &str) -> StoreResult<bool> {
        self.expire_kv()?;
        self.side_changed("DELETE FROM handler_kv WHERE key = ?1", params![key])
    }

    async fn kv_expire(&mut self, key: &str, ttl_ms: u64) -> StoreResult<bool> {
        self.expire_kv()?;
        let at = crate::handler::api::expires_at_ms(self.now()?, ttl_ms);
        self.side_changed(
            "UPDATE handler_kv SET expires_at_ms = ?2 WHERE key = ?1",
            params![key, at],
        )
    }

    async fn provider_charge(
        &mut self,
        idempotency_key: Option<&str>,
        body: &str,
    ) -> StoreResult<String> {
        self.side_changed(
            "INSERT OR IGNORE INTO handler_charges (idempotency_key, body) VALUES (?1, ?2)",
            params![idempotency_key, body],
        )?;
        let id: i64 = match idempotency_key {
            Some(key) => self.side.query_row(
                "SELECT id FROM handler_charges WHERE idempotency_key = ?1",
                params![key],
                |row| row.get(0),
            ),
            None => Ok(self.side.last_insert_rowid()),
        }
        .map_err(refused)?;
        Ok(format!("ch_{id}"))
    }

    async fn now_ms(&mut self) -> StoreResult<u64> {
        self.now()
    }

    async fn external_call(
        &mut self,
        call: &str,
        idempotency_key: Option<&str>,
        body: &str,
    ) -> StoreResult<String> {
        // Numbered per name (the simulated store's `NAME_N`); a repeat of a (name, key) inserts nothing.
        self.side_changed(
            "INSERT OR IGNORE INTO handler_calls (call, number, idempotency_key, body)
             SELECT ?1, COUNT(*) + 1, ?2, ?3 FROM handler_calls WHERE call = ?1",
            params![call, idempotency_key, body],
        )?;
        let number: i64 = match idempotency_key {
            Some(key) => self.side.query_row(
                "SELECT number FROM handler_calls WHERE call = ?1 AND idempotency_key = ?2",
                params![call, key],
                |row| row.get(0),
            ),
            None => self.side.query_row(
                "SELECT MAX(number) FROM handler_calls WHERE call = ?1",
                params![call],
                |row| row.get(0),
            ),
        }
        .map_err(refused)?;
        Ok(format!("{call}_{number}"))
    }
}

impl SqliteStore {
    fn end(&mut self, verb: &str) -> StoreResult<()> {
        if !self.in_transaction {
            return Err(StoreError::NoTransaction);
        }
        self.in_transaction = false;
        self.connection.execute_batch(verb).map_err(refused)
    }
}
