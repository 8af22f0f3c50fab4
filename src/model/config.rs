//! The world's configuration: what a model file describes, validated (see `crate::spec`).

use crate::protocol::{Claim, Fingerprint, KeyPolicy, ProtocolConfig};
use serde::{Deserialize, Serialize};

/// Where the uniqueness of a key is scoped.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum KeyScope {
    /// Primary key (client, key): the article's design.
    PerClient,
    /// Primary key (key) alone (DOMAIN.md mistake 3): two clients that pick the same key share a record.
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
    /// Store the 500 as the key's final response (DOMAIN.md mistake 4; Stripe stores 5xx too).
    StoreResponse,
    /// Delete the key so a retry executes afresh (AWS Lambda Powertools).
    DeleteKey,
    /// Leave the record in_progress (only a lease frees it).
    KeepInProgress,
}

/// Who publishes the events of a queue world (DOMAIN.md section 5).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Producer {
    /// An application that publishes and retries when its publish ack is lost.
    Client,
    /// A transactional outbox's relay: it publishes a committed outbox row, then marks it sent; a crash between the
    /// two makes the restarted relay publish the row again (every republish follows a restart).
    OutboxRelay,
}

/// Where the broker deduplicates what producers publish.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ProducerDedup {
    /// Every publish becomes a message (RabbitMQ, plain SQS, Kafka without the idempotent producer).
    None,
    /// By message id within a time window (SQS FIFO: 5 minutes; NATS JetStream: 2 minutes by default). A
    /// republish that arrives after the window is a new message.
    Window,
    /// By producer session (Kafka's idempotent producer: PID + sequence). A producer restart ends the session.
    Session,
}

/// Where the consumer records the event ids it has processed (the inbox), relative to the effect.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Inbox {
    /// No inbox: every delivery is processed.
    None,
    /// The inbox row is inserted in the effect's transaction, under a unique key: the reliable design.
    SameTransaction,
    /// The effect commits first, the inbox row in a second transaction: a crash in between reprocesses.
    AfterEffect,
    /// The inbox row commits first, then the effect: a crash in between loses the effect (a redelivery finds the
    /// row and acks).
    BeforeEffect,
}

/// What the consumer's inbox is keyed by.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum DedupKey {
    /// An id given when the event was created (the outbox's event_id, or order id + event type): the same for
    /// every redelivery and every republished copy.
    EventId,
    /// The broker's position (a Kafka offset, an SQS message id): the same across redeliveries of one message,
    /// different for a republished copy.
    Offset,
    /// The delivery (an SQS receipt handle, a delivery tag): different on every delivery.
    DeliveryNumber,
}

/// The queue knobs (`[broker]` and `[consumer]` in a model file). In a queue world a client is a producer
/// together with the broker's delivery loop for its event: an attempt is a delivery, a response is the consumer's
/// ack, a timeout is a visibility timeout (an early one: the consumer was only slow), `max-attempts` is the
/// broker's maximum receive count (then the dead-letter queue); server processes are consumers; a payment is
/// the consumer's effect; a record is an inbox row.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct QueueConfig {
    pub producer: Producer,
    pub producer_dedup: ProducerDedup,
    pub inbox: Inbox,
    pub dedup_key: DedupKey,
}

/// One logical operation a client performs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Operation {
    /// Index into `World::bodies`.
    pub body: u8,
    /// The key value the client uses for it (keys are small integers in the model: what matters is equality).
    pub key: u8,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClientsConfig {
    pub count: u8,
    pub max_attempts: u8,
    pub key_policy: KeyPolicy,
    /// Every client performs these operations, in order.
    pub operations: Vec<Operation>,
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

/// A validated world. Bodies are interned: two operations with the same normalised JSON share a body index, and
/// `fingerprints[body]` is the fingerprint the protocol computes for it under the configured policy.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct World {
    pub protocol: ProtocolConfig,
    pub key_scope: KeyScope,
    pub key_store: KeyStore,
    pub provider: Provider,
    pub on_error: OnError,
    pub clients: ClientsConfig,
    pub processes: u8,
    pub faults: Faults,
    /// A message-queue world (`[broker]`), or the HTTP world when absent.
    pub queue: Option<QueueConfig>,
    /// Each distinct body as written (for timelines).
    pub bodies: Vec<String>,
    /// The semantic class of each body: bodies with equal normalised JSON share a class (the ghost notion of
    /// "the same body", whatever the fingerprint policy sees).
    pub body_classes: Vec<u8>,
    /// Fingerprint index per body: bodies with equal fingerprints share an index.
    pub fingerprints: Vec<u8>,
}

impl World {
    /// Intern fingerprints: the state stores a small index instead of 32 bytes.
    pub fn intern_fingerprints(prints: &[Fingerprint]) -> Vec<u8> {
        let mut distinct: Vec<Fingerprint> = Vec::new();
        prints
            .iter()
            .map(
                |print| match distinct.iter().position(|seen| seen == print) {
                    Some(index) => index as u8,
                    None => {
                        distinct.push(*print);
                        (distinct.len() - 1) as u8
                    }
                },
            )
            .collect()
    }

    pub fn uses_select_then_insert(&self) -> bool {
        self.protocol.claim == Claim::SelectThenInsert
    }
}
