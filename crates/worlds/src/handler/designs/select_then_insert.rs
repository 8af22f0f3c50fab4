//! docs/src/domain.md mistake 1: look the key up with a SELECT, and claim it with an INSERT afterwards, with no unique
//! index to stop a second process that looked at the same moment (the knob model
//! `models/select-then-insert.toml`, written as a handler). Two processes both find nothing and both charge.

use super::common::*;
use crate::handler::{Handler, Reply, Request, Store, StoreError};

pub struct SelectThenInsert;

impl Handler for SelectThenInsert {
    async fn handle<S: Store>(&self, db: &mut S, request: &Request) -> Reply {
        or_500(handle(db, request).await)
    }
}

async fn handle<S: Store>(db: &mut S, request: &Request) -> Result<Reply, StoreError> {
    let key = record_key(request);
    if let Some(row) = db.get("keys", &key).await? {
        return Ok(answer_existing(Some(&row)));
    }
    // Review: nothing between the SELECT above and this INSERT stops another process doing the same. Without a
    // unique index the INSERT always goes through (here: written over whatever row is there).
    if !db.insert_if_absent("keys", &key, IN_PROGRESS).await? {
        db.update("keys", &key, IN_PROGRESS, None).await?;
    }
    db.begin().await?;
    let payment = db.insert_effect("payments", &request.body).await?;
    db.update("keys", &key, &completed(payment), None).await?;
    db.commit().await?;
    Ok(Reply::new(201, completed(payment)))
}
