//! The queue dedup rules (docs/src/domain.md section 5) as pure logic, written once: whether the broker takes a
//! republished event as a new message, which inbox key a delivery carries, and what the consumer's inbox
//! placement commits. The queue model (`crate::builtin`) and the dedup-window experiment (`crate::sim`) both call
//! these; neither re-encodes them.

use serde::{Deserialize, Serialize};

/// Who publishes the events of a queue world (docs/src/domain.md section 5).
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

/// Inbox keys of republished copies under `dedup-key = "delivery-number"` start here, above every delivery
/// number (a queue allows fewer deliveries than this), so no copy shares a delivery number with a delivery.
pub const COPY_DELIVERY_BASE: u8 = 8;

/// Whether the broker accepts a republished event as a new message. `late`: it arrives after the dedup window;
/// `restarted`: it comes from a new producer session.
pub fn broker_accepts(dedup: ProducerDedup, late: bool, restarted: bool) -> bool {
    match dedup {
        ProducerDedup::None => true,
        // The window is keyed by message id, whoever sends it: only time gets a copy through.
        ProducerDedup::Window => late,
        // The session dedups by (producer id, sequence), however late: only a new producer id gets through.
        ProducerDedup::Session => restarted,
    }
}

/// The inbox key of a delivery of event `event` (the event's own id, a small integer): `copy` 0 is the message
/// first published, n the n-th republished copy the broker accepted; `delivery` numbers the deliveries of the
/// original message (1-based; 0 for a copy, which has no delivery loop of its own). Only equality matters.
pub fn inbox_key(dedup_key: DedupKey, event: u8, delivery: u8, copy: u8) -> u8 {
    match dedup_key {
        DedupKey::EventId => event,
        DedupKey::Offset => event.wrapping_mul(16).wrapping_add(copy),
        DedupKey::DeliveryNumber if copy == 0 => event.wrapping_mul(16).wrapping_add(delivery),
        DedupKey::DeliveryNumber => event
            .wrapping_mul(16)
            .wrapping_add(COPY_DELIVERY_BASE + copy),
    }
}

/// What a consumer does with a delivery once it has looked for the delivery's inbox row.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OnDelivery {
    /// Process it: run the commits of `Inbox::commits`.
    Process,
    /// Already processed (or, before-effect, at least recorded): ack without processing.
    AckWithoutProcessing,
}

/// The consumer's first move on a delivery, given whether its inbox row exists.
pub fn on_delivery(inbox: Inbox, row_found: bool) -> OnDelivery {
    if inbox != Inbox::None && row_found {
        OnDelivery::AckWithoutProcessing
    } else {
        OnDelivery::Process
    }
}

/// One transaction the consumer commits while processing a delivery.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Commit {
    /// It commits the effect.
    pub effect: bool,
    /// It inserts the delivery's inbox row.
    pub inbox_row: bool,
}

impl Commit {
    /// Whether the store refuses this commit: an inbox row inserted under its unique key in the effect's own
    /// transaction meets a row another consumer committed, and the whole transaction, effect included, rolls
    /// back. A row committed alone is an upsert: it cannot undo an effect.
    pub fn refused(self, row_found: bool) -> bool {
        self.effect && self.inbox_row && row_found
    }
}

impl Inbox {
    /// The consumer's commits for a delivery it processes, in order. A crash between two of them is where an
    /// after-effect inbox reprocesses and a before-effect inbox loses the effect.
    pub fn commits(self) -> &'static [Commit] {
        const EFFECT: Commit = Commit {
            effect: true,
            inbox_row: false,
        };
        const ROW: Commit = Commit {
            effect: false,
            inbox_row: true,
        };
        const BOTH: Commit = Commit {
            effect: true,
            inbox_row: true,
        };
        match self {
            Inbox::None => &[EFFECT],
            Inbox::SameTransaction => &[BOTH],
            Inbox::AfterEffect => &[EFFECT, ROW],
            Inbox::BeforeEffect => &[ROW, EFFECT],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_placement_commits_the_effect_once() {
        for inbox in [
            Inbox::None,
            Inbox::SameTransaction,
            Inbox::AfterEffect,
            Inbox::BeforeEffect,
        ] {
            let effects = inbox
                .commits()
                .iter()
                .filter(|commit| commit.effect)
                .count();
            let rows = inbox
                .commits()
                .iter()
                .filter(|commit| commit.inbox_row)
                .count();
            assert_eq!(effects, 1, "{inbox:?}");
            assert_eq!(rows, usize::from(inbox != Inbox::None), "{inbox:?}");
        }
    }

    #[test]
    fn keys_tell_apart_what_the_dedup_key_tells_apart() {
        let key = |dedup, delivery, copy| inbox_key(dedup, 1, delivery, copy);
        assert_eq!(key(DedupKey::EventId, 1, 0), key(DedupKey::EventId, 0, 2));
        assert_eq!(key(DedupKey::Offset, 1, 0), key(DedupKey::Offset, 2, 0));
        assert_ne!(key(DedupKey::Offset, 1, 0), key(DedupKey::Offset, 0, 1));
        assert_ne!(
            key(DedupKey::DeliveryNumber, 1, 0),
            key(DedupKey::DeliveryNumber, 2, 0)
        );
        assert_ne!(
            key(DedupKey::DeliveryNumber, 1, 0),
            key(DedupKey::DeliveryNumber, 0, 1)
        );
    }
}
