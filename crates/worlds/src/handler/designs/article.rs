//! The article's design as a handler: claim the key in its own transaction (`INSERT OR IGNORE`, read the row
//! back, decide), then write the payment and the completion in a second one. The decision on a row is
//! `protocol::decide`, the lease rule `protocol::lease_expired`, so the handler decides nothing the protocol does
//! not; the knobs of the built-in world (claim mechanism, lease, fencing, fingerprint policy, `on-error`) are
//! [`ArticleKnobs`], and [`Article`] is the article as written (unique index, no lease, normalised fingerprint).
//!
//! The record under `keys/<client>/<key>` is one line of text ([`Record`]): `in_progress <fingerprint>
//! <claimed_at_ms> <token>` or `completed <fingerprint> <status> <body>`. The claim's time is its fencing token
//! under a unique index: a take-over needs an expired lease (at least 1 ms), so a later claim of a key always has
//! a later time. Without a unique index two claims can coexist, so select-then-insert numbers its claims from a
//! counter row.

use crate::handler::api::{Handler, Reply, Request, Store, StoreResult};
use crate::protocol::{self, status, Claim, Decision, Lease, OnError, ProtocolConfig, RecordState};
use serde_json::{json, Value};

/// The article's design with the protocol's knobs: also a handler.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ArticleKnobs {
    pub protocol: ProtocolConfig,
    /// What a failure after the claim does to the key.
    pub on_error: OnError,
}

impl ArticleKnobs {
    /// The article as written: a failure leaves the key in_progress (nothing frees it without a lease).
    pub const ARTICLE: ArticleKnobs = ArticleKnobs {
        protocol: ProtocolConfig::ARTICLE,
        on_error: OnError::KeepInProgress,
    };

    /// The article fingerprinting the raw bytes of the body (docs/src/domain.md: the same JSON re-serialised with another
    /// key order gets 422; `models/raw-fingerprint-reserialised.toml`).
    pub const RAW_FINGERPRINT: ArticleKnobs = ArticleKnobs {
        protocol: ProtocolConfig {
            fingerprint: crate::protocol::FingerprintPolicy::Raw,
            ..ProtocolConfig::ARTICLE
        },
        on_error: OnError::KeepInProgress,
    };

    /// The article with another claim mechanism, lease and fencing (normalised fingerprint, the article's
    /// `on_error`).
    pub const fn claim_lease_fencing(claim: Claim, lease: Lease, fencing: bool) -> ArticleKnobs {
        ArticleKnobs {
            protocol: ProtocolConfig {
                claim,
                lease,
                fencing,
                fingerprint: crate::protocol::FingerprintPolicy::Normalized,
            },
            on_error: OnError::KeepInProgress,
        }
    }
}

/// The article's design as written (`ArticleKnobs::ARTICLE`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Article;

impl Handler for Article {
    async fn handle<S: Store>(&self, db: &mut S, request: &Request) -> Reply {
        handle(db, request, &ArticleKnobs::ARTICLE).await
    }
}

impl Handler for ArticleKnobs {
    async fn handle<S: Store>(&self, db: &mut S, request: &Request) -> Reply {
        handle(db, request, self).await
    }
}

pub const KEYS: &str = "keys";
pub const PAYMENTS: &str = "payments";
const TOKENS: &str = "tokens";
const TOKEN_SEQUENCE: &str = "seq";

/// How many times one request claims again after a fenced completion before it answers 500: one re-claim is what
/// a single take-over needs; more means other handlers keep taking the key over.
pub const RECLAIM_COUNT_MAX: usize = 4;

/// The record's row key: scoped per client (docs/src/domain.md mistake 3 is a global scope).
pub fn record_key(request: &Request) -> String {
    format!("{}/{}", request.client, request.key)
}

/// A key's record, as stored.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Record {
    InProgress {
        fingerprint: String,
        claimed_at_ms: u64,
        /// 0 under a unique index (the claim's time fences); numbered under select-then-insert.
        token: u64,
    },
    Completed {
        fingerprint: String,
        status: u16,
        body: String,
    },
}

impl Record {
    pub fn encode(&self) -> String {
        match self {
            Record::InProgress {
                fingerprint,
                claimed_at_ms,
                token,
            } => format!("in_progress {fingerprint} {claimed_at_ms} {token}"),
            Record::Completed {
                fingerprint,
                status,
                body,
            } => format!("completed {fingerprint} {status} {body}"),
        }
    }

