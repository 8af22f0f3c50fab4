//! The SQL shape every SQL store shares, written once: the tables, the statements behind each `Store` call, the
//! transaction flag and the mapping of rows back to answers. A SQL database plugs in below it as a
//! [`SqlConnection`]: how to run a statement with parameters and read its rows, how to begin a transaction that
//! serialises writers, and the two spellings that differ between databases (a self-numbered key and byte order).
//!
//! Statements are written with `$1`-style placeholders and the upsert syntax SQLite (3.24+) and PostgreSQL both
//! accept (`ON CONFLICT ... DO NOTHING`, `DO UPDATE SET ... = EXCLUDED...`, `RETURNING`), so one text serves both;
//! a connection whose database spells placeholders otherwise rewrites them (SQLite: `?1`).
//!
//! Rows, effects: the database's transactions cover them. The key-value table, the provider's charges and the
//! external calls are the [`Place::Side`]: like Redis and a payment provider they are outside the database's
//! transactions in the model; SQLite keeps them in a second file, PostgreSQL in the same database.

use crate::handler::api::{expires_at_ms, Clock, SetMode, Store, StoreError, StoreResult};

/// The tables under the database's transactions.
const SCHEMA_ROWS: &str = "
    CREATE TABLE IF NOT EXISTS handler_rows (
        tbl TEXT NOT NULL, key TEXT NOT NULL, value TEXT NOT NULL, PRIMARY KEY (tbl, key));
    CREATE TABLE IF NOT EXISTS handler_effects (
        tbl TEXT NOT NULL, id BIGINT NOT NULL, value TEXT NOT NULL, PRIMARY KEY (tbl, id));
";

/// The key-value store, the provider and the other services (`{serial_key}`: [`SqlConnection::SERIAL_KEY`]).
const SCHEMA_SIDE: &str = "
    CREATE TABLE IF NOT EXISTS handler_kv (
        key TEXT PRIMARY KEY, value TEXT NOT NULL, expires_at_ms BIGINT);
    CREATE TABLE IF NOT EXISTS handler_charges (
        id {serial_key}, idempotency_key TEXT UNIQUE, body TEXT NOT NULL);
    CREATE TABLE IF NOT EXISTS handler_calls (
        call TEXT NOT NULL, number BIGINT NOT NULL, idempotency_key TEXT, body TEXT NOT NULL,
        PRIMARY KEY (call, number), UNIQUE (call, idempotency_key));
";

/// Which part of the store a statement touches.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Place {
    /// Rows and effects: under the database's transactions.
    Rows,
    /// The key-value table, the provider's charges, the external calls: outside them.
    Side,
}

/// A statement parameter: text or a whole number, either possibly NULL.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Param<'a> {
    Text(Option<&'a str>),
    Int(Option<i64>),
}

/// One column of a result row.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Cell {
    Text(String),
    Int(i64),
    Null,
}

/// A SQL database under the shared statements: a new backend (MySQL, say) is one file implementing this.
pub trait SqlConnection {
    /// The charges table's id column: a primary key the database numbers itself.
    const SERIAL_KEY: &'static str;
    /// The collation that orders text by bytes, as the simulated store orders keys.
    const BYTE_ORDER: &'static str;

    /// Run `sql` (several statements, no parameters) at `place`.
    fn batch(&self, place: Place, sql: &str) -> StoreResult<()>;
    /// Run one statement; the rows it changed.
    fn execute(&self, place: Place, sql: &str, params: &[Param]) -> StoreResult<u64>;
    /// Run one query; its rows.
    fn query(&self, place: Place, sql: &str, params: &[Param]) -> StoreResult<Vec<Vec<Cell>>>;
    /// Open a transaction that waits for every other writer's to end (one writer at a time, as the simulated
    /// store's), so that a checker trace replays in the same order.
    fn begin(&self) -> StoreResult<()>;
}

/// The tables at each place, with the database's spelling of a self-numbered key.
pub fn schema<C: SqlConnection>(place: Place) -> String {
    match place {
        Place::Rows => SCHEMA_ROWS.to_string(),
        Place::Side => SCHEMA_SIDE.replace("{serial_key}", C::SERIAL_KEY),
    }
}

/// A refusal naming what the database said.
pub fn refused(error: impl std::fmt::Display) -> StoreError {
    StoreError::Refused(error.to_string())
}

fn text(value: &str) -> Param<'_> {
    Param::Text(Some(value))
}

fn int(value: i64) -> Param<'static> {
    Param::Int(Some(value))
}

/// The first column of the first row, if any.
fn first(rows: Vec<Vec<Cell>>) -> Option<Cell> {
    rows.into_iter()
        .next()
        .and_then(|row| row.into_iter().next())
}

fn as_text(cell: Option<Cell>) -> StoreResult<Option<String>> {
    match cell {
        Some(Cell::Text(text)) => Ok(Some(text)),
        None | Some(Cell::Null) => Ok(None),
        Some(other) => Err(refused(format!("a text column, not {other:?}"))),
    }
}

