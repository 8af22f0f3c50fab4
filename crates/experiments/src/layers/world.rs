//! Layered retries (docs/src/domain.md section 4, mistake 7): a user calls service 1, which calls
//! service 2, ... service k calls the bottom service, which fails every request. Each service
//! that retries makes up to `attempts_per_layer` attempts at its callee before failing upwards.
//!
//! Simulated on the event kernel, message by message (a leg, the callee's answer, a backoff timer),
//! so the counts come from the call chain itself, not from `r^k`: the tests compare the two.

use rand_chacha::ChaCha8Rng;

use crate::backoff::{Backoff, BackoffState, Decision, Failure, RetryPolicy, Strategy};
use crate::sim::kernel::{ms_to_ns, ns_to_ms, Control, EventQueue, TimeNs, TimedWorld};

/// Which services retry.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum LayerPolicy {
    /// Every one of the k services retries (the mistake).
    EveryLayer,
    /// Only the top service retries; the others fail fast (the advice: retry at one layer).
    OneLayer,
}

impl LayerPolicy {
    pub const ALL: [LayerPolicy; 2] = [LayerPolicy::EveryLayer, LayerPolicy::OneLayer];

    pub fn name(&self) -> &'static str {
        match self {
            LayerPolicy::EveryLayer => "every-layer",
            LayerPolicy::OneLayer => "one-layer",
        }
    }

    /// Whether service `layer` (1 = the one the user calls) retries.
    fn retries_at(&self, layer: u32) -> bool {
        match self {
            LayerPolicy::EveryLayer => true,
            LayerPolicy::OneLayer => layer == 1,
        }
    }
}

/// Upper bounds that keep a cell's event count small (5^5 = 3125 bottom requests per call).
pub const LAYERS_MAX: u32 = 6;
pub const ATTEMPTS_MAX: u32 = 6;

/// One cell of the grid.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LayerConfig {
    /// Services between the user and the bottom service.
    pub layers: u32,
    /// Attempts (first try included) a retrying service makes per incoming request.
    pub attempts_per_layer: u32,
    pub policy: LayerPolicy,
    /// One network leg, caller to callee or back.
    pub leg_ms: f64,
    /// Backoff of every retrying service (the retry count does not depend on it; the time does).
    pub backoff: Backoff,
}

impl LayerConfig {
    /// Legs of 1 ms, full jitter from 10 ms, capped at 1 s.
    pub fn new(layers: u32, attempts_per_layer: u32, policy: LayerPolicy) -> Self {
        LayerConfig {
            layers,
            attempts_per_layer,
            policy,
            leg_ms: 1.0,
            backoff: Backoff::new(Strategy::FullJitter, 10.0, 1000.0).expect("valid backoff"),
        }
    }

    pub fn validate(&self) -> Result<(), String> {
        if !(1..=LAYERS_MAX).contains(&self.layers) {
            return Err(format!(
                "layers must be in 1..={LAYERS_MAX}, got {}",
                self.layers
            ));
        }
        if !(1..=ATTEMPTS_MAX).contains(&self.attempts_per_layer) {
            return Err(format!(
                "attempts per layer must be in 1..={ATTEMPTS_MAX}, got {}",
                self.attempts_per_layer
            ));
        }
        crate::check_leg_ms(self.leg_ms)?;
        Ok(())
    }
}

/// What one user call cost.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LayerOutcome {
    /// Requests that reached the bottom service.
    pub bottom_request_count: u64,
    /// Requests received by any service, the bottom included.
    pub request_count: u64,
    /// When the user received the failure.
    pub give_up_ms: f64,
    pub event_count: u64,
}

/// A request being handled by one service: it calls the next layer, maybe several times.
struct Frame {
    /// 0 is the user, 1..=k the services, k + 1 the bottom.
    layer: u32,
    parent: Option<usize>,
    attempt_count: u32,
    policy: RetryPolicy,
    backoff: BackoffState,
    started_ns: TimeNs,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Event {
    /// A request arrives at the service of `frame`.
    Arrive { frame: usize },
    /// The answer from its callee reaches the service of `frame`.
    Failed { frame: usize },
    /// A backoff timer of `frame` fires: send the next attempt.
    Resend { frame: usize },
}

struct Chain {
    config: LayerConfig,
    frames: Vec<Frame>,
    bottom_request_count: u64,
    request_count: u64,
    give_up_ns: Option<TimeNs>,
}

/// Frames per call at most: every service of every attempt path (bounded by the grid limits).
const FRAMES_MAX: usize = 1 << 20;

impl Chain {
    fn leg_ns(&self) -> TimeNs {
        ms_to_ns(self.config.leg_ms)
    }