    /// `None` for text that is no record (the handler answers 500 on it).
    pub fn decode(text: &str) -> Option<Record> {
        let mut fields = text.splitn(4, ' ');
        let (kind, fingerprint) = (fields.next()?, fields.next()?.to_string());
        let (third, fourth) = (fields.next()?, fields.next()?);
        match kind {
            "in_progress" => Some(Record::InProgress {
                fingerprint,
                claimed_at_ms: third.parse().ok()?,
                token: fourth.parse().ok()?,
            }),
            "completed" => Some(Record::Completed {
                fingerprint,
                status: third.parse().ok()?,
                body: fourth.to_string(),
            }),
            _ => None,
        }
    }

    fn fingerprint(&self) -> &str {
        match self {
            Record::InProgress { fingerprint, .. } | Record::Completed { fingerprint, .. } => {
                fingerprint
            }
        }
    }

    /// The protocol's view of the record at `now_ms`.
    fn state(&self, lease: Lease, now_ms: u64) -> RecordState<(u16, String)> {
        match self {
            Record::InProgress { claimed_at_ms, .. } => RecordState::InProgress {
                lease_expired: match lease {
                    Lease::None => false,
                    Lease::Ms(lease_ms) => {
                        protocol::lease_expired(*claimed_at_ms, now_ms, lease_ms)
                    }
                },
            },
            Record::Completed { status, body, .. } => RecordState::Completed {
                response: (*status, body.clone()),
            },
        }
    }
}

/// A claim this request holds: the key and the in_progress record it wrote.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Claimed {
    pub key: String,
    pub fingerprint: String,
    /// The record as written (fencing compares the stored record with it).
    pub mine: String,
}

/// What a claim came to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ClaimOutcome {
    /// This request owns the key (`Execute` or `TakeOver`) and goes on to the payment.
    Owner(Claimed, Decision<(u16, String)>),
    /// Answered without executing: 200 replay, 409, 422.
    Answered(Reply),
}

/// The request's body fingerprint under the knobs' policy, as stored in records. A body that is not JSON has no
/// normal form: it is fingerprinted by its bytes, so two different ones never share a fingerprint (parsed as
/// `null`, every such body once looked the same and a changed one was replayed).
pub fn fingerprint_of(request: &Request, knobs: &ArticleKnobs) -> String {
    let parsed = serde_json::from_str::<Value>(&request.body).ok();
    let policy = match (&parsed, knobs.protocol.fingerprint) {
        (None, protocol::FingerprintPolicy::Normalized) => protocol::FingerprintPolicy::Raw,
        (_, policy) => policy,
    };
    let parsed = parsed.unwrap_or(Value::Null);
    protocol::fingerprint(policy, request.body.as_bytes(), &parsed).to_hex()
}

/// The owner's response, stored with the completion and replayed by later requests.
pub fn payment_response(payment_id: u64, request: &Request) -> String {
    let parsed: Value = serde_json::from_str(&request.body).unwrap_or(Value::Null);
    let amount = parsed.get("amount").cloned().unwrap_or(Value::Null);
    json!({"payment_id": payment_id, "amount": amount}).to_string()
}

/// The reply to a decision that does not execute.
pub fn reply_for(decision: &Decision<(u16, String)>) -> Reply {
    match decision {
        Decision::Replay((stored_status, body)) => {
            Reply::new(status::replay_status(*stored_status), body.clone())
        }
        Decision::InProgress => Reply::new(
            decision.status(),
            json!({"error": "the request with this key is still in flight"}).to_string(),
        ),
        Decision::BodyMismatch => Reply::new(
            decision.status(),
            json!({"error": "key already used with a different body"}).to_string(),
        ),
        Decision::Execute | Decision::TakeOver => {
            unreachable!("an executing decision is answered by its payment")
        }
    }
}

/// A failed handler's answer (and what `OnError::StoreResponse` keeps).
pub fn internal_error_reply() -> Reply {
    Reply::new(
        status::INTERNAL_ERROR,
        json!({"error": "internal error; retry with the same key"}).to_string(),
    )
}

/// The whole request: claim, and for the owner the payment and the completion; a fenced completion claims again.
pub async fn handle<S: Store>(db: &mut S, request: &Request, knobs: &ArticleKnobs) -> Reply {
    for _ in 0..=RECLAIM_COUNT_MAX {
        let claimed = match claim(db, request, knobs).await {
            Ok(ClaimOutcome::Owner(claimed, _)) => claimed,
            Ok(ClaimOutcome::Answered(reply)) => return reply,
            Err(_) => return internal_error_reply(),
        };
        match complete(db, request, &claimed, knobs).await {
            Ok(Some(reply)) => return reply,
            Ok(None) => continue,
            Err(_) => return fail(db, &claimed, knobs.on_error).await,
        }
    }
    internal_error_reply()
}

