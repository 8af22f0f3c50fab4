//! A server with capacity, and clients with timeouts: the world of metastable failures
//! (Bronson et al., HotOS 2021) and of duplicate effects.
//!
//! The server has `workers` concurrent slots, a FIFO queue of at most `queue_len_max` requests,
//! exponential service times, and answers 503 at once when both are full. Its capacity drops to
//! `workers_degraded` slots during the trigger interval, then comes back. Clients send requests as
//! Poisson processes and time an attempt out after `timeout_ms`; the server does not know and
//! still does the abandoned work (throughput), which the client never uses (goodput counts only
//! successful answers that arrive in time). Every executed request performs an effect (say, a
//! payment): without an idempotency key a timed-out attempt that in fact executed plus its retry
//! make two effects; with a key the server decides with [`crate::protocol::decide`] and executes a
//! key at most once.

use std::collections::VecDeque;

use rand_chacha::ChaCha8Rng;
use rand_distr::{Distribution, Exp};

use crate::backoff::{AttemptKind, AttemptResult, Backoff, BackoffState, FailureKind, RetryGate};
use crate::client::{Client, PolicyKind};
use crate::protocol::{decide, Decision, RecordState};
use crate::sim::kernel::{ms_to_ns, ns_to_ms, Control, EventQueue, TimeNs, TimedWorld};

pub const CLIENTS_MAX: u32 = 10_000;
pub const WORKERS_MAX: u32 = 10_000;
pub const QUEUE_LEN_MAX: u32 = 1_000_000;
pub const DURATION_MS_MAX: f64 = 3_600_000.0;
/// Attempts in one run at most (memory bound: the attempt table).
pub const ATTEMPTS_PER_RUN_MAX: usize = 50_000_000;
const EVENTS_PER_RUN_MAX: u64 = 2_000_000_000;

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CapacityConfig {
    pub clients: u32,
    /// Requests per second of one client (Poisson).
    pub rate_per_s: f64,
    pub workers: u32,
    /// Workers during the trigger.
    pub workers_degraded: u32,
    pub queue_len_max: u32,
    pub service_ms_mean: f64,
    pub leg_ms: f64,
    pub timeout_ms: f64,
    pub trigger_start_ms: f64,
    pub trigger_ms: f64,
    /// No request starts after this; the run then drains.
    pub duration_ms: f64,
    /// Width of the time bins of goodput and throughput (must divide the trigger's ends).
    pub bin_ms: f64,
    pub backoff: Backoff,
    pub idempotency_key: bool,
}

impl CapacityConfig {
    /// 100 clients x 6 requests/s = 600 requests/s against 10 workers x 10 ms = 1000 requests/s
    /// (60% load); queue of 200 (200 ms of work), timeout 100 ms, legs of 5 ms; from 10 s to
    /// 20 s only 3 workers (300 requests/s); 60 s; full jitter 25 ms .. 1 s.
    pub fn standard(backoff: Backoff) -> Self {
        CapacityConfig {
            clients: 100,
            rate_per_s: 6.0,
            workers: 10,
            workers_degraded: 3,
            queue_len_max: 200,
            service_ms_mean: 10.0,
            leg_ms: 5.0,
            timeout_ms: 100.0,
            trigger_start_ms: 10_000.0,
            trigger_ms: 10_000.0,
            duration_ms: 60_000.0,
            bin_ms: 500.0,
            backoff,
            idempotency_key: false,
        }
    }

    pub fn trigger_end_ms(&self) -> f64 {
        self.trigger_start_ms + self.trigger_ms
    }

    pub fn bin_count(&self) -> usize {
        (self.duration_ms / self.bin_ms).ceil() as usize
    }

