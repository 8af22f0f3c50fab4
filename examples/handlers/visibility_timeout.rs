//! A queue consumer that outlives its message's visibility timeout, laravel/framework #19969,
//! https://github.com/laravel/framework/issues/19969: a worker receives a job, which hides the message for the
//! visibility timeout; a worker slower than that (there, a sleep added to the worker's own timeout) is still
//! running when the message shows again, and a second worker runs the same job.
//!
//! As a handler: a request is a delivery of the message (the client is the queue: it redelivers after a
//! timeout, and a duplicated request is a second delivery). Receiving hides the message: a key-value entry with
//! the visibility timeout as its TTL; a delivery that finds it hidden is told 409 (delivered again later). The
//! consumer does the work and marks the message done. A pause past the visibility timeout lets a second
//! consumer in while the first is still working: without a check on the work itself, two payments. The fix
//! (an inbox): the done mark is inserted in the payment's transaction, only if absent, so the slower consumer's
//! payment rolls back. A consumer that crashes holding the message leaves it hidden until the TTL runs out:
//! only time passing at rest, and a queue that keeps delivering (fairness), get the job done.

use retrylab::handler::designs::common::*;
use retrylab::handler::{Handler, Reply, Request, SetMode, Store, StoreError};

/// How long a received message stays hidden (shorter than the world's pause, as in the report).
pub const VISIBILITY_MS: u64 = 30_000;

/// `inbox`: the done mark is a unique row inserted with the payment (the fix).
pub struct Consumer {
    pub inbox: bool,
}

impl Handler for Consumer {
    async fn handle<S: Store>(&self, db: &mut S, request: &Request) -> Reply {
        or_500(handle(db, request, self.inbox).await)
    }
}

async fn handle<S: Store>(db: &mut S, request: &Request, inbox: bool) -> Result<Reply, StoreError> {
    let key = record_key(request);
    if let Some(done) = db.get("done", &key).await? {
        return Ok(Reply::new(200, done)); // the message was processed: acknowledge it again
    }
    let hide = SetMode {
        if_absent: true,
        ttl_ms: Some(VISIBILITY_MS),
    };
    if !db
        .kv_set(&format!("hidden/{key}"), "received", hide)
        .await?
    {
        return Ok(Reply::new(409, "{}")); // another consumer has it
    }
    db.begin().await?;
    // Review (#19969): the visibility timeout is the only guard; a consumer slower than it is not alone.
    if inbox && !db.insert_if_absent("done", &key, IN_PROGRESS).await? {
        db.rollback().await?;
        return Ok(answer_existing(db.get("done", &key).await?.as_deref()));
    }
    let payment = db.insert_effect("payments", &request.body).await?;
    // With the inbox our mark is there already; without it, the mark is written whoever wrote one first.
    let inserted = !inbox
        && db
            .insert_if_absent("done", &key, &completed(payment))
            .await?;
    if !inserted {
        db.update("done", &key, &completed(payment), None).await?;
    }
    db.commit().await?;
    db.kv_del(&format!("hidden/{key}")).await?;
    Ok(Reply::new(201, completed(payment)))
}
