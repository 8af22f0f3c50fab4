//! The server side of the idempotency-key protocol as real code a service could embed.
//!
//! Two stores implement [`KeyStore`]: [`MemoryStore`] (generic over its lock, so std, loom and shuttle drive the
//! same code) and [`SqliteStore`] (rusqlite with the bundled SQLite, the article's transactions). Every decision is
//! made by `crate::protocol`: the stores only read and write rows, translate a row into the protocol's
//! [`RecordState`] (in [`decide_on_row`]) and map the decision to a reply.
//!
//! A request is handled in explicit steps so that tests and the trace driver can interleave them:
//! [`KeyStore::claim_lookup`] (the `SELECT` of the select-then-insert variant; nothing under a unique index),
//! [`KeyStore::claim_finish`] (the claim itself) and, for the owner, [`KeyStore::complete`] (the effect and the
//! completion in one transaction; a fenced refusal sends the handler back to its claim). [`handle`] runs them in a
//! row. [`KeyStore::fail`] (a handler error, under the model's `on-error` policy) and [`KeyStore::expire_key`] (the
//! TTL reaper) complete the model's server-side actions, so [`drive`] can replay any model trace that keeps keys in
//! the effect's database. Time is always passed in (`now_ms`): no decision reads the wall clock.

pub mod article;
pub mod drive;
mod lock;
mod memory;
mod sqlite;

pub use lock::{Lock, StdLock};
pub use memory::{MemoryStore, Tables};
pub use sqlite::SqliteStore;

use crate::protocol::{self, status, Decision, Fingerprint, Lease, ProtocolConfig, RecordState};
use serde_json::{json, Value};

/// What a failing handler does with its key. The model's knob (`on-error` in model files), used here as is.
pub use crate::model::OnError;

/// One HTTP request as the server sees it: who sent it, its `Idempotency-Key`, and its body (parsed and as sent).
#[derive(Clone, Debug, PartialEq)]
pub struct Request {
    pub client_id: String,
    pub key: String,
    pub body: Value,
    /// The body's bytes as sent; only [`protocol::FingerprintPolicy::Raw`] looks at them.
    pub raw_body: Vec<u8>,
}

impl Request {
    /// A request whose raw bytes are the compact serialisation of `body`.
    pub fn new(client_id: &str, key: &str, body: Value) -> Request {
        let raw_body = serde_json::to_vec(&body).unwrap_or_default();
        Request {
            client_id: client_id.to_string(),
            key: key.to_string(),
            body,
            raw_body,
        }
    }

    pub fn fingerprint(&self, config: &ProtocolConfig) -> Fingerprint {
        protocol::fingerprint(config.fingerprint, &self.raw_body, &self.body)
    }

    /// The amount the payment effect records (`null` when the body has none).
    pub(crate) fn amount(&self) -> Value {
        self.body.get("amount").cloned().unwrap_or(Value::Null)
    }
}

/// The answer sent back: a status code and a JSON body.
#[derive(Clone, Debug, PartialEq)]
pub struct Reply {
    pub status: u16,
    pub body: Value,
}

/// Identifies one claim of a key (a fresh one per claim and per take-over). Fencing compares it with the record's.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ClaimToken(pub u64);

/// The outcome of a claim: this request owns the key (and must call [`KeyStore::complete`]), or it was answered.
#[derive(Clone, Debug, PartialEq)]
pub enum Claimed {
    /// `decision` is `Execute` (fresh claim) or `TakeOver` (an expired lease was taken over).
    Owner {
        token: ClaimToken,
        decision: Decision<StoredResponse>,
    },
    Answered(Reply),
}

/// What the first step of a claim saw. Under a unique index the claim is one atomic step and this carries nothing;
/// under select-then-insert it carries the decision taken on the `SELECT`'s result, which the insert then acts on
/// without looking again (that gap is the bug).
#[derive(Clone, Debug, PartialEq)]
pub struct ClaimLookup(pub(crate) Option<Decision<StoredResponse>>);

/// What [`KeyStore::complete`] did.
#[derive(Clone, Debug, PartialEq)]
pub enum Completion {
    /// The payment and the completion committed together: the 201.
    Created(Reply),
    /// [`protocol::may_complete`] refused: the claim was taken over (fencing). Nothing was written; the handler
    /// starts again from the claim, which now sees the new owner's record (the model's `FencedCompletion`).
    Refused,
}

