//! The article's design: claim the key with INSERT OR IGNORE in its own transaction, then write the payment and
//! the completion in a second one. Never charges twice; but a crash after the claim leaves the key in_progress
//! forever (no lease): every retry gets 409.

use super::common::*;
use retrylab::handler::{Handler, Reply, Request, Store, StoreError};

pub struct Article;

impl Handler for Article {
    async fn handle<S: Store>(&self, db: &mut S, request: &Request) -> Reply {
        or_500(handle(db, request).await)
    }
}

async fn handle<S: Store>(db: &mut S, request: &Request) -> Result<Reply, StoreError> {
    let key = record_key(request);
    db.begin().await?;
    let claimed = db.insert_if_absent("keys", &key, IN_PROGRESS).await?;
    let row = db.get("keys", &key).await?;
    db.commit().await?;
    if !claimed {
        return Ok(answer_existing(row.as_deref()));
    }
    db.begin().await?;
    let payment = db.insert_effect("payments", &request.body).await?;
    db.update("keys", &key, &completed(payment), None).await?;
    db.commit().await?;
    Ok(Reply::new(201, completed(payment)))
}
