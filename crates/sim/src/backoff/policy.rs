//! Retry control around a backoff: attempt limit, overall deadline, server's Retry-After.
//!
//! Deliberately a pure decision function: the caller passes what happened (attempts so far,
//! elapsed time, any Retry-After) and gets "retry after this delay" or "give up, because". Retry
//! budgets, token buckets and circuit breakers are further gates a caller can consult before or
//! after this one; they need shared state, so they live in their own types.

use rand::Rng;

use super::strategy::{Backoff, BackoffState};

/// What the client does with a server's Retry-After (429/503).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum RetryAfter {
    /// Use the backoff delay only.
    Ignore,
    /// Wait at least what the server asks; give up if it asks for more than `wait_ms_max`.
    Honour { wait_ms_max: f64 },
}

/// A backoff plus the limits that end the retry loop. `None` limits mean unbounded, as in the
/// AWS post's clients (no attempt limit, no timeout); real clients should set both.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RetryPolicy {
    pub backoff: Backoff,
    /// Total attempts including the first one.
    pub attempts_max: Option<u32>,
    /// Budget for the whole operation, measured from the start of the first attempt. A retry
    /// that would start after it is not made: the user has stopped waiting.
    pub deadline_ms: Option<f64>,
    pub retry_after: RetryAfter,
}

