//! The shared parts' configuration: clients and their operations, the bodies they send, fault budgets. The
//! server's knobs are in `crate::protocol`; `WorldBuilder` puts them together and validates.

use crate::protocol::KeyPolicy;
use serde::{Deserialize, Serialize};

/// A request body as the model file wrote it, and as JSON (what fingerprints and the semantic "same body" see).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Body {
    pub text: String,
    pub json: serde_json::Value,
}

/// One logical operation a client performs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Operation {
    /// Index into the world's bodies.
    pub body: u8,
    /// The key value the client uses for it (keys are small integers in the model: what matters is equality).
    pub key: u8,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClientsConfig {
    pub count: u8,
    pub attempts_max: u8,
    pub key_policy: KeyPolicy,
    /// Every client performs these operations, in order.
    pub operations: Vec<Operation>,
}

impl ClientsConfig {
    /// Clients in a world at most (the symmetry reduction sizes its per-client arrays by it).
    pub const COUNT_MAX: u8 = 8;
}

/// Fault budgets: how many of each fault the explorer may inject along one path.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields, default)]
pub struct Faults {
    pub drop_requests: u8,
    pub drop_responses: u8,
    pub duplicate_requests: u8,
    pub duplicate_responses: u8,
    /// Crash of a server process at a step boundary (its open transaction is lost); it restarts empty.
    pub crashes: u8,
    /// Lease expiries while the owner is alive: the owner was paused (GC, a slow disk) longer than the lease.
    pub pauses: u8,
    /// Client timeouts while the attempt is still alive (its request, handler or response only slow). A timeout
    /// after the attempt was lost is no fault and needs no budget.
    pub early_timeouts: u8,
    /// Handler failures (a 500) at a step boundary after the claim: the open transaction rolls back, the
    /// provider call (if made) stays, and `on-error` decides the key's fate.
    pub handler_errors: u8,
    /// A completed key expires while its client may still retry (a TTL shorter than the retry window).
    pub key_expiries: u8,
    /// Queue worlds: the producer publishes an event again (its publish ack was lost; for an outbox relay, it
    /// crashed after publishing and before marking the row sent). The broker's producer dedup may drop it.
    pub republishes: u8,
    /// Queue worlds: a republish arrives after the broker's dedup window.
    pub window_expiries: u8,
    /// Queue worlds: the producer restarted before republishing, so its broker session is new.
    pub producer_restarts: u8,
}

impl Faults {
    pub const NAMES: [&'static str; 12] = [
        "drop-requests",
        "drop-responses",
        "duplicate-requests",
        "duplicate-responses",
        "crashes",
        "pauses",
        "early-timeouts",
        "handler-errors",
        "key-expiries",
        "republishes",
        "window-expiries",
        "producer-restarts",
    ];

    pub fn as_array(&self) -> [u8; 12] {
        [
            self.drop_requests,
            self.drop_responses,
            self.duplicate_requests,
            self.duplicate_responses,
            self.crashes,
            self.pauses,
            self.early_timeouts,
            self.handler_errors,
            self.key_expiries,
            self.republishes,
            self.window_expiries,
            self.producer_restarts,
        ]
    }

    pub fn from_array(values: [u8; 12]) -> Faults {
        Faults {
            drop_requests: values[0],
            drop_responses: values[1],
            duplicate_requests: values[2],
            duplicate_responses: values[3],
            crashes: values[4],
            pauses: values[5],
            early_timeouts: values[6],
            handler_errors: values[7],
            key_expiries: values[8],
            republishes: values[9],
            window_expiries: values[10],
            producer_restarts: values[11],
        }
    }
}
