//! The article's design with a lease and fencing: a claim records its token and time; a claim older than the
//! lease may be taken over; the completion is a compare-and-set on the claim the owner made, so a stale owner
//! (paused past its lease, or crashed and taken over) cannot complete, and its payment rolls back with it.

use retrylab::handler::designs::common::*;
use retrylab::handler::{Handler, Reply, Request, Store, StoreError};

pub struct LeaseFenced;

impl Handler for LeaseFenced {
    async fn handle<S: Store>(&self, db: &mut S, request: &Request) -> Reply {
        or_500(handle(db, request, None).await)
    }
}

/// What a claim found: our claim (its record value), or someone else's record.
pub enum Claim {
    Mine(String),
    Theirs(Option<String>),
}

/// Claim the key, or take over a claim older than the lease; in one transaction.
pub async fn claim<S: Store>(db: &mut S, key: &str) -> Result<Claim, StoreError> {
    let now = db.now_ms().await?;
    db.begin().await?;
    let token = db
        .get("tokens", "seq")
        .await?
        .map_or(1, |seq| seq.parse::<u64>().unwrap_or(0) + 1);
    if token == 1 {
        db.insert_if_absent("tokens", "seq", "1").await?;
    } else {
        db.update("tokens", "seq", &token.to_string(), None).await?;
    }
    let mine = format!("{IN_PROGRESS}:{token}:{now}");
    let claim = if db.insert_if_absent("keys", key, &mine).await? {
        Claim::Mine(mine)
    } else {
        match db.get("keys", key).await? {
            Some(row) if expired(&row, now) => {
                db.update("keys", key, &mine, Some(&row)).await?;
                Claim::Mine(mine)
            }
            other => Claim::Theirs(other),
        }
    };
    db.commit().await?;
    Ok(claim)
}

/// An in_progress record whose claim is older than the lease.
pub fn expired(row: &str, now_ms: u64) -> bool {
    claimed_at(row).is_some_and(|at| now_ms.saturating_sub(at) >= LEASE_MS)
}

/// When an in_progress claim was made (the time it records), if `row` is one.
fn claimed_at(row: &str) -> Option<u64> {
    let at = row
        .strip_prefix(IN_PROGRESS)
        .and_then(|rest| rest.rsplit(':').next())?;
    at.parse::<u64>().ok()
}

/// When an in_progress claim's lease runs out (the world's `expiries` declaration): `expired` from then on.
pub fn lease_expiry(row: &str) -> Option<u64> {
    claimed_at(row).map(|at| at.saturating_add(LEASE_MS))
}

/// The lease-fenced handler, with a provider call before the payment (`None`: no provider).
pub async fn handle<S: Store>(
    db: &mut S,
    request: &Request,
    provider_key: Option<Option<String>>,
) -> Result<Reply, StoreError> {
    let key = record_key(request);
    let mine = match claim(db, &key).await? {
        Claim::Mine(mine) => mine,
        Claim::Theirs(row) => return Ok(answer_existing(row.as_deref())),
    };
    if let Some(provider_key) = provider_key {
        db.provider_charge(provider_key.as_deref(), &request.body)
            .await?;
    }
    pay_fenced(db, request, &key, &mine).await
}

/// The payment and the completion in one transaction, the completion a compare-and-set on our own claim
/// (fencing): if the claim was taken over meanwhile, our payment rolls back and the client hears 409.
pub async fn pay_fenced<S: Store>(
    db: &mut S,
    request: &Request,
    key: &str,
    mine: &str,
) -> Result<Reply, StoreError> {
    db.begin().await?;
    let payment = db.insert_effect("payments", &request.body).await?;
    if !db
        .update("keys", key, &completed(payment), Some(mine))
        .await?
    {
        db.rollback().await?;
        return Ok(Reply::new(409, "{}"));
    }
    db.commit().await?;
    Ok(Reply::new(201, completed(payment)))
}
