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

use crate::dedup_window::Place;
use crate::handler::Clock;
use crate::protocol::{ProducerDedup, Provider};
use crate::sim::kernel::run_rng;
use rand::Rng;
use retrylab_real::queue_real::broker::{Broker, Queue, QueueOptions, Received};
use retrylab_real::queue_real::consumer::{Consumer, ConsumerDesign, Phase, EFFECTS};
use retrylab_real::stores::sqlite::SqliteStore;
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
    pub receives_max: u32,
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
            receives_max: 5,
            ack_wait: Duration::from_millis(300),
        }
    }
}

/// Bounds on one fetch's wait for a delivery (JetStream refuses a pull request that expires in under 1 ms).
const FETCH_WAIT_MIN: Duration = Duration::from_millis(2);
const FETCH_WAIT_MAX: Duration = Duration::from_millis(50);

/// One cell's count.
#[derive(Clone, Debug, PartialEq)]
pub struct RealCell {
    pub place: Place,
    pub ratio: f64,
    pub events: u32,
    pub duplicates: u32,
    /// Copies the broker stored as new messages.
    pub copies_forwarded: u32,
    /// Copies whose publish was answered before `window` had passed since their original's publish began: the
    /// broker certainly had both inside one window, whatever the machine's stalls did to the drawn delays.
    pub copies_inside_window: u32,
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
                scope.spawn(move || {
                    run_cell(url, folder, index, place, ratio, config)
                        .map_err(|e| format!("cell {index} ({place:?} at ratio {ratio}): {e}"))
                })
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

/// One delivery handled to its fate: crashed at its commit boundary, or processed and then acked or not.
fn handle(
    mut consumer: Consumer<SqliteStore>,
    fate: &Fate,
    before_effect_rows: usize,
    queue: &Queue<'_>,
    received: &Received,
) -> Result<(), String> {
    let mut commits = 0;
    loop {
        if fate.crash_after == Some(commits) {
            consumer.crash();
            return Ok(());
        }
        let before = consumer.phase();
        let reply = consumer.step().map_err(|e| e.to_string())?;
        commits += commits_in(before, consumer.phase(), before_effect_rows);
        if reply.is_some() {
            break;
        }
    }
    match fate.ack_lost {
        true => Ok(()),
        false => queue.ack(&received.message),
    }
}

/// When each event's copy is due, which event and copy each stream sequence holds, and when each event's
/// original publish began.
struct Plan {
    republish_at: Vec<(Duration, u32)>,
    copy_of: BTreeMap<u64, (u32, u64)>,
    published_from: Vec<Duration>,
}

/// Every event now; its copy after its drawn delay (the simulation's first draw of the run), counted from the
/// event's own publish (its id's window started then).
fn publish_originals(
    queue: &Queue<'_>,
    config: &RealConfig,
    ratio: f64,
    producer_dedup: ProducerDedup,
    stream_of: impl Fn(u32) -> u64,
    started: Instant,
) -> Result<Plan, String> {
    let mut republish_at = Vec::new();
    let mut copy_of = BTreeMap::new();
    let mut published_from = Vec::new();
    for event in 0..config.events_per_cell {
        let id = format!("ev-{event}");
        let message_id = (producer_dedup == ProducerDedup::Window).then_some(id.as_str());
        published_from.push(started.elapsed());
        let published = queue.publish(&id, message_id, "{}")?;
        let published_at = started.elapsed();
        copy_of.insert(published.sequence, (event, 0u64));
        let jitter: f64 = run_rng(config.seed, stream_of(event)).random_range(0.5..1.5);
        republish_at.push((published_at + config.window.mul_f64(ratio * jitter), event));
    }
    republish_at.sort_by_key(|at| at.0);
    Ok(Plan {
        republish_at,
        copy_of,
        published_from,
    })
}

/// Events with two effects or more.
fn duplicates(store: &SqliteStore) -> Result<u32, String> {
    let mut effects: BTreeMap<String, u32> = BTreeMap::new();
    for event in store.effects(EFFECTS).map_err(|e| e.to_string())? {
        *effects.entry(event).or_default() += 1;
    }
    Ok(effects.values().filter(|count| **count >= 2).count() as u32)
}

/// The cell's own stream and pull consumer, with the cell's window, ack wait and receive count.
fn open_queue<'b>(
    broker: &'b Broker,
    index: usize,
    config: &RealConfig,
) -> Result<Queue<'b>, String> {
    broker.queue(
        &format!("W{index}"),
        QueueOptions {
            duplicate_window: config.window,
            ack_wait: config.ack_wait,
            max_deliver: i64::from(config.receives_max),
        },
    )
}

/// The republishes sent so far: the next one due, and how many the broker forwarded or got inside the window.
#[derive(Default)]
struct Republished {
    next: usize,
    forwarded: u32,
    inside_window: u32,
}

