//! Brooker (2022), "Fixing retries with token buckets and circuit breakers": open-loop Poisson
//! clients and a server that fails each call independently with probability p. No capacity, no
//! queue: what is measured is what the retry policy alone does to the load and to success.
//!
//! Each client sends requests as a Poisson process; a request's attempt reaches the server one
//! leg after it is sent and its answer comes back one leg later. A failed attempt is retried
//! after the backoff if the attempt limit and the client's retry control allow it (the control is
//! asked, and charged, when the failure is seen, as the AWS SDK does before it sleeps). Only
//! requests that start after the warm-up count, so controls with memory (a 500-token quota) are
//! measured near their steady state.

use rand::Rng;
use rand_chacha::ChaCha8Rng;
use rand_distr::{Distribution, Exp};

use crate::backoff::{AttemptKind, AttemptResult, BackoffState, FailureKind, RetryGate};
use crate::client::{full_jitter, Client, PolicyKind};
use crate::sim::kernel::{ms_to_ns, ns_to_ms, Control, EventQueue, TimeNs, TimedWorld};

/// Bounds that keep a run's memory and events finite.
pub const CLIENTS_MAX: u32 = 10_000;
pub const DURATION_MS_MAX: f64 = 3_600_000.0;
const EVENTS_PER_RUN_MAX: u64 = 2_000_000_000;

/// The world's parameters.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BrookerConfig {
    pub clients: u32,
    /// Requests per second of one client (Poisson).
    pub rate_per_s: f64,
    /// Probability that the server fails a call, in per mille.
    pub failure_permille: u32,
    /// One network leg.
    pub leg_ms: f64,
    /// Requests that start before this are not counted.
    pub warmup_ms: f64,
    /// No request starts after this; the run then drains.
    pub duration_ms: f64,
    pub backoff_base_ms: f64,
    pub backoff_cap_ms: f64,
}

impl BrookerConfig {
    /// 100 clients at 10 requests/s, legs of 5 ms, full jitter 25 ms .. 1 s, 120 s of which the
    /// first 60 s are warm-up.
    pub fn post(failure_permille: u32) -> Self {
        BrookerConfig {
            clients: 100,
            rate_per_s: 10.0,
            failure_permille,
            leg_ms: 5.0,
            warmup_ms: 60_000.0,
            duration_ms: 120_000.0,
            backoff_base_ms: 25.0,
            backoff_cap_ms: 1000.0,
        }
    }

    pub fn validate(&self) -> Result<(), String> {
        if !(1..=CLIENTS_MAX).contains(&self.clients) {
            return Err(format!(
                "clients must be in 1..={CLIENTS_MAX}, got {}",
                self.clients
            ));
        }
        if !(self.rate_per_s.is_finite() && self.rate_per_s > 0.0 && self.rate_per_s <= 1000.0) {
            return Err(format!(
                "rate_per_s must be in (0, 1000], got {}",
                self.rate_per_s
            ));
        }
        if self.failure_permille > 1000 {
            return Err(format!(
                "failure_permille must be in 0..=1000, got {}",
                self.failure_permille
            ));
        }
        crate::check_leg_ms(self.leg_ms)?;
        if !(self.duration_ms.is_finite()
            && self.duration_ms > 0.0
            && self.duration_ms <= DURATION_MS_MAX)
        {
            return Err(format!(
                "duration_ms must be in (0, {DURATION_MS_MAX}], got {}",
                self.duration_ms
            ));
        }
        if !(self.warmup_ms >= 0.0 && self.warmup_ms < self.duration_ms) {
            return Err(format!(
                "warmup_ms must be in [0, duration_ms), got {}",
                self.warmup_ms
            ));
        }
        full_jitter(self.backoff_base_ms, self.backoff_cap_ms).map(|_| ())
    }
}

/// What one run measured over the requests that started after the warm-up.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BrookerOutcome {
    pub request_count: u64,
    /// Attempts the server received for those requests.
    pub server_call_count: u64,
    pub success_count: u64,
    pub event_count: u64,
}

