//! Retry control: gates a client consults before it sends a retry (and, for a full circuit
//! breaker, before any call), so that retries stop when they no longer help.
//!
//! A [`RetryPolicy`](super::RetryPolicy) says *when* a retry would go out; a [`RetryGate`] says
//! *whether* it may go out at all, from the client's recent history. One gate is one client's
//! state: a simulation gives every client its own, as every SDK client instance has its own.
//!
//! The gates, with the numbers of their sources (docs/src/domain.md section 6):
//! - [`AwsRetryQuota`]: the AWS SDK "standard" mode quota: 500 tokens, a retry costs 5 (a retry
//!   after a timeout 10), a success refunds what its retry cost, or 1 if it needed no retry;
//!   the 2026 costs (14 for errors, 5 for throttling) as [`QuotaCosts::AWS_2026`].
//! - [`RetryRatio`]: Google SRE's per-client retry budget: retries at most 10% of requests.
//! - [`GrpcThrottle`]: gRPC retry throttling (gRFC A6): tokens start at `tokens_max`, a failure
//!   takes 1, a success adds `token_ratio`, retries only while tokens > `tokens_max / 2`.
//! - [`TokenBucket`]: Brooker (2022)'s adaptive retries: a success deposits 0.1 token, a retry
//!   takes 1 whole token.
//! - [`CircuitBreaker`]: opens at a 10% failure ratio over a window; either it only stops
//!   retries (Brooker 2022's variant) or it also refuses first attempts until a probe succeeds.
//!
//! Token amounts are integers in thousandths of a token, ratios in per mille (the project's rule:
//! probabilities as integer ratios), so runs are exact and reproducible.

use std::fmt;

use super::breaker::{BreakerScope, CircuitBreaker};
use super::window::WindowCounts;

/// Thousandths of a token per token.
pub const MILLI: u32 = 1000;

/// Why an attempt failed, as the client sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FailureKind {
    /// A retryable error response (5xx, a connection error).
    Error,
    /// A throttling response (429, "slow down").
    Throttled,
    /// No response before the client's timeout.
    Timeout,
}

/// What one attempt ended with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AttemptResult {
    Success,
    Failure(FailureKind),
}

/// What a gate charged for a retry it allowed. The caller keeps it with the attempt and hands it
/// back in [`RetryGate::record`], so a quota can refund the retry that succeeded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RetryPermit {
    pub cost_milli: u32,
}

/// Whether a recorded attempt was a first attempt or a retry (with its permit).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AttemptKind {
    First,
    Retry(RetryPermit),
}

/// One client's retry control. Time is passed in (milliseconds, non-decreasing per gate).
pub trait RetryGate {
    /// May a first attempt be sent? Only a breaker that blocks all calls says no. A gate that
    /// counts attempts counts this one when it answers yes.
    fn allow_first(&mut self, now_ms: f64) -> bool;
    /// May a retry after `failure` be sent now? If yes, its cost has been taken.
    fn allow_retry(&mut self, now_ms: f64, failure: FailureKind) -> Option<RetryPermit>;
    /// Records how an attempt that was sent ended.
    fn record(&mut self, now_ms: f64, kind: AttemptKind, result: AttemptResult);
}

/// Invalid gate parameters.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum GateError {
    #[error("{name} must be in {low}..={high}, got {value}")]
    OutOfRange {
        name: &'static str,
        value: u64,
        low: u64,
        high: u64,
    },
    #[error("window_ms must be finite and > 0, got {0}")]
    Window(f64),
}

pub(super) fn check_range(
    name: &'static str,
    value: u64,
    low: u64,
    high: u64,
) -> Result<(), GateError> {
    if (low..=high).contains(&value) {
        Ok(())
    } else {
        Err(GateError::OutOfRange {
            name,
            value,
            low,
            high,
        })
    }
}

pub(super) fn check_window(window_ms: f64) -> Result<(), GateError> {
    if window_ms.is_finite() && window_ms > 0.0 {
        Ok(())
    } else {
        Err(GateError::Window(window_ms))
    }
}

/// Token costs of the AWS SDK retry quota, in whole tokens.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct QuotaCosts {
    pub retry_error: u32,
    pub retry_throttled: u32,
    pub retry_timeout: u32,
    /// Added when a request succeeds at its first attempt.
    pub success_refund: u32,
}

