//! The SQLite key store (rusqlite, bundled SQLite): the article's transactions.
//!
//! Claim: `BEGIN IMMEDIATE; INSERT OR IGNORE` on the `(client_id, key)` primary key, read the row back, `COMMIT`
//! (a take-over of an expired lease is an `UPDATE` inside the same transaction). Owner: `BEGIN IMMEDIATE`, the
//! payment row and the completion, `COMMIT`. The select-then-insert variant has no primary key on the table and
//! claims with a `SELECT` in one transaction and a plain `INSERT` in a later one.
//!
//! One `SqliteStore` is one connection: open one per worker thread, as a service opens one per handler.

use super::{
    decide_on_row, payment_response, reply_after_lost_claim, reply_for, ClaimLookup, ClaimToken,
    Claimed, KeyRow, KeyStore, Payment, Reply, Request, StoreError,
};
use crate::protocol::{self, Claim, Decision, Fingerprint, ProtocolConfig};
use rusqlite::{params, Connection, OptionalExtension, Transaction, TransactionBehavior};
use std::path::Path;
use std::time::Duration;

/// What the owner's effect hook tells [`SqliteStore::complete_with`] to do once the payment and the completion are
/// written and not yet committed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StoreFlow {
    Commit,
    /// Stop before `COMMIT`, as a worker that dies there: the transaction is abandoned and rolled back.
    Crash,
}

/// How long a connection waits for another's write lock, like the article's `sqlite3.connect(timeout=5)`.
const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

const ROW_COLUMNS: &str = "rowid, client_id, key, fingerprint, token, claimed_at_ms, response";

pub struct SqliteStore {
    config: ProtocolConfig,
    connection: Connection,
}

