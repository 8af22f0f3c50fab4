//! A provider call (a card charge) inside the operation, which no database transaction rolls back. Without a key
//! derived from the incoming one, a retry after a crash between the charge and the commit charges again; with
//! one (rocket-rides' `idempotency_key` on the charge), the provider answers the repeat with the first charge.

use super::lease_fenced::handle;
use retrylab::handler::designs::common::*;
use retrylab::handler::{Handler, Reply, Request, Store};

pub struct ProviderWithoutKey;
pub struct ProviderDerivedKey;

impl Handler for ProviderWithoutKey {
    async fn handle<S: Store>(&self, db: &mut S, request: &Request) -> Reply {
        or_500(handle(db, request, Some(None)).await)
    }
}

impl Handler for ProviderDerivedKey {
    async fn handle<S: Store>(&self, db: &mut S, request: &Request) -> Reply {
        let derived = format!("charge/{}", record_key(request));
        or_500(handle(db, request, Some(Some(derived))).await)
    }
}
