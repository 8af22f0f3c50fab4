//! The SQLite key store (rusqlite, bundled SQLite): the article's transactions.
//!
//! Claim: `BEGIN IMMEDIATE; INSERT OR IGNORE` on the `(client_id, key)` primary key, read the row back, `COMMIT`
//! (a take-over of an expired lease is an `UPDATE` inside the same transaction). Owner: `BEGIN IMMEDIATE`, the
//! payment row and the completion, `COMMIT`. The select-then-insert variant has no primary key on the table and
//! claims with a `SELECT` in one transaction and a plain `INSERT` in a later one.
//!
//! One `SqliteStore` is one connection: open one per worker thread, as a service opens one per handler.

use super::{
    decide_on_row, internal_error_reply, open_claim_token, payment_response, reply_for,
    still_holds_claim, ClaimLookup, ClaimToken, Claimed, Completion, KeyRow, KeyStore, OnError,
    Payment, Reply, Request, StoreError, StoreFlow, StoredResponse,
};
use crate::protocol::{self, status, Claim, Decision, Fingerprint, ProtocolConfig};
use rusqlite::{params, Connection, OptionalExtension, Transaction, TransactionBehavior};
use std::path::Path;
use std::time::Duration;

/// How long a connection waits for another's write lock, like the article's `sqlite3.connect(timeout=5)`.
const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

const ROW_COLUMNS: &str =
    "rowid, client_id, key, fingerprint, token, claimed_at_ms, response, response_status";

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
                 response      TEXT,
                 -- The stored response's status: 201 for a completion, 500 when a failure is kept as final.
                 response_status INTEGER{primary_key}
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
             WHERE client_id = ?3 AND key = ?4",
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
                let row = latest_row(&transaction, request)?;
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
                    latest_row(&transaction, request)?
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
        // Answered without a claim: roll back, so the unused token is not logged.
        drop(transaction);
        Ok(Claimed::Answered(
            reply_for(&decision)?.expect("a decision that does not execute has a reply"),
        ))
    }

    fn complete_with(
        &self,
        request: &Request,
        token: ClaimToken,
        _now_ms: u64,
        before_commit: &mut dyn FnMut() -> StoreFlow,
    ) -> Result<Completion, StoreError> {
        let transaction = self.immediate()?;
        let row = latest_row(&transaction, request)?;
        let record_token = open_claim_token(row.as_ref().map(|(_, row)| row));
        if !protocol::may_complete(self.config.fencing, &token, record_token.as_ref()) {
            return Ok(Completion::Refused); // the transaction rolls back unused
        }
        transaction.execute(
            "INSERT INTO payments (client_id, key, amount) VALUES (?1, ?2, ?3)",
            params![request.client_id, request.key, request.amount().to_string()],
        )?;
        let payment_id = transaction.last_insert_rowid() as u64;
        let response = payment_response(payment_id, request);
        // Every row of the key: one under a unique index; without one, the article's UPDATE by (client, key).
        transaction.execute(
            "UPDATE idempotency_keys SET status = 'completed', response = ?1, response_status = ?2
             WHERE client_id = ?3 AND key = ?4",
            params![
                response.to_string(),
                status::CREATED,
                request.client_id,
                request.key
            ],
        )?;
        if before_commit() == StoreFlow::Crash {
            // Dropping the transaction rolls it back, as SQLite does for a connection that dies mid-transaction.
            return Err(StoreError::Crashed);
        }
        transaction.commit()?;
        Ok(Completion::Created(Reply {
            status: Decision::<String>::Execute.status(),
            body: response,
        }))
    }

    fn fail(
        &self,
        request: &Request,
        token: ClaimToken,
        on_error: OnError,
    ) -> Result<Reply, StoreError> {
        // The failed handler's effect transaction, if it had one open, is simply never committed. This is a new
        // transaction that only applies `on_error`, and only while the handler still holds the claim.
        let reply = internal_error_reply();
        let transaction = self.immediate()?;
        let row = latest_row(&transaction, request)?;
        if still_holds_claim(token, row.as_ref().map(|(_, row)| row)) {
            match on_error {
                OnError::StoreResponse => {
                    transaction.execute(
                        "UPDATE idempotency_keys SET status = 'completed', response = ?1,
                                response_status = ?2
                         WHERE client_id = ?3 AND key = ?4",
                        params![
                            reply.body.to_string(),
                            reply.status,
                            request.client_id,
                            request.key
                        ],
                    )?;
                }
                OnError::DeleteKey => {
                    transaction.execute(
                        "DELETE FROM idempotency_keys WHERE client_id = ?1 AND key = ?2",
                        params![request.client_id, request.key],
                    )?;
                }
                OnError::KeepInProgress => {}
            }
        }
        transaction.commit()?;
        Ok(reply)
    }

    fn expire_key(&self, client_id: &str, key: &str) -> Result<(), StoreError> {
        self.connection.execute(
            "DELETE FROM idempotency_keys
             WHERE client_id = ?1 AND key = ?2 AND status = 'completed'",
            params![client_id, key],
        )?;
        Ok(())
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

    fn rows(&self) -> Result<Vec<KeyRow>, StoreError> {
        let mut statement = self.connection.prepare(&format!(
            "SELECT {ROW_COLUMNS} FROM idempotency_keys ORDER BY rowid"
        ))?;
        let rows = statement.query_map([], read_row)?;
        Ok(rows
            .map(|row| row.map(|(_, row)| row))
            .collect::<Result<_, _>>()?)
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
            response: match (
                row.get::<_, Option<String>>(6)?,
                row.get::<_, Option<u16>>(7)?,
            ) {
                (Some(body), Some(status)) => Some(StoredResponse { status, body }),
                _ => None,
            },
        },
    ))
}

/// The key's latest row (its only row under a unique index).
fn latest_row(
    transaction: &Transaction<'_>,
    request: &Request,
) -> Result<Option<RowWithId>, StoreError> {
    Ok(transaction
        .query_row(
            &format!(
                "SELECT {ROW_COLUMNS} FROM idempotency_keys WHERE client_id = ?1 AND key = ?2
                 ORDER BY rowid DESC LIMIT 1"
            ),
            params![request.client_id, request.key],
            read_row,
        )
        .optional()?)
}
