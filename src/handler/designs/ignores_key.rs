//! The server mints its own idempotency key per request and drops the client's (omniclaw #72): the article's
//! design runs underneath, so every request is a first request, and a retry after a lost response pays again.
//! The minted key comes from a counter row (not a random number), so the handler stays deterministic and the
//! checker can explore it like any other.

use super::article::Article;
use crate::handler::{Handler, Reply, Request, Store, StoreResult};

/// Mint a key per request, then run `Article` under it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct IgnoresKey;

const MINTED: &str = "minted";
const MINTED_SEQUENCE: &str = "seq";

impl Handler for IgnoresKey {
    async fn handle<S: Store>(&self, db: &mut S, request: &Request) -> Reply {
        let minted = match mint(db).await {
            Ok(minted) => minted,
            Err(_) => return super::article::internal_error_reply(),
        };
        // Review: the client's key is dropped here; nothing ties this request to its earlier attempts.
        let request = Request {
            key: format!("server-{minted}"),
            ..request.clone()
        };
        Article.handle(db, &request).await
    }
}

/// The next number of the counter row, in its own transaction.
async fn mint<S: Store>(db: &mut S) -> StoreResult<u64> {
    db.begin().await?;
    let next = db
        .get(MINTED, MINTED_SEQUENCE)
        .await?
        .and_then(|seq| seq.parse::<u64>().ok())
        .unwrap_or(0)
        + 1;
    if !db
        .update(MINTED, MINTED_SEQUENCE, &next.to_string(), None)
        .await?
    {
        db.insert_if_absent(MINTED, MINTED_SEQUENCE, &next.to_string())
            .await?;
    }
    db.commit().await?;
    Ok(next)
}
