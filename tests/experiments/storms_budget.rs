//! retry-budget: the orderings its README states hold in a shorter world, and the binary is
//! deterministic whatever the thread count.

use crate::storms_support;

use retrylab::experiments::budget::world::{simulate, BrookerConfig, BrookerOutcome};
use retrylab::experiments::client::PolicyKind;
use retrylab::sim::run_rng;

const EXE: &str = env!("CARGO_BIN_EXE_retry-budget");

/// 100 clients at 10/s as in the binary, 30 s of which 15 s are counted.
fn outcome(policy: PolicyKind, failure_permille: u32) -> BrookerOutcome {
    let config = BrookerConfig {
        warmup_ms: 15_000.0,
        duration_ms: 30_000.0,
        ..BrookerConfig::post(failure_permille)
    };
    simulate(
        &config,
        policy,
        &mut run_rng(6, policy.tag() << 16 | u64::from(failure_permille)),
    )
    .unwrap()
}

#[test]
fn budgeted_policies_amplify_less_than_three_retries_at_high_p() {
    for p in [700, 1000] {
        let three = outcome(PolicyKind::ThreeRetries, p).amplification();
        for policy in PolicyKind::BUDGET
            .into_iter()
            .filter(PolicyKind::is_budgeted)
        {
            let amplification = outcome(policy, p).amplification();
            assert!(
                amplification < three - 0.5,
                "{policy} at p = {p}: {amplification} against 3 retries {three}"
            );
        }
    }
}

#[test]
fn dead_server_sees_one_plus_three_calls_and_sre_holds_about_one_point_one() {
    let three = outcome(PolicyKind::ThreeRetries, 1000);
    assert_eq!(three.server_call_count, 4 * three.request_count);
    assert_eq!(three.success_count, 0);
    let sre = outcome(PolicyKind::SreRatio, 1000).amplification();
    assert!((1.05..=1.112).contains(&sre), "sre ratio {sre}");
}

#[test]
fn retries_buy_success_at_low_p_and_the_large_quota_acts_like_them() {
    let none = outcome(PolicyKind::NoRetries, 100).success_rate();
    let three = outcome(PolicyKind::ThreeRetries, 100).success_rate();
    assert!(
        three > 0.99 && none < 0.92,
        "3 retries {three}, none {none}"
    );
    // At p = 0.3 the 500-token quota still pays for every retry; the failure-ratio controls do not.
    let three_amp = outcome(PolicyKind::ThreeRetries, 300).amplification();
    let quota_amp = outcome(PolicyKind::AwsQuota, 300).amplification();
    let grpc_amp = outcome(PolicyKind::GrpcThrottle, 300).amplification();
    assert!(
        (quota_amp - three_amp).abs() < 0.05 * three_amp,
        "{quota_amp} vs {three_amp}"
    );
    assert!(grpc_amp < 1.05, "grpc {grpc_amp}");
}

#[test]
fn binary_is_deterministic_and_refuses_bad_flags() {
    let files = storms_support::assert_same_whatever_the_threads(
        EXE,
        &["--runs", "2", "--duration-s", "4"],
    );
    let summary = storms_support::text_of(&files, "summary.csv");
    // 8 policies x 11 failure rates and a header.
    assert_eq!(summary.lines().count(), 1 + 8 * 11);
    for name in [
        "README.md",
        "amplification.png",
        "success.png",
        "amplification.svg",
    ] {
        assert!(files.iter().any(|(n, _)| n == name), "{name} missing");
    }
    storms_support::assert_bad_flags_exit_2(
        EXE,
        &[&["--duration-s", "1"], &["--runs", "0"], &["--p", "3"]],
    );
}

/// The ordering of the policies as claims, judged on a reduced grid (30 s runs, four failure
/// rates); and the judge says no when a control amplifies like plain retries.
#[test]
fn claims_hold_on_a_reduced_grid_and_fail_when_a_control_amplifies() {
    use retrylab::experiments::budget::{claims, summarise, RetryBudget};
    use retrylab::experiments::{sweep, ClaimVerdict};
    let experiment = RetryBudget {
        failure_permille: vec![100, 300, 700, 1000],
        ..RetryBudget::new(30).unwrap()
    };
    let grid = sweep(&experiment, 2022, 2, &|| {}).unwrap();
    let mut cells = summarise(&grid);
    let judged = claims::evaluate(&cells);
    assert_eq!(judged.len(), 6);
    for claim in &judged {
        assert_eq!(claim.verdict, ClaimVerdict::Reproduced, "{claim:?}");
    }
    let three = cells
        .iter()
        .find(|c| c.policy == PolicyKind::ThreeRetries && c.failure_permille == 1000)
        .unwrap()
        .amplification;
    for cell in cells
        .iter_mut()
        .filter(|c| c.policy == PolicyKind::TokenBucket)
    {
        cell.amplification = three;
    }
    let judged = claims::evaluate(&cells);
    assert_eq!(
        judged[1].verdict,
        ClaimVerdict::NotReproduced,
        "{:?}",
        judged[1]
    );
    assert_ne!(
        judged[2].verdict,
        ClaimVerdict::Reproduced,
        "{:?}",
        judged[2]
    );
}
