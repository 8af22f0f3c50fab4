//! The store interface on PostgreSQL (the `postgres` crate): the same tables as on SQLite, a real unique index
//! (`INSERT ... ON CONFLICT DO NOTHING`), real transactions. `begin` also takes a transaction-scoped advisory
//! lock, so writers are serialised as SQLite's `BEGIN IMMEDIATE` (and the simulated store) serialise them, and a
//! checker trace replays in the same order. A crash is dropping the connection with a transaction open.

use crate::handler::api::{Clock, SetMode, Store, StoreError, StoreResult};
use postgres::{Client, NoTls};

const SCHEMA: &str = "
    CREATE TABLE IF NOT EXISTS handler_rows (
        tbl TEXT NOT NULL, key TEXT NOT NULL, value TEXT NOT NULL, PRIMARY KEY (tbl, key));
    CREATE TABLE IF NOT EXISTS handler_effects (
        tbl TEXT NOT NULL, id BIGINT NOT NULL, value TEXT NOT NULL, PRIMARY KEY (tbl, id));
    CREATE TABLE IF NOT EXISTS handler_kv (
        key TEXT PRIMARY KEY, value TEXT NOT NULL, expires_at_ms BIGINT);
    CREATE TABLE IF NOT EXISTS handler_charges (
        id BIGSERIAL PRIMARY KEY, idempotency_key TEXT UNIQUE, body TEXT NOT NULL);
    CREATE TABLE IF NOT EXISTS handler_calls (
        call TEXT NOT NULL, number BIGINT NOT NULL, idempotency_key TEXT, body TEXT NOT NULL,
        PRIMARY KEY (call, number), UNIQUE (call, idempotency_key));
";

/// The advisory lock `begin` takes (any fixed number: one writer at a time).
const WRITER_LOCK: i64 = 7_275_001;

pub struct PostgresStore {
    client: Client,
    clock: Clock,
    in_transaction: bool,
}

fn refused(error: postgres::Error) -> StoreError {
    StoreError::Refused(error.to_string())
}

impl PostgresStore {
    /// Create the tables if needed (once, before the workers connect).
    pub fn create(params: &str) -> StoreResult<()> {
        let mut client = Client::connect(params, NoTls).map_err(refused)?;
        client.batch_execute(SCHEMA).map_err(refused)
    }

    /// Connect (e.g. `host=127.0.0.1 port=5432 user=postgres dbname=postgres`), reading time from `clock`.
    pub fn connect(params: &str, clock: Clock) -> StoreResult<PostgresStore> {
        Ok(PostgresStore {
            client: Client::connect(params, NoTls).map_err(refused)?,
            clock,
            in_transaction: false,
        })
    }

    /// Committed effect rows of a table, in id order.
    pub fn effects(&mut self, table: &str) -> StoreResult<Vec<String>> {
        let rows = self
            .client
            .query(
                "SELECT value FROM handler_effects WHERE tbl = $1 ORDER BY id",
                &[&table],
            )
            .map_err(refused)?;
        Ok(rows.iter().map(|row| row.get(0)).collect())
    }

    /// Provider charges made so far.
    pub fn charges_total(&mut self) -> StoreResult<usize> {
        self.client
            .query_one("SELECT COUNT(*) FROM handler_charges", &[])
            .map(|row| row.get::<_, i64>(0) as usize)
            .map_err(refused)
    }

    /// Calls other services acted on (`external_call`), all names.
    pub fn calls_total(&mut self) -> StoreResult<usize> {
        self.client
            .query_one("SELECT COUNT(*) FROM handler_calls", &[])
            .map(|row| row.get::<_, i64>(0) as usize)
            .map_err(refused)
    }

    /// Committed effect rows, all tables.
    pub fn effects_total(&mut self) -> StoreResult<usize> {
        self.client
            .query_one("SELECT COUNT(*) FROM handler_effects", &[])
            .map(|row| row.get::<_, i64>(0) as usize)
            .map_err(refused)
    }

    fn now(&mut self) -> StoreResult<u64> {
        Ok(self.clock.now_ms())
    }

    fn changed(
        &mut self,
        sql: &str,
        values: &[&(dyn postgres::types::ToSql + Sync)],
    ) -> StoreResult<bool> {
        self.client
            .execute(sql, values)
            .map(|rows| rows > 0)
            .map_err(refused)
    }

    fn text(
        &mut self,
        sql: &str,
        values: &[&(dyn postgres::types::ToSql + Sync)],
    ) -> StoreResult<Option<String>> {
        self.client
            .query_opt(sql, values)
            .map(|row| row.map(|row| row.get(0)))
            .map_err(refused)
    }

    fn expire_kv(&mut self) -> StoreResult<()> {
        let now = self.now()? as i64;
        self.changed(
            "DELETE FROM handler_kv WHERE expires_at_ms IS NOT NULL AND expires_at_ms <= $1",
            &[&now],
        )
        .map(drop)
    }

    fn end(&mut self, verb: &str) -> StoreResult<()> {
        if !self.in_transaction {
            return Err(StoreError::NoTransaction);
        }
        self.in_transaction = false;
        self.client.batch_execute(verb).map_err(refused)
    }
}

