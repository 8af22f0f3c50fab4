//! The designs `retrylab serve` runs, by name: each is a handler of `crate::handler::designs`, the same code the
//! checker explores (the catalogue, the knob twins), so a design found broken there is the one served here.

use crate::handler::designs::{
    Article, ArticleKnobs, GlobalKeyScope, IgnoresKey, SelectThenInsert, SeparateKvTtl,
};
use crate::handler::{Reply, Request, Store};
use crate::protocol::{Claim, Lease};
use crate::runner::run_to_reply;

/// A design served over HTTP.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Design {
    /// The article: unique index, claim and payment in two transactions, normalised fingerprint, no lease.
    Article,
    /// The article with a lease and fencing (`models/lease-fenced.toml`'s design).
    LeaseFenced,
    /// SELECT, then INSERT, no unique index (docs/src/domain.md mistake 1).
    SelectThenInsert,
    /// The server mints its own key per request (omniclaw #72).
    IgnoresKey,
    /// Keys scoped globally, not per client (docs/src/domain.md mistake 3).
    GlobalKeyScope,
    /// The fingerprint hashes the raw body bytes.
    RawFingerprint,
    /// Keys in a separate key-value store (Redis), the payment in the database.
    SeparateKv,
}

impl Design {
    pub const ALL: [Design; 7] = [
        Design::Article,
        Design::LeaseFenced,
        Design::SelectThenInsert,
        Design::IgnoresKey,
        Design::GlobalKeyScope,
        Design::RawFingerprint,
        Design::SeparateKv,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Design::Article => "article",
            Design::LeaseFenced => "lease-fenced",
            Design::SelectThenInsert => "select-then-insert",
            Design::IgnoresKey => "ignores-key",
            Design::GlobalKeyScope => "global-key-scope",
            Design::RawFingerprint => "raw-fingerprint",
            Design::SeparateKv => "separate-kv",
        }
    }

    /// The design named `name`, or an error listing the valid names.
    pub fn from_name(name: &str) -> Result<Design, String> {
        Design::ALL
            .into_iter()
            .find(|design| design.name() == name)
            .ok_or_else(|| {
                let names: Vec<&str> = Design::ALL.iter().map(|d| d.name()).collect();
                format!(
                    "unknown design '{name}'; expected one of {}",
                    names.join(", ")
                )
            })
    }

    /// Whether the model checker finds no duplicate effect in it (the probe should pass).
    pub fn is_correct(self) -> bool {
        matches!(self, Design::Article | Design::LeaseFenced)
    }

    /// Whether its keys live in the key-value store (`--keys redis://...` applies to it).
    pub fn uses_key_value_store(self) -> bool {
        self == Design::SeparateKv
    }

    /// Run the design's handler to its reply on a store whose calls complete at once. `lease_ms` is the lease of
    /// lease-fenced and the claim TTL of separate-kv.
    pub fn reply<S: Store>(self, store: &mut S, request: &Request, lease_ms: u64) -> Reply {
        match self {
            Design::Article => run_to_reply(&Article, store, request),
            Design::LeaseFenced => {
                let knobs = ArticleKnobs::claim_lease_fencing(
                    Claim::UniqueIndex,
                    Lease::Ms(lease_ms),
                    true,
                );
                run_to_reply(&knobs, store, request)
            }
            Design::SelectThenInsert => run_to_reply(&SelectThenInsert, store, request),
            Design::IgnoresKey => run_to_reply(&IgnoresKey, store, request),
            Design::GlobalKeyScope => run_to_reply(&GlobalKeyScope, store, request),
            Design::RawFingerprint => run_to_reply(&ArticleKnobs::RAW_FINGERPRINT, store, request),
            Design::SeparateKv => run_to_reply(&SeparateKvTtl { ttl_ms: lease_ms }, store, request),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::handler::Clock;
    use crate::stack::connection::{Connection, Database, Keys};

    /// A fresh SQLite store at 1 s past the epoch, its clock, and the directory that holds it.
    fn store() -> (Connection, Clock, tempfile::TempDir) {
        let dir = tempfile::tempdir().unwrap();
        let database = Database::Sqlite(dir.path().join("payments.sqlite"));
        database.create().unwrap();
        let clock = Clock::default();
        clock.set_ms(1_000);
        let connection =
            Connection::open(&database, &Keys::SameDatabase, clock.clone(), None).unwrap();
        (connection, clock, dir)
    }

    fn send(design: Design, store: &mut Connection, body: &str, lease_ms: u64) -> Reply {
        store.new_request();
        let request = Request::new("c1", "k1", body);
        design.reply(store, &request, lease_ms)
    }

    #[test]
    fn two_different_bodies_that_are_not_json_are_not_the_same_request() {
        let (mut store, _clock, _dir) = store();
        let first = send(Design::Article, &mut store, "amount=500", 300);
        assert_eq!(first.status, 201);
        let changed = send(Design::Article, &mut store, "amount=900", 300);
        assert_eq!(
            changed.status, 422,
            "another body under the key: {changed:?}"
        );
        // The twin: the same bytes again are the same request, replayed.
        let again = send(Design::Article, &mut store, "amount=500", 300);
        assert_eq!((again.status, again.body), (200, first.body));
    }

    /// Claims the key `k` for `.0` ms if it is free: 201 claimed, 409 held by an earlier claim.
    struct Claim(u64);

    impl crate::handler::Handler for Claim {
        async fn handle<S: Store>(&self, db: &mut S, _request: &Request) -> Reply {
            let mode = crate::handler::SetMode {
                if_absent: true,
                ttl_ms: Some(self.0),
            };
            match db.kv_set("k", "in_progress", mode).await {
                Ok(true) => Reply::new(201, "{}"),
                Ok(false) => Reply::new(409, "{}"),
                Err(_) => Reply::new(500, "{}"),
            }
        }
    }

    #[test]
    fn a_claim_ttl_too_long_to_add_never_expires_rather_than_at_once() {
        // separate-kv's claim with `serve --lease-ms 18446744073709551615` once wrapped to a time in the past:
        // the claim expired at once and a concurrent request with the key paid again. The twin: a TTL that
        // does run out frees the key, so the test tells "never expires" from "expired".
        for (ttl_ms, second) in [(u64::MAX, 409), (i64::MAX as u64, 409), (5, 201)] {
            let (mut store, clock, _dir) = store();
            let request = Request::new("c1", "k1", "{}");
            assert_eq!(
                run_to_reply(&Claim(ttl_ms), &mut store, &request).status,
                201
            );
            clock.set_ms(1_000 + 60_000);
            let again = run_to_reply(&Claim(ttl_ms), &mut store, &request);
            assert_eq!(again.status, second, "TTL {ttl_ms} ms, a minute later");
        }
    }
}