    pub fn validate(&self) -> Result<(), String> {
        let positive = |name: &str, v: f64, max: f64| {
            if v.is_finite() && v > 0.0 && v <= max {
                Ok(())
            } else {
                Err(format!("{name} must be in (0, {max}], got {v}"))
            }
        };
        if !(1..=CLIENTS_MAX).contains(&self.clients) {
            return Err(format!(
                "clients must be in 1..={CLIENTS_MAX}, got {}",
                self.clients
            ));
        }
        positive("rate_per_s", self.rate_per_s, 1000.0)?;
        if !(1..=WORKERS_MAX).contains(&self.workers) || self.workers_degraded > self.workers {
            return Err(format!(
                "workers must be in 1..={WORKERS_MAX} and workers_degraded <= workers, got {} and {}",
                self.workers, self.workers_degraded
            ));
        }
        if self.queue_len_max > QUEUE_LEN_MAX {
            return Err(format!(
                "queue_len_max must be <= {QUEUE_LEN_MAX}, got {}",
                self.queue_len_max
            ));
        }
        positive("service_ms_mean", self.service_ms_mean, 60_000.0)?;
        positive("timeout_ms", self.timeout_ms, 600_000.0)?;
        positive("duration_ms", self.duration_ms, DURATION_MS_MAX)?;
        positive("bin_ms", self.bin_ms, self.duration_ms)?;
        crate::check_leg_ms(self.leg_ms)?;
        if !(self.trigger_start_ms >= 0.0
            && self.trigger_ms >= 0.0
            && self.trigger_end_ms() <= self.duration_ms)
        {
            return Err("the trigger must lie inside the run".into());
        }
        Ok(())
    }
}

/// What one run measured.
#[derive(Clone, Debug, PartialEq)]
pub struct CapacityOutcome {
    /// Successful answers received before the timeout, per bin of the time they arrived.
    pub goodput_per_bin: Vec<u32>,
    /// Requests the server finished working on, useful or not, per bin.
    pub throughput_per_bin: Vec<u32>,
    pub request_count: u64,
    pub success_count: u64,
    pub attempt_count: u64,
    /// Attempts the client gave up on (timeout) whose work the server executed, with an effect.
    pub timed_out_executed_count: u64,
    pub effect_count: u64,
    /// Effects beyond the first, summed over requests.
    pub duplicate_effect_count: u64,
    pub rejected_count: u64,
    pub event_count: u64,
}

#[derive(Clone, Copy, Debug)]
enum Event {
    Arrival {
        client: u32,
    },
    /// Attempt `attempt` reaches the server.
    AtServer {
        attempt: u32,
    },
    /// A worker finishes attempt `attempt`.
    Done {
        attempt: u32,
    },
    /// An answer reaches the client.
    Answer {
        attempt: u32,
        answer: Answer,
    },
    /// The client's timer for `attempt` fires.
    Timeout {
        attempt: u32,
    },
    /// Request `request` sends its next attempt after the backoff.
    Resend {
        request: u32,
    },
    CapacityRestored,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Answer {
    /// 201 (executed now) or 200 (replayed by the key).
    Success,
    /// 503: queue full.
    Rejected,
    /// 409: the key's first attempt is still executing.
    Conflict,
}

struct Request {
    client: u32,
    started_ns: TimeNs,
    attempt_count: u32,
    next_kind: AttemptKind,
    backoff: BackoffState,
    effect_count: u32,
    /// The server's idempotency record for this request's key (key mode only).
    record: Option<RecordState<()>>,
}

struct Attempt {
    request: u32,
    kind: AttemptKind,
    /// Answered or timed out: later news about it is ignored by the client.
    resolved: bool,
    timed_out: bool,
}

struct World {
    config: CapacityConfig,
    clients: Vec<Client>,
    requests: Vec<Request>,
    attempts: Vec<Attempt>,
    queue_fifo: VecDeque<u32>,
    busy: u32,
    gap: Exp<f64>,
    service: Exp<f64>,
    outcome: CapacityOutcome,
}

impl World {
    fn leg_ns(&self) -> TimeNs {
        ms_to_ns(self.config.leg_ms)
    }

