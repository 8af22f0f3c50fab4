//! The dedup-window world (docs/src/domain.md section 5): how often one event takes effect twice when its producer
//! publishes it again after a delay, for each place the dedup can live.
//!
//! One run is one event. The producer publishes it; then it publishes it again after a delay `D` (its publish
//! ack was lost and it retries in the same session, or it restarted and republishes from a new session).
//! `D = ratio * window * U(0.5, 1.5)`: the nominal delay relative to the broker's dedup window, with jitter. The
//! broker forwards the copy as a new message unless its producer dedup recognises it. The consumer receives each
//! message at least once: it crashes during a delivery with probability `crash_probability` (at a uniformly
//! chosen step boundary of its handler) and an ack is lost with probability `ack_loss_probability`; either way the
//! broker redelivers, up to `receives_max` deliveries. Copies arrive long after the original was handled (the
//! delays are seconds to hours, handling takes milliseconds), so messages are handled one after the other.
//!
//! The outcome is whether the event took effect at least twice. Everything is drawn from one ChaCha8 stream per
//! run, `run_rng(seed, stream)`, so a cell's estimate depends only on the seed.

use crate::protocol::queue::{self, DedupKey, Inbox, OnDelivery, ProducerDedup};
use crate::sim::kernel::run_rng;
use crate::sim::stats::wilson_95;
use rand::Rng;
use rand_chacha::ChaCha8Rng;

/// Why the producer publishes the event a second time.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Cause {
    /// Its publish ack was lost; it retries within the same session.
    Retry,
    /// It restarted (or an outbox relay crashed before marking the row): a new session.
    Restart,
}

impl Cause {
    pub const ALL: [Cause; 2] = [Cause::Retry, Cause::Restart];

    pub fn name(self) -> &'static str {
        match self {
            Cause::Retry => "retry",
            Cause::Restart => "restart",
        }
    }
}

/// Where the dedup lives.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Place {
    /// Nowhere.
    None,
    /// At the broker, by message id within a window (SQS FIFO, NATS JetStream); no consumer inbox.
    BrokerWindow,
    /// At the broker, by producer session (Kafka's idempotent producer); no consumer inbox.
    BrokerSession,
    /// A consumer inbox keyed by the broker offset, in the effect's transaction.
    InboxOffset,
    /// A consumer inbox keyed by event id, written in a second transaction after the effect.
    InboxAfterEffect,
    /// A consumer inbox keyed by event id, in the effect's transaction.
    InboxSameTransaction,
}

impl Place {
    pub const ALL: [Place; 6] = [
        Place::None,
        Place::BrokerWindow,
        Place::BrokerSession,
        Place::InboxOffset,
        Place::InboxAfterEffect,
        Place::InboxSameTransaction,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Place::None => "none",
            Place::BrokerWindow => "broker-window",
            Place::BrokerSession => "broker-session",
            Place::InboxOffset => "inbox-by-offset",
            Place::InboxAfterEffect => "inbox-after-effect",
            Place::InboxSameTransaction => "inbox-same-transaction",
        }
    }

    pub fn label(self) -> &'static str {
        match self {
            Place::None => "no dedup",
            Place::BrokerWindow => "broker window (message id)",
            Place::BrokerSession => "broker session (Kafka)",
            Place::InboxOffset => "inbox keyed by offset",
            Place::InboxAfterEffect => "inbox after the effect",
            Place::InboxSameTransaction => "inbox in effect's txn",
        }
    }
}

/// The seed and runs per cell of the committed results.
pub const SEED_DEFAULT: u64 = 5;
pub const RUNS_DEFAULT: u32 = 4000;

#[derive(Clone, Debug, PartialEq)]
pub struct Config {
    /// The broker's dedup window (SQS FIFO: 300 s; NATS JetStream default: 120 s).
    pub window_ms: f64,
    /// Nominal republish delays relative to the window, ascending.
    pub ratios: Vec<f64>,
    pub crash_probability: f64,
    pub ack_loss_probability: f64,
    pub receives_max: u32,
}

impl Config {
    pub fn default_ratios() -> Vec<f64> {
        vec![
            0.05, 0.1, 0.2, 0.3, 0.5, 0.7, 0.85, 1.0, 1.15, 1.3, 1.5, 2.0, 3.0, 5.0, 10.0,
        ]
    }
}

impl Default for Config {
    fn default() -> Self {
        Config {
            window_ms: 300_000.0,
            ratios: Config::default_ratios(),
            crash_probability: 0.05,
            ack_loss_probability: 0.05,
            receives_max: 5,
        }
    }
}

/// One (cause, place, ratio) cell.
#[derive(Clone, Debug, PartialEq)]
pub struct Cell {
    pub cause: Cause,
    pub place: Place,
    pub ratio: f64,
    pub runs: u32,
    pub duplicates: u32,
    /// Runs in which the broker forwarded the republished copy as a new message.
    pub copies_forwarded: u32,
}

impl Cell {
    pub fn probability(&self) -> f64 {
        f64::from(self.duplicates) / f64::from(self.runs)
    }

    /// The Wilson score interval at 95% (sound at 0 and 1, where a normal interval collapses to a point).
    pub fn wilson_95(&self) -> (f64, f64) {
        wilson_95(self.duplicates, self.runs)
    }
}

