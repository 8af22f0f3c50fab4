//! idempot-js #182 (https://github.com/idempot-dev/idempot-js/issues/182), fixed by #187: the Redis store claimed a
//! key with a plain SETEX after looking it up, so two requests racing on one key both found it absent, both
//! "claimed" it (the second write silently replacing the first's in-flight record), and both ran the payment.
//! The fix claims with SET NX PX: the loser reads the record and answers 409 (or replays it). The timeline
//! shows the overwrite itself: `kv-set c0/k0 = in_progress PX 30000 (replaces in_progress)`.

use retrylab::handler::designs::common::*;
use retrylab::handler::{Handler, Reply, Request, SetMode, Store, StoreError};

/// Look the key up, then claim it with a plain SET PX (`nx: false`, the report) or SET NX PX (the fix).
pub struct LookupThenClaim {
    pub nx: bool,
}

impl Handler for LookupThenClaim {
    async fn handle<S: Store>(&self, db: &mut S, request: &Request) -> Reply {
        or_500(handle(db, request, self.nx).await)
    }
}

async fn handle<S: Store>(db: &mut S, request: &Request, nx: bool) -> Result<Reply, StoreError> {
    let key = record_key(request);
    if let Some(found) = db.kv_get(&key).await? {
        return Ok(answer_existing(Some(&found)));
    }
    let claim = SetMode {
        if_absent: nx,
        ttl_ms: Some(LEASE_MS),
    };
    // Review (the report): without NX this write always succeeds, whoever claimed the key meanwhile.
    if !db.kv_set(&key, IN_PROGRESS, claim).await? {
        return Ok(answer_existing(db.kv_get(&key).await?.as_deref()));
    }
    db.begin().await?;
    let payment = db.insert_effect("payments", &request.body).await?;
    db.commit().await?;
    db.kv_set(&key, &completed(payment), SetMode::default())
        .await?;
    Ok(Reply::new(201, completed(payment)))
}
