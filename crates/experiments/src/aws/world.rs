//! The optimistic-concurrency world of Brooker (2015), as docs/src/domain.md section 7 describes it.
//!
//! One server holds a single versioned row. Each client reads the version, then writes with it;
//! the write succeeds only if the version is still current. Every network leg takes
//! `|Normal(10 ms, 2 ms)|`. After a failed write, the client's next read reaches the server one
//! leg plus `backoff(attempt)` after the failure response reaches the client.
//!
//! Only events at the server touch shared state, so the two client-side receipts of an attempt
//! (read response, write response) are folded into the next server arrival: a read at `t`
//! schedules the write's arrival at `t + leg + leg`; a failed write at `t` schedules the next
//! read's arrival at `t + leg + leg + backoff`. That is the same process as four separate leg
//! events (each leg is still its own draw) with half the queue traffic.
//!
//! [`Reads::Lazy`] (the default) goes one step further: the read's only effect is to observe the
//! version, and the version at time `r` is the number of successful writes up to `r`. So the
//! write carries its read's time instead of a version, and succeeds iff no write succeeded after
//! that time: one event per attempt. [`Reads::Events`] keeps the read as an event; a test checks
//! that both give the same statistics. Tie rule of the lazy mode: a read at the same nanosecond
//! as a successful write sees it (the explicit mode orders such ties by scheduling order).

use rand::Rng;
use rand_chacha::ChaCha8Rng;
use rand_distr::{Distribution, Normal};

use crate::backoff::{Backoff, BackoffState};
use crate::sim::kernel::{self, ms_to_ns, ns_to_ms, Control, RunEnd, TimeNs, TimedWorld};
use crate::sim::slot_queue::SlotQueue;
use crate::sim::stats::percentile_sorted;

/// Fixed parameters of the post's world.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct AwsParams {
    pub leg_ms_mean: f64,
    pub leg_ms_sd: f64,
    pub base_ms: f64,
    pub cap_ms: f64,
}

impl AwsParams {
    /// Network 10 ms +- 2 ms per leg, base 5 ms, cap 2000 ms.
    pub const POST: AwsParams = AwsParams {
        leg_ms_mean: 10.0,
        leg_ms_sd: 2.0,
        base_ms: 5.0,
        cap_ms: 2000.0,
    };
}

/// Upper bound on clients in one run (keeps stream ids and memory bounded).
pub const CLIENTS_MAX: u32 = 10_000;

/// Upper bound on events in one run. The post's clients retry forever; a run that needs more
/// than this is reported as an error rather than silently cut short.
pub const EVENTS_PER_RUN_MAX: u64 = 500_000_000;

/// What one run measured.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RunOutcome {
    /// Write requests received by the server (the post's "calls"; reads are not counted).
    pub call_count: u64,
    /// When the last client received its success.
    pub time_ms: f64,
    /// Per-client completion times (all clients start at 0): nearest-rank p50 and p99.
    pub latency_ms_p50: f64,
    pub latency_ms_p99: f64,
    /// Events handled by the kernel.
    pub event_count: u64,
}

/// How reads are simulated (see the module documentation).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Reads {
    /// One event per read arrival and one per write arrival.
    Events,
    /// One event per write arrival, carrying the time its read reached the server.
    #[default]
    Lazy,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Event {
    ReadArrives {
        client: u32,
    },
    WriteArrives {
        client: u32,
        version: u64,
    },
    /// Lazy reads: a write whose read reached the server at `read_ns`.
    WriteAfterRead {
        client: u32,
        read_ns: TimeNs,
    },
}

struct Client {
    backoff: BackoffState,
    retry_count: u32,
}

struct OccWorld {
    reads: Reads,
    version: u64,
    /// Time of the latest successful write (lazy reads).
    success_ns_last: Option<TimeNs>,
    clients: Vec<Client>,
    done_ns: Vec<TimeNs>,
    call_count: u64,
    leg: Normal<f64>,
}

impl OccWorld {
    /// Inlined: four legs per failed write, and as a call each one spilled its operands and
    /// serialised on the generator's index in memory (a third of the run's time in the profile).
    #[inline(always)]
    fn leg_ns(&self, rng: &mut ChaCha8Rng) -> TimeNs {
        ms_to_ns(self.leg.sample(rng).abs())
    }

    /// The next event of a client whose read reaches the server at `read_ns`.
    fn after_read(&self, client: u32, read_ns: TimeNs, rng: &mut ChaCha8Rng) -> (TimeNs, Event) {
        match self.reads {
            Reads::Events => (read_ns, Event::ReadArrives { client }),
            Reads::Lazy => {
                // Response leg back to the client, then the write's leg to the server.
                let write_ns = read_ns + self.leg_ns(rng) + self.leg_ns(rng);
                (write_ns, Event::WriteAfterRead { client, read_ns })
            }
        }
    }