impl BrookerOutcome {
    /// Server calls per user request.
    pub fn amplification(&self) -> f64 {
        self.server_call_count as f64 / self.request_count.max(1) as f64
    }

    pub fn success_rate(&self) -> f64 {
        self.success_count as f64 / self.request_count.max(1) as f64
    }
}

#[derive(Clone, Copy, Debug)]
enum Event {
    /// Client `client` starts a new request.
    Arrival { client: u32 },
    /// The answer to an attempt reaches its client.
    Answer {
        client: u32,
        started_ns: TimeNs,
        attempt_count: u32,
        kind: AttemptKind,
        backoff: BackoffState,
    },
}

struct World {
    config: BrookerConfig,
    clients: Vec<Client>,
    gap: Exp<f64>,
    warmup_ns: TimeNs,
    duration_ns: TimeNs,
    outcome: BrookerOutcome,
}

impl World {
    fn round_trip_ns(&self) -> TimeNs {
        2 * ms_to_ns(self.config.leg_ms)
    }

    fn schedule_arrival(&self, client: u32, queue: &mut EventQueue<Event>, rng: &mut ChaCha8Rng) {
        let at_ns = queue.now_ns() + ms_to_ns(self.gap.sample(rng));
        if at_ns < self.duration_ns {
            queue
                .schedule_at(at_ns, Event::Arrival { client })
                .expect("bounded: one arrival per client");
        }
    }

    /// A request has ended after `attempt_count` attempts.
    fn finish(&mut self, started_ns: TimeNs, attempt_count: u32, success: bool) {
        if started_ns >= self.warmup_ns {
            self.outcome.request_count += 1;
            self.outcome.server_call_count += u64::from(attempt_count);
            self.outcome.success_count += u64::from(success);
        }
    }
}

impl TimedWorld for World {
    type Event = Event;
    type Queue = EventQueue<Event>;

    fn start(&mut self, queue: &mut EventQueue<Event>, rng: &mut ChaCha8Rng) {
        for client in 0..self.config.clients {
            self.schedule_arrival(client, queue, rng);
        }
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
            Event::Answer {
                client,
                started_ns,
                attempt_count,
                kind,
                backoff,
            } => {
                let attempt = Attempt {
                    client,
                    started_ns,
                    attempt_count,
                    kind,
                };
                self.answer(attempt, backoff, now_ns, queue, rng);
            }
        }
        Control::Continue
    }
}

/// An attempt whose answer reaches its client (the fields of [`Event::Answer`] but its backoff).
struct Attempt {
    client: u32,
    started_ns: TimeNs,
    attempt_count: u32,
    kind: AttemptKind,
}

impl World {
    /// A new request: the next arrival is drawn, then the client's control may refuse the first
    /// attempt (the request fails with no call), else the attempt goes out.
    fn arrive(
        &mut self,
        client: u32,
        now_ns: TimeNs,
        queue: &mut EventQueue<Event>,
        rng: &mut ChaCha8Rng,
    ) {
        self.schedule_arrival(client, queue, rng);
        let c = &mut self.clients[client as usize];
        if !c.control.allow_first(ns_to_ms(now_ns)) {
            self.finish(now_ns, 0, false);
            return;
        }
        let backoff = c.policy.backoff.start();
        let answer = Event::Answer {
            client,
            started_ns: now_ns,
            attempt_count: 1,
            kind: AttemptKind::First,
            backoff,
        };
        queue
            .schedule_after(self.round_trip_ns(), answer)
            .expect("bounded: a few attempts per request");
    }

