//! The designs `retrylab serve` runs, by name: each is a handler of `crate::handler::designs`, the same code the
//! checker explores (the catalogue, the knob twins), so a design found broken there is the one served here.

use crate::handler::designs::{
    Article, ArticleKnobs, GlobalKeyScope, IgnoresKey, SelectThenInsert, SeparateKvTtl,
};
use crate::handler::drive::run_to_reply;
use crate::handler::{Reply, Request, Store};
use crate::protocol::{Claim, Lease};

/// A design served over HTTP.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Design {
    /// The article: unique index, claim and payment in two transactions, normalised fingerprint, no lease.
    Article,
    /// The article with a lease and fencing (`models/lease-fenced.toml`'s design).
    LeaseFenced,
    /// SELECT, then INSERT, no unique index (DOMAIN.md mistake 1).
    SelectThenInsert,
    /// The server mints its own key per request (omniclaw #72).
    IgnoresKey,
    /// Keys scoped globally, not per client (DOMAIN.md mistake 3).
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