impl QuotaCosts {
    /// "standard" mode before 2026: retry 5, retry after a timeout 10, first-try success +1.
    pub const AWS_STANDARD: QuotaCosts = QuotaCosts {
        retry_error: 5,
        retry_throttled: 5,
        retry_timeout: 10,
        success_refund: 1,
    };
    /// The 2026 costs: 14 for errors, 5 for throttling. A timeout is charged as an error here
    /// (an assumption: the brief names only errors and throttling).
    pub const AWS_2026: QuotaCosts = QuotaCosts {
        retry_error: 14,
        retry_throttled: 5,
        retry_timeout: 14,
        success_refund: 1,
    };

    fn cost(&self, failure: FailureKind) -> u32 {
        match failure {
            FailureKind::Error => self.retry_error,
            FailureKind::Throttled => self.retry_throttled,
            FailureKind::Timeout => self.retry_timeout,
        }
    }
}

/// The AWS SDK standard-mode retry quota of one client.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct AwsRetryQuota {
    tokens: u32,
    capacity: u32,
    costs: QuotaCosts,
}

impl AwsRetryQuota {
    /// The SDK's quota size.
    pub const CAPACITY: u32 = 500;

    /// A full quota of `capacity` tokens.
    pub fn new(capacity: u32, costs: QuotaCosts) -> Result<Self, GateError> {
        check_range("capacity", u64::from(capacity), 1, 1_000_000)?;
        Ok(AwsRetryQuota {
            tokens: capacity,
            capacity,
            costs,
        })
    }

    /// 500 tokens, standard costs.
    pub fn standard() -> Self {
        AwsRetryQuota::new(Self::CAPACITY, QuotaCosts::AWS_STANDARD).expect("valid defaults")
    }

    /// 500 tokens, 2026 costs.
    pub fn costs_2026() -> Self {
        AwsRetryQuota::new(Self::CAPACITY, QuotaCosts::AWS_2026).expect("valid defaults")
    }

    pub fn tokens(&self) -> u32 {
        self.tokens
    }
}

impl RetryGate for AwsRetryQuota {
    fn allow_first(&mut self, _now_ms: f64) -> bool {
        true
    }

    fn allow_retry(&mut self, _now_ms: f64, failure: FailureKind) -> Option<RetryPermit> {
        let cost = self.costs.cost(failure);
        if self.tokens < cost {
            return None;
        }
        self.tokens -= cost;
        Some(RetryPermit {
            cost_milli: cost * MILLI,
        })
    }

    fn record(&mut self, _now_ms: f64, kind: AttemptKind, result: AttemptResult) {
        if result != AttemptResult::Success {
            return;
        }
        let refund = match kind {
            AttemptKind::First => self.costs.success_refund,
            AttemptKind::Retry(permit) => permit.cost_milli / MILLI,
        };
        self.tokens = (self.tokens + refund).min(self.capacity);
    }
}

/// Google SRE's per-client retry budget: a retry is allowed only while retries are below
/// `ratio_permille` of all attempts sent in the last `window_ms`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RetryRatio {
    ratio_permille: u32,
    /// total = attempts sent, marked = retries among them.
    window: WindowCounts,
}

impl RetryRatio {
    /// 10%, as the SRE book.
    pub const RATIO_PERMILLE_SRE: u32 = 100;

    pub fn new(ratio_permille: u32, window_ms: f64) -> Result<Self, GateError> {
        check_range("ratio_permille", u64::from(ratio_permille), 0, 1000)?;
        check_window(window_ms)?;
        Ok(RetryRatio {
            ratio_permille,
            window: WindowCounts::new(window_ms),
        })
    }

    /// 10% over the last `window_ms`.
    pub fn sre(window_ms: f64) -> Result<Self, GateError> {
        RetryRatio::new(Self::RATIO_PERMILLE_SRE, window_ms)
    }
}

impl RetryGate for RetryRatio {
    fn allow_first(&mut self, now_ms: f64) -> bool {
        self.window.add(now_ms, false);
        true
    }