    fn workers_at(&self, now_ns: TimeNs) -> u32 {
        let now_ms = ns_to_ms(now_ns);
        if now_ms >= self.config.trigger_start_ms && now_ms < self.config.trigger_end_ms() {
            self.config.workers_degraded
        } else {
            self.config.workers
        }
    }

    fn bin(&self, now_ns: TimeNs) -> Option<usize> {
        let index = (ns_to_ms(now_ns) / self.config.bin_ms) as usize;
        (index < self.outcome.goodput_per_bin.len()).then_some(index)
    }

    fn send(&mut self, request: u32, kind: AttemptKind, queue: &mut EventQueue<Event>) {
        assert!(
            self.attempts.len() < ATTEMPTS_PER_RUN_MAX,
            "attempt bound reached"
        );
        let attempt = self.attempts.len() as u32;
        self.attempts.push(Attempt {
            request,
            kind,
            resolved: false,
            timed_out: false,
        });
        self.requests[request as usize].attempt_count += 1;
        self.outcome.attempt_count += 1;
        queue
            .schedule_after(self.leg_ns(), Event::AtServer { attempt })
            .expect("bounded queue");
        queue
            .schedule_after(ms_to_ns(self.config.timeout_ms), Event::Timeout { attempt })
            .expect("bounded queue");
    }

    fn answer(&self, attempt: u32, answer: Answer, queue: &mut EventQueue<Event>) {
        queue
            .schedule_after(self.leg_ns(), Event::Answer { attempt, answer })
            .expect("bounded queue");
    }

    /// A worker takes `attempt`. With a key, the protocol decides first; only an executing
    /// decision occupies the worker for a service time.
    fn start(&mut self, attempt: u32, queue: &mut EventQueue<Event>, rng: &mut ChaCha8Rng) {
        let request = self.attempts[attempt as usize].request as usize;
        if self.config.idempotency_key {
            let decision = decide(
                &(),
                self.requests[request].record.as_ref().map(|r| (&(), r)),
            );
            match decision {
                Decision::Execute | Decision::TakeOver => {
                    self.requests[request].record = Some(RecordState::InProgress {
                        lease_expired: false,
                    });
                }
                Decision::Replay(()) => return self.answer(attempt, Answer::Success, queue),
                Decision::InProgress => return self.answer(attempt, Answer::Conflict, queue),
                Decision::BodyMismatch => unreachable!("one body per key"),
            }
        }
        self.busy += 1;
        let service_ns = ms_to_ns(self.service.sample(rng));
        queue
            .schedule_after(service_ns, Event::Done { attempt })
            .expect("bounded queue");
    }

    /// Starts queued attempts while workers are free (bounded by the queue's length).
    fn fill_workers(&mut self, queue: &mut EventQueue<Event>, rng: &mut ChaCha8Rng) {
        while self.busy < self.workers_at(queue.now_ns()) {
            let Some(attempt) = self.queue_fifo.pop_front() else {
                break;
            };
            self.start(attempt, queue, rng);
        }
    }

    fn finish(&mut self, success: bool) {
        self.outcome.request_count += 1;
        self.outcome.success_count += u64::from(success);
    }

    /// The client learned that `attempt` failed: retry if its policy and control allow.
    fn failed(
        &mut self,
        attempt: u32,
        failure: FailureKind,
        queue: &mut EventQueue<Event>,
        rng: &mut ChaCha8Rng,
    ) {
        let now_ns = queue.now_ns();
        let now_ms = ns_to_ms(now_ns);
        let a = &self.attempts[attempt as usize];
        let request = a.request;
        let r = &mut self.requests[request as usize];
        let client = &mut self.clients[r.client as usize];
        client
            .control
            .record(now_ms, a.kind, AttemptResult::Failure(failure));
        let elapsed_ms = ns_to_ms(now_ns - r.started_ns);
        match client.after_failure(
            &mut r.backoff,
            r.attempt_count,
            elapsed_ms,
            now_ms,
            failure,
            rng,
        ) {
            Some((delay_ms, kind)) => {
                r.next_kind = kind;
                queue
                    .schedule_after(ms_to_ns(delay_ms), Event::Resend { request })
                    .expect("bounded queue");
            }
            None => self.finish(false),
        }
    }
}

impl TimedWorld for World {
    type Event = Event;
    type Queue = EventQueue<Event>;

