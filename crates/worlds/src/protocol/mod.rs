//! The idempotency-key protocol as pure logic, written once.
//!
//! Everything that decides what a server does with a request lives here: the body fingerprint, the decision given
//! the stored record, the lease and fencing rules, the client's key policy, every protocol knob, and the queue
//! dedup rules (`queue`). The built-in worlds (`crate::builtin`), the real stores (`crate::real`), the experiments
//! and the docs all call these functions; none of them re-implements a decision.
//! No I/O, no threads, no clock: time is passed in.

mod decision;
mod fingerprint;
mod knobs;
pub mod queue;

pub use decision::{decide, may_complete, Decision, RecordState};
pub use fingerprint::{canonical_json, fingerprint, Fingerprint};
pub use knobs::{
    Claim, FingerprintPolicy, KeyPolicy, KeyScope, KeyStore, Lease, OnError, ProtocolConfig,
    Provider,
};
pub use queue::{DedupKey, Inbox, Producer, ProducerDedup, QueueConfig};

/// HTTP status codes the protocol answers with.
pub mod status {
    /// First execution: the effect happened now.
    pub const CREATED: u16 = 201;
    /// Replay of the stored response of a completed key.
    pub const OK_REPLAY: u16 = 200;
    /// The original request for this key is still in flight.
    pub const CONFLICT_IN_PROGRESS: u16 = 409;
    /// The key was used before with a different body.
    pub const UNPROCESSABLE_BODY_MISMATCH: u16 = 422;
    /// The handler failed (a downstream timeout, an exception): retryable.
    pub const INTERNAL_ERROR: u16 = 500;

    /// A success the client may treat as "the operation happened".
    pub fn is_success(code: u16) -> bool {
        code == CREATED || code == OK_REPLAY
    }

    /// The status a replay of a stored response answers with: a stored success replays as 200, anything else
    /// stored (a 500 kept as final, a 4xx) replays as itself.
    pub fn replay_status(stored_code: u16) -> u16 {
        if is_success(stored_code) {
            OK_REPLAY
        } else {
            stored_code
        }
    }

    /// A definite failure: retrying the same request can never succeed (docs/src/domain.md section 6: never retry 4xx
    /// other than 409 and 429).
    pub fn is_definite_failure(code: u16) -> bool {
        (400..500).contains(&code) && code != CONFLICT_IN_PROGRESS && code != 429
    }
}

/// Whether an in_progress record claimed at `claimed_at_ms` has outlived a lease of `lease_ms` at `now_ms`.
/// The model does not keep a clock (a lease expiry is an action there); real stores use this.
pub fn lease_expired(claimed_at_ms: u64, now_ms: u64, lease_ms: u64) -> bool {
    now_ms.saturating_sub(claimed_at_ms) >= lease_ms
}
