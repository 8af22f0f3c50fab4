//! retry-layers: the counts the article and the AWS Builders' Library quote come out of the
//! simulated call chain, and the binary is deterministic whatever the thread count.

use crate::storms_support;

use retrylab::experiments::layers::world::{simulate_call, LayerConfig, LayerPolicy};
use retrylab::sim::run_rng;

const EXE: &str = env!("CARGO_BIN_EXE_retry-layers");

fn bottom_requests(layers: u32, attempts: u32, policy: LayerPolicy, seed: u64) -> u64 {
    let config = LayerConfig::new(layers, attempts, policy);
    simulate_call(&config, &mut run_rng(seed, 0))
        .unwrap()
        .bottom_request_count
}

#[test]
fn every_layer_retrying_gives_27_and_243() {
    assert_eq!(bottom_requests(3, 3, LayerPolicy::EveryLayer, 1), 27);
    assert_eq!(bottom_requests(5, 3, LayerPolicy::EveryLayer, 1), 243);
}

#[test]
fn the_simulated_counts_follow_the_product_and_one_layer_stays_at_r() {
    for layers in 1..=5 {
        for attempts in 1..=5 {
            for seed in [1, 2] {
                assert_eq!(
                    bottom_requests(layers, attempts, LayerPolicy::EveryLayer, seed),
                    u64::from(attempts).pow(layers),
                    "every-layer {layers} x {attempts}"
                );
                assert_eq!(
                    bottom_requests(layers, attempts, LayerPolicy::OneLayer, seed),
                    u64::from(attempts),
                    "one-layer {layers} x {attempts}"
                );
            }
        }
    }
}

#[test]
fn nested_backoffs_make_the_user_wait_longer() {
    let mean_give_up_ms = |policy| {
        (0..20)
            .map(|run| {
                let config = LayerConfig::new(5, 3, policy);
                simulate_call(&config, &mut run_rng(5, run))
                    .unwrap()
                    .give_up_ms
            })
            .sum::<f64>()
            / 20.0
    };
    assert!(
        mean_give_up_ms(LayerPolicy::EveryLayer) > 10.0 * mean_give_up_ms(LayerPolicy::OneLayer)
    );
}

#[test]
fn binary_output_is_identical_whatever_the_thread_count() {
    let files = storms_support::assert_same_whatever_the_threads(EXE, &["--runs", "3"]);
    let summary = storms_support::text_of(&files, "summary.csv");
    assert!(summary.starts_with("layers,attempts_per_layer,policy,bottom_requests_per_call\n"));
    assert!(
        summary.contains("\n3,3,every-layer,27\n") && summary.contains("\n5,3,every-layer,243\n")
    );
    assert!(summary.contains("\n5,3,one-layer,3\n"));
    let readme = storms_support::text_of(&files, "README.md");
    assert!(
        readme.contains("**27**") && readme.contains("**243**"),
        "{readme}"
    );
    for name in [
        "bottom-requests.png",
        "bottom-requests.svg",
        "give-up-time.png",
        "timing.csv",
    ] {
        assert!(files.iter().any(|(n, _)| n == name), "{name} missing");
    }
}

#[test]
fn bad_flags_give_one_line_and_exit_code_2() {
    storms_support::assert_bad_flags_exit_2(
        EXE,
        &[
            &["--runs", "1"],
            &["--threads", "0"],
            &["--bogus"],
            &["--seed", "x"],
        ],
    );
}

/// The published counts as claims, judged on a reduced grid; and the judge says no when a count
/// is off by one.
#[test]
fn claims_hold_on_a_reduced_grid_and_fail_on_a_changed_count() {
    use retrylab::experiments::layers::{claims, summarise_grid, RetryLayers};
    use retrylab::experiments::{sweep, ClaimVerdict};
    let experiment = RetryLayers {
        layers: vec![3, 5],
        attempts: vec![3],
    };
    let grid = sweep(&experiment, 27, 5, &|| {}).unwrap();
    let mut cells = summarise_grid(&grid).unwrap();
    let judged = claims(&cells);
    assert_eq!(judged.len(), 4);
    for claim in &judged {
        assert_eq!(claim.verdict, ClaimVerdict::Reproduced, "{claim:?}");
    }
    let every_3x3 = cells
        .iter_mut()
        .find(|c| c.config.layers == 3 && c.config.policy == LayerPolicy::EveryLayer)
        .unwrap();
    every_3x3.bottom_requests_per_call = 26;
    let one_5x3 = cells
        .iter_mut()
        .find(|c| c.config.layers == 5 && c.config.policy == LayerPolicy::OneLayer)
        .unwrap();
    one_5x3.bottom_requests_per_call = 4;
    one_5x3.give_up_ms.mean *= 100.0;
    let verdicts: Vec<ClaimVerdict> = claims(&cells).iter().map(|c| c.verdict).collect();
    assert_eq!(
        verdicts,
        [
            ClaimVerdict::NotReproduced,
            ClaimVerdict::Reproduced,
            ClaimVerdict::NotReproduced,
            ClaimVerdict::NotReproduced
        ]
    );
    // Without the 5-layer cells, the claims about them are not tested, not passed.
    let three_only: Vec<_> = cells.into_iter().filter(|c| c.config.layers == 3).collect();
    assert_eq!(claims(&three_only)[1].verdict, ClaimVerdict::NotTested);
    assert_eq!(claims(&three_only)[3].verdict, ClaimVerdict::NotTested);
}
