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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::{Model, Verdict};
    use crate::handler::{HandlerFaults, HandlerWorld};

    /// The checker explores it like any handler: one lost response and the retry pays again; the article's
    /// design in the same world does not (the twin), and the lost response was reached in both.
    #[test]
    fn a_lost_response_makes_the_retry_pay_again_unlike_the_article() {
        let faults = HandlerFaults {
            drop_responses: 1,
            ..HandlerFaults::default()
        };
        let body = "{\"amount\":500}";
        let broken = HandlerWorld::new(IgnoresKey, 1, body).faults(faults);
        let report = broken.checker().bfs();
        assert!(report.complete);
        assert_eq!(report.verdict("no-duplicate-effect"), Verdict::Violated);
        let twin = HandlerWorld::new(Article, 1, body)
            .faults(faults)
            .checker()
            .bfs();
        assert_eq!(twin.verdict("no-duplicate-effect"), Verdict::Holds);
        assert!(twin.reached("lost-response") && report.reached("lost-response"));
    }
}