impl Store for PostgresStore {
    async fn begin(&mut self) -> StoreResult<()> {
        if self.in_transaction {
            return Err(StoreError::NoTransaction);
        }
        self.client.batch_execute("BEGIN").map_err(refused)?;
        self.client
            .execute("SELECT pg_advisory_xact_lock($1)", &[&WRITER_LOCK])
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
            "INSERT INTO handler_rows (tbl, key, value) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING",
            &[&table, &key, &value],
        )
    }

    async fn get(&mut self, table: &str, key: &str) -> StoreResult<Option<String>> {
        self.text(
            "SELECT value FROM handler_rows WHERE tbl = $1 AND key = $2",
            &[&table, &key],
        )
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
                "UPDATE handler_rows SET value = $3 WHERE tbl = $1 AND key = $2",
                &[&table, &key, &value],
            ),
            Some(expected) => self.changed(
                "UPDATE handler_rows SET value = $3 WHERE tbl = $1 AND key = $2 AND value = $4",
                &[&table, &key, &value, &expected],
            ),
        }
    }

    async fn delete(&mut self, table: &str, key: &str) -> StoreResult<bool> {
        self.changed(
            "DELETE FROM handler_rows WHERE tbl = $1 AND key = $2",
            &[&table, &key],
        )
    }

    async fn scan(&mut self, table: &str) -> StoreResult<Vec<String>> {
        // COLLATE "C": byte order, as SQLite's and the simulated store's (the database's collation may differ).
        let rows = self
            .client
            .query(
                "SELECT key FROM handler_rows WHERE tbl = $1 ORDER BY key COLLATE \"C\"",
                &[&table],
            )
            .map_err(refused)?;
        Ok(rows.iter().map(|row| row.get(0)).collect())
    }

    async fn insert_effect(&mut self, table: &str, value: &str) -> StoreResult<u64> {
        self.client
            .query_one(
                "INSERT INTO handler_effects (tbl, id, value)
                 SELECT $1, COALESCE(MAX(id), 0) + 1, $2 FROM handler_effects WHERE tbl = $1
                 RETURNING id",
                &[&table, &value],
            )
            .map(|row| row.get::<_, i64>(0) as u64)
            .map_err(refused)
    }

    async fn kv_set(&mut self, key: &str, value: &str, mode: SetMode) -> StoreResult<bool> {
        self.expire_kv()?;
        let expires = match mode.ttl_ms {
            Some(ttl) => Some(crate::handler::api::expires_at_ms(self.now()?, ttl)),
            None => None,
        };
        let conflict = if mode.if_absent {
            "DO NOTHING"
        } else {
            "DO UPDATE SET value = EXCLUDED.value, expires_at_ms = EXCLUDED.expires_at_ms"
        };
        self.changed(
            &format!(
                "INSERT INTO handler_kv (key, value, expires_at_ms) VALUES ($1, $2, $3) ON CONFLICT (key) {conflict}"
            ),
            &[&key, &value, &expires],
        )
    }

    async fn kv_get(&mut self, key: &str) -> StoreResult<Option<String>> {
        self.expire_kv()?;
        self.text("SELECT value FROM handler_kv WHERE key = $1", &[&key])
    }

    async fn kv_del(&mut self, key: &str) -> StoreResult<bool> {
        self.expire_kv()?;
        self.changed("DELETE FROM handler_kv WHERE key = $1", &[&key])
    }

    async fn kv_expire(&mut self, key: &str, ttl_ms: u64) -> StoreResult<bool> {
        self.expire_kv()?;
        let at = crate::handler::api::expires_at_ms(self.now()?, ttl_ms);
        self.changed(
            "UPDATE handler_kv SET expires_at_ms = $2 WHERE key = $1",
            &[&key, &at],
        )
    }

    async fn provider_charge(
        &mut self,
        idempotency_key: Option<&str>,
        body: &str,
    ) -> StoreResult<String> {
        let inserted = self
            .client
            .query_opt(
                "INSERT INTO handler_charges (idempotency_key, body) VALUES ($1, $2)
                 ON CONFLICT (idempotency_key) DO NOTHING RETURNING id",
                &[&idempotency_key, &body],
            )
            .map_err(refused)?;
        let id: i64 = match (inserted, idempotency_key) {
            (Some(row), _) => row.get(0),
            (None, Some(key)) => self
                .client
                .query_one(
                    "SELECT id FROM handler_charges WHERE idempotency_key = $1",
                    &[&key],
                )
                .map_err(refused)?
                .get(0),
            (None, None) => unreachable!("a charge without a key always inserts"),
        };
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
        // Numbered per name (the simulated store's `NAME_N`), not by a sequence, which a conflict would advance.
        self.changed(
            "INSERT INTO handler_calls (call, number, idempotency_key, body)
             SELECT $1::TEXT, COUNT(*) + 1, $2::TEXT, $3::TEXT FROM handler_calls WHERE call = $1::TEXT
             ON CONFLICT DO NOTHING",
            &[&call, &idempotency_key, &body],
        )?;
        let row = match idempotency_key {
            Some(key) => self.client.query_one(
                "SELECT number FROM handler_calls WHERE call = $1 AND idempotency_key = $2",
                &[&call, &key],
            ),
            None => self.client.query_one(
                "SELECT MAX(number) FROM handler_calls WHERE call = $1",
                &[&call],
            ),
        };
        let number: i64 = row.map_err(refused)?.get(0);
        Ok(format!("{call}_{number}"))
    }
}
