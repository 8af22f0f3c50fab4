//! A queue world's trace (a shortest counterexample, a scenario's example) driven against nats-server and a real
//! database in lockstep. Each model action becomes what it stands for on the real broker:
//! - `Send`: the producer publishes the event (a client producer with its `Nats-Msg-Id`; an outbox producer
//!   commits its outbox row and the relay publishes it, crashing at its failpoint when the trace later has the
//!   relay republish);
//! - `Republish`: the producer publishes again: the same `Nats-Msg-Id` inside the window, the same id after it
//!   (`late`: the driver waits the duplicate window out), a new session's id (`restarted`), or the restarted relay
//!   publishing the row still unsent; the broker's answer (stored or duplicate) must be the model's;
//! - `DeliverRequest`: consumer process `proc` fetches from the pull consumer; the message (stream sequence) and
//!   its delivery count must be the model's; a redelivery comes only once the ack wait of the delivery before it
//!   ran out, which the driver waits for;
//! - `Step`, `Crash`: the consumer's next step on its own connection, or the consumer dropped with its open
//!   transaction;
//! - `DeliverResponse`: the ack reaches the broker (a confirmed ack); `Drop` of a response: it never is sent;
//! - `Timeout`: nothing at once (the broker redelivers when a consumer next fetches, after the ack wait).
//!
//! Model time is abstract and real time is not: between two model actions a delivery's ack wait must not run out
//! unless the model says so. While the driver waits (for a redelivery, for a window), every other delivery that
//! is not acked is kept invisible by an in-progress ack (`+WPI`, "still working"), as the model's visibility
//! timeout has not fired for it. After every step the real effects and provider charges must equal the model's.

use super::broker::{Broker, Queue, QueueOptions};
use super::consumer::{Consumer, ConsumerDesign, Phase};
pub use super::outcome::EventOutcome;
use super::outcome::Seen;
use super::relay::{self, Failpoint};
use crate::builtin::{
    Action, Event, Events, JobStep, Message, Proc, Producer, ProducerDedup, QueueWorld, State,
};
use crate::protocol::status;
use crate::runner::lockstep::Backend;
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

/// Real-time settings of a drive.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Timing {
    /// The consumer's ack wait (the visibility timeout).
    pub ack_wait: Duration,
    /// Slack added to every wait for the broker's timers.
    pub margin: Duration,
}

impl Default for Timing {
    fn default() -> Timing {
        Timing {
            ack_wait: Duration::from_millis(500),
            margin: Duration::from_millis(150),
        }
    }
}

/// JetStream's least duplicate window: a broker without producer dedup is a stream whose window every
/// republish comes after.
const WINDOW_MIN: Duration = Duration::from_millis(100);

/// What a drive saw.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct QueueRun {
    pub real: EventOutcome,
    pub model: EventOutcome,
    /// Effect rows after each step (equal to the model's, or the drive stopped with an error).
    pub effects_per_step: Vec<usize>,
    /// The stream's duplicate window.
    pub window: Duration,
    /// One line per step: the action and what the broker or the database did.
    pub log: Vec<String>,
}

struct Live<S> {
    consumer: Consumer<S>,
    sequence: u64,
    copy: u8,
}

/// A delivery not acked: the broker's handle on its latest delivery, and when its ack wait last started.
struct Outstanding {
    message: async_nats::jetstream::Message,
    touched: Instant,
}

struct Driver<'a, B: Backend> {
    world: &'a QueueWorld,
    backend: &'a B,
    queue: Queue<'a>,
    timing: Timing,
    window: Duration,
    design: ConsumerDesign,
    state: State,
    procs: Vec<Option<Live<B::Store>>>,
    /// The stream sequence of the original (index 0) and of each copy the broker stored.
    copies: Vec<u64>,
    deliveries: BTreeMap<u64, u64>,
    outstanding: BTreeMap<u64, Outstanding>,
    /// Acks the consumers sent that the broker has not received: by attempt, the stream sequence.
    acks: BTreeMap<u8, u64>,
    /// When each message id was last stored.
    stored_at: BTreeMap<String, Instant>,
    session: u32,
    /// The relay crashes at its failpoint on the first publish (the trace has it republish).
    relay_crashes: bool,
    real: Seen,
    model: Seen,
    log: Vec<String>,
}

/// The event's id (the model's name for it).
const EVENT_ID: &str = "E1";