fn as_int(cell: Option<Cell>) -> StoreResult<i64> {
    match cell {
        Some(Cell::Int(number)) => Ok(number),
        other => Err(refused(format!("a number column, not {other:?}"))),
    }
}

/// The store interface on any [`SqlConnection`]: one connection (a worker's, a handler's), reading time from a
/// logical clock its caller shares with its other connections. A crash is dropping it with a transaction open.
pub struct SqlStore<C> {
    connection: C,
    clock: Clock,
    in_transaction: bool,
}

impl<C: SqlConnection> SqlStore<C> {
    pub(crate) fn new(connection: C, clock: Clock) -> SqlStore<C> {
        SqlStore {
            connection,
            clock,
            in_transaction: false,
        }
    }

    /// Committed effect rows of a table, in id order.
    pub fn effects(&self, table: &str) -> StoreResult<Vec<String>> {
        let sql = "SELECT value FROM handler_effects WHERE tbl = $1 ORDER BY id";
        self.texts(Place::Rows, sql, &[text(table)])
    }

    /// Provider charges made so far.
    pub fn charges_total(&self) -> StoreResult<usize> {
        self.count(Place::Side, "handler_charges")
    }

    /// Calls other services acted on (`external_call`), all names.
    pub fn calls_total(&self) -> StoreResult<usize> {
        self.count(Place::Side, "handler_calls")
    }

    /// Committed effect rows, all tables.
    pub fn effects_total(&self) -> StoreResult<usize> {
        self.count(Place::Rows, "handler_effects")
    }

    fn count(&self, place: Place, table: &str) -> StoreResult<usize> {
        let sql = format!("SELECT COUNT(*) FROM {table}");
        let rows = self.connection.query(place, &sql, &[])?;
        Ok(as_int(first(rows))? as usize)
    }

    fn changed(&self, place: Place, sql: &str, params: &[Param]) -> StoreResult<bool> {
        Ok(self.connection.execute(place, sql, params)? > 0)
    }

    /// The first column of every row, as text.
    fn texts(&self, place: Place, sql: &str, params: &[Param]) -> StoreResult<Vec<String>> {
        let rows = self.connection.query(place, sql, params)?;
        let cells = rows.into_iter().map(|row| as_text(row.into_iter().next()));
        cells
            .map(|cell| cell.map(Option::unwrap_or_default))
            .collect()
    }

    /// The first column of the first row, as text, if there is a row.
    fn row(&self, place: Place, sql: &str, params: &[Param]) -> StoreResult<Option<String>> {
        as_text(first(self.connection.query(place, sql, params)?))
    }

    /// The first column of the first row, as a number.
    fn number(&self, place: Place, sql: &str, params: &[Param]) -> StoreResult<i64> {
        as_int(first(self.connection.query(place, sql, params)?))
    }

    /// Drop expired keys (under the logical clock) before any key-value call.
    fn expire_kv(&self) -> StoreResult<()> {
        let now = self.clock.now_ms() as i64;
        let sql = "DELETE FROM handler_kv WHERE expires_at_ms IS NOT NULL AND expires_at_ms <= $1";
        self.changed(Place::Side, sql, &[int(now)]).map(drop)
    }

    fn end(&mut self, verb: &str) -> StoreResult<()> {
        if !self.in_transaction {
            return Err(StoreError::NoTransaction);
        }
        self.in_transaction = false;
        self.connection.batch(Place::Rows, verb)
    }
}

impl<C: SqlConnection> Store for SqlStore<C> {
    async fn begin(&mut self) -> StoreResult<()> {
        if self.in_transaction {
            return Err(StoreError::NoTransaction);
        }
        self.connection.begin()?;
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
        let sql =
            "INSERT INTO handler_rows (tbl, key, value) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING";
        self.changed(Place::Rows, sql, &[text(table), text(key), text(value)])
    }

    async fn get(&mut self, table: &str, key: &str) -> StoreResult<Option<String>> {
        let sql = "SELECT value FROM handler_rows WHERE tbl = $1 AND key = $2";
        self.row(Place::Rows, sql, &[text(table), text(key)])
    }

    async fn update(
        &mut self,
        table: &str,
        key: &str,
        value: &str,
        expected: Option<&str>,
    ) -> StoreResult<bool> {
        let sql = "UPDATE handler_rows SET value = $3 WHERE tbl = $1 AND key = $2";
        let params = [text(table), text(key), text(value)];
        match expected {
            None => self.changed(Place::Rows, sql, &params),
            Some(expected) => {
                let sql = format!("{sql} AND value = $4");
                let params = [params[0], params[1], params[2], text(expected)];
                self.changed(Place::Rows, &sql, &params)
            }
        }
    }