    /// The server's answer: it fails with the world's probability; a failure is retried after the
    /// client's backoff if its policy and control allow, else the request ends failed.
    fn answer(
        &mut self,
        attempt: Attempt,
        mut backoff: BackoffState,
        now_ns: TimeNs,
        queue: &mut EventQueue<Event>,
        rng: &mut ChaCha8Rng,
    ) {
        let now_ms = ns_to_ms(now_ns);
        let Attempt {
            client,
            started_ns,
            attempt_count,
            kind,
        } = attempt;
        let failed = rng.random_range(0..1000u32) < self.config.failure_permille;
        let result = if failed {
            AttemptResult::Failure(FailureKind::Error)
        } else {
            AttemptResult::Success
        };
        let round_trip_ns = self.round_trip_ns();
        let c = &mut self.clients[client as usize];
        c.control.record(now_ms, kind, result);
        if !failed {
            self.finish(started_ns, attempt_count, true);
            return;
        }
        let elapsed_ms = ns_to_ms(now_ns - started_ns);
        match c.after_failure(
            &mut backoff,
            attempt_count,
            elapsed_ms,
            now_ms,
            FailureKind::Error,
            rng,
        ) {
            Some((delay_ms, kind)) => {
                let retry = Event::Answer {
                    client,
                    started_ns,
                    attempt_count: attempt_count + 1,
                    kind,
                    backoff,
                };
                queue
                    .schedule_after(ms_to_ns(delay_ms) + round_trip_ns, retry)
                    .expect("bounded: a few attempts per request");
            }
            None => self.finish(started_ns, attempt_count, false),
        }
    }
}

/// Runs one seeded run of `policy` in the world `config`.
pub fn simulate(
    config: &BrookerConfig,
    policy: PolicyKind,
    rng: &mut ChaCha8Rng,
) -> Result<BrookerOutcome, String> {
    config.validate()?;
    let backoff = full_jitter(config.backoff_base_ms, config.backoff_cap_ms)?;
    let mut world = World {
        config: *config,
        clients: (0..config.clients)
            .map(|_| Client::new(policy, backoff))
            .collect(),
        gap: Exp::new(config.rate_per_s / 1000.0).map_err(|e| e.to_string())?,
        warmup_ns: ms_to_ns(config.warmup_ms),
        duration_ns: ms_to_ns(config.duration_ms),
        outcome: BrookerOutcome {
            request_count: 0,
            server_call_count: 0,
            success_count: 0,
            event_count: 0,
        },
    };
    // Pending events: one arrival per client plus one answer per request in flight; requests in
    // flight are bounded by rate x (attempts x (round trip + cap)), far below this.
    let stats = crate::sim::run_drained(&mut world, 16 * 1024 * 1024, rng, EVENTS_PER_RUN_MAX)?;
    world.outcome.event_count = stats.event_count;
    Ok(world.outcome)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim::run_rng;

    fn short(failure_permille: u32) -> BrookerConfig {
        BrookerConfig {
            clients: 10,
            warmup_ms: 1000.0,
            duration_ms: 5000.0,
            ..BrookerConfig::post(failure_permille)
        }
    }

    #[test]
    fn healthy_server_needs_no_retries() {
        let outcome = simulate(&short(0), PolicyKind::ThreeRetries, &mut run_rng(1, 1)).unwrap();
        // About 10 clients x 10/s x 4 s = 400 requests.
        assert!((300..500).contains(&outcome.request_count), "{outcome:?}");
        assert_eq!(outcome.server_call_count, outcome.request_count);
        assert_eq!(outcome.success_count, outcome.request_count);
    }

    #[test]
    fn dead_server_gets_four_calls_per_request_from_three_retries() {
        let outcome = simulate(&short(1000), PolicyKind::ThreeRetries, &mut run_rng(1, 1)).unwrap();
        assert_eq!(outcome.server_call_count, 4 * outcome.request_count);
        assert_eq!(outcome.success_count, 0);
        let none = simulate(&short(1000), PolicyKind::NoRetries, &mut run_rng(1, 1)).unwrap();
        assert_eq!(none.server_call_count, none.request_count);
    }

    #[test]
    fn bad_config_is_refused() {
        let mut config = short(100);
        config.failure_permille = 1001;
        assert!(simulate(&config, PolicyKind::NoRetries, &mut run_rng(0, 0)).is_err());
        config = short(100);
        config.warmup_ms = config.duration_ms;
        assert!(simulate(&config, PolicyKind::NoRetries, &mut run_rng(0, 0)).is_err());
    }
}