/// The consumer design a queue world's knobs describe.
pub fn design_of(world: &QueueWorld) -> ConsumerDesign {
    let config = world.server().config();
    ConsumerDesign {
        inbox: config.inbox,
        dedup_key: config.dedup_key,
        provider: world.provider(),
    }
}

/// Drive `actions` of `world` against the broker (on a new stream `stream`) and `backend`, with the consumer
/// the world describes; an error names the step where real code and model parted.
pub fn drive<B: Backend>(
    world: &QueueWorld,
    backend: &B,
    broker: &Broker,
    stream: &str,
    actions: &[Action],
    timing: Timing,
) -> Result<QueueRun, String> {
    drive_with(
        world,
        design_of(world),
        backend,
        broker,
        stream,
        actions,
        timing,
    )
}

/// `drive` with a real consumer of another design than the world's (a negative control: the lockstep
/// comparison must catch the difference).
pub fn drive_with<B: Backend>(
    world: &QueueWorld,
    design: ConsumerDesign,
    backend: &B,
    broker: &Broker,
    stream: &str,
    actions: &[Action],
    timing: Timing,
) -> Result<QueueRun, String> {
    let clients = world.clients();
    if clients.count != 1 || clients.operations.len() != 1 {
        return Err("the real queue drives one producer with one event".to_string());
    }
    let window = window_for(world, actions, timing);
    let options = QueueOptions {
        duplicate_window: window,
        ack_wait: timing.ack_wait,
        max_deliver: i64::from(clients.attempts_max),
    };
    let queue = broker.queue(stream, options)?;
    let relay_crashes = actions
        .iter()
        .any(|action| matches!(action, Action::Republish { .. }));
    let mut driver = Driver {
        world,
        backend,
        queue,
        timing,
        window,
        design,
        state: world.init_state(),
        procs: (0..world.processes()).map(|_| None).collect(),
        copies: Vec::new(),
        deliveries: BTreeMap::new(),
        outstanding: BTreeMap::new(),
        acks: BTreeMap::new(),
        stored_at: BTreeMap::new(),
        session: 0,
        relay_crashes,
        real: Seen::default(),
        model: Seen::default(),
        log: Vec::new(),
    };
    let mut effects_per_step = Vec::new();
    for (index, action) in actions.iter().enumerate() {
        let step = index + 1;
        let did = driver
            .step(action)
            .map_err(|error| format!("step {step} {action:?}: {error}"))?;
        driver.log.push(format!("{step:>2}. {action:?}: {did}"));
        let effects = driver
            .check_counts()
            .map_err(|e| format!("step {step}: {e}"))?;
        effects_per_step.push(effects);
        driver.touch(None)?;
    }
    let run = QueueRun {
        real: driver.real.outcome(),
        model: driver.model.outcome(),
        effects_per_step,
        window,
        log: std::mem::take(&mut driver.log),
    };
    driver.procs.clear();
    driver.outstanding.clear();
    driver.queue.delete()?;
    Ok(run)
}

/// The stream's duplicate window: JetStream's least without producer dedup; with it, longer than every wait
/// the trace makes (a republish the model keeps inside the window must be inside it for real).
fn window_for(world: &QueueWorld, actions: &[Action], timing: Timing) -> Duration {
    let config = world.server().config();
    if config.producer_dedup == ProducerDedup::None {
        return WINDOW_MIN;
    }
    let deliveries = actions
        .iter()
        .filter(|action| matches!(action, Action::DeliverRequest { .. }))
        .count() as u32;
    (timing.ack_wait + timing.margin) * deliveries + Duration::from_secs(1)
}

