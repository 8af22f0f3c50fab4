//! The model file as written, before validation. Every table denies unknown fields, so a misspelt knob is an
//! error that lists the valid ones.

use crate::builtin::{
    DedupKey, Faults, Inbox, KeyScope, KeyStore, OnError, Producer, ProducerDedup, Provider,
    WorldProperty,
};
use crate::check::Verdict;
use crate::protocol::{Claim, FingerprintPolicy, KeyPolicy};
use serde::Deserialize;
use toml::Spanned;

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct RawModel {
    pub description: String,
    pub source: Option<String>,
    /// Absent in a queue model (its consumer is `[consumer]`).
    pub protocol: Option<Spanned<RawProtocol>>,
    /// Present: a message-queue model (docs/src/domain.md section 5).
    pub broker: Option<Spanned<RawBroker>>,
    pub consumer: Option<Spanned<RawConsumer>>,
    pub clients: RawClients,
    #[serde(default)]
    pub servers: RawServers,
    #[serde(default)]
    pub faults: Faults,
    pub expect: RawExpect,
    #[serde(default)]
    pub limits: RawLimits,
}

/// The claim as a model file names it. `unconditional-set` (a key-store SET without "if absent") behaves as
/// select-then-insert: read, then write whatever happened in between.
#[derive(Deserialize, Clone, Copy)]
#[serde(rename_all = "kebab-case")]
pub enum RawClaim {
    UniqueIndex,
    SelectThenInsert,
    UnconditionalSet,
}

impl RawClaim {
    pub fn claim(self) -> Claim {
        match self {
            RawClaim::UniqueIndex => Claim::UniqueIndex,
            RawClaim::SelectThenInsert | RawClaim::UnconditionalSet => Claim::SelectThenInsert,
        }
    }
}

#[derive(Deserialize, Clone)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct RawProtocol {
    #[serde(default = "default_claim")]
    pub claim: RawClaim,
    /// Absent: no lease.
    pub lease_ms: Option<Spanned<u64>>,
    pub fencing: Option<Spanned<bool>>,
    #[serde(default = "default_fingerprint")]
    pub fingerprint: FingerprintPolicy,
    #[serde(default = "default_scope")]
    pub key_scope: KeyScope,
    #[serde(default = "default_key_store")]
    pub key_store: KeyStore,
    #[serde(default = "default_provider")]
    pub provider: Provider,
    #[serde(default = "default_on_error")]
    pub on_error: OnError,
}

/// `[broker]`: who publishes, and the broker's producer dedup.
#[derive(Deserialize, Clone)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct RawBroker {
    #[serde(default = "default_producer")]
    pub producer: Producer,
    #[serde(default = "default_producer_dedup")]
    pub producer_dedup: ProducerDedup,
    /// For the reader (SQS FIFO: 300000; NATS JetStream: 120000): the model's time is abstract, a republish
    /// after the window is the `window-expiries` fault.
    pub dedup_window_ms: Option<u64>,
}

fn default_producer() -> Producer {
    Producer::Client
}
fn default_producer_dedup() -> ProducerDedup {
    ProducerDedup::None
}

/// `[consumer]`: where the inbox row is written, what it is keyed by, and an external effect.
#[derive(Deserialize, Clone)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct RawConsumer {
    #[serde(default = "default_inbox")]
    pub inbox: Inbox,
    #[serde(default = "default_dedup_key")]
    pub dedup_key: DedupKey,
    /// An external call (an e-mail, a provider) made while processing, which no transaction rolls back.
    #[serde(default = "default_provider")]
    pub external_effect: Provider,
}

impl Default for RawConsumer {
    fn default() -> Self {
        RawConsumer {
            inbox: default_inbox(),
            dedup_key: default_dedup_key(),
            external_effect: default_provider(),
        }
    }
}

fn default_inbox() -> Inbox {
    Inbox::SameTransaction
}
fn default_dedup_key() -> DedupKey {
    DedupKey::EventId
}

fn default_key_store() -> KeyStore {
    KeyStore::SameDatabase
}
fn default_provider() -> Provider {
    Provider::None
}
fn default_on_error() -> OnError {
    OnError::DeleteKey
}

