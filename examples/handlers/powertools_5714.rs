//! AWS Lambda Powertools (TypeScript) #5714: orphan recovery reads the record, sees an in_progress claim older
//! than its lease (the owner looks dead), and takes it over with an unconditional SET. If the owner was only
//! slow and completed in between, the SET overwrites the COMPLETED record and the operation runs again. The
//! fix: take over with a compare-and-set on the record that was read.

use super::lease_fenced::{expired, pay_fenced};
use retrylab::handler::designs::common::*;
use retrylab::handler::{Handler, Reply, Request, Store, StoreError};

pub struct UnconditionalTakeOver;
pub struct ConditionalTakeOver;

impl Handler for UnconditionalTakeOver {
    async fn handle<S: Store>(&self, db: &mut S, request: &Request) -> Reply {
        or_500(handle(db, request, false).await)
    }
}

impl Handler for ConditionalTakeOver {
    async fn handle<S: Store>(&self, db: &mut S, request: &Request) -> Reply {
        or_500(handle(db, request, true).await)
    }
}

async fn handle<S: Store>(
    db: &mut S,
    request: &Request,
    conditional: bool,
) -> Result<Reply, StoreError> {
    let key = record_key(request);
    let now = db.now_ms().await?;
    let mine = format!("{IN_PROGRESS}:{}:{now}", request.body.len());
    if !db.insert_if_absent("keys", &key, &mine).await? {
        let Some(row) = db.get("keys", &key).await? else {
            return Ok(Reply::new(409, "{}"));
        };
        if !expired(&row, now) {
            return Ok(answer_existing(Some(&row)));
        }
        // The owner looks dead: recover the orphan.
        let expected = conditional.then_some(row.as_str());
        // Review (#5714): without `expected`, this overwrites whatever the record became since the read.
        if !db.update("keys", &key, &mine, expected).await? {
            return Ok(answer_existing(db.get("keys", &key).await?.as_deref()));
        }
    }
    // The owner completes only its own claim (fencing), in both variants: the bug is the take-over alone.
    pay_fenced(db, request, &key, &mine).await
}
