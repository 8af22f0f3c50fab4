//! A stale-key sweeper that resets completed records, after sidekiq-unique-jobs #738,
//! https://github.com/mhenrixon/sidekiq-unique-jobs/issues/738 ("Job executed twice when reaper runs"): the
//! reaper frees uniqueness keys it judges orphaned, and frees one that still guards a job, which then runs
//! twice.
//!
//! As a handler: a claim records when its lease runs out, and so does the completed record (the time its claim
//! was made, as a `created_at` column would). A background sweeper frees the keys of crashed owners: it deletes
//! records whose lease ran out. The broken sweeper selects by age alone, so it also deletes **completed**
//! records; a retry that comes after the sweep (its process was paused, the clock moved) claims the key again
//! and pays again. The fixed sweeper deletes only claims still in progress whose lease ran out, in one
//! transaction with its read; the owner completes on its own claim only (fencing). A crashed owner's claim is
//! freed once its lease runs out, which at rest only time passing brings about.

use super::powertools_java_1281::expiry_ms;
use retrylab::handler::designs::common::*;
use retrylab::handler::{Handler, Reply, Request, Store, StoreError, Worker};

pub struct Claims;

/// `by_age`: deletes every record older than the lease, completed ones too (the bug).
pub struct Sweeper {
    pub by_age: bool,
}

/// A claim whose lease runs out at `expiry_ms`.
fn claim(expiry_ms: u64) -> String {
    format!("{IN_PROGRESS}@{expiry_ms}")
}

/// The completed record: the payment, and when the claim it completed ran out (the record's age).
fn done(payment: u64, expiry_ms: u64) -> String {
    format!("{{\"payment\":{payment},\"lease_until\":{expiry_ms}}}")
}

/// When the lease of a record's claim runs out, claim or completed record (what the sweeper reads).
fn lease_until(row: &str) -> Option<u64> {
    expiry_ms(row).or_else(|| {
        let rest = row.split("\"lease_until\":").nth(1)?;
        rest.trim_end_matches('}').parse().ok()
    })
}

impl Handler for Claims {
    async fn handle<S: Store>(&self, db: &mut S, request: &Request) -> Reply {
        or_500(handle(db, request).await)
    }
}

async fn handle<S: Store>(db: &mut S, request: &Request) -> Result<Reply, StoreError> {
    let key = record_key(request);
    let expiry = db.now_ms().await?.saturating_add(LEASE_MS);
    let mine = claim(expiry);
    db.begin().await?;
    if !db.insert_if_absent("keys", &key, &mine).await? {
        let row = db.get("keys", &key).await?;
        db.commit().await?;
        return Ok(answer_existing(row.as_deref()));
    }
    db.commit().await?;
    db.begin().await?;
    let payment = db.insert_effect("payments", &request.body).await?;
    let record = done(payment, expiry);
    if !db.update("keys", &key, &record, Some(&mine)).await? {
        db.rollback().await?; // our claim was swept: someone else may own the key now
        return Ok(Reply::new(409, "{}"));
    }
    db.commit().await?;
    Ok(Reply::new(201, record))
}

impl Worker for Sweeper {
    async fn run<S: Store>(&self, db: &mut S) {
        // A store error ends this run; the next one starts over.
        let _ = sweep(db, self.by_age).await;
    }
}

async fn sweep<S: Store>(db: &mut S, by_age: bool) -> Result<(), StoreError> {
    let now = db.now_ms().await?;
    db.begin().await?;
    for key in db.scan("keys").await? {
        let Some(row) = db.get("keys", &key).await? else {
            continue;
        };
        // Review (#738): age alone does not make a record orphaned; a completed one still answers retries.
        let lease = if by_age {
            lease_until(&row)
        } else {
            expiry_ms(&row)
        };
        if lease.is_some_and(|until| until <= now) {
            db.delete("keys", &key).await?;
        }
    }
    db.commit().await
}
