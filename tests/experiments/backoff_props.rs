//! Properties of every backoff strategy: delays within their bounds, caps respected, and the same
//! sequence from the same generator state.

use proptest::prelude::*;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use retrylab::backoff::{
    Backoff, Decision, Failure, GiveUpReason, RetryAfter, RetryPolicy, Strategy as Delay,
};

fn any_strategy() -> impl proptest::strategy::Strategy<Value = Delay> {
    prop_oneof![
        Just(Delay::None),
        Just(Delay::Constant),
        Just(Delay::Exponential),
        Just(Delay::EqualJitter),
        Just(Delay::FullJitter),
        (1u32..=15).prop_map(|growth| Delay::Decorrelated { growth }),
        (1u32..=15).prop_map(|growth| Delay::DecorrelatedCapped { growth }),
    ]
}

/// (base_ms, cap_ms) with 0 < base <= cap <= 1 day.
fn base_and_cap() -> impl proptest::strategy::Strategy<Value = (f64, f64)> {
    (0.001f64..10_000.0, 1.0f64..10_000.0).prop_map(|(base_ms, factor)| {
        let cap_ms = (base_ms * factor).min(86_400_000.0);
        (base_ms, cap_ms)
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn delays_stay_within_bounds_and_cap(
        strategy in any_strategy(),
        (base_ms, cap_ms) in base_and_cap(),
        seed in any::<u64>(),
        attempts in 1u32..200,
    ) {
        let backoff = Backoff::new(strategy, base_ms, cap_ms).unwrap();
        let mut state = backoff.start();
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        for attempt in 1..=attempts {
            let bounds = state.bounds_ms(attempt);
            let delay_ms = state.next_delay_ms(attempt, &mut rng);
            prop_assert!(delay_ms.is_finite());
            prop_assert!(delay_ms >= 0.0);
            prop_assert!(delay_ms <= cap_ms, "{strategy}: {delay_ms} above cap {cap_ms}");
            prop_assert!(bounds.delay_ms_min <= bounds.delay_ms_max);
            prop_assert!(delay_ms >= bounds.delay_ms_min && delay_ms <= bounds.delay_ms_max,
                "{strategy} attempt {attempt}: {delay_ms} outside [{}, {}]", bounds.delay_ms_min, bounds.delay_ms_max);
            match strategy {
                Delay::None => prop_assert_eq!(delay_ms, 0.0),
                Delay::Constant => prop_assert_eq!(delay_ms, base_ms),
                Delay::Exponential => prop_assert_eq!(delay_ms, backoff.expo_ms(attempt)),
                Delay::EqualJitter => prop_assert!(delay_ms >= backoff.expo_ms(attempt) / 2.0),
                Delay::FullJitter => prop_assert!(delay_ms <= backoff.expo_ms(attempt)),
                Delay::Decorrelated { .. } | Delay::DecorrelatedCapped { .. } => {
                    prop_assert!(delay_ms >= base_ms)
                }
            }
        }
    }

    #[test]
    fn expo_is_monotone_and_capped((base_ms, cap_ms) in base_and_cap(), attempt in 0u32..100) {
        let backoff = Backoff::new(Delay::Exponential, base_ms, cap_ms).unwrap();
        prop_assert!(backoff.expo_ms(attempt) <= backoff.expo_ms(attempt + 1));
        prop_assert!(backoff.expo_ms(attempt) <= cap_ms);
        prop_assert!(backoff.expo_ms(attempt) >= base_ms.min(cap_ms));
    }

    #[test]
    fn identical_generator_states_give_identical_sequences(
        strategy in any_strategy(),
        (base_ms, cap_ms) in base_and_cap(),
        seed in any::<u64>(),
        stream in any::<u64>(),
        warmup in 0usize..50,
    ) {
        let backoff = Backoff::new(strategy, base_ms, cap_ms).unwrap();
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        rng.set_stream(stream);
        // Advance the generator to an arbitrary state, then fork it.
        for _ in 0..warmup {
            let _: u64 = rand::Rng::random(&mut rng);
        }
        let mut rng_copy = rng.clone();
        let mut state_a = backoff.start();
        let mut state_b = backoff.start();
        let a: Vec<f64> = (1..=40).map(|n| state_a.next_delay_ms(n, &mut rng)).collect();
        let b: Vec<f64> = (1..=40).map(|n| state_b.next_delay_ms(n, &mut rng_copy)).collect();
        prop_assert_eq!(a, b);
        prop_assert_eq!(state_a, state_b);
    }

    #[test]
    fn policy_never_retries_past_its_limits(
        strategy in any_strategy(),
        seed in any::<u64>(),
        attempts_max in 1u32..10,
        deadline_ms in 1.0f64..5_000.0,
        retry_after_ms in proptest::option::of(0.0f64..3_000.0),
    ) {
        let policy = RetryPolicy {
            backoff: Backoff::new(strategy, 5.0, 2000.0).unwrap(),
            attempts_max: Some(attempts_max),
            deadline_ms: Some(deadline_ms),
            retry_after: RetryAfter::Honour { wait_ms_max: 2_500.0 },
        };
        let mut state = policy.backoff.start();
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let mut elapsed_ms = 0.0;
        let mut retries = 0u32;
        for attempt_count in 1..=attempts_max + 1 {
            let failure = Failure { attempt_count, elapsed_ms, retry_after_ms };
            match policy.on_failure(&mut state, &failure, &mut rng) {
                Decision::Retry { delay_ms, retry_index } => {
                    prop_assert_eq!(retry_index, attempt_count);
                    prop_assert!(attempt_count < attempts_max);
                    prop_assert!(elapsed_ms + delay_ms < deadline_ms);
                    if let Some(wait_ms) = retry_after_ms {
                        prop_assert!(delay_ms >= wait_ms);
                    }
                    elapsed_ms += delay_ms + 1.0;
                    retries += 1;
                }
                Decision::GiveUp(reason) => {
                    match reason {
                        GiveUpReason::AttemptsExhausted { attempt_count: n } => prop_assert_eq!(n, attempts_max),
                        GiveUpReason::DeadlineExceeded { start_ms, .. } => prop_assert!(start_ms >= deadline_ms),
                        GiveUpReason::RetryAfterTooLong { retry_after_ms: wait_ms } => prop_assert!(wait_ms > 2_500.0),
                    }
                    break;
                }
            }
        }
        prop_assert!(retries < attempts_max);
    }
}