    fn new_frame(&mut self, layer: u32, parent: Option<usize>, now_ns: TimeNs) -> usize {
        assert!(self.frames.len() < FRAMES_MAX, "frame bound reached");
        let retries = layer >= 1 && self.config.policy.retries_at(layer);
        let policy = RetryPolicy {
            attempts_max: Some(if retries {
                self.config.attempts_per_layer
            } else {
                1
            }),
            ..RetryPolicy::unbounded(self.config.backoff)
        };
        self.frames.push(Frame {
            layer,
            parent,
            attempt_count: 0,
            policy,
            backoff: policy.backoff.start(),
            started_ns: now_ns,
        });
        self.frames.len() - 1
    }

    /// `frame` sends one attempt to the next layer.
    fn send(&mut self, frame: usize, queue: &mut EventQueue<Event>, now_ns: TimeNs) {
        self.frames[frame].attempt_count += 1;
        let layer = self.frames[frame].layer + 1;
        let child = self.new_frame(layer, Some(frame), now_ns + self.leg_ns());
        queue
            .schedule_after(self.leg_ns(), Event::Arrive { frame: child })
            .expect("bounded chain");
    }

    /// The service of `frame` answers its caller with a failure.
    fn fail_upwards(&mut self, frame: usize, queue: &mut EventQueue<Event>, now_ns: TimeNs) {
        match self.frames[frame].parent {
            Some(parent) => queue
                .schedule_after(self.leg_ns(), Event::Failed { frame: parent })
                .expect("bounded chain"),
            None => self.give_up_ns = Some(now_ns),
        }
    }
}

impl TimedWorld for Chain {
    type Event = Event;
    type Queue = EventQueue<Event>;

    fn start(&mut self, queue: &mut EventQueue<Event>, _rng: &mut ChaCha8Rng) {
        let user = self.new_frame(0, None, 0);
        self.send(user, queue, 0);
    }

    fn handle(
        &mut self,
        now_ns: TimeNs,
        event: Event,
        queue: &mut EventQueue<Event>,
        rng: &mut ChaCha8Rng,
    ) -> Control {
        match event {
            Event::Arrive { frame } => {
                self.request_count += 1;
                if self.frames[frame].layer == self.config.layers + 1 {
                    // The bottom service fails every request.
                    self.bottom_request_count += 1;
                    self.fail_upwards(frame, queue, now_ns);
                } else {
                    self.send(frame, queue, now_ns);
                }
            }
            Event::Failed { frame } => {
                let f = &mut self.frames[frame];
                let failure = Failure {
                    attempt_count: f.attempt_count,
                    elapsed_ms: ns_to_ms(now_ns - f.started_ns),
                    retry_after_ms: None,
                };
                match f.policy.on_failure(&mut f.backoff, &failure, rng) {
                    Decision::Retry { delay_ms, .. } => queue
                        .schedule_after(ms_to_ns(delay_ms), Event::Resend { frame })
                        .expect("bounded chain"),
                    Decision::GiveUp(_) => self.fail_upwards(frame, queue, now_ns),
                }
            }
            Event::Resend { frame } => self.send(frame, queue, now_ns),
        }
        Control::Continue
    }
}

/// Simulates one user call through the chain.
pub fn simulate_call(config: &LayerConfig, rng: &mut ChaCha8Rng) -> Result<LayerOutcome, String> {
    config.validate()?;
    let mut chain = Chain {
        config: *config,
        frames: Vec::new(),
        bottom_request_count: 0,
        request_count: 0,
        give_up_ns: None,
    };
    // At most one pending event per frame that waits on its callee; every frame handles a
    // bounded number of events, so the run drains.
    let stats = crate::sim::run_drained(&mut chain, FRAMES_MAX, rng, u64::MAX)?;
    let give_up_ns = chain
        .give_up_ns
        .ok_or("the user never received an answer")?;
    Ok(LayerOutcome {
        bottom_request_count: chain.bottom_request_count,
        request_count: chain.request_count,
        give_up_ms: ns_to_ms(give_up_ns),
        event_count: stats.event_count,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim::kernel::run_rng;

    #[test]
    fn a_single_service_without_retries_sends_one_request() {
        let outcome = simulate_call(
            &LayerConfig::new(1, 1, LayerPolicy::EveryLayer),
            &mut run_rng(0, 0),
        )
        .unwrap();
        assert_eq!(outcome.bottom_request_count, 1);
        // Service 1 and the bottom each received one request.
        assert_eq!(outcome.request_count, 2);
        // Four legs of 1 ms: user -> 1 -> bottom -> 1 -> user.
        assert_eq!(outcome.give_up_ms, 4.0);
    }

    #[test]
    fn bad_configs_are_refused() {
        let mut rng = run_rng(0, 0);
        for (layers, attempts) in [(0, 3), (7, 3), (3, 0), (3, 7)] {
            let config = LayerConfig::new(layers, attempts, LayerPolicy::OneLayer);
            assert!(simulate_call(&config, &mut rng).is_err());
        }
    }
}
