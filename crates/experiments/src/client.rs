//! The client side every storm world shares: a named retry policy (attempt limit, backoff and
//! one of the retry controls of [`crate::backoff`]) and the decision after a failed attempt.

use std::fmt;

use rand::Rng;

use crate::backoff::{
    AttemptKind, AwsRetryQuota, Backoff, BackoffState, BreakerConfig, BreakerScope, CircuitBreaker,
    Decision, Failure, FailureKind, GrpcThrottle, RetryControl, RetryGate, RetryPermit,
    RetryPolicy, RetryRatio, Strategy, TokenBucket,
};

/// The policies compared by the storm experiments.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum PolicyKind {
    NoRetries,
    /// Up to 3 retries, no retry control.
    ThreeRetries,
    /// Brooker (2022): a success deposits 0.1 token, a retry costs 1.
    TokenBucket,
    /// Brooker (2022): a breaker that stops retries (not first tries) above 10% failures.
    RetryBreaker,
    /// A classic breaker that stops every call above 10% failures, then probes.
    CircuitBreaker,
    /// The AWS SDK standard quota (500 tokens, 5 per retry, 10 after a timeout).
    AwsQuota,
    /// The same quota with the 2026 costs (14 per error retry, 5 per throttling retry).
    AwsQuota2026,
    /// Google SRE: retries at most 10% of attempts per client.
    SreRatio,
    /// gRPC retry throttling, maxTokens 10, tokenRatio 0.1.
    GrpcThrottle,
}

impl PolicyKind {
    /// Brooker (2022)'s four players, then the retry controls of the SDKs and the SRE book.
    pub const BUDGET: [PolicyKind; 8] = [
        PolicyKind::NoRetries,
        PolicyKind::ThreeRetries,
        PolicyKind::TokenBucket,
        PolicyKind::RetryBreaker,
        PolicyKind::AwsQuota,
        PolicyKind::AwsQuota2026,
        PolicyKind::SreRatio,
        PolicyKind::GrpcThrottle,
    ];

    pub fn name(&self) -> &'static str {
        match self {
            PolicyKind::NoRetries => "no-retries",
            PolicyKind::ThreeRetries => "3-retries",
            PolicyKind::TokenBucket => "token-bucket",
            PolicyKind::RetryBreaker => "retry-breaker",
            PolicyKind::CircuitBreaker => "circuit-breaker",
            PolicyKind::AwsQuota => "aws-quota",
            PolicyKind::AwsQuota2026 => "aws-quota-2026",
            PolicyKind::SreRatio => "sre-ratio",
            PolicyKind::GrpcThrottle => "grpc-throttle",
        }
    }

    /// A stable number per policy for generator stream ids.
    pub fn tag(&self) -> u64 {
        *self as u64 + 1
    }

    /// Whether the policy limits retries by the client's recent history.
    pub fn is_budgeted(&self) -> bool {
        !matches!(self, PolicyKind::NoRetries | PolicyKind::ThreeRetries)
    }

    /// A fresh control for one client.
    pub fn control(&self) -> RetryControl {
        match self {
            PolicyKind::NoRetries | PolicyKind::ThreeRetries => RetryControl::Unlimited,
            PolicyKind::TokenBucket => RetryControl::Bucket(TokenBucket::brooker()),
            PolicyKind::RetryBreaker => RetryControl::Breaker(
                CircuitBreaker::new(BreakerConfig::ten_percent(BreakerScope::RetriesOnly))
                    .expect("valid defaults"),
            ),
            PolicyKind::CircuitBreaker => RetryControl::Breaker(
                CircuitBreaker::new(BreakerConfig::ten_percent(BreakerScope::AllCalls))
                    .expect("valid defaults"),
            ),
            PolicyKind::AwsQuota => RetryControl::AwsQuota(AwsRetryQuota::standard()),
            PolicyKind::AwsQuota2026 => RetryControl::AwsQuota(AwsRetryQuota::costs_2026()),
            PolicyKind::SreRatio => {
                RetryControl::Ratio(RetryRatio::sre(SRE_WINDOW_MS).expect("valid defaults"))
            }
            PolicyKind::GrpcThrottle => RetryControl::Grpc(GrpcThrottle::example()),
        }
    }

    /// Attempts per request, the first included: 1 without retries, else 4 (3 retries), for
    /// every controlled policy alike so that only the control differs.
    pub fn attempts_max(&self) -> u32 {
        match self {
            PolicyKind::NoRetries => 1,
            _ => 4,
        }
    }
}

impl fmt::Display for PolicyKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The SRE ratio's window: 10 s, about 100 attempts of a 10 requests/s client.
pub const SRE_WINDOW_MS: f64 = 10_000.0;

/// One client: its policy's limits and its own retry control.
#[derive(Clone, Copy, Debug)]
pub struct Client {
    pub policy: RetryPolicy,
    pub control: RetryControl,
}

impl Client {
    pub fn new(kind: PolicyKind, backoff: Backoff) -> Self {
        Client {
            policy: RetryPolicy {
                attempts_max: Some(kind.attempts_max()),
                ..RetryPolicy::unbounded(backoff)
            },
            control: kind.control(),
        }
    }

    /// After attempt number `attempt_count` failed with `failure` at `now_ms`: the delay before
    /// the retry and its permit, or `None` to give up. The attempt limit is checked before the
    /// control, so a control is never charged for a retry the limit forbids.
    pub fn after_failure<R: Rng + ?Sized>(
        &mut self,
        backoff: &mut BackoffState,
        attempt_count: u32,
        elapsed_ms: f64,
        now_ms: f64,
        failure: FailureKind,
        rng: &mut R,
    ) -> Option<(f64, AttemptKind)> {
        let asked = Failure {
            attempt_count,
            elapsed_ms,
            retry_after_ms: None,
        };
        match self.policy.on_failure(backoff, &asked, rng) {
            Decision::GiveUp(_) => None,
            Decision::Retry { delay_ms, .. } => {
                let permit: RetryPermit = self.control.allow_retry(now_ms, failure)?;
                Some((delay_ms, AttemptKind::Retry(permit)))
            }
        }
    }
}

/// Full jitter from `base_ms`, capped at `cap_ms`: the backoff of the storm clients.
pub fn full_jitter(base_ms: f64, cap_ms: f64) -> Result<Backoff, String> {
    Backoff::new(Strategy::FullJitter, base_ms, cap_ms).map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim::run_rng;

    #[test]
    fn limit_before_control() {
        let mut client = Client::new(PolicyKind::AwsQuota, full_jitter(10.0, 100.0).unwrap());
        let mut backoff = client.policy.backoff.start();
        let mut rng = run_rng(1, 1);
        for attempt in 1..=3 {
            assert!(client
                .after_failure(
                    &mut backoff,
                    attempt,
                    0.0,
                    0.0,
                    FailureKind::Error,
                    &mut rng
                )
                .is_some());
        }
        // The fourth failure ends the request without touching the quota.
        assert!(client
            .after_failure(&mut backoff, 4, 0.0, 0.0, FailureKind::Error, &mut rng)
            .is_none());
        let RetryControl::AwsQuota(quota) = client.control else {
            panic!("aws quota expected")
        };
        assert_eq!(quota.tokens(), 500 - 3 * 5);
    }

    #[test]
    fn names_are_distinct() {
        let mut names: Vec<&str> = PolicyKind::BUDGET.iter().map(PolicyKind::name).collect();
        names.push(PolicyKind::CircuitBreaker.name());
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), PolicyKind::BUDGET.len() + 1);
    }
}
