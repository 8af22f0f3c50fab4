//! What the handlers share: the record key, the record values, and a 500 for a store error.

use crate::handler::{Reply, Request, StoreError};

/// The idempotency record's key: scoped per client (docs/src/domain.md mistake 3 is a global scope).
pub fn record_key(request: &Request) -> String {
    format!("{}/{}", request.client, request.key)
}

pub const IN_PROGRESS: &str = "in_progress";

/// The completed record: the stored response's body.
pub fn completed(payment: u64) -> String {
    format!("{{\"payment\":{payment}}}")
}

/// A store error becomes a retryable 500.
pub fn or_500(result: Result<Reply, StoreError>) -> Reply {
    result.unwrap_or_else(|_| Reply::new(500, "{}"))
}

/// How a record that is not ours answers: 409 while in progress, the stored response replayed once completed.
pub fn answer_existing(row: Option<&str>) -> Reply {
    match row {
        Some(done) if done.starts_with('{') => Reply::new(200, done),
        _ => Reply::new(409, "{}"),
    }
}

/// How long a claim protects its key before another process may take it over.
pub const LEASE_MS: u64 = 30_000;