    fn start(&mut self, queue: &mut EventQueue<Event>, rng: &mut ChaCha8Rng) {
        for client in 0..self.config.clients {
            let at_ns = ms_to_ns(self.gap.sample(rng));
            queue
                .schedule_at(at_ns, Event::Arrival { client })
                .expect("bounded queue");
        }
        queue
            .schedule_at(
                ms_to_ns(self.config.trigger_end_ms()),
                Event::CapacityRestored,
            )
            .expect("bounded queue");
    }

    fn handle(
        &mut self,
        now_ns: TimeNs,
        event: Event,
        queue: &mut EventQueue<Event>,
        rng: &mut ChaCha8Rng,
    ) -> Control {
        match event {
            Event::Arrival { client } => self.arrive(client, now_ns, queue, rng),
            Event::AtServer { attempt } => self.admit(attempt, now_ns, queue, rng),
            Event::Done { attempt } => self.complete(attempt, now_ns, queue, rng),
            Event::CapacityRestored => self.fill_workers(queue, rng),
            Event::Answer { attempt, answer } => self.receive(attempt, answer, now_ns, queue, rng),
            Event::Timeout { attempt } => self.time_out(attempt, queue, rng),
            Event::Resend { request } => {
                let kind = self.requests[request as usize].next_kind;
                self.send(request, kind, queue);
            }
        }
        Control::Continue
    }
}

/// The handlers of [`Event`], one per kind, in the order of a request's life.
impl World {
    /// A client's next request: the following arrival is drawn first, then the client's control
    /// may fail the request unsent (an open breaker), else its first attempt goes out.
    fn arrive(
        &mut self,
        client: u32,
        now_ns: TimeNs,
        queue: &mut EventQueue<Event>,
        rng: &mut ChaCha8Rng,
    ) {
        let next_ns = now_ns + ms_to_ns(self.gap.sample(rng));
        if ns_to_ms(next_ns) < self.config.duration_ms {
            queue
                .schedule_at(next_ns, Event::Arrival { client })
                .expect("bounded queue");
        }
        let c = &mut self.clients[client as usize];
        if !c.control.allow_first(ns_to_ms(now_ns)) {
            // An open breaker fails the request without sending it.
            self.finish(false);
            return;
        }
        let backoff = c.policy.backoff.start();
        let request = self.requests.len() as u32;
        self.requests.push(Request {
            client,
            started_ns: now_ns,
            attempt_count: 0,
            next_kind: AttemptKind::First,
            backoff,
            effect_count: 0,
            record: None,
        });
        self.send(request, AttemptKind::First, queue);
    }

    /// An attempt reaches the server: a free worker takes it, else it waits in the queue, else
    /// (queue full) it is rejected at once.
    fn admit(
        &mut self,
        attempt: u32,
        now_ns: TimeNs,
        queue: &mut EventQueue<Event>,
        rng: &mut ChaCha8Rng,
    ) {
        if self.busy < self.workers_at(now_ns) {
            self.start(attempt, queue, rng);
        } else if self.queue_fifo.len() < self.config.queue_len_max as usize {
            self.queue_fifo.push_back(attempt);
        } else {
            self.outcome.rejected_count += 1;
            self.answer(attempt, Answer::Rejected, queue);
        }
    }