    fn allow_retry(&mut self, now_ms: f64, _failure: FailureKind) -> Option<RetryPermit> {
        let (attempts, retries) = self.window.counts(now_ms);
        // Counting this retry too: (retries + 1) / (attempts + 1) <= ratio.
        let allowed = u64::from(retries + 1) * u64::from(MILLI)
            <= u64::from(self.ratio_permille) * u64::from(attempts + 1);
        if !allowed {
            return None;
        }
        self.window.add(now_ms, true);
        Some(RetryPermit { cost_milli: 0 })
    }

    fn record(&mut self, _now_ms: f64, _kind: AttemptKind, _result: AttemptResult) {}
}

/// gRPC retry throttling (gRFC A6), per client.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct GrpcThrottle {
    tokens_milli: u32,
    tokens_milli_max: u32,
    token_ratio_milli: u32,
}

impl GrpcThrottle {
    /// The gRFC's example configuration: maxTokens 10, tokenRatio 0.1.
    pub fn example() -> Self {
        GrpcThrottle::new(10, 100).expect("valid defaults")
    }

    /// `tokens_max` in 1..=1000 as in the gRFC; `token_ratio_milli` is tokenRatio in thousandths
    /// (the gRFC keeps three decimals too).
    pub fn new(tokens_max: u32, token_ratio_milli: u32) -> Result<Self, GateError> {
        check_range("max_tokens", u64::from(tokens_max), 1, 1000)?;
        check_range(
            "token_ratio_milli",
            u64::from(token_ratio_milli),
            1,
            u64::from(tokens_max * MILLI),
        )?;
        Ok(GrpcThrottle {
            tokens_milli: tokens_max * MILLI,
            tokens_milli_max: tokens_max * MILLI,
            token_ratio_milli,
        })
    }

    pub fn tokens_milli(&self) -> u32 {
        self.tokens_milli
    }
}

impl RetryGate for GrpcThrottle {
    fn allow_first(&mut self, _now_ms: f64) -> bool {
        true
    }

    fn allow_retry(&mut self, _now_ms: f64, _failure: FailureKind) -> Option<RetryPermit> {
        // Strictly above half: at exactly half, retries stop.
        (self.tokens_milli > self.tokens_milli_max / 2).then_some(RetryPermit { cost_milli: 0 })
    }

    fn record(&mut self, _now_ms: f64, _kind: AttemptKind, result: AttemptResult) {
        self.tokens_milli = match result {
            AttemptResult::Success => {
                (self.tokens_milli + self.token_ratio_milli).min(self.tokens_milli_max)
            }
            AttemptResult::Failure(_) => self.tokens_milli.saturating_sub(MILLI),
        };
    }
}

/// Brooker (2022)'s adaptive retries: every success deposits `deposit_milli`, every retry takes
/// `retry_cost_milli` if the bucket holds it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TokenBucket {
    tokens_milli: u32,
    capacity_milli: u32,
    deposit_milli: u32,
    retry_cost_milli: u32,
}

impl TokenBucket {
    /// A success deposits 0.1 token, a retry takes 1, the bucket holds 10 and starts full.
    pub fn brooker() -> Self {
        TokenBucket::new(10 * MILLI, 100, MILLI).expect("valid defaults")
    }

    pub fn new(
        capacity_milli: u32,
        deposit_milli: u32,
        retry_cost_milli: u32,
    ) -> Result<Self, GateError> {
        check_range(
            "capacity_milli",
            u64::from(capacity_milli),
            1,
            1_000_000_000,
        )?;
        check_range(
            "retry_cost_milli",
            u64::from(retry_cost_milli),
            1,
            u64::from(capacity_milli),
        )?;
        check_range(
            "deposit_milli",
            u64::from(deposit_milli),
            0,
            u64::from(capacity_milli),
        )?;
        Ok(TokenBucket {
            tokens_milli: capacity_milli,
            capacity_milli,
            deposit_milli,
            retry_cost_milli,
        })
    }

    pub fn tokens_milli(&self) -> u32 {
        self.tokens_milli
    }
}

impl RetryGate for TokenBucket {
    fn allow_first(&mut self, _now_ms: f64) -> bool {
        true
    }

    fn allow_retry(&mut self, _now_ms: f64, _failure: FailureKind) -> Option<RetryPermit> {
        if self.tokens_milli < self.retry_cost_milli {
            return None;
        }
        self.tokens_milli -= self.retry_cost_milli;
        Some(RetryPermit {
            cost_milli: self.retry_cost_milli,
        })
    }

