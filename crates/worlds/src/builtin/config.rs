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

/// A fault kind of the built-in worlds, by its model-file name (`drop-requests`): the variant's kebab case,
/// derived here once. Its discriminant is its index in `Faults::as_array` and `State::budgets`; a test checks
/// each name is the `[faults]` key that sets that index.
#[derive(
    Clone,
    Copy,
    Debug,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    strum::Display,
    strum::EnumString,
    strum::EnumIter,
    strum::AsRefStr,
    strum::IntoStaticStr,
)]
#[strum(serialize_all = "kebab-case")]
pub enum Fault {
    DropRequests,
    DropResponses,
    DuplicateRequests,
    DuplicateResponses,
    Crashes,
    Pauses,
    EarlyTimeouts,
    HandlerErrors,
    KeyExpiries,
    Republishes,
    WindowExpiries,
    ProducerRestarts,
}

impl Fault {
    /// Every kind, in index order.
    pub fn all() -> impl Iterator<Item = Fault> {
        <Fault as strum::IntoEnumIterator>::iter()
    }

    pub fn name(self) -> &'static str {
        self.into()
    }

    /// Its index in `Faults::as_array` and `State::budgets`.
    pub const fn index(self) -> usize {
        self as usize
    }
}

impl Faults {
    /// Fault kinds: the length of `as_array`.
    pub const KINDS: usize = 12;

    /// The budget of `fault`.
    pub fn get(&self, fault: Fault) -> u8 {
        self.as_array()[fault.index()]
    }

    /// The budgets in `Fault` order.
    pub fn as_array(&self) -> [u8; Faults::KINDS] {
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

    pub fn from_array(values: [u8; Faults::KINDS]) -> Faults {
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

#[cfg(test)]
mod tests {
    use super::{Fault, Faults};

    /// Each fault's name is the `[faults]` key of its index: one budget set by name lands where `Fault` says.
    #[test]
    fn each_fault_name_is_its_model_file_key() {
        for fault in Fault::all() {
            let faults: Faults = toml::from_str(&format!("{fault} = 3")).unwrap();
            let mut expected = [0; Faults::KINDS];
            expected[fault.index()] = 3;
            assert_eq!(faults.as_array(), expected, "{fault}");
            assert_eq!(faults.get(fault), 3);
            assert_eq!(fault.name().parse::<Fault>(), Ok(fault));
        }
        assert_eq!(Fault::all().count(), Faults::KINDS);
    }

    /// The twin: a key that is no fault's is refused.
    #[test]
    fn an_unknown_fault_is_refused() {
        assert!(toml::from_str::<Faults>("crash = 1").is_err());
        assert!("crash".parse::<Fault>().is_err());
    }
}
