//! The client-side circuit breaker: a [`RetryGate`] that opens at a failure ratio over a sliding
//! window. Either it only stops retries (Brooker 2022's variant) or, like the classic breaker,
//! it also refuses first attempts until its open time has passed and a probe call succeeds.
//! Apart from the token gates of [`super::budget`] because its state is a small machine
//! (closed, open, half-open), not a balance.

use super::budget::{
    check_range, check_window, AttemptKind, AttemptResult, FailureKind, GateError, RetryGate,
    RetryPermit, MILLI,
};
use super::window::WindowCounts;

/// What an open breaker stops.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BreakerScope {
    /// Only retries; first attempts always go out (Brooker 2022).
    RetriesOnly,
    /// Every call, until `open_ms` has passed and a probe call succeeds (the classic breaker).
    AllCalls,
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum BreakerState {
    Closed,
    Open {
        until_ms: f64,
    },
    /// One probe call is out; everything else is refused until it answers.
    HalfOpen,
}

/// Breaker parameters.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BreakerConfig {
    pub scope: BreakerScope,
    /// Opens when failures / calls in the window reach this (100 = 10%).
    pub failure_permille: u32,
    pub window_ms: f64,
    /// Below this many calls in the window the ratio is not trusted and the breaker stays shut.
    pub calls_min: u32,
    /// AllCalls only: how long it stays open before letting a probe through.
    pub open_ms: f64,
}

impl BreakerConfig {
    /// 10% failures over 1 s (at least 5 calls), open for 1 s.
    pub fn ten_percent(scope: BreakerScope) -> Self {
        BreakerConfig {
            scope,
            failure_permille: 100,
            window_ms: 1000.0,
            calls_min: 5,
            open_ms: 1000.0,
        }
    }
}

/// A client-side circuit breaker on the failure ratio over a sliding window.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CircuitBreaker {
    config: BreakerConfig,
    state: BreakerState,
    /// total = calls answered, marked = failures among them.
    window: WindowCounts,
}

impl CircuitBreaker {
    /// What the breaker stops when open.
    pub fn scope(&self) -> BreakerScope {
        self.config.scope
    }

    pub fn new(config: BreakerConfig) -> Result<Self, GateError> {
        check_range(
            "failure_permille",
            u64::from(config.failure_permille),
            1,
            1000,
        )?;
        check_window(config.window_ms)?;
        if !(config.open_ms.is_finite() && config.open_ms >= 0.0) {
            return Err(GateError::Window(config.open_ms));
        }
        Ok(CircuitBreaker {
            config,
            state: BreakerState::Closed,
            window: WindowCounts::new(config.window_ms),
        })
    }

    /// True when the failure ratio in the window is at or above the threshold.
    fn tripped(&self, now_ms: f64) -> bool {
        let (calls, failures) = self.window.counts(now_ms);
        calls >= self.config.calls_min.max(1)
            && u64::from(failures) * u64::from(MILLI)
                >= u64::from(self.config.failure_permille) * u64::from(calls)
    }

    /// Whether the breaker lets any call through now (AllCalls); moves Open to HalfOpen.
    fn admit(&mut self, now_ms: f64) -> bool {
        match self.state {
            BreakerState::Closed => true,
            BreakerState::Open { until_ms } if now_ms >= until_ms => {
                self.state = BreakerState::HalfOpen;
                true
            }
            BreakerState::Open { .. } | BreakerState::HalfOpen => false,
        }
    }

    pub fn is_open(&self) -> bool {
        !matches!(self.state, BreakerState::Closed)
    }
}

impl RetryGate for CircuitBreaker {
    fn allow_first(&mut self, now_ms: f64) -> bool {
        match self.config.scope {
            BreakerScope::RetriesOnly => true,
            BreakerScope::AllCalls => self.admit(now_ms),
        }
    }

    fn allow_retry(&mut self, now_ms: f64, _failure: FailureKind) -> Option<RetryPermit> {
        let allowed = match self.config.scope {
            BreakerScope::RetriesOnly => !self.tripped(now_ms),
            BreakerScope::AllCalls => self.admit(now_ms),
        };
        allowed.then_some(RetryPermit { cost_milli: 0 })
    }

    fn record(&mut self, now_ms: f64, _kind: AttemptKind, result: AttemptResult) {
        let failed = result != AttemptResult::Success;
        if self.config.scope == BreakerScope::RetriesOnly {
            self.window.add(now_ms, failed);
            return;
        }
        match self.state {
            BreakerState::HalfOpen if failed => {
                self.state = BreakerState::Open {
                    until_ms: now_ms + self.config.open_ms,
                };
            }
            BreakerState::HalfOpen => {
                self.state = BreakerState::Closed;
                self.window.clear();
            }
            // Answers to calls sent before the breaker opened change nothing.
            BreakerState::Open { .. } => {}
            BreakerState::Closed => {
                self.window.add(now_ms, failed);
                if self.tripped(now_ms) {
                    self.state = BreakerState::Open {
                        until_ms: now_ms + self.config.open_ms,
                    };
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ERR: AttemptResult = AttemptResult::Failure(FailureKind::Error);

    #[test]
    fn retries_only_breaker_stops_retries_not_first_attempts() {
        let mut breaker =
            CircuitBreaker::new(BreakerConfig::ten_percent(BreakerScope::RetriesOnly)).unwrap();
        for _ in 0..9 {
            breaker.record(0.0, AttemptKind::First, AttemptResult::Success);
        }
        breaker.record(0.0, AttemptKind::First, ERR);
        // 1 failure in 10 calls = 10%: at the threshold, retries stop.
        assert!(breaker.allow_retry(0.0, FailureKind::Error).is_none());
        assert!(breaker.allow_first(0.0));
        // The window slides: a second later the failure is forgotten.
        breaker.record(1500.0, AttemptKind::First, AttemptResult::Success);
        assert!(breaker.allow_retry(1500.0, FailureKind::Error).is_some());
    }

    #[test]
    fn full_breaker_opens_probes_and_closes() {
        let config = BreakerConfig::ten_percent(BreakerScope::AllCalls);
        let mut breaker = CircuitBreaker::new(config).unwrap();
        for _ in 0..4 {
            breaker.record(0.0, AttemptKind::First, ERR);
        }
        // Below calls_min (5): still closed.
        assert!(!breaker.is_open());
        breaker.record(0.0, AttemptKind::First, ERR);
        assert!(breaker.is_open());
        assert!(!breaker.allow_first(500.0));
        assert!(breaker.allow_retry(500.0, FailureKind::Error).is_none());
        // After open_ms one probe goes out, the next call is refused while it is in flight.
        assert!(breaker.allow_first(1000.0));
        assert!(!breaker.allow_first(1000.0));
        breaker.record(1010.0, AttemptKind::First, ERR);
        assert!(!breaker.allow_first(1500.0));
        assert!(breaker.allow_first(2010.0));
        breaker.record(2020.0, AttemptKind::First, AttemptResult::Success);
        assert!(!breaker.is_open());
        assert!(breaker.allow_first(2030.0));
    }

    #[test]
    fn a_window_that_is_not_a_number_is_rejected() {
        let mut config = BreakerConfig::ten_percent(BreakerScope::AllCalls);
        config.window_ms = f64::NAN;
        assert!(CircuitBreaker::new(config).is_err());
    }
}