    async fn delete(&mut self, table: &str, key: &str) -> StoreResult<bool> {
        let sql = "DELETE FROM handler_rows WHERE tbl = $1 AND key = $2";
        self.changed(Place::Rows, sql, &[text(table), text(key)])
    }

    async fn scan(&mut self, table: &str) -> StoreResult<Vec<String>> {
        let order = C::BYTE_ORDER;
        let sql = format!("SELECT key FROM handler_rows WHERE tbl = $1 ORDER BY key {order}");
        self.texts(Place::Rows, &sql, &[text(table)])
    }

    async fn insert_effect(&mut self, table: &str, value: &str) -> StoreResult<u64> {
        // Numbered per table in commit order: writers are serialised, so the next number is stable.
        let sql = "INSERT INTO handler_effects (tbl, id, value)
                   SELECT $1, COALESCE(MAX(id), 0) + 1, $2 FROM handler_effects WHERE tbl = $1
                   RETURNING id";
        let id = self.number(Place::Rows, sql, &[text(table), text(value)])?;
        Ok(id as u64)
    }

    async fn kv_set(&mut self, key: &str, value: &str, mode: SetMode) -> StoreResult<bool> {
        self.expire_kv()?;
        let expires = mode
            .ttl_ms
            .map(|ttl_ms| expires_at_ms(self.clock.now_ms(), ttl_ms));
        let conflict = match mode.if_absent {
            true => "DO NOTHING",
            false => "DO UPDATE SET value = EXCLUDED.value, expires_at_ms = EXCLUDED.expires_at_ms",
        };
        let sql = format!(
            "INSERT INTO handler_kv (key, value, expires_at_ms) VALUES ($1, $2, $3) ON CONFLICT (key) {conflict}"
        );
        let params = [text(key), text(value), Param::Int(expires)];
        self.changed(Place::Side, &sql, &params)
    }

    async fn kv_get(&mut self, key: &str) -> StoreResult<Option<String>> {
        self.expire_kv()?;
        let sql = "SELECT value FROM handler_kv WHERE key = $1";
        self.row(Place::Side, sql, &[text(key)])
    }

    async fn kv_del(&mut self, key: &str) -> StoreResult<bool> {
        self.expire_kv()?;
        let sql = "DELETE FROM handler_kv WHERE key = $1";
        self.changed(Place::Side, sql, &[text(key)])
    }

    async fn kv_expire(&mut self, key: &str, ttl_ms: u64) -> StoreResult<bool> {
        self.expire_kv()?;
        let at = expires_at_ms(self.clock.now_ms(), ttl_ms);
        let sql = "UPDATE handler_kv SET expires_at_ms = $2 WHERE key = $1";
        self.changed(Place::Side, sql, &[text(key), int(at)])
    }

    async fn provider_charge(&mut self, key: Option<&str>, body: &str) -> StoreResult<String> {
        let sql = "INSERT INTO handler_charges (idempotency_key, body) VALUES ($1, $2)
                   ON CONFLICT (idempotency_key) DO NOTHING RETURNING id";
        let inserted = first(self.connection.query(
            Place::Side,
            sql,
            &[Param::Text(key), text(body)],
        )?);
        let id = match (inserted, key) {
            (Some(cell), _) => as_int(Some(cell))?,
            (None, Some(key)) => {
                let sql = "SELECT id FROM handler_charges WHERE idempotency_key = $1";
                self.number(Place::Side, sql, &[text(key)])?
            }
            (None, None) => return Err(refused("a charge without a key inserted nothing")),
        };
        Ok(format!("ch_{id}"))
    }

    async fn now_ms(&mut self) -> StoreResult<u64> {
        Ok(self.clock.now_ms())
    }

    async fn external_call(
        &mut self,
        call: &str,
        key: Option<&str>,
        body: &str,
    ) -> StoreResult<String> {
        // Numbered per name (the simulated store's `NAME_N`), not by a sequence, which a conflict would advance;
        // a repeat of a (name, key) inserts nothing. The casts type the parameters for PostgreSQL.
        let sql = "INSERT INTO handler_calls (call, number, idempotency_key, body)
                   SELECT CAST($1 AS TEXT), COUNT(*) + 1, CAST($2 AS TEXT), CAST($3 AS TEXT)
                   FROM handler_calls WHERE call = CAST($1 AS TEXT)
                   ON CONFLICT DO NOTHING";
        self.changed(
            Place::Side,
            sql,
            &[text(call), Param::Text(key), text(body)],
        )?;
        let number = match key {
            Some(key) => {
                let sql =
                    "SELECT number FROM handler_calls WHERE call = $1 AND idempotency_key = $2";
                self.number(Place::Side, sql, &[text(call), text(key)])?
            }
            None => {
                let sql = "SELECT MAX(number) FROM handler_calls WHERE call = $1";
                self.number(Place::Side, sql, &[text(call)])?
            }
        };
        Ok(format!("{call}_{number}"))
    }
}
