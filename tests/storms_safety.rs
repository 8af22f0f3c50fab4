//! retry-safety: without a key, timed-out attempts that executed become duplicate effects for
//! every backoff strategy; with the key there are none.

mod storms_support;

use retrylab::backoff::{Backoff, Strategy};
use retrylab::sim::run_rng;
use retrylab::storms::capacity::{simulate, CapacityConfig, CapacityOutcome};
use retrylab::storms::client::PolicyKind;

const EXE: &str = env!("CARGO_BIN_EXE_retry-safety");

fn outcome(strategy: Strategy, key: bool) -> CapacityOutcome {
    let config = CapacityConfig {
        duration_ms: 30_000.0,
        idempotency_key: key,
        ..CapacityConfig::standard(Backoff::new(strategy, 25.0, 1000.0).unwrap())
    };
    simulate(
        &config,
        PolicyKind::ThreeRetries,
        &mut run_rng(8, u64::from(key)),
    )
    .unwrap()
}

#[test]
fn the_key_removes_every_duplicate_and_no_key_duplicates_with_every_strategy() {
    for strategy in Strategy::POST {
        let without = outcome(strategy, false);
        let with = outcome(strategy, true);
        assert!(
            without.timed_out_executed_count > 0,
            "{strategy}: {without:?}"
        );
        assert!(
            without.duplicate_effect_count > 0,
            "{strategy}: {without:?}"
        );
        // The scenario timed out with the key too: the zero is not for lack of timeouts.
        assert!(with.timed_out_executed_count > 0, "{strategy}: {with:?}");
        assert_eq!(with.duplicate_effect_count, 0, "{strategy}");
        assert!(with.effect_count <= with.request_count);
    }
}

#[test]
fn binary_is_deterministic() {
    let files = storms_support::assert_same_whatever_the_threads(
        EXE,
        &["--runs", "2", "--duration-s", "30", "--timeouts-ms", "100"],
    );
    let summary = storms_support::text_of(&files, "summary.csv");
    for line in summary.lines().filter(|l| l.contains(",with-key,")) {
        let duplicates: f64 = line.split(',').nth(4).unwrap().parse().unwrap();
        assert_eq!(duplicates, 0.0, "{line}");
    }
    storms_support::assert_bad_flags_exit_2(
        EXE,
        &[
            &["--duration-s", "10"],
            &["--timeouts-ms", "100,50"],
            &["--timeouts-ms", "5"],
        ],
    );
}
