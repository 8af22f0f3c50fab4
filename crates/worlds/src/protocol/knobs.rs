//! The protocol's variant knobs. Each is an independent choice; a model or a real store composes them.

use serde::{Deserialize, Serialize};

/// How the server claims a key.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Claim {
    /// `INSERT OR IGNORE` on a unique (client, key) index, then read the row back: one winner, atomically.
    UniqueIndex,
    /// `SELECT`, and `INSERT` when nothing was found, with no unique index (docs/src/domain.md mistake 1): two requests
    /// can both see nothing and both insert.
    SelectThenInsert,
}

/// How long an in_progress record protects its key.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Lease {
    /// The record stays in_progress until its owner completes it: a crash after the claim locks the key forever.
    None,
    /// An in_progress record older than this may be taken over by a new request for the key.
    Ms(u64),
}

impl Lease {
    pub fn is_some(self) -> bool {
        !matches!(self, Lease::None)
    }
}

/// What the fingerprint covers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum FingerprintPolicy {
    /// SHA-256 of the JSON body with keys sorted at every depth: field order does not matter.
    Normalized,
    /// SHA-256 of the body's bytes as sent: a reordered body looks changed.
    Raw,
    /// No fingerprint: a changed body under a reused key is never noticed.
    None,
}

/// How a client chooses the key of each attempt.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum KeyPolicy {
    /// One key per logical operation, made before the retry loop and kept across attempts.
    PerOperation,
    /// A fresh key for every attempt (docs/src/domain.md mistake 2): no protection at all.
    PerAttempt,
}

/// The server-side knobs of the protocol.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ProtocolConfig {
    pub claim: Claim,
    pub lease: Lease,
    /// Completion commits only while the completing request still holds the claim (its token is the record's).
    pub fencing: bool,
    pub fingerprint: FingerprintPolicy,
}

impl ProtocolConfig {
    /// The article's design: unique index, no lease, no fencing, normalised fingerprint.
    pub const ARTICLE: ProtocolConfig = ProtocolConfig {
        claim: Claim::UniqueIndex,
        lease: Lease::None,
        fencing: false,
        fingerprint: FingerprintPolicy::Normalized,
    };
}

/// Where the uniqueness of a key is scoped.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum KeyScope {
    /// Primary key (client, key): the article's design.
    PerClient,
    /// Primary key (key) alone (docs/src/domain.md mistake 3): two clients that pick the same key share a record.
    Global,
}

/// Where the idempotency records live.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum KeyStore {
    /// In the same database as the effect: the payment and the completion commit in one transaction.
    SameDatabase,
    /// In a separate key-value store (Redis-like): the claim is an atomic SET NX, but the completion is a second
    /// write after the database commit, which a crash can split from it.
    SeparateKv,
}

/// A call to an external provider (a payment processor) inside the operation, which no database rolls back.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Provider {
    None,
    /// Every call charges.
    NotIdempotent,
    /// The call carries a key derived from the incoming one; the provider charges once per key.
    IdempotentDerivedKey,
}

/// What the handler does with the key when it fails (a downstream timeout, an exception).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum OnError {
    /// Store the 500 as the key's final response (docs/src/domain.md mistake 4; Stripe stores 5xx too).
    StoreResponse,
    /// Delete the key so a retry executes afresh (AWS Lambda Powertools).
    DeleteKey,
    /// Leave the record in_progress (only a lease frees it).
    KeepInProgress,
}
