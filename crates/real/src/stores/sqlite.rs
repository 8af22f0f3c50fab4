//! SQLite (rusqlite, bundled) under the shared SQL store (`super::sql`): rows under a real primary key, effects
//! in a real table, `BEGIN IMMEDIATE` transactions (one writer at a time, as the simulated store). The key-value
//! store and the provider's charges live in a second database file beside it (`<path>.side`): like Redis and a
//! payment provider they are not part of the database's transactions, and writing them never waits for its
//! write lock. Time is a logical clock shared by the caller's connections, so a checker trace replays with the
//! same expiries.
//!
//! One `SqliteStore` is one connection: open one per worker, as a service opens one per handler. A crash is
//! dropping the connection with a transaction open (SQLite rolls it back).

use super::sql::{refused, schema, Cell, Param, Place, SqlConnection, SqlStore};
use crate::handler::api::{Clock, StoreResult};
use rusqlite::types::{ToSqlOutput, ValueRef};
use rusqlite::{params_from_iter, Connection};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The database file and its side file.
pub struct Sqlite {
    rows: Connection,
    side: Connection,
}

/// A connection to a SQLite database made by [`SqliteStore::create`].
pub type SqliteStore = SqlStore<Sqlite>;

fn connect(path: &Path) -> StoreResult<Connection> {
    let connection = Connection::open(path).map_err(refused)?;
    connection
        .busy_timeout(Duration::from_secs(5))
        .map_err(refused)?;
    Ok(connection)
}

fn side_path(path: &Path) -> PathBuf {
    let mut name = path.as_os_str().to_os_string();
    name.push(".side");
    name.into()
}

impl rusqlite::ToSql for Param<'_> {
    fn to_sql(&self) -> rusqlite::Result<ToSqlOutput<'_>> {
        match self {
            Param::Text(value) => value.to_sql(),
            Param::Int(value) => value.to_sql(),
        }
    }
}

impl Sqlite {
    fn at(&self, place: Place) -> &Connection {
        match place {
            Place::Rows => &self.rows,
            Place::Side => &self.side,
        }
    }
}

/// SQLite numbers its placeholders `?1`: the shared statements' `$1`, respelled.
fn respelled(sql: &str) -> String {
    sql.replace('$', "?")
}

fn cell(value: ValueRef<'_>) -> Cell {
    match value {
        ValueRef::Null => Cell::Null,
        ValueRef::Integer(number) => Cell::Int(number),
        ValueRef::Text(bytes) => Cell::Text(String::from_utf8_lossy(bytes).into_owned()),
        ValueRef::Real(number) => Cell::Text(number.to_string()),
        ValueRef::Blob(bytes) => Cell::Text(String::from_utf8_lossy(bytes).into_owned()),
    }
}

impl SqlConnection for Sqlite {
    const SERIAL_KEY: &'static str = "INTEGER PRIMARY KEY AUTOINCREMENT";
    // TEXT compares with BINARY collation by default: byte order, as the simulated store's.
    const BYTE_ORDER: &'static str = "COLLATE BINARY";

    fn batch(&self, place: Place, sql: &str) -> StoreResult<()> {
        self.at(place).execute_batch(sql).map_err(refused)
    }

    fn execute(&self, place: Place, sql: &str, params: &[Param]) -> StoreResult<u64> {
        let connection = self.at(place);
        let changed = connection.execute(&respelled(sql), params_from_iter(params));
        changed.map(|rows| rows as u64).map_err(refused)
    }

    fn query(&self, place: Place, sql: &str, params: &[Param]) -> StoreResult<Vec<Vec<Cell>>> {
        let connection = self.at(place);
        let mut statement = connection.prepare(&respelled(sql)).map_err(refused)?;
        let columns = statement.column_count();
        let mut rows = statement.query(params_from_iter(params)).map_err(refused)?;
        let mut cells = Vec::new();
        while let Some(row) = rows.next().map_err(refused)? {
            let row: Result<Vec<Cell>, _> =
                (0..columns).map(|i| row.get_ref(i).map(cell)).collect();
            cells.push(row.map_err(refused)?);
        }
        Ok(cells)
    }

    fn begin(&self) -> StoreResult<()> {
        self.rows.execute_batch("BEGIN IMMEDIATE").map_err(refused)
    }
}

impl SqliteStore {
    /// Create the tables (once, before any connection is opened).
    pub fn create(path: &Path) -> StoreResult<()> {
        let rows = schema::<Sqlite>(Place::Rows);
        connect(path)?.execute_batch(&rows).map_err(refused)?;
        let side = schema::<Sqlite>(Place::Side);
        connect(&side_path(path))?
            .execute_batch(&side)
            .map_err(refused)
    }

    /// A connection to the database at `path` (made by `create`), reading time from `clock`.
    pub fn open(path: &Path, clock: Clock) -> StoreResult<SqliteStore> {
        let rows = connect(path)?;
        let side = connect(&side_path(path))?;
        Ok(SqlStore::new(Sqlite { rows, side }, clock))
    }
}