impl<B: Backend> Driver<'_, B> {
    fn step(&mut self, action: &Action) -> Result<String, String> {
        let before = self.state.clone();
        let events = self.world.apply(&mut self.state, action);
        self.model.model(events, &self.state);
        match *action {
            Action::Send { client } => self.publish_first(client),
            Action::Timeout { .. } if events.has(Event::RetryAfterTimeout) => {
                Ok("the broker will redeliver once the ack wait is over".to_string())
            }
            Action::Timeout { .. } => {
                // Maximum deliveries reached: the broker redelivers it no more (its dead-letter advisory).
                let sequence = self.copies[0];
                self.outstanding.remove(&sequence);
                Ok("max-deliver reached: no more deliveries".to_string())
            }
            Action::DeliverRequest { request, proc } => self.deliver(request, proc),
            Action::Step { proc } => self.consumer_step(&before, proc, events),
            Action::Crash { proc } => {
                let live = self.procs[proc as usize]
                    .take()
                    .ok_or("no consumer running")?;
                let phase = live.consumer.phase();
                live.consumer.crash();
                Ok(format!("consumer P{} dropped at {phase:?}", proc + 1))
            }
            Action::DeliverResponse { response } => {
                let sequence = self
                    .acks
                    .remove(&response.attempt)
                    .ok_or("no ack was sent")?;
                let outstanding = self
                    .outstanding
                    .remove(&sequence)
                    .ok_or("the acked delivery is not outstanding")?;
                self.queue.ack(&outstanding.message)?;
                Ok(format!("ack of stream sequence {sequence} confirmed"))
            }
            Action::Drop {
                message: Message::Response(response),
            } => {
                self.acks.remove(&response.attempt);
                Ok("the ack is never sent".to_string())
            }
            Action::Republish {
                client,
                late,
                restarted,
            } => self.republish(client, late, restarted, events),
            _ => Err("no real counterpart in a queue world".to_string()),
        }
    }

    /// The real effects and charges must be the model's; the effects.
    fn check_counts(&mut self) -> Result<usize, String> {
        let effects = self.backend.effects().map_err(|e| e.to_string())?;
        let charges = self.backend.charges().map_err(|e| e.to_string())?;
        let model_effects = self.state.effects();
        let model_charges = self.state.store.provider_charges.len();
        if (effects, charges) != (model_effects, model_charges) {
            return Err(format!(
                "real effects {effects} and charges {charges}, model {model_effects} and {model_charges}"
            ));
        }
        self.real.duplicated |= effects > 1 || charges > 1;
        self.real.effects = effects;
        for (proc, live) in self.procs.iter().enumerate() {
            let model = match self.state.procs[proc] {
                Proc::Busy(job) => Some(phase_of(job.step)),
                Proc::Idle => None,
            };
            let real = live.as_ref().map(|live| live.consumer.phase());
            if model != real {
                return Err(format!("P{} is at {real:?}, model {model:?}", proc + 1));
            }
        }
        Ok(effects)
    }

    fn body(&self) -> String {
        self.world
            .body_text(self.world.clients().operations[0].body)
            .to_string()
    }

    /// The dedup id a client producer puts on its publish: the event id for a window, the session and the
    /// event's sequence in it for a Kafka-style session (JetStream has no sessions: a restart's new id is what
    /// makes its republish new), none without producer dedup.
    fn message_id(&self) -> Option<String> {
        match self.world.server().config().producer_dedup {
            ProducerDedup::None => None,
            ProducerDedup::Window => Some(EVENT_ID.to_string()),
            ProducerDedup::Session => Some(format!("producer-session-{}:seq-1", self.session)),
        }
    }

    fn publish_first(&mut self, client: u8) -> Result<String, String> {
        let body = self.body();
        let (published, how) = match self.world.server().config().producer {
            Producer::Client => {
                let id = self.message_id();
                let published = self.queue.publish(EVENT_ID, id.as_deref(), &body)?;
                if let Some(id) = id {
                    self.stored_at.insert(id, Instant::now());
                }
                (published, "the producer publishes")
            }
            Producer::OutboxRelay => {
                let mut store = self.backend.connect().map_err(|e| e.to_string())?;
                relay::enqueue(&mut store, EVENT_ID, &body).map_err(|e| e.to_string())?;
                let failpoint = match self.relay_crashes {
                    true => Failpoint::CrashAfterPublish,
                    false => Failpoint::None,
                };
                let run = relay::relay_once(&mut store, &mut self.queue, failpoint)?;
                let [(_, published)] = run.published[..] else {
                    return Err(format!("the relay published {:?}", run.published));
                };
                self.stored_at.insert(EVENT_ID.to_string(), Instant::now());
                let how = match run.crashed {
                    true => "the outbox row commits; the relay publishes it and CRASHES before marking it sent",
                    false => "the outbox row commits; the relay publishes it and marks it sent",
                };
                (published, how)
            }
        };
        debug_assert_eq!(client, 0);
        if published.duplicate {
            return Err("the broker took the first publish for a duplicate".to_string());
        }
        self.copies.push(published.sequence);
        Ok(format!("{how}: stream sequence {}", published.sequence))
    }

    fn republish(
        &mut self,
        client: u8,
        late: bool,
        restarted: bool,
        events: Events,
    ) -> Result<String, String> {
        debug_assert_eq!(client, 0);
        let config = self.world.server().config();
        let accepted_by_model = events.has(Event::Republished);
        if !accepted_by_model && !events.has(Event::ProducerDeduplicated) {
            return Ok("nothing to republish yet".to_string());
        }
        let relay = config.producer == Producer::OutboxRelay;
        if restarted && !relay {
            self.session += 1;
        }
        let id = match relay {
            true => Some(EVENT_ID.to_string()),
            false => self.message_id(),
        };
        let waited = self.wait_for_window(id.as_deref(), late)?;
        let published = self.publish_again(relay, id.as_deref())?;
        if published.duplicate == accepted_by_model {
            return Err(format!(
                "the broker answered duplicate={}, the model {}",
                published.duplicate,
                if accepted_by_model {
                    "accepts the copy"
                } else {
                    "drops it"
                }
            ));
        }
        if published.duplicate {
            self.real.absorbed = true;
            return Ok(format!(
                "the broker recognises the Nats-Msg-Id {id:?}{waited}: duplicate, nothing stored"
            ));
        }
        self.copies.push(published.sequence);
        let what = format!(
            "the broker stores copy {} (Nats-Msg-Id {id:?}{waited}) at stream sequence {}",
            self.copies.len() - 1,
            published.sequence
        );
        if let Some(id) = id {
            self.stored_at.insert(id, Instant::now());
        }
        Ok(what)
    }

    /// Before a republish of message id `id`: wait the window out if the model has the republish come after it
    /// (`late`, or no producer dedup); or check that it still comes inside it. What was waited, for the log.
    fn wait_for_window(&mut self, id: Option<&str>, late: bool) -> Result<String, String> {
        let Some(stored) = id.and_then(|id| self.stored_at.get(id)).copied() else {
            return Ok(String::new());
        };
        // Without producer dedup the window is the least JetStream has, and a relay's restart outlasts it.
        if late || self.world.server().config().producer_dedup == ProducerDedup::None {
            self.wait_until(stored + self.window + self.timing.margin, None)?;
            return Ok(format!(" after the {:?} window ran out", self.window));
        }
        if stored.elapsed() + self.timing.margin >= self.window {
            return Err(format!(
                "the republish the model keeps inside the window comes {:?} after the first, window {:?}",
                stored.elapsed(),
                self.window
            ));
        }
        Ok(String::new())
    }

    /// The producer's second publish: the restarted relay publishing the row still unsent, or the client
    /// publishing again with message id `id`.
    fn publish_again(&mut self, relay: bool, id: Option<&str>) -> Result<relay::Published, String> {
        if !relay {
            let body = self.body();
            return self.queue.publish(EVENT_ID, id, &body);
        }
        let mut store = self.backend.connect().map_err(|e| e.to_string())?;
        let run = relay::relay_once(&mut store, &mut self.queue, Failpoint::None)?;
        match run.published[..] {
            [(_, published)] => Ok(published),
            _ => Err(format!("the restarted relay published {:?}", run.published)),
        }
    }

    fn deliver(&mut self, request: crate::builtin::Request, proc: u8) -> Result<String, String> {
        let sequence = *self
            .copies
            .get(request.copy as usize)
            .ok_or("the broker stored no such copy")?;
        let before = self.deliveries.get(&sequence).copied().unwrap_or(0);
        if before > 0 {
            // A redelivery: the delivery before it is let go, and its ack wait runs out.
            let touched = self
                .outstanding
                .get(&sequence)
                .ok_or("a redelivery of a message that was acked")?
                .touched;
            self.wait_until(
                touched + self.timing.ack_wait + self.timing.margin,
                Some(sequence),
            )?;
        }
        let wait = self.timing.ack_wait * 3 + Duration::from_secs(1);
        let received = self
            .queue
            .fetch(wait)?
            .ok_or_else(|| format!("no delivery within {wait:?}"))?;
        let delivery = received.delivery.clone();
        let expected_count = match request.copy {
            0 => u64::from(request.attempt),
            _ => before + 1,
        };
        if (delivery.stream_sequence, delivery.delivered) != (sequence, expected_count) {
            return Err(format!(
                "the broker delivered stream sequence {} (delivery {}), the model sequence {sequence} (delivery {expected_count})",
                delivery.stream_sequence, delivery.delivered
            ));
        }
        self.deliveries.insert(sequence, expected_count);
        self.outstanding.insert(
            sequence,
            Outstanding {
                message: received.message,
                touched: Instant::now(),
            },
        );
        let store = self.backend.connect().map_err(|e| e.to_string())?;
        let key = self.design.inbox_key(&delivery);
        self.procs[proc as usize] = Some(Live {
            consumer: Consumer::new(store, self.design, delivery.clone()),
            sequence,
            copy: request.copy,
        });
        Ok(format!(
            "P{} fetches stream sequence {sequence}, delivery {expected_count}, consumer sequence {} (inbox key {key})",
            proc + 1,
            delivery.consumer_sequence
        ))
    }

    fn consumer_step(
        &mut self,
        before: &State,
        proc: u8,
        events: Events,
    ) -> Result<String, String> {
        let charges_before = self.backend.charges().map_err(|e| e.to_string())?;
        let live = self.procs[proc as usize]
            .as_mut()
            .ok_or("no consumer running")?;
        let phase = live.consumer.phase();
        let reply = live.consumer.step().map_err(|e| e.to_string())?;
        if phase == Phase::Provider
            && self.backend.charges().map_err(|e| e.to_string())? == charges_before
        {
            self.real.absorbed = true;
        }
        let Some(reply) = reply else {
            return Ok(format!("P{} {phase:?} done", proc + 1));
        };
        let model_code = match events.has(Event::Replay) || events.has(Event::InboxConflict) {
            true => status::OK_REPLAY,
            false => status::CREATED,
        };
        if reply.status != model_code {
            return Err(format!("real reply {}, model {model_code}", reply.status));
        }
        if self.backend.effects().map_err(|e| e.to_string())? == 0 {
            self.real.lost = true;
        }
        self.real.absorbed |= reply.status == status::OK_REPLAY;
        let live = self.procs[proc as usize].take().expect("running");
        let Proc::Busy(job) = before.procs[proc as usize] else {
            return Err("the model's process was idle".to_string());
        };
        let what = if reply.status == status::OK_REPLAY {
            "acks without processing"
        } else {
            "processed"
        };
        if live.copy > 0 {
            // A copy has no delivery loop in the model: once handled it is acked and done.
            let outstanding = self
                .outstanding
                .remove(&live.sequence)
                .ok_or("the copy's delivery is not outstanding")?;
            self.queue.ack(&outstanding.message)?;
            return Ok(format!("P{} {what}; the copy's ack is confirmed", proc + 1));
        }
        let sent = self.state.network.keys().any(|message| {
            matches!(message, Message::Response(response) if response.attempt == job.request.attempt)
        });
        if sent {
            self.acks.insert(job.request.attempt, live.sequence);
            return Ok(format!("P{} {what}; its ack is on its way", proc + 1));
        }
        Ok(format!(
            "P{} {what}; that delivery was given up on, no ack",
            proc + 1
        ))
    }

    /// Restart the ack wait of every delivery not acked (but `except`) whose wait is a third gone.
    fn touch(&mut self, except: Option<u64>) -> Result<(), String> {
        let due = self.timing.ack_wait / 3;
        for (sequence, outstanding) in self.outstanding.iter_mut() {
            if Some(*sequence) != except && outstanding.touched.elapsed() >= due {
                self.queue.in_progress(&outstanding.message)?;
                outstanding.touched = Instant::now();
            }
        }
        Ok(())
    }

    /// Wait until `deadline`, keeping every other delivery not acked from being redelivered meanwhile.
    fn wait_until(&mut self, deadline: Instant, except: Option<u64>) -> Result<(), String> {
        loop {
            self.touch(except)?;
            let now = Instant::now();
            if now >= deadline {
                return Ok(());
            }
            std::thread::sleep((deadline - now).min(self.timing.ack_wait / 4));
        }
    }
}

/// The consumer phase a model job step stands for.
fn phase_of(step: JobStep) -> Phase {
    match step {
        JobStep::Claim | JobStep::Insert => Phase::Claim,
        JobStep::Provider => Phase::Provider,
        JobStep::Effect => Phase::Effect,
        JobStep::Commit => Phase::Commit,
        JobStep::CompleteKv { .. } => Phase::CompleteRow,
        JobStep::Respond { .. } => Phase::Respond,
    }
}
