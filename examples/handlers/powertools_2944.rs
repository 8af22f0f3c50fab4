//! AWS Lambda Powertools #2944: when the function raises, the idempotency record is deleted so that a retry
//! executes afresh. That is right before the effect commits, and wrong after: an exception raised after the
//! payment committed (here, writing an audit row fails) deletes the record, and the retry pays again. The fix:
//! delete only while the effect has not committed; after it, the record says completed and a retry replays it.

use retrylab::handler::designs::common::*;
use retrylab::handler::{Handler, Reply, Request, Store, StoreError};

pub struct DeleteAfterCommit;
pub struct DeleteBeforeCommitOnly;

impl Handler for DeleteAfterCommit {
    async fn handle<S: Store>(&self, db: &mut S, request: &Request) -> Reply {
        handle(db, request, true).await
    }
}

impl Handler for DeleteBeforeCommitOnly {
    async fn handle<S: Store>(&self, db: &mut S, request: &Request) -> Reply {
        handle(db, request, false).await
    }
}

async fn handle<S: Store>(db: &mut S, request: &Request, delete_after_commit: bool) -> Reply {
    let key = record_key(request);
    match db.insert_if_absent("keys", &key, IN_PROGRESS).await {
        Ok(true) => {}
        Ok(false) => {
            return or_500(
                db.get("keys", &key)
                    .await
                    .map(|row| answer_existing(row.as_deref())),
            )
        }
        Err(_) => return Reply::new(500, "{}"),
    }
    let payment = match pay(db, request, &key).await {
        Ok(payment) => payment,
        Err(_) => {
            // Not committed: free the key so the retry executes.
            let _ = db.delete("keys", &key).await;
            return Reply::new(500, "{}");
        }
    };
    if db
        .insert_if_absent("audit", &key, &completed(payment))
        .await
        .is_err()
    {
        if delete_after_commit {
            // Review (#2944): the payment is committed; deleting the record makes the retry pay again.
            let _ = db.delete("keys", &key).await;
        }
        return Reply::new(500, "{}");
    }
    Reply::new(201, completed(payment))
}

async fn pay<S: Store>(db: &mut S, request: &Request, key: &str) -> Result<u64, StoreError> {
    db.begin().await?;
    let payment = db.insert_effect("payments", &request.body).await?;
    db.update("keys", key, &completed(payment), None).await?;
    db.commit().await?;
    Ok(payment)
}
