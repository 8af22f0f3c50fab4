//! docs/src/domain.md mistake 3: the key's scope is global, not per client. The article's design runs underneath with
//! every request's client erased, so a second client that happens to send the same key gets the first client's
//! stored response (another customer's payment) instead of its own.

use super::article::Article;
use crate::handler::{Handler, Reply, Request, Store};

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct GlobalKeyScope;

impl Handler for GlobalKeyScope {
    async fn handle<S: Store>(&self, db: &mut S, request: &Request) -> Reply {
        // Review: the record key is built from the key alone.
        let request = Request {
            client: String::new(),
            ..request.clone()
        };
        Article.handle(db, &request).await
    }
}