    /// A write reached the server at `now_ns`; returns the client's next event, if any.
    fn write(
        &mut self,
        now_ns: TimeNs,
        client: u32,
        succeeds: bool,
        rng: &mut ChaCha8Rng,
    ) -> Option<(TimeNs, Event)> {
        self.call_count += 1;
        let response_ns = now_ns + self.leg_ns(rng);
        if succeeds {
            self.version += 1;
            self.success_ns_last = Some(now_ns);
            self.done_ns.push(response_ns);
            return None;
        }
        let state = &mut self.clients[client as usize];
        state.retry_count += 1;
        let backoff_ms = state.backoff.next_delay_ms(state.retry_count, rng);
        let read_ns = response_ns + self.leg_ns(rng) + ms_to_ns(backoff_ms);
        Some(self.after_read(client, read_ns, rng))
    }
}

/// The world runs on a [`SlotQueue`] (one slot per client, which never has two pending events)
/// rather than the kernel's heap: the order of events is the same, by (time, sequence), and the
/// tournament tree is cheaper per event (see its module).
impl TimedWorld for OccWorld {
    type Event = Event;
    type Queue = SlotQueue<Event>;

    fn start(&mut self, queue: &mut SlotQueue<Event>, rng: &mut ChaCha8Rng) {
        for client in 0..self.clients.len() as u32 {
            let read_ns = self.leg_ns(rng);
            let (at_ns, event) = self.after_read(client, read_ns, rng);
            queue
                .schedule_at(client as usize, at_ns, event)
                .expect("the queue starts at time 0");
        }
    }

    #[inline(always)]
    fn handle(
        &mut self,
        now_ns: TimeNs,
        event: Event,
        queue: &mut SlotQueue<Event>,
        rng: &mut ChaCha8Rng,
    ) -> Control {
        let next = match event {
            Event::ReadArrives { client } => {
                let at_ns = now_ns + self.leg_ns(rng) + self.leg_ns(rng);
                let version = self.version;
                Some((at_ns, Event::WriteArrives { client, version }))
            }
            Event::WriteArrives { client, version } => {
                let succeeds = version == self.version;
                self.write(now_ns, client, succeeds, rng)
            }
            Event::WriteAfterRead { client, read_ns } => {
                // The version read at read_ns is still current iff no write succeeded since.
                let succeeds = !matches!(self.success_ns_last, Some(last_ns) if last_ns > read_ns);
                self.write(now_ns, client, succeeds, rng)
            }
        };
        if let Some((at_ns, event)) = next {
            let client = match event {
                Event::ReadArrives { client }
                | Event::WriteArrives { client, .. }
                | Event::WriteAfterRead { client, .. } => client,
            };
            queue
                .schedule_at(client as usize, at_ns, event)
                .expect("events go forward in time");
        }
        Control::Continue
    }
}

/// Error from a run that could not finish.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum AwsError {
    #[error("clients must be in 1..={CLIENTS_MAX}, got {0}")]
    Clients(u32),
    #[error("run with {clients} clients did not finish within {EVENTS_PER_RUN_MAX} events")]
    EventLimit { clients: u32 },
    #[error("network leg needs a finite mean and sd >= 0: {0}")]
    Leg(String),
}

/// Simulates one run: `clients` clients with a fresh `backoff` state each, all starting at 0.
pub fn simulate_run(
    backoff: Backoff,
    clients: u32,
    params: &AwsParams,
    rng: &mut ChaCha8Rng,
) -> Result<RunOutcome, AwsError> {
    simulate_run_with(backoff, clients, params, Reads::default(), rng)
}

/// [`simulate_run`] with an explicit choice of how reads are simulated.
pub fn simulate_run_with(
    backoff: Backoff,
    clients: u32,
    params: &AwsParams,
    reads: Reads,
    rng: &mut ChaCha8Rng,
) -> Result<RunOutcome, AwsError> {
    if !(1..=CLIENTS_MAX).contains(&clients) {
        return Err(AwsError::Clients(clients));
    }
    let leg = Normal::new(params.leg_ms_mean, params.leg_ms_sd)
        .map_err(|e| AwsError::Leg(e.to_string()))?;
    let mut world = OccWorld {
        reads,
        version: 0,
        success_ns_last: None,
        clients: (0..clients)
            .map(|_| Client {
                backoff: backoff.start(),
                retry_count: 0,
            })
            .collect(),
        done_ns: Vec::with_capacity(clients as usize),
        call_count: 0,
        leg,
    };
    let mut queue = SlotQueue::new(clients as usize, Event::ReadArrives { client: 0 });
    let stats = kernel::run(&mut world, &mut queue, rng, EVENTS_PER_RUN_MAX);
    if stats.end != RunEnd::Drained {
        return Err(AwsError::EventLimit { clients });
    }
    debug_assert_eq!(world.done_ns.len(), clients as usize);
    debug_assert_eq!(world.version, u64::from(clients));
    // Successes are recorded in server order; responses can overtake each other.
    let mut latencies_ms: Vec<f64> = world.done_ns.iter().map(|&ns| ns_to_ms(ns)).collect();
    latencies_ms.sort_by(f64::total_cmp);
    Ok(RunOutcome {
        call_count: world.call_count,
        time_ms: *latencies_ms.last().expect("at least one client"),
        latency_ms_p50: percentile_sorted(&latencies_ms, 50.0),
        latency_ms_p99: percentile_sorted(&latencies_ms, 99.0),
        event_count: stats.event_count,
    })
}