/// What the caller knows after a failed (retryable) attempt.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Failure {
    /// Attempts made so far, including the one that just failed (so 1 after the first failure).
    pub attempt_count: u32,
    /// Time since the first attempt started.
    pub elapsed_ms: f64,
    /// The server's Retry-After, if it sent one.
    pub retry_after_ms: Option<f64>,
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Decision {
    /// Wait `delay_ms`, then make retry number `retry_index` (1 for the first retry).
    Retry {
        delay_ms: f64,
        retry_index: u32,
    },
    GiveUp(GiveUpReason),
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub enum GiveUpReason {
    AttemptsExhausted {
        attempt_count: u32,
    },
    /// The retry would start at `start_ms` (since the first attempt), at or after the deadline.
    DeadlineExceeded {
        start_ms: f64,
        deadline_ms: f64,
    },
    /// The server asked for a longer wait than the client accepts.
    RetryAfterTooLong {
        retry_after_ms: f64,
    },
}

impl RetryPolicy {
    /// The AWS post's client: unbounded attempts, no deadline, no Retry-After.
    pub fn unbounded(backoff: Backoff) -> Self {
        RetryPolicy {
            backoff,
            attempts_max: None,
            deadline_ms: None,
            retry_after: RetryAfter::Ignore,
        }
    }

    /// Decides what to do after a failure. Draws from `rng` only when a retry is possible by the
    /// attempt count, so a client that has exhausted its attempts does not perturb the stream.
    pub fn on_failure<R: Rng + ?Sized>(
        &self,
        state: &mut BackoffState,
        failure: &Failure,
        rng: &mut R,
    ) -> Decision {
        debug_assert!(failure.attempt_count >= 1);
        if let Some(attempts_max) = self.attempts_max {
            if failure.attempt_count >= attempts_max {
                return Decision::GiveUp(GiveUpReason::AttemptsExhausted {
                    attempt_count: failure.attempt_count,
                });
            }
        }
        let retry_index = failure.attempt_count;
        let mut delay_ms = state.next_delay_ms(retry_index, rng);
        if let (RetryAfter::Honour { wait_ms_max }, Some(retry_after_ms)) =
            (self.retry_after, failure.retry_after_ms)
        {
            if retry_after_ms > wait_ms_max {
                return Decision::GiveUp(GiveUpReason::RetryAfterTooLong { retry_after_ms });
            }
            // The server knows its recovery time better than our formula: never retry earlier.
            delay_ms = delay_ms.max(retry_after_ms);
        }
        if let Some(deadline_ms) = self.deadline_ms {
            let start_ms = failure.elapsed_ms + delay_ms;
            if start_ms >= deadline_ms {
                return Decision::GiveUp(GiveUpReason::DeadlineExceeded {
                    start_ms,
                    deadline_ms,
                });
            }
        }
        Decision::Retry {
            delay_ms,
            retry_index,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backoff::Strategy;
    use rand::SeedableRng;
    use rand_chacha::ChaCha8Rng;

    fn failure(attempt_count: u32, elapsed_ms: f64, retry_after_ms: Option<f64>) -> Failure {
        Failure {
            attempt_count,
            elapsed_ms,
            retry_after_ms,
        }
    }

    #[test]
    fn attempts_limit_counts_the_first_attempt() {
        let policy = RetryPolicy {
            attempts_max: Some(3),
            ..RetryPolicy::unbounded(Backoff::aws_post(Strategy::Exponential))
        };
        let mut state = policy.backoff.start();
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        let first = policy.on_failure(&mut state, &failure(1, 0.0, None), &mut rng);
        assert_eq!(
            first,
            Decision::Retry {
                delay_ms: 10.0,
                retry_index: 1
            }
        );
        let second = policy.on_failure(&mut state, &failure(2, 10.0, None), &mut rng);
        assert!(matches!(second, Decision::Retry { retry_index: 2, .. }));
        let third = policy.on_failure(&mut state, &failure(3, 30.0, None), &mut rng);
        assert_eq!(
            third,
            Decision::GiveUp(GiveUpReason::AttemptsExhausted { attempt_count: 3 })
        );
    }

    #[test]
    fn retry_after_raises_the_delay_and_too_long_gives_up() {
        let policy = RetryPolicy {
            retry_after: RetryAfter::Honour { wait_ms_max: 500.0 },
            ..RetryPolicy::unbounded(Backoff::aws_post(Strategy::Exponential))
        };
        let mut state = policy.backoff.start();
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        let raised = policy.on_failure(&mut state, &failure(1, 0.0, Some(300.0)), &mut rng);
        assert_eq!(
            raised,
            Decision::Retry {
                delay_ms: 300.0,
                retry_index: 1
            }
        );
        // A Retry-After shorter than the backoff does not shorten it (expo(2) = 20 ms).
        let kept = policy.on_failure(&mut state, &failure(2, 300.0, Some(1.0)), &mut rng);
        assert_eq!(
            kept,
            Decision::Retry {
                delay_ms: 20.0,
                retry_index: 2
            }
        );
        let refused = policy.on_failure(&mut state, &failure(3, 320.0, Some(600.0)), &mut rng);
        assert!(matches!(
            refused,
            Decision::GiveUp(GiveUpReason::RetryAfterTooLong { .. })
        ));
        // Ignoring Retry-After keeps the formula's delay.
        let ignoring = RetryPolicy::unbounded(Backoff::aws_post(Strategy::Exponential));
        let mut state = ignoring.backoff.start();
        let plain = ignoring.on_failure(&mut state, &failure(1, 0.0, Some(300.0)), &mut rng);
        assert!(matches!(plain, Decision::Retry { delay_ms, .. } if delay_ms == 10.0));
    }

    #[test]
    fn deadline_stops_retries_that_would_start_too_late() {
        let policy = RetryPolicy {
            deadline_ms: Some(100.0),
            ..RetryPolicy::unbounded(Backoff::aws_post(Strategy::Exponential))
        };
        let mut state = policy.backoff.start();
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        let in_time = policy.on_failure(&mut state, &failure(1, 80.0, None), &mut rng);
        assert!(matches!(in_time, Decision::Retry { delay_ms, .. } if delay_ms == 10.0));
        let late = policy.on_failure(&mut state, &failure(2, 80.0, None), &mut rng);
        assert_eq!(
            late,
            Decision::GiveUp(GiveUpReason::DeadlineExceeded {
                start_ms: 100.0,
                deadline_ms: 100.0
            })
        );
    }
}