/// What the owner's hook tells [`KeyStore::complete_with`] to do once the payment and the completion are written
/// and not yet committed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StoreFlow {
    Commit,
    /// Stop before `COMMIT`, as a worker that dies there: the transaction is abandoned and rolled back.
    Crash,
}

/// A stored payment (the effect), as the oracle counts it.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Payment {
    pub payment_id: u64,
    pub client_id: String,
    pub key: String,
    pub amount: String,
}

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("sqlite: {0}")]
    Sqlite(#[from] rusqlite::Error),
    #[error("i/o: {0}")]
    Io(#[from] std::io::Error),
    #[error("stored response is not JSON: {0}")]
    BadStoredResponse(#[from] serde_json::Error),
    /// The caller's hook stopped the effect transaction before its commit (a simulated crash).
    #[error("the worker crashed inside the effect transaction; nothing was committed")]
    Crashed,
    #[error("the claim on {client_id}/{key} was taken over {attempts} times in a row")]
    ClaimLost {
        client_id: String,
        key: String,
        attempts: usize,
    },
}

/// The server side of the protocol over some storage. All methods take `&self`; a store is shared by the request
/// handlers (memory) or opened once per worker (SQLite connection).
pub trait KeyStore {
    fn config(&self) -> &ProtocolConfig;

    /// Step 1 of a claim. Select-then-insert reads the record and decides on what it saw; a unique index does
    /// nothing here (its claim is a single atomic step).
    fn claim_lookup(&self, request: &Request, now_ms: u64) -> Result<ClaimLookup, StoreError>;

    /// Step 2 of a claim: claim the key (or take an expired claim over), or answer 200 / 409 / 422.
    fn claim_finish(
        &self,
        request: &Request,
        lookup: ClaimLookup,
        now_ms: u64,
    ) -> Result<Claimed, StoreError>;

    /// Step 3, owner only: the effect (a payment) and the completion in one transaction, if
    /// [`protocol::may_complete`] allows it (otherwise nothing is written: [`Completion::Refused`]).
    /// `before_commit` runs inside the transaction after both writes and before the commit;
    /// [`StoreFlow::Crash`] abandons the transaction there and returns [`StoreError::Crashed`].
    fn complete_with(
        &self,
        request: &Request,
        token: ClaimToken,
        now_ms: u64,
        before_commit: &mut dyn FnMut() -> StoreFlow,
    ) -> Result<Completion, StoreError>;

    /// [`KeyStore::complete_with`] that always commits.
    fn complete(
        &self,
        request: &Request,
        token: ClaimToken,
        now_ms: u64,
    ) -> Result<Completion, StoreError> {
        self.complete_with(request, token, now_ms, &mut || StoreFlow::Commit)
    }

    /// The owner's handler failed (a downstream timeout, an exception) before committing: nothing of its effect
    /// transaction is kept, and `on_error` decides the key's fate if this handler still holds the claim: keep the
    /// 500 as the final response, delete the key so a retry executes afresh, or leave it in_progress. Answers 500.
    fn fail(
        &self,
        request: &Request,
        token: ClaimToken,
        on_error: OnError,
    ) -> Result<Reply, StoreError>;

    /// The TTL reaper: forget a completed key (a later request with it executes again). In-progress keys stay.
    fn expire_key(&self, client_id: &str, key: &str) -> Result<(), StoreError>;

    /// Every payment made so far, in id order.
    fn payments(&self) -> Result<Vec<Payment>, StoreError>;

    /// Every key row, in insertion order.
    fn rows(&self) -> Result<Vec<KeyRow>, StoreError>;

    /// Both claim steps in a row.
    fn claim(&self, request: &Request, now_ms: u64) -> Result<Claimed, StoreError> {
        let lookup = self.claim_lookup(request, now_ms)?;
        self.claim_finish(request, lookup, now_ms)
    }
}

/// How many times one handler claims again after a refused completion before it gives up with an error. One
/// re-claim is what a single take-over needs; more means other handlers keep taking the key over.
pub const RECLAIM_COUNT_MAX: usize = 4;

/// Handle one request from start to end, at one instant `now_ms`: claim, and for the owner the effect and the
/// completion; a refused completion (the claim was taken over) starts again from the claim.
pub fn handle<S: KeyStore + ?Sized>(
    store: &S,
    request: &Request,
    now_ms: u64,
) -> Result<Reply, StoreError> {
    for _ in 0..=RECLAIM_COUNT_MAX {
        let token = match store.claim(request, now_ms)? {
            Claimed::Owner { token, .. } => token,
            Claimed::Answered(reply) => return Ok(reply),
        };
        if let Completion::Created(reply) = store.complete(request, token, now_ms)? {
            return Ok(reply);
        }
    }
    Err(StoreError::ClaimLost {
        client_id: request.client_id.clone(),
        key: request.key.clone(),
        attempts: RECLAIM_COUNT_MAX + 1,
    })
}

/// The response stored with a completed key: its status code and its JSON body as text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoredResponse {
    pub status: u16,
    pub body: String,
}

impl StoredResponse {
    /// The payment id the stored body reports, if any.
    pub fn payment_id(&self) -> Option<u64> {
        let body: Value = serde_json::from_str(&self.body).ok()?;
        body.get("payment_id").and_then(Value::as_u64)
    }
}

/// A stored key record as both stores hold it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KeyRow {
    pub client_id: String,
    pub key: String,
    pub fingerprint: Fingerprint,
    pub token: ClaimToken,
    pub claimed_at_ms: u64,
    /// `None` while in_progress; the stored response once completed.
    pub response: Option<StoredResponse>,
}