/// How often a strategy's delay sits exactly on the cap (the "decorrelated sticks to the cap"
/// critique), measured over one long sequence of retries from a fresh state.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CapStickiness {
    /// Share of all delays equal to the cap.
    pub at_cap_share: f64,
    /// Share of delays equal to the cap among those following a delay equal to the cap
    /// (`None` if the cap was never reached).
    pub stay_share: Option<f64>,
}

pub fn cap_stickiness(backoff: Backoff, draws: u32, rng: &mut impl Rng) -> CapStickiness {
    let mut state = backoff.start();
    let (mut at_cap, mut after_cap, mut stayed) = (0u32, 0u32, 0u32);
    let mut previous_at_cap = false;
    for attempt in 1..=draws {
        let now_at_cap = state.next_delay_ms(attempt, rng) == backoff.cap_ms();
        at_cap += u32::from(now_at_cap);
        if previous_at_cap {
            after_cap += 1;
            stayed += u32::from(now_at_cap);
        }
        previous_at_cap = now_at_cap;
    }
    CapStickiness {
        at_cap_share: f64::from(at_cap) / f64::from(draws.max(1)),
        stay_share: (after_cap > 0).then(|| f64::from(stayed) / f64::from(after_cap)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backoff::Strategy;
    use crate::sim::kernel::run_rng;

    #[test]
    fn a_single_client_succeeds_first_time() {
        let backoff = Backoff::aws_post(Strategy::Exponential);
        let outcome = simulate_run(backoff, 1, &AwsParams::POST, &mut run_rng(1, 0)).unwrap();
        assert_eq!(outcome.call_count, 1);
        assert_eq!(outcome.event_count, 1);
        // Four legs of about 10 ms each.
        assert!(
            outcome.time_ms > 20.0 && outcome.time_ms < 60.0,
            "{outcome:?}"
        );
        assert_eq!(outcome.latency_ms_p50, outcome.time_ms);
    }

    #[test]
    fn every_client_eventually_writes_once_and_contention_costs_calls() {
        let backoff = Backoff::aws_post(Strategy::FullJitter);
        let outcome = simulate_run(backoff, 50, &AwsParams::POST, &mut run_rng(3, 9)).unwrap();
        assert!(
            outcome.call_count > 50,
            "contention forces retries: {outcome:?}"
        );
        assert!(outcome.latency_ms_p50 <= outcome.latency_ms_p99);
        assert!(outcome.latency_ms_p99 <= outcome.time_ms);
    }

    #[test]
    fn same_stream_same_outcome() {
        let backoff = Backoff::aws_post(Strategy::Decorrelated { growth: 3 });
        let a = simulate_run(backoff, 30, &AwsParams::POST, &mut run_rng(5, 2)).unwrap();
        let b = simulate_run(backoff, 30, &AwsParams::POST, &mut run_rng(5, 2)).unwrap();
        let c = simulate_run(backoff, 30, &AwsParams::POST, &mut run_rng(5, 3)).unwrap();
        assert_eq!(a, b);
        assert_ne!(a, c);
    }

    #[test]
    fn lazy_reads_match_read_events_in_distribution() {
        // Same process, different draw order: the means of 200 runs must agree within their
        // 95% intervals (widened by 1.5 so a 1-in-20 fluke of either side does not fail).
        use crate::sim::stats::estimate;
        let backoff = Backoff::aws_post(Strategy::FullJitter);
        let stats = |reads: Reads, seed: u64| {
            let outcomes: Vec<RunOutcome> = (0..200)
                .map(|run| {
                    let mut rng = run_rng(seed, run);
                    simulate_run_with(backoff, 40, &AwsParams::POST, reads, &mut rng).unwrap()
                })
                .collect();
            let calls: Vec<f64> = outcomes.iter().map(|o| o.call_count as f64).collect();
            let time: Vec<f64> = outcomes.iter().map(|o| o.time_ms).collect();
            let events: f64 = outcomes.iter().map(|o| o.event_count as f64).sum();
            (estimate(&calls), estimate(&time), events)
        };
        let (calls_events, time_events, count_events) = stats(Reads::Events, 1);
        let (calls_lazy, time_lazy, count_lazy) = stats(Reads::Lazy, 2);
        let close = |a: crate::sim::stats::Estimate, b: crate::sim::stats::Estimate| {
            (a.mean - b.mean).abs() <= 1.5 * (a.ci95 + b.ci95)
        };
        assert!(
            close(calls_events, calls_lazy),
            "{calls_events:?} vs {calls_lazy:?}"
        );
        assert!(
            close(time_events, time_lazy),
            "{time_events:?} vs {time_lazy:?}"
        );
        // And the lazy mode handles half the events.
        assert!((count_lazy * 2.0 - count_events).abs() < 0.1 * count_events);
    }

    #[test]
    fn rejects_zero_clients() {
        let backoff = Backoff::aws_post(Strategy::None);
        let err = simulate_run(backoff, 0, &AwsParams::POST, &mut run_rng(0, 0));
        assert_eq!(err, Err(AwsError::Clients(0)));
    }
}
