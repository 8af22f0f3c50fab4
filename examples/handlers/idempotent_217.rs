//! arun0009/idempotent PR #217 (https://github.com/arun0009/idempotent/pull/217): the library stored a
//! response under the client's idempotency key alone, so "if User 1 and User 2 used the same idempotency key,
//! User 2 could receive User 1's stored response"; the fix combines a caller scope with the key. Written with
//! the handler API alone: the broken design is the article's under a key scope that forgets the client
//! (`designs::GlobalKeyScope`), the fixed one the article's (its record key is `client/key`).
//!
//! The fixed list sees it only sideways: the payment is made once and the replay is consistent, and
//! `no-lost-effect` breaks because the second client was told a success with no payment of its own. What the
//! bug is, another customer's payment handed out, the design states as its own property, over the ledger and
//! the replies:
//! `no-cross-client-reply` (an `always`: every success a client is told names a payment made for that client),
//! and the scenario that puts it to the test, `same-key-both-answered` (a `sometimes`: both clients, who send
//! the same key `k0`, were told a success).

use retrylab::handler::Seen;

pub use retrylab::handler::designs::{Article as CallerScoped, GlobalKeyScope as KeyOnly};

pub const CROSS: &str = "no-cross-client-reply";
pub const BOTH: &str = "same-key-both-answered";

/// The payment id a reply names (the article's replies say `payment_id`).
fn payment_of(body: &str) -> Option<u64> {
    let parsed: serde_json::Value = serde_json::from_str(body).ok()?;
    parsed.get("payment_id")?.as_u64()
}

/// Every success a client was told names a payment made for an operation of that same client.
pub fn no_cross_client_reply(seen: &Seen) -> bool {
    seen.replies().all(|(op, reply)| {
        payment_of(&reply.body).is_none_or(|id| {
            let effect = seen.effect("payments", id);
            effect.is_some_and(|effect| effect.op.is_some_and(|made| made.client == op.client))
        })
    })
}

/// Both clients' first operations (the same key) were answered with a success.
pub fn same_key_both_answered(seen: &Seen) -> bool {
    seen.replies().filter(|(op, _)| op.op == 0).count() == 2
}