impl Place {
    /// The queue knobs this place stands for: a broker's producer dedup, or a consumer inbox (placement and
    /// key). The rules that give them meaning are `protocol::queue`'s, shared with the queue model.
    pub fn knobs(self) -> (ProducerDedup, Inbox, DedupKey) {
        match self {
            Place::None => (ProducerDedup::None, Inbox::None, DedupKey::EventId),
            Place::BrokerWindow => (ProducerDedup::Window, Inbox::None, DedupKey::EventId),
            Place::BrokerSession => (ProducerDedup::Session, Inbox::None, DedupKey::EventId),
            Place::InboxOffset => (
                ProducerDedup::None,
                Inbox::SameTransaction,
                DedupKey::Offset,
            ),
            Place::InboxAfterEffect => (ProducerDedup::None, Inbox::AfterEffect, DedupKey::EventId),
            Place::InboxSameTransaction => (
                ProducerDedup::None,
                Inbox::SameTransaction,
                DedupKey::EventId,
            ),
        }
    }
}

/// Whether the broker forwards the republished copy as a new message.
fn broker_forwards(place: Place, cause: Cause, delay_ms: f64, window_ms: f64) -> bool {
    let (producer_dedup, _, _) = place.knobs();
    queue::broker_accepts(
        producer_dedup,
        delay_ms > window_ms,
        cause == Cause::Restart,
    )
}

/// What the consumer's database holds for the event.
#[derive(Default)]
struct Consumer {
    effects: u32,
    /// Inbox rows (their keys).
    rows: Vec<u8>,
}

/// The one event's id (any will do: only equality of inbox keys matters).
const EVENT_ID: u8 = 1;

/// Handle one broker message (`copy` 0: the original, 1: the republished copy) until it is acked or its
/// receives run out.
fn handle_message(
    place: Place,
    copy: u8,
    config: &Config,
    consumer: &mut Consumer,
    rng: &mut ChaCha8Rng,
) {
    let (_, inbox, dedup_key) = place.knobs();
    // Every key this experiment uses is the same across the deliveries of one message.
    let key = queue::inbox_key(dedup_key, EVENT_ID, 1, copy);
    let commits = inbox.commits();
    for _ in 0..config.receives_max {
        let row_found = consumer.rows.contains(&key);
        if queue::on_delivery(inbox, row_found) == OnDelivery::AckWithoutProcessing {
            // A lost ack only means one more such delivery.
            if rng.random::<f64>() >= config.ack_loss_probability {
                return;
            }
            continue;
        }
        // A crash stops the handler at a uniformly chosen boundary: before any commit, between, or before the ack.
        let crashed_after = if rng.random::<f64>() < config.crash_probability {
            Some(rng.random_range(0..=commits.len()))
        } else {
            None
        };
        let done = crashed_after.unwrap_or(commits.len());
        for commit in &commits[..done] {
            // Messages are handled one after the other, so no other consumer's row can refuse a commit here.
            assert!(!commit.refused(consumer.rows.contains(&key)));
            consumer.effects += u32::from(commit.effect);
            if commit.inbox_row {
                consumer.rows.push(key);
            }
        }
        if crashed_after.is_some() {
            continue;
        }
        if rng.random::<f64>() >= config.ack_loss_probability {
            return;
        }
    }
}

/// One run: whether the event took effect at least twice, and whether the broker forwarded the copy.
pub fn run_once(
    cause: Cause,
    place: Place,
    ratio: f64,
    config: &Config,
    rng: &mut ChaCha8Rng,
) -> (bool, bool) {
    let jitter = rng.random_range(0.5..1.5);
    let delay_ms = ratio * config.window_ms * jitter;
    let mut consumer = Consumer::default();
    handle_message(place, 0, config, &mut consumer, rng);
    let forwarded = broker_forwards(place, cause, delay_ms, config.window_ms);
    if forwarded {
        handle_message(place, 1, config, &mut consumer, rng);
    }
    (consumer.effects >= 2, forwarded)
}

/// A cell of the grid: why the copy is published, where the dedup lives, the nominal delay.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct At {
    pub cause: Cause,
    pub place: Place,
    pub ratio: f64,
}

/// The cells in (cause, place, ratio) order.
pub fn cells(config: &Config) -> Vec<At> {
    let mut cells = Vec::new();
    for cause in Cause::ALL {
        for place in Place::ALL {
            for &ratio in &config.ratios {
                cells.push(At {
                    cause,
                    place,
                    ratio,
                });
            }
        }
    }
    cells
}

/// Cell `i`'s runs use streams `i * runs ..`, so every run has its own stream.
pub fn stream(cell_index: usize, runs_per_cell: u32, run_index: u32) -> u64 {
    cell_index as u64 * u64::from(runs_per_cell) + u64::from(run_index)
}

/// A cell's count from its runs' (duplicate, forwarded) outcomes.
pub fn count(at: At, runs: &[(bool, bool)]) -> Cell {
    Cell {
        cause: at.cause,
        place: at.place,
        ratio: at.ratio,
        runs: runs.len() as u32,
        duplicates: runs.iter().filter(|run| run.0).count() as u32,
        copies_forwarded: runs.iter().filter(|run| run.1).count() as u32,
    }
}

/// Every cell, `runs` each, sequentially (the experiment runs them in parallel, with the same
/// result).
pub fn sweep(config: &Config, seed: u64, runs: u32) -> Vec<Cell> {
    cells(config)
        .into_iter()
        .enumerate()
        .map(|(index, at)| {
            let outcomes: Vec<(bool, bool)> = (0..runs)
                .map(|run| {
                    let mut rng = run_rng(seed, stream(index, runs, run));
                    run_once(at.cause, at.place, at.ratio, config, &mut rng)
                })
                .collect();
            count(at, &outcomes)
        })
        .collect()
}