impl Default for RawProtocol {
    fn default() -> Self {
        RawProtocol {
            claim: default_claim(),
            lease_ms: None,
            fencing: None,
            fingerprint: default_fingerprint(),
            key_scope: default_scope(),
            key_store: default_key_store(),
            provider: default_provider(),
            on_error: default_on_error(),
        }
    }
}

fn default_claim() -> RawClaim {
    RawClaim::UniqueIndex
}
fn default_fingerprint() -> FingerprintPolicy {
    FingerprintPolicy::Normalized
}
fn default_scope() -> KeyScope {
    KeyScope::PerClient
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct RawClients {
    pub count: Spanned<u8>,
    #[serde(rename = "max-attempts", default = "default_attempts")]
    pub attempts_max: Spanned<u8>,
    #[serde(default = "default_key_policy")]
    pub key_policy: KeyPolicy,
    pub operations: Vec<Spanned<RawOperation>>,
}

fn default_attempts() -> Spanned<u8> {
    Spanned::new(0..0, 3)
}
fn default_key_policy() -> KeyPolicy {
    KeyPolicy::PerOperation
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct RawOperation {
    pub body: Option<Spanned<toml::Table>>,
    pub body_json: Option<Spanned<String>>,
    /// 1-based number of an earlier operation whose key this one reuses.
    pub same_key_as: Option<Spanned<u8>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct RawServers {
    #[serde(default = "default_processes")]
    pub processes: Spanned<u8>,
}

impl Default for RawServers {
    fn default() -> Self {
        RawServers {
            processes: default_processes(),
        }
    }
}

fn default_processes() -> Spanned<u8> {
    Spanned::new(0..0, 1)
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct RawExpect {
    pub no_duplicate_effect: Option<Verdict>,
    pub no_lost_effect: Option<Verdict>,
    pub consistent_replay: Option<Verdict>,
    pub no_cross_client_response: Option<Verdict>,
    pub conflict_codes: Option<Verdict>,
    pub no_stuck_key: Option<Verdict>,
    pub eventually_resolves: Option<Verdict>,
    #[serde(default)]
    pub reached: Vec<Spanned<String>>,
}

impl RawExpect {
    /// Each property's declared verdict, in `WorldProperty::all` order. The fields are named as the properties (serde's
    /// kebab case of the field is the property's name: a test in `spec` checks each).
    pub fn verdicts(&self) -> [(WorldProperty, &Option<Verdict>); 7] {
        [
            (WorldProperty::NoDuplicateEffect, &self.no_duplicate_effect),
            (WorldProperty::NoLostEffect, &self.no_lost_effect),
            (WorldProperty::ConsistentReplay, &self.consistent_replay),
            (
                WorldProperty::NoCrossClientResponse,
                &self.no_cross_client_response,
            ),
            (WorldProperty::ConflictCodes, &self.conflict_codes),
            (WorldProperty::NoStuckKey, &self.no_stuck_key),
            (WorldProperty::EventuallyResolves, &self.eventually_resolves),
        ]
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct RawLimits {
    #[serde(rename = "max-states", default = "default_states_max")]
    pub states_max: u64,
    #[serde(rename = "max-depth", default = "default_depth_max")]
    pub depth_max: u32,
}

impl Default for RawLimits {
    fn default() -> Self {
        RawLimits {
            states_max: default_states_max(),
            depth_max: default_depth_max(),
        }
    }
}

fn default_states_max() -> u64 {
    5_000_000
}
fn default_depth_max() -> u32 {
    400
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `[expect]`'s fields are spelt as the properties: each property's name sets its own verdict and no other.
    #[test]
    fn each_expect_field_is_the_property_of_that_name() {
        for property in WorldProperty::all() {
            let raw: RawExpect = toml::from_str(&format!("{property} = \"violated\"")).unwrap();
            let set: Vec<WorldProperty> = raw
                .verdicts()
                .into_iter()
                .filter(|(_, verdict)| **verdict == Some(Verdict::Violated))
                .map(|(named, _)| named)
                .collect();
            assert_eq!(set, [property]);
        }
    }

    /// The twin: a name that is no property's is refused, naming the valid ones.
    #[test]
    fn a_misspelt_property_is_refused() {
        let error = toml::from_str::<RawExpect>("no-duplicate-effects = \"holds\"")
            .err()
            .unwrap()
            .to_string();
        assert!(error.contains("no-duplicate-effect"), "{error}");
    }
}
