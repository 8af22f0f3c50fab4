//! brandur's rocket-rides: the request handler claims the key (the record keeps the request's body, so the
//! work can be finished without the request), charges at the provider, and records the charge; a background
//! completer lists the records, and for each one left unfinished (its handler crashed, or is only slow) re-runs
//! the provider call and records it. Without a provider key derived from the incoming idempotency key, the
//! completer's charge and the handler's are two charges for one ride; with one, the provider answers the
//! repeat with the first charge.

use retrylab::handler::designs::common::*;
use retrylab::handler::{Handler, Reply, Request, Store, StoreError, Worker};

pub const RIDES: &str = "rides";

/// The request handler; `derived`: its provider call carries a key derived from the request's key.
pub struct Ride {
    pub derived: bool,
}

/// The background completer, with the same choice.
pub struct Completer {
    pub derived: bool,
}

/// An unfinished ride's record: in progress, and the body to charge.
fn claim_of(body: &str) -> String {
    format!("{IN_PROGRESS}|{body}")
}

/// The provider key for the ride recorded under `key` (the request's idempotency key, scoped): the handler
/// and the completer compute the same one.
fn provider_key(key: &str, derived: bool) -> Option<String> {
    derived.then(|| format!("charge/{key}"))
}

/// An unfinished ride (the `no-stuck-key` declaration).
pub fn in_progress(value: &str, _now_ms: u64) -> bool {
    value.starts_with(IN_PROGRESS)
}

impl Handler for Ride {
    async fn handle<S: Store>(&self, db: &mut S, request: &Request) -> Reply {
        or_500(handle(db, request, self.derived).await)
    }
}

async fn handle<S: Store>(
    db: &mut S,
    request: &Request,
    derived: bool,
) -> Result<Reply, StoreError> {
    let key = record_key(request);
    let claim = claim_of(&request.body);
    db.begin().await?;
    let claimed = db.insert_if_absent(RIDES, &key, &claim).await?;
    let row = db.get(RIDES, &key).await?;
    db.commit().await?;
    if !claimed {
        return Ok(answer_existing(row.as_deref()));
    }
    // Review: without a derived key, nothing tells the provider that the completer's call is this one again.
    let charge = db
        .provider_charge(provider_key(&key, derived).as_deref(), &request.body)
        .await?;
    record(db, &key, &claim, &charge).await
}

/// Record the charge on our own claim (a compare-and-set); if the completer recorded first, answer its record.
async fn record<S: Store>(
    db: &mut S,
    key: &str,
    claim: &str,
    charge: &str,
) -> Result<Reply, StoreError> {
    let done = format!("{{\"charge\":\"{charge}\"}}");
    if db.update(RIDES, key, &done, Some(claim)).await? {
        return Ok(Reply::new(201, done));
    }
    Ok(answer_existing(db.get(RIDES, key).await?.as_deref()))
}

impl Worker for Completer {
    async fn run<S: Store>(&self, db: &mut S) {
        // A store error ends this run; the next one starts over.
        let _ = complete(db, self.derived).await;
    }
}

async fn complete<S: Store>(db: &mut S, derived: bool) -> Result<(), StoreError> {
    for key in db.scan(RIDES).await? {
        let Some(row) = db.get(RIDES, &key).await? else {
            continue;
        };
        let Some(body) = row.strip_prefix(&format!("{IN_PROGRESS}|")) else {
            continue;
        };
        let charge = db
            .provider_charge(provider_key(&key, derived).as_deref(), body)
            .await?;
        record(db, &key, &row, &charge).await?;
    }
    Ok(())
}
