//! PostgreSQL (the `postgres` crate) under the shared SQL store (`super::sql`): the same tables as on SQLite,
//! all in one database, a real unique index, real transactions. `begin` also takes a transaction-scoped
//! advisory lock, so writers are serialised as SQLite's `BEGIN IMMEDIATE` (and the simulated store) serialise
//! them, and a checker trace replays in the same order. A crash is dropping the connection with a transaction
//! open.

use super::sql::{refused, schema, Cell, Param, Place, SqlConnection, SqlStore};
use crate::handler::api::{Clock, StoreResult};
use postgres::types::{ToSql, Type};
use postgres::{Client, NoTls, Row};
use std::cell::RefCell;

/// The advisory lock `begin` takes (any fixed number: one writer at a time).
const WRITER_LOCK: i64 = 7_275_001;

/// One client; the side tables are in the same database (`Place` does not matter here).
pub struct Postgres {
    // The shared store reads through `&self` (its observers are shared); the client wants `&mut`.
    client: RefCell<Client>,
}

/// A connection to a PostgreSQL database whose tables [`PostgresStore::create`] made.
pub type PostgresStore = SqlStore<Postgres>;

fn values<'a>(params: &'a [Param<'a>]) -> Vec<&'a (dyn ToSql + Sync)> {
    let value = |param: &'a Param<'a>| -> &'a (dyn ToSql + Sync) {
        match param {
            Param::Text(text) => text,
            Param::Int(number) => number,
        }
    };
    params.iter().map(value).collect()
}

fn cells(row: &Row) -> Vec<Cell> {
    let cell = |(index, column): (usize, &postgres::Column)| {
        let found = match *column.type_() {
            Type::INT8 => row.get::<_, Option<i64>>(index).map(Cell::Int),
            Type::INT4 => row
                .get::<_, Option<i32>>(index)
                .map(|n| Cell::Int(n.into())),
            _ => row.get::<_, Option<String>>(index).map(Cell::Text),
        };
        found.unwrap_or(Cell::Null)
    };
    row.columns().iter().enumerate().map(cell).collect()
}

impl SqlConnection for Postgres {
    const SERIAL_KEY: &'static str = "BIGSERIAL PRIMARY KEY";
    // The database's collation may differ: "C" is byte order, as SQLite's and the simulated store's.
    const BYTE_ORDER: &'static str = "COLLATE \"C\"";

    fn batch(&self, _: Place, sql: &str) -> StoreResult<()> {
        self.client.borrow_mut().batch_execute(sql).map_err(refused)
    }

    fn execute(&self, _: Place, sql: &str, params: &[Param]) -> StoreResult<u64> {
        let mut client = self.client.borrow_mut();
        client.execute(sql, &values(params)).map_err(refused)
    }

    fn query(&self, _: Place, sql: &str, params: &[Param]) -> StoreResult<Vec<Vec<Cell>>> {
        let rows = self.client.borrow_mut().query(sql, &values(params));
        Ok(rows.map_err(refused)?.iter().map(cells).collect())
    }

    fn begin(&self) -> StoreResult<()> {
        let mut client = self.client.borrow_mut();
        client.batch_execute("BEGIN").map_err(refused)?;
        let lock = client.execute("SELECT pg_advisory_xact_lock($1)", &[&WRITER_LOCK]);
        lock.map(drop).map_err(refused)
    }
}

impl PostgresStore {
    /// Create the tables if needed (once, before the workers connect).
    pub fn create(params: &str) -> StoreResult<()> {
        let mut client = Client::connect(params, NoTls).map_err(refused)?;
        let tables = schema::<Postgres>(Place::Rows) + &schema::<Postgres>(Place::Side);
        client.batch_execute(&tables).map_err(refused)
    }

    /// Connect (e.g. `host=127.0.0.1 port=5432 user=postgres dbname=postgres`), reading time from `clock`.
    pub fn connect(params: &str, clock: Clock) -> StoreResult<PostgresStore> {
        let client = Client::connect(params, NoTls).map_err(refused)?;
        let connection = Postgres {
            client: RefCell::new(client),
        };
        Ok(SqlStore::new(connection, clock))
    }
}
