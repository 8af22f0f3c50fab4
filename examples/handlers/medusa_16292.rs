//! medusajs/medusa #16292 (https://github.com/medusajs/medusa/issues/16292): `capturePayment` creates a fresh
//! Capture row before calling the provider and sends that row's id as the provider's idempotency key. When the
//! provider call fails, the row is deleted and the capture is tried again: with a new row, so a new key. After a
//! timeout whose capture did happen (the answer was lost, not the call), the provider cannot recognise the
//! retry and captures a second time. The fix (the direction of its pull requests): reserve the capture id once
//! per payment, keep it when the call fails, and derive the provider key of every retry from it.

use retrylab::handler::designs::common::*;
use retrylab::handler::{Handler, Reply, Request, Store, StoreError};

/// Medusa's capture: a fresh Capture row (and key) per try, deleted when the provider call fails.
pub struct FreshCaptureKey;
/// The fix: one capture id reserved per payment, kept across failures.
pub struct ReservedCaptureKey;

impl Handler for FreshCaptureKey {
    async fn handle<S: Store>(&self, db: &mut S, request: &Request) -> Reply {
        or_500(capture(db, request, false).await)
    }
}

impl Handler for ReservedCaptureKey {
    async fn handle<S: Store>(&self, db: &mut S, request: &Request) -> Reply {
        or_500(capture(db, request, true).await)
    }
}

/// Capture the payment the request names; after a failed provider call, try once more inline.
async fn capture<S: Store>(
    db: &mut S,
    request: &Request,
    reserved: bool,
) -> Result<Reply, StoreError> {
    let payment = record_key(request);
    for _ in 0..2 {
        let id = capture_id(db, &payment, reserved).await?;
        match db.external_call("capture", Some(&id), &request.body).await {
            Ok(capture) => {
                let done = format!("{{\"capture\":\"{capture}\"}}");
                db.update("captures", &id, &done, None).await?;
                return Ok(Reply::new(201, done));
            }
            // Review (#16292): the row goes, and with it the key the provider saw.
            Err(_) if !reserved => {
                db.delete("captures", &id).await?;
            }
            // The row stays: the next try sends the same key.
            Err(_) => {}
        }
    }
    Ok(Reply::new(500, "{}"))
}

/// The Capture row's id, the provider's idempotency key: a new one every time (`reserved`: the payment's own,
/// made once and found again).
async fn capture_id<S: Store>(
    db: &mut S,
    payment: &str,
    reserved: bool,
) -> Result<String, StoreError> {
    db.begin().await?;
    if reserved {
        if let Some(id) = db.get("capture_of", payment).await? {
            db.commit().await?;
            return Ok(id);
        }
    }
    let number = db
        .get("sequences", "capture")
        .await?
        .map_or(1, |n| n.parse::<u64>().unwrap_or(0) + 1);
    if number == 1 {
        db.insert_if_absent("sequences", "capture", "1").await?;
    } else {
        db.update("sequences", "capture", &number.to_string(), None)
            .await?;
    }
    let id = format!("capt_{number}");
    db.insert_if_absent("captures", &id, payment).await?;
    if reserved {
        db.insert_if_absent("capture_of", payment, &id).await?;
    }
    db.commit().await?;
    Ok(id)
}
