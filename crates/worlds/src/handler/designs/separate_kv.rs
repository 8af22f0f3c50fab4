//! Keys in a separate key-value store (Redis), the payment in the database: the claim is an atomic SET NX PX,
//! but the completion is a second write after the database commit. A crash between the two leaves the key to
//! expire, and the retry charges again. Also Redis's SET NX then EXPIRE as two commands (a crash between them
//! leaves a key that never expires: 409 forever), next to its fix, SET with NX and PX in one command.

use super::common::*;
use crate::handler::{Handler, Reply, Request, SetMode, Store, StoreError};

/// Claim with one command (SET NX PX).
pub struct SeparateKv;
/// Claim with SET NX, then EXPIRE.
pub struct SetThenExpire;
/// `SeparateKv` with another claim TTL than `LEASE_MS` (`retrylab serve --lease-ms`: a test waits for the
/// expiry in real time).
pub struct SeparateKvTtl {
    pub ttl_ms: u64,
}

impl Handler for SeparateKv {
    async fn handle<S: Store>(&self, db: &mut S, request: &Request) -> Reply {
        or_500(handle(db, request, false, LEASE_MS).await)
    }
}

impl Handler for SeparateKvTtl {
    async fn handle<S: Store>(&self, db: &mut S, request: &Request) -> Reply {
        or_500(handle(db, request, false, self.ttl_ms).await)
    }
}

impl Handler for SetThenExpire {
    async fn handle<S: Store>(&self, db: &mut S, request: &Request) -> Reply {
        or_500(handle(db, request, true, LEASE_MS).await)
    }
}

async fn handle<S: Store>(
    db: &mut S,
    request: &Request,
    expire_apart: bool,
    ttl_ms: u64,
) -> Result<Reply, StoreError> {
    let key = record_key(request);
    let claimed = if expire_apart {
        // Review: if the process dies between these two commands, the key never expires.
        let set = db
            .kv_set(
                &key,
                IN_PROGRESS,
                SetMode {
                    if_absent: true,
                    ttl_ms: None,
                },
            )
            .await?;
        if set {
            db.kv_expire(&key, ttl_ms).await?;
        }
        set
    } else {
        db.kv_set(
            &key,
            IN_PROGRESS,
            SetMode {
                if_absent: true,
                ttl_ms: Some(ttl_ms),
            },
        )
        .await?
    };
    if !claimed {
        return Ok(answer_existing(db.kv_get(&key).await?.as_deref()));
    }
    db.begin().await?;
    let payment = db.insert_effect("payments", &request.body).await?;
    db.commit().await?;
    // Review: a crash here leaves the key in_progress until it expires; then the retry pays again.
    db.kv_set(&key, &completed(payment), SetMode::default())
        .await?;
    Ok(Reply::new(201, completed(payment)))
}