impl Plan {
    /// Sends every republish now due (the event's id as its message id under window dedup); whether any was.
    fn send_due(
        &mut self,
        queue: &Queue<'_>,
        config: &RealConfig,
        producer_dedup: ProducerDedup,
        started: Instant,
        sent: &mut Republished,
    ) -> Result<bool, String> {
        let first = sent.next;
        while sent.next < self.republish_at.len()
            && started.elapsed() >= self.republish_at[sent.next].0
        {
            let event = self.republish_at[sent.next].1;
            let id = format!("ev-{event}");
            let message_id = (producer_dedup == ProducerDedup::Window).then_some(id.as_str());
            let published = queue.publish(&id, message_id, "{}")?;
            if started.elapsed() < self.published_from[event as usize] + config.window {
                sent.inside_window += 1;
            }
            if !published.duplicate {
                sent.forwarded += 1;
                self.copy_of.insert(published.sequence, (event, 1));
            }
            sent.next += 1;
        }
        Ok(sent.next > first)
    }
}

/// How long the cell must be quiet (nothing published, nothing handled) to be over, and when to stop anyway.
fn quiet_and_give_up(config: &RealConfig) -> (Duration, Duration) {
    let quiet = config.ack_wait * 2 + Duration::from_millis(300);
    // Only a broker that never reports its consumer idle needs this: 30 s past every receive's ack wait, since a
    // stalled machine has held one broker call past 5 s.
    let give_up = quiet + config.ack_wait * config.receives_max + Duration::from_secs(30);
    (quiet, give_up)
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
    let queue = open_queue(&broker, index, config)?;
    let path = folder.join(format!("window-{index}.db"));
    SqliteStore::create(&path).map_err(|e| e.to_string())?;
    let connect = || SqliteStore::open(&path, Clock::default()).map_err(|e| e.to_string());
    let events = config.events_per_cell;
    let stream_of = |event: u32| (index as u64 * u64::from(events) + u64::from(event)) * 64;
    let started = Instant::now();
    let mut plan = publish_originals(&queue, config, ratio, producer_dedup, stream_of, started)?;
    let mut sent = Republished::default();
    let mut last_activity = Instant::now();
    let (quiet, give_up) = quiet_and_give_up(config);
    let before_effect_rows = inbox.commits().iter().take_while(|c| !c.effect).count();
    loop {
        if plan.send_due(&queue, config, producer_dedup, started, &mut sent)? {
            last_activity = Instant::now();
        }
        let done_publishing = sent.next == plan.republish_at.len();
        // Quiet on this side is not enough: a stalled machine (a slow fsync) can make a pending redelivery look
        // late. The broker says whether one is still due; past `give_up` (every receive used), stop anyway.
        if done_publishing
            && last_activity.elapsed() > quiet
            && (queue.outstanding()? == 0 || last_activity.elapsed() > give_up)
        {
            break;
        }
        // Wait for a delivery no longer than until the next republish is due, so republishes go out on time.
        let until_republish = plan
            .republish_at
            .get(sent.next)
            .map_or(FETCH_WAIT_MAX, |at| at.0.saturating_sub(started.elapsed()));
        let wait = until_republish.clamp(FETCH_WAIT_MIN, FETCH_WAIT_MAX);
        let Some(received) = queue.fetch(wait)? else {
            continue;
        };
        let delivery = received.delivery.clone();
        let (event, copy) = plan.copy_of[&delivery.stream_sequence];
        let stream = stream_of(event) + 1 + copy * 16 + delivery.delivered;
        let fate = fate(config, stream, inbox.commits().len());
        let consumer = Consumer::new(connect()?, design, delivery);
        handle(consumer, &fate, before_effect_rows, &queue, &received)?;
        // Quiet counts from the end of the handling, however long its commits took.
        last_activity = Instant::now();
    }
    let duplicates = duplicates(&connect()?)?;
    queue.delete()?;
    Ok(RealCell {
        place,
        ratio,
        events,
        duplicates,
        copies_forwarded: sent.forwarded,
        copies_inside_window: sent.inside_window,
    })
}

/// One cell of the comparison: the real count beside the simulation's at the same settings.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct Compared {
    pub place: &'static str,
    pub delay_over_window: f64,
    pub window_s: f64,
    pub events: u32,
    pub duplicates: u32,
    pub p_real: f64,
    pub ci95_low: f64,
    pub ci95_high: f64,
    pub copies_forwarded: u32,
    pub simulated_runs: u32,
    pub p_simulated: f64,
    pub simulated_ci95_low: f64,
    pub simulated_ci95_high: f64,
    /// The two 95% intervals overlap.
    pub agrees: bool,
}