    /// A worker finishes an attempt: its effect happens (a duplicate if the request already had
    /// one), whether or not the client still waits, and the worker takes the next queued attempt.
    fn complete(
        &mut self,
        attempt: u32,
        now_ns: TimeNs,
        queue: &mut EventQueue<Event>,
        rng: &mut ChaCha8Rng,
    ) {
        self.busy -= 1;
        if let Some(bin) = self.bin(now_ns) {
            self.outcome.throughput_per_bin[bin] += 1;
        }
        let a = &self.attempts[attempt as usize];
        let r = &mut self.requests[a.request as usize];
        r.effect_count += 1;
        self.outcome.effect_count += 1;
        if r.effect_count > 1 {
            self.outcome.duplicate_effect_count += 1;
        }
        if self.config.idempotency_key {
            r.record = Some(RecordState::Completed { response: () });
        }
        if a.timed_out {
            self.outcome.timed_out_executed_count += 1;
        }
        self.answer(attempt, Answer::Success, queue);
        self.fill_workers(queue, rng);
    }

    /// An answer reaches its client; ignored if the attempt already timed out there.
    fn receive(
        &mut self,
        attempt: u32,
        answer: Answer,
        now_ns: TimeNs,
        queue: &mut EventQueue<Event>,
        rng: &mut ChaCha8Rng,
    ) {
        if self.attempts[attempt as usize].resolved {
            return;
        }
        self.attempts[attempt as usize].resolved = true;
        if answer == Answer::Success {
            if let Some(bin) = self.bin(now_ns) {
                self.outcome.goodput_per_bin[bin] += 1;
            }
            let a = &self.attempts[attempt as usize];
            let client = self.requests[a.request as usize].client;
            self.clients[client as usize].control.record(
                ns_to_ms(now_ns),
                a.kind,
                AttemptResult::Success,
            );
            self.finish(true);
        } else {
            self.failed(attempt, FailureKind::Error, queue, rng);
        }
    }

    /// The client's timeout fires before any answer: the attempt has failed for it (the server
    /// may still execute it).
    fn time_out(&mut self, attempt: u32, queue: &mut EventQueue<Event>, rng: &mut ChaCha8Rng) {
        let a = &mut self.attempts[attempt as usize];
        if a.resolved {
            return;
        }
        a.resolved = true;
        a.timed_out = true;
        self.failed(attempt, FailureKind::Timeout, queue, rng);
    }
}

/// One seeded run of `policy` in `config`.
pub fn simulate(
    config: &CapacityConfig,
    policy: PolicyKind,
    rng: &mut ChaCha8Rng,
) -> Result<CapacityOutcome, String> {
    config.validate()?;
    let bins = config.bin_count();
    let mut world = World {
        config: *config,
        clients: (0..config.clients)
            .map(|_| Client::new(policy, config.backoff))
            .collect(),
        requests: Vec::new(),
        attempts: Vec::new(),
        queue_fifo: VecDeque::with_capacity(config.queue_len_max as usize),
        busy: 0,
        gap: Exp::new(config.rate_per_s / 1000.0).map_err(|e| e.to_string())?,
        service: Exp::new(1.0 / config.service_ms_mean).map_err(|e| e.to_string())?,
        outcome: CapacityOutcome {
            goodput_per_bin: vec![0; bins],
            throughput_per_bin: vec![0; bins],
            request_count: 0,
            success_count: 0,
            attempt_count: 0,
            timed_out_executed_count: 0,
            effect_count: 0,
            duplicate_effect_count: 0,
            rejected_count: 0,
            event_count: 0,
        },
    };
    let stats = crate::sim::run_drained(&mut world, 64 * 1024 * 1024, rng, EVENTS_PER_RUN_MAX)?;
    world.outcome.event_count = stats.event_count;
    Ok(world.outcome)
}

/// Recovery after the trigger, judged on goodput bins.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Recovery {
    /// Goodput was back to `RECOVERED_SHARE_PERMILLE` of its pre-trigger level for
    /// `RECOVERED_BINS` bins in a row, starting this long after the trigger ended.
    After { ms: f64 },
    /// Never back before the end of the run: metastable.
    Collapsed,
}

