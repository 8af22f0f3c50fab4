//! The dedup-window experiment's question on a real broker: how often an event takes effect twice when its
//! producer publishes it again after a delay, for each place the dedup can live, measured on nats-server with the
//! real consumer over SQLite. The simulated experiment (`experiments::dedup_window`) answers it from the same
//! rules in memory; this runs the same cells for real, at a window of seconds, so the two can be set side by side.
//!
//! One cell is one stream and one consumer database. Its events are all published at once; each one's copy is
//! published after `ratio * window * U(0.5, 1.5)` (the draw the simulation makes), with the event id as
//! `Nats-Msg-Id` where the broker dedups (the broker-window place) and no id elsewhere. The consumer takes every
//! delivery as it comes; for each it draws (from a ChaCha8 stream of its own, named by cell, event, copy and
//! delivery, so the draws do not depend on timing) whether it crashes, at a uniformly chosen commit boundary, or
//! loses its ack; the broker redelivers after its ack wait, up to its max-deliver. Cells run in parallel, one
//! thread each (they mostly wait).

use super::broker::{Broker, QueueOptions};
use super::consumer::{Consumer, ConsumerDesign, Phase, EFFECTS};
use crate::experiments::dedup_window::Place;
use crate::handler::sqlite::SqliteStore;
use crate::handler::Clock;
use crate::protocol::{ProducerDedup, Provider};
use crate::sim::kernel::run_rng;
use rand::Rng;
use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, Instant};

/// The grid and the consumer's faults.
#[derive(Clone, Debug, PartialEq)]
pub struct RealConfig {
    pub window: Duration,
    /// Nominal republish delays relative to the window.
    pub ratios: Vec<f64>,
    pub places: Vec<Place>,
    pub events_per_cell: u32,
    pub seed: u64,
    pub crash_probability: f64,
    pub ack_loss_probability: f64,
    pub max_receives: u32,
    /// The consumer's ack wait (how soon a crashed or unacked delivery comes back).
    pub ack_wait: Duration,
}

impl Default for RealConfig {
    fn default() -> RealConfig {
        RealConfig {
            window: Duration::from_secs(1),
            ratios: vec![0.3, 1.0, 3.0],
            places: vec![
                Place::None,
                Place::BrokerWindow,
                Place::InboxOffset,
                Place::InboxAfterEffect,
                Place::InboxSameTransaction,
            ],
            events_per_cell: 60,
            seed: 5,
            crash_probability: 0.05,
            ack_loss_probability: 0.05,
            max_receives: 5,
            ack_wait: Duration::from_millis(300),
        }
    }
}

/// One cell's count.
#[derive(Clone, Debug, PartialEq)]
pub struct RealCell {
    pub place: Place,
    pub ratio: f64,
    pub events: u32,
    pub duplicates: u32,
    /// Copies the broker stored as new messages.
    pub copies_forwarded: u32,
}

/// Every cell (place-major, then ratio), run in parallel against the server at `url`, databases in `folder`.
pub fn run_grid(url: &str, folder: &Path, config: &RealConfig) -> Result<Vec<RealCell>, String> {
    let mut cells = Vec::new();
    for &place in &config.places {
        for &ratio in &config.ratios {
            cells.push((place, ratio));
        }
    }
    std::thread::scope(|scope| {
        let handles: Vec<_> = cells
            .iter()
            .enumerate()
            .map(|(index, &(place, ratio))| {
                scope.spawn(move || run_cell(url, folder, index, place, ratio, config))
            })
            .collect();
        handles
            .into_iter()
            .map(|handle| handle.join().expect("a cell's thread"))
            .collect()
    })
}

/// A delivery's fate, drawn before it is handled.
struct Fate {
    /// Crash after this many of the placement's commits (0: before the first).
    crash_after: Option<usize>,
    ack_lost: bool,
}

fn fate(config: &RealConfig, stream: u64, commits: usize) -> Fate {
    let mut rng = run_rng(config.seed, stream);
    let crash_after =
        (rng.random::<f64>() < config.crash_probability).then(|| rng.random_range(0..=commits));
    Fate {
        crash_after,
        ack_lost: rng.random::<f64>() < config.ack_loss_probability,
    }
}