/// The simulation's cells at the real grid's settings (producer retries, the real window), `runs` each.
pub fn simulated(config: &RealConfig, runs: u32) -> Vec<crate::dedup_window::Cell> {
    use crate::dedup_window::{self as simulation, At, Cause};
    let sim_config = simulation::Config {
        window_ms: config.window.as_secs_f64() * 1000.0,
        ratios: config.ratios.clone(),
        crash_probability: config.crash_probability,
        ack_loss_probability: config.ack_loss_probability,
        receives_max: config.receives_max,
    };
    let mut cells = Vec::new();
    for &place in &config.places {
        for &ratio in &config.ratios {
            let at = At {
                cause: Cause::Retry,
                place,
                ratio,
            };
            let index = cells.len();
            let outcomes: Vec<(bool, bool)> = (0..runs)
                .map(|run| {
                    let mut rng = run_rng(config.seed, simulation::stream(index, runs, run));
                    simulation::run_once(at.cause, place, ratio, &sim_config, &mut rng)
                })
                .collect();
            cells.push(simulation::count(at, &outcomes));
        }
    }
    cells
}

/// Real cells beside simulated ones (the same order: place-major, then ratio).
pub fn compare(
    config: &RealConfig,
    real: &[RealCell],
    simulated: &[crate::dedup_window::Cell],
) -> Vec<Compared> {
    assert_eq!(
        real.len(),
        simulated.len(),
        "one simulated cell per real one"
    );
    real.iter()
        .zip(simulated)
        .map(|(real, sim)| {
            assert!(real.place == sim.place && real.ratio == sim.ratio);
            let (low, high) = crate::sim::stats::wilson_95(real.duplicates, real.events);
            let (sim_low, sim_high) = sim.wilson_95();
            Compared {
                place: real.place.name(),
                delay_over_window: real.ratio,
                window_s: config.window.as_secs_f64(),
                events: real.events,
                duplicates: real.duplicates,
                p_real: f64::from(real.duplicates) / f64::from(real.events),
                ci95_low: low,
                ci95_high: high,
                copies_forwarded: real.copies_forwarded,
                simulated_runs: sim.runs,
                p_simulated: sim.probability(),
                simulated_ci95_low: sim_low,
                simulated_ci95_high: sim_high,
                agrees: low <= sim_high && sim_low <= high,
            }
        })
        .collect()
}

/// `nats.md`: how the real figures were made, the agreement with the simulation, and the table.
pub fn report(
    config: &RealConfig,
    rows: &[Compared],
    simulated_runs: u32,
    elapsed: Duration,
) -> String {
    let agreeing = rows.iter().filter(|row| row.agrees).count();
    let mut text = format!(
        "# dedup-window on a real broker (nats-server)\n\n\
         Generated by `cargo run --example dedup_window_nats` (seed {seed}, {events} events per cell, {secs:.1} s of \
         wall clock). Do not edit: rerun.\n\n\
         The simulated experiment's question on NATS JetStream with the real consumer over SQLite \
         (`retrylab::queue_real::window`): each event is published, then published again by its producer after \
         {window:.1} s x delay/window x U(0.5, 1.5), with the event id as `Nats-Msg-Id` for the broker-window place \
         (the stream's duplicate window: {window:.1} s) and no id elsewhere. The consumer crashes with probability \
         {crash} at a uniformly chosen commit boundary and loses an ack with probability {loss}; the broker \
         redelivers after its ack wait ({ack_ms} ms), up to {receives} deliveries. Beside each cell: the simulation \
         (`experiments::dedup_window`, producer retry) at the same window and settings, {simulated_runs} runs.\n\n\
         **Agreement: {agreeing} of {cells} cells have overlapping 95% Wilson intervals.**",
        seed = config.seed,
        events = config.events_per_cell,
        secs = elapsed.as_secs_f64(),
        window = config.window.as_secs_f64(),
        crash = config.crash_probability,
        loss = config.ack_loss_probability,
        ack_ms = config.ack_wait.as_millis(),
        receives = config.receives_max,
        cells = rows.len(),
    );
    let disagreeing: Vec<String> = rows
        .iter()
        .filter(|row| !row.agrees)
        .map(|row| {
            format!(
                "{} at {} x window (real {:.3}, simulated {:.3})",
                row.place, row.delay_over_window, row.p_real, row.p_simulated
            )
        })
        .collect();
    if disagreeing.is_empty() {
        text.push_str(" The real broker shows what the simulation shows: the window protects inside itself and not after it, no dedup and an offset key duplicate every republished copy, the inbox after the effect only through crashes, the inbox in the effect's transaction never.\n\n");
    } else {
        text.push_str(&format!(" Apart: {}.\n\n", disagreeing.join("; ")));
    }
    text.push_str("| place | delay / window | real P(duplicate) [95%] | copies stored | simulated P(duplicate) [95%] | agree |\n");
    text.push_str("|---|---|---|---|---|---|\n");
    for row in rows {
        text.push_str(&format!(
            "| {} | {} | {:.3} [{:.3}, {:.3}] ({}/{}) | {} | {:.3} [{:.3}, {:.3}] | {} |\n",
            row.place,
            row.delay_over_window,
            row.p_real,
            row.ci95_low,
            row.ci95_high,
            row.duplicates,
            row.events,
            row.copies_forwarded,
            row.p_simulated,
            row.simulated_ci95_low,
            row.simulated_ci95_high,
            if row.agrees { "yes" } else { "no" }
        ));
    }
    text
}