/// Goodput counts as recovered at 90% of its mean before the trigger ...
pub const RECOVERED_SHARE_PERMILLE: u64 = 900;
/// ... held for 4 bins in a row (2 s with the standard 500 ms bins).
pub const RECOVERED_BINS: usize = 4;

/// When goodput came back after the trigger. Bins are `config.bin_ms` wide; the baseline is the
/// mean of the bins before the trigger.
pub fn recovery(config: &CapacityConfig, goodput_per_bin: &[u32]) -> Recovery {
    let start_bin = (config.trigger_start_ms / config.bin_ms) as usize;
    let end_bin = (config.trigger_end_ms() / config.bin_ms).ceil() as usize;
    let before = &goodput_per_bin[..start_bin.min(goodput_per_bin.len())];
    if before.is_empty() {
        return Recovery::Collapsed;
    }
    let baseline_sum: u64 = before.iter().map(|&g| u64::from(g)).sum();
    let is_up = |g: u32| {
        u64::from(g) * 1000 * before.len() as u64 >= RECOVERED_SHARE_PERMILLE * baseline_sum
    };
    // The last bin may be partly after the final arrivals: judge only full bins.
    let judged = goodput_per_bin.len().saturating_sub(1);
    (end_bin..judged.saturating_sub(RECOVERED_BINS - 1))
        .find(|&i| {
            goodput_per_bin[i..i + RECOVERED_BINS]
                .iter()
                .all(|&g| is_up(g))
        })
        .map_or(Recovery::Collapsed, |i| Recovery::After {
            ms: i as f64 * config.bin_ms - config.trigger_end_ms(),
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backoff::Strategy;
    use crate::sim::run_rng;

    fn short(idempotency_key: bool) -> CapacityConfig {
        CapacityConfig {
            clients: 20,
            trigger_start_ms: 2000.0,
            trigger_ms: 2000.0,
            duration_ms: 8000.0,
            workers: 2,
            workers_degraded: 1,
            queue_len_max: 40,
            idempotency_key,
            ..CapacityConfig::standard(Backoff::new(Strategy::FullJitter, 25.0, 1000.0).unwrap())
        }
    }

    #[test]
    fn effects_and_attempts_add_up() {
        let config = short(false);
        let o = simulate(&config, PolicyKind::ThreeRetries, &mut run_rng(3, 3)).unwrap();
        assert!(o.request_count > 500, "{o:?}");
        assert!(o.attempt_count >= o.request_count);
        // Every effect beyond a request's first is a duplicate; the run saw some timeouts.
        assert!(o.effect_count >= o.success_count);
        assert!(o.timed_out_executed_count > 0, "{o:?}");
        assert!(o.duplicate_effect_count > 0, "{o:?}");
    }

    #[test]
    fn the_key_executes_each_request_at_most_once() {
        let o = simulate(&short(true), PolicyKind::ThreeRetries, &mut run_rng(3, 3)).unwrap();
        assert_eq!(o.duplicate_effect_count, 0);
        assert!(
            o.timed_out_executed_count > 0,
            "the scenario must time out: {o:?}"
        );
        assert!(o.effect_count <= o.request_count);
    }

    #[test]
    fn recovery_is_read_from_the_bins() {
        let config = CapacityConfig {
            trigger_start_ms: 3000.0,
            trigger_ms: 2000.0,
            duration_ms: 13_000.0,
            ..short(false)
        };
        let config = CapacityConfig {
            bin_ms: 1000.0,
            ..config
        };
        let bins = [10, 10, 10, 0, 0, 0, 2, 9, 10, 10, 10, 10, 10];
        assert_eq!(recovery(&config, &bins), Recovery::After { ms: 2000.0 });
        let collapsed = [10, 10, 10, 0, 0, 0, 0, 9, 0, 10, 10, 10, 0];
        assert_eq!(recovery(&config, &collapsed), Recovery::Collapsed);
    }
}