    fn record(&mut self, _now_ms: f64, _kind: AttemptKind, result: AttemptResult) {
        if result == AttemptResult::Success {
            self.tokens_milli = (self.tokens_milli + self.deposit_milli).min(self.capacity_milli);
        }
    }
}

/// Every gate behind one type, so a client model can hold "its" control without generics, and
/// experiments can name them in CSV files.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum RetryControl {
    /// No gate: the retry policy's attempt limit is the only limit.
    Unlimited,
    AwsQuota(AwsRetryQuota),
    Ratio(RetryRatio),
    Grpc(GrpcThrottle),
    Bucket(TokenBucket),
    Breaker(CircuitBreaker),
}

impl RetryControl {
    fn gate(&mut self) -> Option<&mut dyn RetryGate> {
        match self {
            RetryControl::Unlimited => None,
            RetryControl::AwsQuota(g) => Some(g),
            RetryControl::Ratio(g) => Some(g),
            RetryControl::Grpc(g) => Some(g),
            RetryControl::Bucket(g) => Some(g),
            RetryControl::Breaker(g) => Some(g),
        }
    }
}

impl RetryGate for RetryControl {
    fn allow_first(&mut self, now_ms: f64) -> bool {
        self.gate().is_none_or(|g| g.allow_first(now_ms))
    }

    fn allow_retry(&mut self, now_ms: f64, failure: FailureKind) -> Option<RetryPermit> {
        match self.gate() {
            None => Some(RetryPermit { cost_milli: 0 }),
            Some(g) => g.allow_retry(now_ms, failure),
        }
    }

    fn record(&mut self, now_ms: f64, kind: AttemptKind, result: AttemptResult) {
        if let Some(g) = self.gate() {
            g.record(now_ms, kind, result);
        }
    }
}

