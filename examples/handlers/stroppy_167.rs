//! stroppy-io/stroppy #167 (https://github.com/stroppy-io/stroppy/issues/167): a commit's error goes back into the
//! retry loop, which runs the whole transaction body again. A commit that errors is ambiguous: when it did
//! commit and only its answer was lost, the second run writes everything twice. Here the body pays and records
//! the key; the check for an earlier payment ran once, before the loop. The fix: the run that is retried lets
//! the unique key decide inside its own transaction (a record already there: roll back, answer it).

use retrylab::handler::designs::common::*;
use retrylab::handler::{Handler, Reply, Request, Store, StoreError};

/// Retries the transaction body on a commit error, ignoring that the key is already recorded.
pub struct RetryCommitBlindly;
/// The same loop; the retried transaction rolls back when the key is already recorded.
pub struct RetryCommitChecked;

impl Handler for RetryCommitBlindly {
    async fn handle<S: Store>(&self, db: &mut S, request: &Request) -> Reply {
        or_500(pay(db, request, false).await)
    }
}

impl Handler for RetryCommitChecked {
    async fn handle<S: Store>(&self, db: &mut S, request: &Request) -> Reply {
        or_500(pay(db, request, true).await)
    }
}

async fn pay<S: Store>(db: &mut S, request: &Request, checked: bool) -> Result<Reply, StoreError> {
    let key = record_key(request);
    if let Some(done) = db.get("keys", &key).await? {
        return Ok(Reply::new(200, done));
    }
    for _ in 0..2 {
        db.begin().await?;
        let payment = db.insert_effect("payments", &request.body).await?;
        let recorded = db
            .insert_if_absent("keys", &key, &completed(payment))
            .await?;
        // Review (#167): without this, a run after a commit whose answer was lost pays again.
        if checked && !recorded {
            db.rollback().await?;
            return Ok(answer_existing(db.get("keys", &key).await?.as_deref()));
        }
        if db.commit().await.is_ok() {
            return Ok(Reply::new(201, completed(payment)));
        }
    }
    Ok(Reply::new(500, "{}"))
}