impl SqliteStore {
    /// Create the tables in the database at `path` (a new file) and return a connection to it. The key table has
    /// the `(client_id, key)` primary key only under [`Claim::UniqueIndex`].
    pub fn create(path: &Path, config: ProtocolConfig) -> Result<SqliteStore, StoreError> {
        let store = SqliteStore::open(path, config)?;
        let primary_key = match config.claim {
            Claim::UniqueIndex => ",\n PRIMARY KEY (client_id, key)",
            Claim::SelectThenInsert => "",
        };
        store.connection.execute_batch(&format!(
            "CREATE TABLE IF NOT EXISTS idempotency_keys (
                 client_id     TEXT NOT NULL,
                 key           TEXT NOT NULL,
                 fingerprint   TEXT NOT NULL,
                 token         INTEGER NOT NULL,
                 claimed_at_ms INTEGER NOT NULL,
                 status        TEXT NOT NULL,
                 response      TEXT{primary_key}
             );
             CREATE TABLE IF NOT EXISTS payments (
                 id        INTEGER PRIMARY KEY,
                 client_id TEXT NOT NULL,
                 key       TEXT NOT NULL,
                 amount    TEXT NOT NULL
             );
             -- One row per claim attempt: its rowid is the claim token that fencing compares.
             CREATE TABLE IF NOT EXISTS claims (
                 token         INTEGER PRIMARY KEY AUTOINCREMENT,
                 client_id     TEXT NOT NULL,
                 key           TEXT NOT NULL,
                 claimed_at_ms INTEGER NOT NULL
             );"
        ))?;
        Ok(store)
    }

    /// A new connection to a database made by [`SqliteStore::create`] with the same `config`.
    pub fn open(path: &Path, config: ProtocolConfig) -> Result<SqliteStore, StoreError> {
        let connection = Connection::open(path)?;
        connection.busy_timeout(BUSY_TIMEOUT)?;
        Ok(SqliteStore { config, connection })
    }

    /// Every key row, in insertion order.
    pub fn rows(&self) -> Result<Vec<KeyRow>, StoreError> {
        let mut statement = self.connection.prepare(&format!(
            "SELECT {ROW_COLUMNS} FROM idempotency_keys ORDER BY rowid"
        ))?;
        let rows = statement.query_map([], read_row)?;
        Ok(rows
            .map(|row| row.map(|(_, row)| row))
            .collect::<Result<_, _>>()?)
    }

    /// [`KeyStore::complete`] with a hook that runs inside the owner's transaction, after the payment and the
    /// completion are written and before `COMMIT`; [`StoreFlow::Crash`] abandons the transaction there.
    pub fn complete_with(
        &self,
        request: &Request,
        token: ClaimToken,
        now_ms: u64,
        before_commit: impl FnOnce() -> StoreFlow,
    ) -> Result<Reply, StoreError> {
        let transaction = self.immediate()?;
        let row = completion_row(&transaction, request, token)?;
        let record_token = row.as_ref().map(|(_, row)| row.token);
        if !protocol::may_complete(self.config.fencing, &token, record_token.as_ref()) {
            let row = row.as_ref().map(|(_, row)| row);
            return reply_after_lost_claim(&self.config, request, row, now_ms);
        }
        transaction.execute(
            "INSERT INTO payments (client_id, key, amount) VALUES (?1, ?2, ?3)",
            params![request.client_id, request.key, request.amount().to_string()],
        )?;
        let payment_id = transaction.last_insert_rowid() as u64;
        let response = payment_response(payment_id, request);
        if let Some((rowid, _)) = row {
            transaction.execute(
                "UPDATE idempotency_keys SET status = 'completed', response = ?1 WHERE rowid = ?2",
                params![response.to_string(), rowid],
            )?;
        }
        if before_commit() == StoreFlow::Crash {
            // Dropping the transaction rolls it back, as SQLite does for a connection that dies mid-transaction.
            return Err(StoreError::Crashed);
        }
        transaction.commit()?;
        Ok(Reply {
            status: Decision::<String>::Execute.status(),
            body: response,
        })
    }

    fn immediate(&self) -> Result<Transaction<'_>, StoreError> {
        Ok(Transaction::new_unchecked(
            &self.connection,
            TransactionBehavior::Immediate,
        )?)
    }

    /// A fresh claim token, logged in `claims`.
    fn new_token(
        transaction: &Transaction<'_>,
        request: &Request,
        now_ms: u64,
    ) -> Result<ClaimToken, StoreError> {
        transaction.execute(
            "INSERT INTO claims (client_id, key, claimed_at_ms) VALUES (?1, ?2, ?3)",
            params![request.client_id, request.key, now_ms as i64],
        )?;
        Ok(ClaimToken(transaction.last_insert_rowid() as u64))
    }

    fn take_over(
        transaction: &Transaction<'_>,
        request: &Request,
        token: ClaimToken,
        now_ms: u64,
    ) -> Result<(), StoreError> {
        transaction.execute(
            "UPDATE idempotency_keys SET token = ?1, claimed_at_ms = ?2
             WHERE rowid = (SELECT rowid FROM idempotency_keys WHERE client_id = ?3 AND key = ?4
                            ORDER BY rowid LIMIT 1)",
            params![
                token.0 as i64,
                now_ms as i64,
                request.client_id,
                request.key
            ],
        )?;
        Ok(())
    }

    fn insert_row(
        transaction: &Transaction<'_>,
        request: &Request,
        fingerprint: Fingerprint,
        token: ClaimToken,
        now_ms: u64,
        or_ignore: bool,
    ) -> Result<bool, StoreError> {
        let verb = if or_ignore {
            "INSERT OR IGNORE"
        } else {
            "INSERT"
        };
        let inserted = transaction.execute(
            &format!(
                "{verb} INTO idempotency_keys
                     (client_id, key, fingerprint, token, claimed_at_ms, status, response)
                 VALUES (?1, ?2, ?3, ?4, ?5, 'in_progress', NULL)"
            ),
            params![
                request.client_id,
                request.key,
                fingerprint.to_hex(),
                token.0 as i64,
                now_ms as i64
            ],
        )?;
        Ok(inserted == 1)
    }
}

impl KeyStore for SqliteStore {
    fn config(&self) -> &ProtocolConfig {
        &self.config
    }

    fn claim_lookup(&self, request: &Request, now_ms: u64) -> Result<ClaimLookup, StoreError> {
        match self.config.claim {
            Claim::UniqueIndex => Ok(ClaimLookup(None)),
            Claim::SelectThenInsert => {
                // The SELECT in a transaction of its own; the INSERT comes in a later one (claim_finish).
                let transaction = self.immediate()?;
                let row = first_row(&transaction, request)?;
                transaction.commit()?;
                let fingerprint = request.fingerprint(&self.config);
                let row = row.as_ref().map(|(_, row)| row);
                Ok(ClaimLookup(Some(decide_on_row(
                    &self.config,
                    &fingerprint,
                    row,
                    now_ms,
                ))))
            }
        }
    }