/// The current time, read only when a lease can expire (without one, the time is never looked at).
async fn now_if_leased<S: Store>(db: &mut S, knobs: &ArticleKnobs) -> StoreResult<u64> {
    match knobs.protocol.lease {
        Lease::None => Ok(0),
        Lease::Ms(_) => db.now_ms().await,
    }
}

/// Claim the key (or take an expired claim over), or answer 200 / 409 / 422. A store error rolls back.
pub async fn claim<S: Store>(
    db: &mut S,
    request: &Request,
    knobs: &ArticleKnobs,
) -> StoreResult<ClaimOutcome> {
    let key = record_key(request);
    let fingerprint = fingerprint_of(request, knobs);
    let now_ms = now_if_leased(db, knobs).await?;
    db.begin().await?;
    let outcome = match knobs.protocol.claim {
        Claim::UniqueIndex => claim_unique(db, key, fingerprint, now_ms, knobs).await,
        Claim::SelectThenInsert => select(db, &key, &fingerprint, now_ms, knobs).await,
    };
    let outcome = match outcome {
        Ok(outcome) => outcome,
        Err(error) => {
            let _ = db.rollback().await;
            return Err(error);
        }
    };
    db.commit().await?;
    match outcome {
        // Select-then-insert: the SELECT's transaction found the key free; the INSERT comes in a second one.
        ClaimOutcome::Owner(claimed, decision)
            if knobs.protocol.claim == Claim::SelectThenInsert =>
        {
            insert_after_select(db, claimed, now_ms, decision).await
        }
        outcome => Ok(outcome),
    }
}

/// The article's claim: `INSERT OR IGNORE`, read the row back, decide; a take-over is a conditional update.
async fn claim_unique<S: Store>(
    db: &mut S,
    key: String,
    fingerprint: String,
    now_ms: u64,
    knobs: &ArticleKnobs,
) -> StoreResult<ClaimOutcome> {
    let mine = Record::InProgress {
        fingerprint: fingerprint.clone(),
        claimed_at_ms: now_ms,
        token: 0,
    }
    .encode();
    let inserted = db.insert_if_absent(KEYS, &key, &mine).await?;
    let row = db.get(KEYS, &key).await?;
    let decision = if inserted {
        Decision::Execute
    } else {
        decide(row.as_deref(), &fingerprint, now_ms, knobs)?
    };
    if decision == Decision::TakeOver {
        let taken = db.update(KEYS, &key, &mine, row.as_deref()).await?;
        assert!(
            taken,
            "one writer at a time: the row read in this transaction is still there"
        );
    }
    Ok(owner_or_answer(key, fingerprint, mine, decision))
}

/// Select-then-insert's SELECT and decision (its claim is written in a later transaction).
async fn select<S: Store>(
    db: &mut S,
    key: &str,
    fingerprint: &str,
    now_ms: u64,
    knobs: &ArticleKnobs,
) -> StoreResult<ClaimOutcome> {
    let row = db.get(KEYS, key).await?;
    let decision = decide(row.as_deref(), fingerprint, now_ms, knobs)?;
    // `mine` is written by the INSERT's transaction, which numbers the claim.
    Ok(owner_or_answer(
        key.to_string(),
        fingerprint.to_string(),
        String::new(),
        decision,
    ))
}

/// Select-then-insert's INSERT: nothing stops it, whatever happened since the SELECT (written over any row there,
/// as a table without a unique index would read back its latest row).
async fn insert_after_select<S: Store>(
    db: &mut S,
    claimed: Claimed,
    now_ms: u64,
    decision: Decision<(u16, String)>,
) -> StoreResult<ClaimOutcome> {
    db.begin().await?;
    let written: StoreResult<String> = async {
        let token = db
            .get(TOKENS, TOKEN_SEQUENCE)
            .await?
            .and_then(|seq| seq.parse::<u64>().ok())
            .unwrap_or(0)
            + 1;
        if !db
            .update(TOKENS, TOKEN_SEQUENCE, &token.to_string(), None)
            .await?
        {
            db.insert_if_absent(TOKENS, TOKEN_SEQUENCE, &token.to_string())
                .await?;
        }
        let mine = Record::InProgress {
            fingerprint: claimed.fingerprint.clone(),
            claimed_at_ms: now_ms,
            token,
        }
        .encode();
        if !db.insert_if_absent(KEYS, &claimed.key, &mine).await? {
            db.update(KEYS, &claimed.key, &mine, None).await?;
        }
        Ok(mine)
    }
    .await;
    let mine = match written {
        Ok(mine) => mine,
        Err(error) => {
            let _ = db.rollback().await;
            return Err(error);
        }
    };
    db.commit().await?;
    Ok(ClaimOutcome::Owner(Claimed { mine, ..claimed }, decision))
}

