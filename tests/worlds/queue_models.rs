//! Message-queue models (docs/src/domain.md section 5): each correct design holds, and turning one knob of it (where the
//! inbox row is written, what it is keyed by, the producer dedup, the external call's key) breaks the property the
//! knob protects. Plus the queue knobs' validation errors.

use retrylab::builtin::{DedupKey, Faults, Inbox, ProducerDedup, Provider, World, WorldProperty};
use retrylab::check::Verdict;
use retrylab::spec::parse_model;

use crate::model_support;
use model_support::*;

fn with_queue(world: &World, change: impl Fn(&mut retrylab::builtin::QueueConfig)) -> World {
    let mut queue = world.queue().expect("a queue model").server().config();
    change(&mut queue);
    world.to_builder().queue(queue).build().unwrap()
}

fn with_faults(world: &World, change: impl Fn(&mut Faults)) -> World {
    let mut faults = world.faults();
    change(&mut faults);
    world.to_builder().faults(faults).build().unwrap()
}

#[test]
fn the_inbox_in_the_effects_transaction_holds_and_every_other_place_breaks() {
    let model = load("queue-inbox-same-transaction.toml");
    assert_eq!(
        verdict(&model.world, WorldProperty::NoDuplicateEffect),
        Verdict::Holds
    );
    assert_eq!(
        verdict(&model.world, WorldProperty::NoLostEffect),
        Verdict::Holds
    );
    let after = with_queue(&model.world, |queue| queue.inbox = Inbox::AfterEffect);
    assert_eq!(
        twin_verdict(&after, WorldProperty::NoDuplicateEffect),
        Verdict::Violated
    );
    let before = with_queue(&model.world, |queue| queue.inbox = Inbox::BeforeEffect);
    assert_eq!(
        twin_verdict(&before, WorldProperty::NoLostEffect),
        Verdict::Violated
    );
    let none = with_queue(&model.world, |queue| queue.inbox = Inbox::None);
    assert_eq!(
        twin_verdict(&none, WorldProperty::NoDuplicateEffect),
        Verdict::Violated
    );
}

#[test]
fn an_offset_key_survives_redelivery_but_not_a_republish() {
    let model = load("queue-inbox-same-transaction.toml");
    let offset = with_queue(&model.world, |queue| queue.dedup_key = DedupKey::Offset);
    assert_eq!(
        twin_verdict(&offset, WorldProperty::NoDuplicateEffect),
        Verdict::Violated
    );
    // Without republishes, every duplicate is a redelivery of one message, which shares its offset.
    let no_republish = with_faults(&offset, |faults| faults.republishes = 0);
    assert_eq!(
        verdict(&no_republish, WorldProperty::NoDuplicateEffect),
        Verdict::Holds
    );
    // A delivery tag differs even between redeliveries.
    let tag = with_queue(&no_republish, |queue| {
        queue.dedup_key = DedupKey::DeliveryNumber
    });
    assert_eq!(
        twin_verdict(&tag, WorldProperty::NoDuplicateEffect),
        Verdict::Violated
    );
}

#[test]
fn broker_dedup_is_bounded_by_its_window_or_its_session() {
    // Without an inbox, only the broker stands between a republish and a second effect.
    let window = load("queue-window-expired-no-inbox.toml");
    assert_eq!(
        twin_verdict(&window.world, WorldProperty::NoDuplicateEffect),
        Verdict::Violated
    );
    let inside = with_faults(&window.world, |faults| faults.window_expiries = 0);
    assert_eq!(
        verdict(&inside, WorldProperty::NoDuplicateEffect),
        Verdict::Holds
    );
    // The window is keyed by message id: a producer restart inside it changes nothing.
    let restart_inside_window = with_faults(&inside, |faults| faults.producer_restarts = 1);
    assert_eq!(
        verdict(&restart_inside_window, WorldProperty::NoDuplicateEffect),
        Verdict::Holds
    );
    // A session ends with a restart, whatever the time.
    let session = with_queue(&restart_inside_window, |queue| {
        queue.producer_dedup = ProducerDedup::Session
    });
    assert_eq!(
        twin_verdict(&session, WorldProperty::NoDuplicateEffect),
        Verdict::Violated
    );
    let no_dedup = with_queue(&inside, |queue| queue.producer_dedup = ProducerDedup::None);
    assert_eq!(
        twin_verdict(&no_dedup, WorldProperty::NoDuplicateEffect),
        Verdict::Violated
    );
}

#[test]
fn an_external_call_inside_the_consumers_transaction_needs_its_own_key() {
    let model = load("queue-email-idempotency-key.toml");
    assert_eq!(
        verdict(&model.world, WorldProperty::NoDuplicateEffect),
        Verdict::Holds
    );
    let twin = model
        .world
        .to_builder()
        .provider(Provider::NotIdempotent)
        .build()
        .unwrap();
    assert_eq!(
        twin_verdict(&twin, WorldProperty::NoDuplicateEffect),
        Verdict::Violated
    );
}

const QUEUE: &str = r#"
description = "a queue"
[broker]
producer-dedup = "window"
[consumer]
inbox = "same-transaction"
[clients]
count = 1
max-attempts = 3
[[clients.operations]]
body = { order = 1 }
[faults]
republishes = 1
[expect]
no-duplicate-effect = "holds"
reached = ["producer-deduplicated"]
"#;

#[test]
fn queue_knobs_are_validated() {
    assert!(parse_model("q.toml", QUEUE).is_ok());
    let error = |text: &str| parse_model("q.toml", text).unwrap_err().to_string();
    let message = error(&QUEUE.replace("[broker]", "[protocol]\nlease-ms = 1\n[broker]"));
    assert!(message.contains("protocol"), "{message}");
    let message = error(&QUEUE.replace("[broker]\nproducer-dedup = \"window\"\n", ""));
    assert!(message.contains("consumer"), "{message}");
    let message = error(&QUEUE.replace("max-attempts = 3", "max-attempts = 8"));
    assert!(message.contains("clients.max-attempts"), "{message}");
    let message = error(&QUEUE.replace("inbox = \"same-transaction\"", "inbox = \"sometimes\""));
    assert!(message.contains("consumer.inbox"), "{message}");
    let http = QUEUE
        .replace("[broker]\nproducer-dedup = \"window\"\n", "")
        .replace("[consumer]\ninbox = \"same-transaction\"\n", "");
    let message = error(&http);
    assert!(message.contains("faults.republishes"), "{message}");
}
