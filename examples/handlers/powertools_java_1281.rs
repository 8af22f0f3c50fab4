//! AWS Lambda Powertools (Java) #1281, https://github.com/aws-powertools/powertools-lambda-java/issues/1281:
//! a claim records when its lease runs out in milliseconds (`in_progress_expiration`), and a later request may
//! take over a claim whose lease ran out; but the take-over compares that expiry with the current time in
//! **seconds**, so no lease ever looks run out. After a handler dies mid-operation its key is in progress for
//! ever: every retry is told 409. The fix compares milliseconds with milliseconds.
//!
//! Time at rest is what tells the two apart: the crashed owner's lease runs out only when time passes with
//! nothing else to do, and only a patient client (fairness) is still there to ask again afterwards.

use super::lease_fenced::pay_fenced;
use retrylab::handler::designs::common::*;
use retrylab::handler::{Handler, Reply, Request, Store, StoreError};

/// `seconds`: the take-over compares the expiry (ms) with the time in seconds (the bug).
pub struct InProgressExpiry {
    pub seconds: bool,
}

impl Handler for InProgressExpiry {
    async fn handle<S: Store>(&self, db: &mut S, request: &Request) -> Reply {
        or_500(handle(db, request, self.seconds).await)
    }
}

/// A claim whose lease runs out at `expiry_ms`.
fn claim(expiry_ms: u64) -> String {
    format!("{IN_PROGRESS}@{expiry_ms}")
}

/// When a claim's lease runs out (ms), if `row` is a claim: the world's `expiries` declaration.
pub fn expiry_ms(row: &str) -> Option<u64> {
    row.strip_prefix(IN_PROGRESS)?
        .strip_prefix('@')?
        .parse()
        .ok()
}

/// An unfinished record, whatever its lease (`no-stuck-key`): a claim only a take-over can finish.
pub fn in_progress(row: &str, _now_ms: u64) -> bool {
    row.starts_with(IN_PROGRESS)
}

async fn handle<S: Store>(
    db: &mut S,
    request: &Request,
    seconds: bool,
) -> Result<Reply, StoreError> {
    let key = record_key(request);
    let now_ms = db.now_ms().await?;
    let mine = claim(now_ms.saturating_add(LEASE_MS));
    db.begin().await?;
    if !db.insert_if_absent("keys", &key, &mine).await? {
        let row = db.get("keys", &key).await?;
        // Review (#1281): `now` must be in the expiry's unit; in seconds every lease looks far in the future.
        let now = if seconds { now_ms / 1000 } else { now_ms };
        let ran_out = row
            .as_deref()
            .and_then(expiry_ms)
            .is_some_and(|expiry| expiry <= now);
        let taken = match &row {
            Some(row) if ran_out => db.update("keys", &key, &mine, Some(row)).await?,
            _ => false,
        };
        if !taken {
            db.commit().await?;
            return Ok(answer_existing(row.as_deref()));
        }
    }
    db.commit().await?;
    pay_fenced(db, request, &key, &mine).await
}