/// The protocol's view of a stored row at `now_ms`: the lease is judged by [`protocol::lease_expired`].
pub fn record_state(row: &KeyRow, lease: Lease, now_ms: u64) -> RecordState<StoredResponse> {
    match &row.response {
        Some(response) => RecordState::Completed {
            response: response.clone(),
        },
        None => RecordState::InProgress {
            lease_expired: match lease {
                Lease::None => false,
                Lease::Ms(lease_ms) => protocol::lease_expired(row.claimed_at_ms, now_ms, lease_ms),
            },
        },
    }
}

/// [`protocol::decide`] on a stored row (or on no row): the only place the stores ask for a decision.
pub fn decide_on_row(
    config: &ProtocolConfig,
    request_fp: &Fingerprint,
    row: Option<&KeyRow>,
    now_ms: u64,
) -> Decision<StoredResponse> {
    let stored = row.map(|row| (row.fingerprint, record_state(row, config.lease, now_ms)));
    protocol::decide(request_fp, stored.as_ref().map(|(fp, state)| (fp, state)))
}

/// The reply for a decision that does not execute; `None` for `Execute` / `TakeOver` (the owner's reply comes
/// from [`KeyStore::complete`]).
pub fn reply_for(decision: &Decision<StoredResponse>) -> Result<Option<Reply>, StoreError> {
    let body = match decision {
        Decision::Execute | Decision::TakeOver => return Ok(None),
        Decision::Replay(stored) => {
            return Ok(Some(Reply {
                status: status::replay_status(stored.status),
                body: serde_json::from_str(&stored.body)?,
            }))
        }
        Decision::InProgress => json!({"error": "the request with this key is still in flight"}),
        Decision::BodyMismatch => json!({"error": "key already used with a different body"}),
    };
    Ok(Some(Reply {
        status: decision.status(),
        body,
    }))
}

/// The claim token a completion is fenced against: the key's record's token while it is in_progress, `None` once
/// completed (or absent). With fencing only the holder of the open claim may complete.
pub fn open_claim_token(row: Option<&KeyRow>) -> Option<ClaimToken> {
    row.filter(|row| row.response.is_none())
        .map(|row| row.token)
}

/// The reply of a failed handler, and what `OnError::StoreResponse` keeps.
pub(crate) fn internal_error_reply() -> Reply {
    Reply {
        status: status::INTERNAL_ERROR,
        body: json!({"error": "internal error; retry with the same key"}),
    }
}

/// Whether a failing handler still holds the key's claim (only then may its `on_error` touch the record): the
/// fenced completion rule, always fenced.
pub(crate) fn still_holds_claim(token: ClaimToken, row: Option<&KeyRow>) -> bool {
    protocol::may_complete(true, &token, open_claim_token(row).as_ref())
}

/// The owner's response, stored with the completion and replayed by later requests.
pub(crate) fn payment_response(payment_id: u64, request: &Request) -> Value {
    json!({"payment_id": payment_id, "amount": request.amount()})
}