impl fmt::Display for RetryControl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = match self {
            RetryControl::Unlimited => "unlimited",
            RetryControl::AwsQuota(q) if q.costs == QuotaCosts::AWS_2026 => "aws-quota-2026",
            RetryControl::AwsQuota(_) => "aws-quota",
            RetryControl::Ratio(_) => "sre-ratio",
            RetryControl::Grpc(_) => "grpc-throttle",
            RetryControl::Bucket(_) => "token-bucket",
            RetryControl::Breaker(b) if b.scope() == BreakerScope::AllCalls => "circuit-breaker",
            RetryControl::Breaker(_) => "retry-breaker",
        };
        f.write_str(name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ERR: AttemptResult = AttemptResult::Failure(FailureKind::Error);

    #[test]
    fn aws_quota_charges_refunds_and_runs_dry() {
        let mut quota = AwsRetryQuota::standard();
        let permit = quota.allow_retry(0.0, FailureKind::Error).unwrap();
        assert_eq!(quota.tokens(), 495);
        let timeout_permit = quota.allow_retry(0.0, FailureKind::Timeout).unwrap();
        assert_eq!(quota.tokens(), 485);
        // The retry that succeeds gets its cost back; a first-try success adds 1; capped.
        quota.record(1.0, AttemptKind::Retry(permit), AttemptResult::Success);
        assert_eq!(quota.tokens(), 490);
        quota.record(1.0, AttemptKind::Retry(timeout_permit), ERR);
        assert_eq!(quota.tokens(), 490);
        quota.record(1.0, AttemptKind::First, AttemptResult::Success);
        assert_eq!(quota.tokens(), 491);
        // 491 tokens pay for 98 retries at 5; the 99th is refused.
        let granted = (0..200)
            .filter(|_| quota.allow_retry(2.0, FailureKind::Error).is_some())
            .count();
        assert_eq!(granted, 98);
        assert_eq!(quota.tokens(), 1);
        for _ in 0..1000 {
            quota.record(3.0, AttemptKind::First, AttemptResult::Success);
        }
        assert_eq!(quota.tokens(), 500);
    }

    #[test]
    fn aws_2026_costs_differ_by_failure() {
        let mut quota = AwsRetryQuota::costs_2026();
        quota.allow_retry(0.0, FailureKind::Error).unwrap();
        assert_eq!(quota.tokens(), 486);
        quota.allow_retry(0.0, FailureKind::Throttled).unwrap();
        assert_eq!(quota.tokens(), 481);
        assert_eq!(RetryControl::AwsQuota(quota).to_string(), "aws-quota-2026");
        assert_eq!(
            RetryControl::AwsQuota(AwsRetryQuota::standard()).to_string(),
            "aws-quota"
        );
    }

    #[test]
    fn sre_ratio_keeps_retries_near_ten_percent() {
        let mut ratio = RetryRatio::sre(10_000.0).unwrap();
        let mut retries = 0;
        // Every first attempt fails and asks for a retry: at most ~10% of attempts are retries.
        for i in 0..1000 {
            let now_ms = f64::from(i);
            assert!(ratio.allow_first(now_ms));
            if ratio.allow_retry(now_ms, FailureKind::Error).is_some() {
                retries += 1;
            }
        }
        // retries / (1000 + retries) <= 0.1  =>  retries <= 111.
        assert!((100..=111).contains(&retries), "retries {retries}");
        // A fresh window (all old buckets expired) refuses a retry with no first attempt in it.
        assert!(ratio.allow_retry(1e9, FailureKind::Error).is_none());
    }

    #[test]
    fn grpc_throttle_stops_at_half_and_recovers_by_ratio() {
        let mut throttle = GrpcThrottle::example();
        assert_eq!(throttle.tokens_milli(), 10_000);
        for _ in 0..4 {
            throttle.record(0.0, AttemptKind::First, ERR);
        }
        // 6 tokens > 5: allowed.
        assert!(throttle.allow_retry(0.0, FailureKind::Error).is_some());
        throttle.record(0.0, AttemptKind::First, ERR);
        // Exactly 5 is not above half.
        assert_eq!(throttle.tokens_milli(), 5_000);
        assert!(throttle.allow_retry(0.0, FailureKind::Error).is_none());
        throttle.record(0.0, AttemptKind::First, AttemptResult::Success);
        assert_eq!(throttle.tokens_milli(), 5_100);
        assert!(throttle.allow_retry(0.0, FailureKind::Error).is_some());
        for _ in 0..100 {
            throttle.record(0.0, AttemptKind::First, ERR);
        }
        assert_eq!(throttle.tokens_milli(), 0);
        for _ in 0..1000 {
            throttle.record(0.0, AttemptKind::First, AttemptResult::Success);
        }
        assert_eq!(throttle.tokens_milli(), 10_000);
        assert!(GrpcThrottle::new(0, 100).is_err());
        assert!(GrpcThrottle::new(10, 0).is_err());
    }

    #[test]
    fn token_bucket_allows_a_tenth_of_a_retry_per_success() {
        let mut bucket = TokenBucket::brooker();
        let granted = (0..20)
            .filter(|_| bucket.allow_retry(0.0, FailureKind::Error).is_some())
            .count();
        assert_eq!(granted, 10);
        for _ in 0..9 {
            bucket.record(0.0, AttemptKind::First, AttemptResult::Success);
        }
        assert!(bucket.allow_retry(0.0, FailureKind::Error).is_none());
        bucket.record(0.0, AttemptKind::First, AttemptResult::Success);
        assert!(bucket.allow_retry(0.0, FailureKind::Error).is_some());
        // Failures deposit nothing.
        bucket.record(0.0, AttemptKind::First, ERR);
        assert_eq!(bucket.tokens_milli(), 0);
    }

    #[test]
    fn unlimited_always_allows() {
        let mut control = RetryControl::Unlimited;
        assert!(control.allow_first(0.0));
        for _ in 0..1000 {
            assert!(control.allow_retry(0.0, FailureKind::Timeout).is_some());
            control.record(0.0, AttemptKind::First, ERR);
        }
        assert_eq!(control.to_string(), "unlimited");
    }

    #[test]
    fn bad_parameters_are_rejected() {
        assert!(AwsRetryQuota::new(0, QuotaCosts::AWS_STANDARD).is_err());
        assert!(RetryRatio::new(1001, 1000.0).is_err());
        assert!(RetryRatio::new(100, 0.0).is_err());
        assert!(TokenBucket::new(1000, 100, 2000).is_err());
    }
}