/// The commits a step finished (the consumer's phase before and after it).
fn commits_in(before: Phase, after: Phase, before_effect_rows: usize) -> usize {
    match (before, after) {
        (Phase::Claim, Phase::Effect | Phase::Provider) => before_effect_rows,
        (Phase::Commit, Phase::CompleteRow | Phase::Respond) => 1,
        (Phase::CompleteRow, Phase::Respond) => 1,
        _ => 0,
    }
}

fn run_cell(
    url: &str,
    folder: &Path,
    index: usize,
    place: Place,
    ratio: f64,
    config: &RealConfig,
) -> Result<RealCell, String> {
    let (producer_dedup, inbox, dedup_key) = place.knobs();
    let design = ConsumerDesign {
        inbox,
        dedup_key,
        provider: Provider::None,
    };
    let broker = Broker::connect(url)?;
    let queue = broker.queue(
        &format!("W{index}"),
        QueueOptions {
            duplicate_window: config.window,
            ack_wait: config.ack_wait,
            max_deliver: i64::from(config.max_receives),
        },
    )?;
    let path = folder.join(format!("window-{index}.db"));
    SqliteStore::create(&path).map_err(|e| e.to_string())?;
    let connect = || SqliteStore::open(&path, Clock::default()).map_err(|e| e.to_string());
    let events = config.events_per_cell;
    let stream_of = |event: u32| (index as u64 * u64::from(events) + u64::from(event)) * 64;
    let started = Instant::now();
    // Every event now; its copy after its drawn delay (the simulation's first draw of the run).
    let mut republish_at = Vec::new();
    let mut copy_of = BTreeMap::new();
    for event in 0..events {
        let id = format!("ev-{event}");
        let message_id = (producer_dedup == ProducerDedup::Window).then_some(id.as_str());
        let published = queue.publish(&id, message_id, "{}")?;
        copy_of.insert(published.sequence, (event, 0u64));
        let jitter: f64 = run_rng(config.seed, stream_of(event)).random_range(0.5..1.5);
        republish_at.push((config.window.mul_f64(ratio * jitter), event));
    }
    republish_at.sort_by_key(|at| at.0);
    let mut next_republish = 0;
    let mut copies_forwarded = 0;
    let mut last_activity = Instant::now();
    let quiet = config.ack_wait * 2 + Duration::from_millis(300);
    let before_effect_rows = inbox
        .commits()
        .iter()
        .take_while(|commit| !commit.effect)
        .count();
    loop {
        while next_republish < republish_at.len()
            && started.elapsed() >= republish_at[next_republish].0
        {
            let event = republish_at[next_republish].1;
            let id = format!("ev-{event}");
            let message_id = (producer_dedup == ProducerDedup::Window).then_some(id.as_str());
            let published = queue.publish(&id, message_id, "{}")?;
            if !published.duplicate {
                copies_forwarded += 1;
                copy_of.insert(published.sequence, (event, 1));
            }
            next_republish += 1;
            last_activity = Instant::now();
        }
        let done_publishing = next_republish == republish_at.len();
        if done_publishing && last_activity.elapsed() > quiet {
            break;
        }
        let Some(received) = queue.fetch(Duration::from_millis(50))? else {
            continue;
        };
        last_activity = Instant::now();
        let delivery = received.delivery.clone();
        let (event, copy) = copy_of[&delivery.stream_sequence];
        let stream = stream_of(event) + 1 + copy * 16 + delivery.delivered;
        let fate = fate(config, stream, inbox.commits().len());
        let mut consumer = Consumer::new(connect()?, design, delivery);
        let mut commits = 0;
        let reply = loop {
            if fate.crash_after == Some(commits) {
                break None;
            }
            let before = consumer.phase();
            let reply = consumer.step().map_err(|e| e.to_string())?;
            commits += commits_in(before, consumer.phase(), before_effect_rows);
            if reply.is_some() {
                break reply;
            }
        };
        match reply {
            None => consumer.crash(),
            Some(_) if fate.ack_lost => {}
            Some(_) => queue.ack(&received.message)?,
        }
    }
    let mut effects: BTreeMap<String, u32> = BTreeMap::new();
    for event in connect()?.effects(EFFECTS).map_err(|e| e.to_string())? {
        *effects.entry(event).or_default() += 1;
    }
    queue.delete()?;
    Ok(RealCell {
        place,
        ratio,
        events,
        duplicates: effects.values().filter(|count| **count >= 2).count() as u32,
        copies_forwarded,
    })
}
