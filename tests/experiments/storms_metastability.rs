//! metastability: plain retries keep the server collapsed after the trigger, no retries and the
//! retry controls let it recover; the binary is deterministic whatever the thread count.

use crate::storms_support;

use retrylab::experiments::capacity::world::{recovery, simulate, CapacityConfig, Recovery};
use retrylab::experiments::client::{full_jitter, PolicyKind};
use retrylab::sim::run_rng;

const EXE: &str = env!("CARGO_BIN_EXE_metastability");

fn recovery_of(policy: PolicyKind, run: u64) -> (Recovery, u64, u64) {
    recovery_with_trigger(policy, run, 10_000.0)
}

fn recovery_with_trigger(policy: PolicyKind, run: u64, trigger_ms: f64) -> (Recovery, u64, u64) {
    let config = CapacityConfig {
        trigger_ms,
        ..CapacityConfig::standard(full_jitter(25.0, 1000.0).unwrap())
    };
    let outcome = simulate(&config, policy, &mut run_rng(4, policy.tag() << 8 | run)).unwrap();
    let n = outcome.goodput_per_bin.len();
    let tail = |bins: &[u32]| {
        bins[n - 11..n - 1]
            .iter()
            .map(|&b| u64::from(b))
            .sum::<u64>()
    };
    (
        recovery(&config, &outcome.goodput_per_bin),
        tail(&outcome.goodput_per_bin),
        tail(&outcome.throughput_per_bin),
    )
}

#[test]
fn three_retries_stay_collapsed_while_the_server_is_busy() {
    let (state, goodput, throughput) = recovery_of(PolicyKind::ThreeRetries, 0);
    assert_eq!(state, Recovery::Collapsed);
    // The server works at full speed for nobody: throughput high, goodput near zero.
    assert!(
        throughput > 10 * goodput.max(1),
        "goodput {goodput}, throughput {throughput}"
    );
}

#[test]
fn no_retries_and_retry_controls_recover() {
    for policy in [
        PolicyKind::NoRetries,
        PolicyKind::TokenBucket,
        PolicyKind::RetryBreaker,
        PolicyKind::AwsQuota,
        PolicyKind::SreRatio,
        PolicyKind::GrpcThrottle,
        PolicyKind::CircuitBreaker,
    ] {
        let (state, _, _) = recovery_of(policy, 0);
        assert!(
            matches!(state, Recovery::After { .. }),
            "{policy}: {state:?}"
        );
    }
}

#[test]
fn a_short_drop_also_collapses_plain_retries_and_leaves_the_large_quota_full() {
    let (state, _, _) = recovery_with_trigger(PolicyKind::ThreeRetries, 1, 1000.0);
    assert_eq!(state, Recovery::Collapsed);
    // A 1 s drop does not drain the 500-token quota, so it keeps retrying after capacity is
    // back and recovers later than after a 10 s drop, which drains it.
    let after = |trigger_ms| match recovery_with_trigger(PolicyKind::AwsQuota, 1, trigger_ms).0 {
        Recovery::After { ms } => ms,
        Recovery::Collapsed => f64::INFINITY,
    };
    let (short, long) = (after(1000.0), after(10_000.0));
    assert!(
        short > long + 1000.0,
        "1 s drop: {short} ms, 10 s drop: {long} ms"
    );
}

#[test]
fn binary_is_deterministic_and_refuses_bad_flags() {
    let files = storms_support::assert_same_whatever_the_threads(EXE, &["--runs", "2"]);
    let summary = storms_support::text_of(&files, "summary.csv");
    assert!(
        summary.lines().any(|l| l.starts_with("3-retries,2,2,")),
        "{summary}"
    );
    for name in [
        "README.md",
        "timeline.csv",
        "goodput.png",
        "throughput-goodput.png",
    ] {
        assert!(files.iter().any(|(n, _)| n == name), "{name} missing");
    }
    storms_support::assert_bad_flags_exit_2(
        EXE,
        &[&["--runs", "1"], &["--threads", "x"], &["--trigger-s", "0"]],
    );
}

/// "Plain retries stay collapsed, the others recover" as claims, judged on two runs per policy;
/// and the judge says no when plain retries are given a recovering policy's runs.
#[test]
fn claims_hold_on_two_runs_and_fail_when_plain_retries_recover() {
    use retrylab::experiments::capacity::metastability::{claims, summarise_grid, Metastability};
    use retrylab::experiments::{sweep, ClaimVerdict};
    let experiment = Metastability::new(10).unwrap();
    let grid = sweep(&experiment, 2021, 2, &|| {}).unwrap();
    let mut cells = summarise_grid(&experiment.config, &grid);
    let judged = claims(&cells);
    assert_eq!(judged.len(), 3);
    for claim in &judged {
        assert_eq!(claim.verdict, ClaimVerdict::Reproduced, "{claim:?}");
    }
    let recovering = cells
        .iter()
        .find(|c| c.policy == PolicyKind::NoRetries)
        .unwrap()
        .clone();
    let plain = cells
        .iter_mut()
        .find(|c| c.policy == PolicyKind::ThreeRetries)
        .unwrap();
    plain.recoveries = recovering.recoveries.clone();
    plain.goodput_end = recovering.goodput_end;
    plain.throughput_end = recovering.throughput_end;
    let judged = claims(&cells);
    assert_eq!(
        judged[0].verdict,
        ClaimVerdict::NotReproduced,
        "{:?}",
        judged[0]
    );
    assert_eq!(
        judged[1].verdict,
        ClaimVerdict::NotReproduced,
        "{:?}",
        judged[1]
    );
}