/// `protocol::decide` on a stored row.
fn decide(
    row: Option<&str>,
    fingerprint: &str,
    now_ms: u64,
    knobs: &ArticleKnobs,
) -> StoreResult<Decision<(u16, String)>> {
    let record =
        match row {
            None => None,
            Some(text) => Some(Record::decode(text).ok_or_else(|| {
                crate::handler::StoreError::Refused(format!("not a record: {text}"))
            })?),
        };
    let stored = record.as_ref().map(|record| {
        (
            record.fingerprint().to_string(),
            record.state(knobs.protocol.lease, now_ms),
        )
    });
    Ok(protocol::decide(
        &fingerprint.to_string(),
        stored.as_ref().map(|(fp, state)| (fp, state)),
    ))
}

fn owner_or_answer(
    key: String,
    fingerprint: String,
    mine: String,
    decision: Decision<(u16, String)>,
) -> ClaimOutcome {
    if decision.executes() {
        ClaimOutcome::Owner(
            Claimed {
                key,
                fingerprint,
                mine,
            },
            decision,
        )
    } else {
        ClaimOutcome::Answered(reply_for(&decision))
    }
}

/// The owner's payment and completion in one transaction; `None` when fencing refused the completion (the claim
/// was taken over: the payment rolls back). A store error rolls back too.
pub async fn complete<S: Store>(
    db: &mut S,
    request: &Request,
    claimed: &Claimed,
    knobs: &ArticleKnobs,
) -> StoreResult<Option<Reply>> {
    db.begin().await?;
    let written: StoreResult<Option<String>> = async {
        let payment_id = db.insert_effect(PAYMENTS, &request.body).await?;
        let body = payment_response(payment_id, request);
        let completed = Record::Completed {
            fingerprint: claimed.fingerprint.clone(),
            status: status::CREATED,
            body: body.clone(),
        }
        .encode();
        // Fencing (`protocol::may_complete`) as the store does it: complete only over our own claim's record.
        let fencing = knobs.protocol.fencing;
        let expected = fencing.then_some(claimed.mine.as_str());
        let written = db.update(KEYS, &claimed.key, &completed, expected).await?;
        Ok(protocol::may_complete(fencing, &true, Some(&written)).then_some(body))
    }
    .await;
    match written {
        Ok(Some(body)) => {
            db.commit().await?;
            Ok(Some(Reply::new(status::CREATED, body)))
        }
        Ok(None) => {
            db.rollback().await?;
            Ok(None)
        }
        Err(error) => {
            let _ = db.rollback().await;
            Err(error)
        }
    }
}

/// The owner failed after its claim (its open transaction is already rolled back): `on_error` decides the key's
/// fate, applied only while the key still holds this claim. Answers 500 (whatever else fails).
pub async fn fail<S: Store>(db: &mut S, claimed: &Claimed, on_error: OnError) -> Reply {
    let _ = apply_on_error(db, claimed, on_error).await;
    internal_error_reply()
}

async fn apply_on_error<S: Store>(
    db: &mut S,
    claimed: &Claimed,
    on_error: OnError,
) -> StoreResult<()> {
    if on_error == OnError::KeepInProgress {
        return Ok(());
    }
    db.begin().await?;
    if db.get(KEYS, &claimed.key).await?.as_deref() == Some(claimed.mine.as_str()) {
        let error = internal_error_reply();
        let kept = Record::Completed {
            fingerprint: claimed.fingerprint.clone(),
            status: error.status,
            body: error.body,
        };
        let written = match on_error {
            OnError::StoreResponse => db.update(KEYS, &claimed.key, &kept.encode(), None).await,
            OnError::DeleteKey => db.delete(KEYS, &claimed.key).await,
            OnError::KeepInProgress => unreachable!("returned above"),
        };
        if let Err(error) = written {
            let _ = db.rollback().await;
            return Err(error);
        }
    }
    db.commit().await
}

/// The TTL reaper: forget a completed key (a later request with it executes again); an in_progress one stays.
/// Whether it was forgotten.
pub async fn reap_completed<S: Store>(db: &mut S, key: &str) -> StoreResult<bool> {
    db.begin().await?;
    let completed = match db.get(KEYS, key).await {
        Ok(row) => matches!(
            row.as_deref().and_then(Record::decode),
            Some(Record::Completed { .. })
        ),
        Err(error) => {
            let _ = db.rollback().await;
            return Err(error);
        }
    };
    if completed {
        if let Err(error) = db.delete(KEYS, key).await {
            let _ = db.rollback().await;
            return Err(error);
        }
    }
    db.commit().await?;
    Ok(completed)
}