    fn claim_finish(
        &self,
        request: &Request,
        lookup: ClaimLookup,
        now_ms: u64,
    ) -> Result<Claimed, StoreError> {
        let fingerprint = request.fingerprint(&self.config);
        let transaction = self.immediate()?;
        let decision = match (self.config.claim, lookup.0) {
            // The broken variant acts on what its earlier SELECT saw: a plain INSERT, no index to stop a second.
            (Claim::SelectThenInsert, Some(decision)) => {
                if decision.executes() {
                    let token = Self::new_token(&transaction, request, now_ms)?;
                    match decision {
                        Decision::TakeOver => {
                            Self::take_over(&transaction, request, token, now_ms)?
                        }
                        _ => {
                            Self::insert_row(
                                &transaction,
                                request,
                                fingerprint,
                                token,
                                now_ms,
                                false,
                            )?;
                        }
                    }
                    transaction.commit()?;
                    return Ok(Claimed::Owner { token, decision });
                }
                decision
            }
            // The article's claim: INSERT OR IGNORE, read the row back, decide, all inside BEGIN IMMEDIATE.
            _ => {
                let token = Self::new_token(&transaction, request, now_ms)?;
                let inserted =
                    Self::insert_row(&transaction, request, fingerprint, token, now_ms, true)?;
                let row = if inserted {
                    None
                } else {
                    first_row(&transaction, request)?
                };
                let decision = decide_on_row(
                    &self.config,
                    &fingerprint,
                    row.as_ref().map(|(_, row)| row),
                    now_ms,
                );
                if decision == Decision::TakeOver {
                    Self::take_over(&transaction, request, token, now_ms)?;
                }
                if decision.executes() {
                    transaction.commit()?;
                    return Ok(Claimed::Owner { token, decision });
                }
                decision
            }
        };
        // Answered without a claim: nothing to keep (the unused token stays logged only if we commit; we don't).
        drop(transaction);
        Ok(Claimed::Answered(
            reply_for(&decision)?.expect("a decision that does not execute has a reply"),
        ))
    }

    fn complete(
        &self,
        request: &Request,
        token: ClaimToken,
        now_ms: u64,
    ) -> Result<Reply, StoreError> {
        self.complete_with(request, token, now_ms, || StoreFlow::Commit)
    }

    fn payments(&self) -> Result<Vec<Payment>, StoreError> {
        let mut statement = self
            .connection
            .prepare("SELECT id, client_id, key, amount FROM payments ORDER BY id")?;
        let payments = statement.query_map([], |row| {
            Ok(Payment {
                payment_id: row.get::<_, i64>(0)? as u64,
                client_id: row.get(1)?,
                key: row.get(2)?,
                amount: row.get(3)?,
            })
        })?;
        Ok(payments.collect::<Result<_, _>>()?)
    }
}

type RowWithId = (i64, KeyRow);

fn read_row(row: &rusqlite::Row<'_>) -> rusqlite::Result<RowWithId> {
    let fingerprint_hex: String = row.get(3)?;
    let mut fingerprint = [0u8; 32];
    hex::decode_to_slice(&fingerprint_hex, &mut fingerprint).map_err(|error| {
        rusqlite::Error::FromSqlConversionFailure(3, rusqlite::types::Type::Text, Box::new(error))
    })?;
    Ok((
        row.get(0)?,
        KeyRow {
            client_id: row.get(1)?,
            key: row.get(2)?,
            fingerprint: Fingerprint(fingerprint),
            token: ClaimToken(row.get::<_, i64>(4)? as u64),
            claimed_at_ms: row.get::<_, i64>(5)? as u64,
            response: row.get(6)?,
        },
    ))
}

/// The key's first row (its only row under a unique index).
fn first_row(
    transaction: &Transaction<'_>,
    request: &Request,
) -> Result<Option<RowWithId>, StoreError> {
    Ok(transaction
        .query_row(
            &format!(
                "SELECT {ROW_COLUMNS} FROM idempotency_keys WHERE client_id = ?1 AND key = ?2
                 ORDER BY rowid LIMIT 1"
            ),
            params![request.client_id, request.key],
            read_row,
        )
        .optional()?)
}

/// The row a completion with `token` acts on: the one still carrying `token`, else the key's first row (the same
/// rule as the in-memory store).
fn completion_row(
    transaction: &Transaction<'_>,
    request: &Request,
    token: ClaimToken,
) -> Result<Option<RowWithId>, StoreError> {
    Ok(transaction
        .query_row(
            &format!(
                "SELECT {ROW_COLUMNS} FROM idempotency_keys WHERE client_id = ?1 AND key = ?2
                 ORDER BY token = ?3 DESC, rowid LIMIT 1"
            ),
            params![request.client_id, request.key, token.0 as i64],
            read_row,
        )
        .optional()?)
}
