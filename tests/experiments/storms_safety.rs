//! retry-safety: without a key, timed-out attempts that executed become duplicate effects for
//! every backoff strategy; with the key there are none.

use crate::storms_support;

use retrylab::backoff::{Backoff, Strategy};
use retrylab::experiments::capacity::world::{simulate, CapacityConfig, CapacityOutcome};
use retrylab::experiments::client::PolicyKind;
use retrylab::sim::run_rng;

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

/// "Zero duplicates with a key, duplicates with every strategy without one" as claims, judged on
/// a reduced grid; the judge says no to one duplicate, and to a zero reached without any
/// timed-out attempt that executed (a vacuous zero).
#[test]
fn claims_hold_on_a_reduced_grid_and_refuse_a_duplicate_or_a_vacuous_zero() {
    use retrylab::experiments::capacity::safety::{claims, summarise_grid, RetrySafety};
    use retrylab::experiments::{sweep, ClaimVerdict};
    let experiment = RetrySafety::new(vec![100], 30).unwrap();
    let grid = sweep(&experiment, 9110, 2, &|| {}).unwrap();
    let cells = summarise_grid(&grid);
    let judged = claims(&cells);
    assert_eq!(judged.len(), 2);
    for claim in &judged {
        assert_eq!(claim.verdict, ClaimVerdict::Reproduced, "{claim:?}");
    }
    let mut one_duplicate = cells.clone();
    one_duplicate
        .iter_mut()
        .find(|c| c.at.key)
        .unwrap()
        .duplicate_total = 1;
    assert_eq!(
        claims(&one_duplicate)[0].verdict,
        ClaimVerdict::NotReproduced
    );
    let mut vacuous = cells.clone();
    for cell in vacuous.iter_mut().filter(|c| c.at.key) {
        cell.timed_out_executed.mean = 0.0;
    }
    assert_eq!(claims(&vacuous)[0].verdict, ClaimVerdict::NotReproduced);
    let mut one_strategy_clean = cells;
    for cell in one_strategy_clean
        .iter_mut()
        .filter(|c| !c.at.key && c.at.strategy == Strategy::FullJitter)
    {
        cell.duplicate_total = 0;
    }
    assert_eq!(
        claims(&one_strategy_clean)[1].verdict,
        ClaimVerdict::NotReproduced
    );
}
