//! The dedup-window experiment: deterministic for a seed, the binary's files identical across runs, bad flags
//! exit 2, and the places behave as the model checker says (an inbox in the effect's transaction never
//! duplicates; a window stops protecting past its length; a session fails on restarts only).

use crate::storms_support;
use retrylab::experiments::dedup_window::{sweep, Cause, Cell, Config, Place};

const SEED: u64 = 5;
const RUNS: u32 = 400;

fn small() -> Config {
    Config {
        ratios: vec![0.1, 10.0],
        ..Config::default()
    }
}

fn p(cells: &[Cell], cause: Cause, place: Place, ratio: f64) -> f64 {
    cells
        .iter()
        .find(|cell| cell.cause == cause && cell.place == place && cell.ratio == ratio)
        .map(Cell::probability)
        .expect("cell present")
}

#[test]
fn same_seed_same_cells_other_seed_other_cells() {
    let config = small();
    assert_eq!(sweep(&config, SEED, RUNS), sweep(&config, SEED, RUNS));
    assert_ne!(sweep(&config, SEED, RUNS), sweep(&config, SEED + 1, RUNS));
}

#[test]
fn each_place_fails_where_its_bound_ends() {
    let cells = sweep(&small(), SEED, RUNS);
    for cell in cells
        .iter()
        .filter(|c| c.place == Place::InboxSameTransaction)
    {
        assert_eq!(cell.duplicates, 0, "{cell:?}");
    }
    for cause in Cause::ALL {
        // Past the window every republish is a new message; inside it only consumer redeliveries duplicate.
        assert!(
            p(&cells, cause, Place::BrokerWindow, 10.0)
                > p(&cells, cause, Place::BrokerWindow, 0.1) + 0.5
        );
        // An offset key never recognises a republished copy, whatever the delay.
        assert!(p(&cells, cause, Place::InboxOffset, 0.1) > 0.9);
        assert!(p(&cells, cause, Place::InboxAfterEffect, 10.0) < 0.2);
    }
    assert!(
        p(&cells, Cause::Restart, Place::BrokerSession, 0.1)
            > p(&cells, Cause::Retry, Place::BrokerSession, 0.1) + 0.5
    );
}

#[test]
fn the_binary_writes_identical_files_for_a_seed_whatever_the_threads_and_refuses_bad_flags() {
    let exe = env!("CARGO_BIN_EXE_dedup-window");
    let files =
        storms_support::assert_same_whatever_the_threads(exe, &["--runs", "40", "--seed", "9"]);
    for name in [
        "summary.csv",
        "claims.csv",
        "README.md",
        "retry.svg",
        "restart.svg",
        "retry.png",
    ] {
        assert!(files.iter().any(|(n, _)| n == name), "{name} missing");
    }
    let readme = storms_support::text_of(&files, "README.md");
    assert!(
        readme.contains("cargo run --release --bin dedup-window -- --seed 9 --runs 40 --out out"),
        "{readme}"
    );
    storms_support::assert_bad_flags_exit_2(
        exe,
        &[
            &["--runs", "1"],
            &["--window-s", "0"],
            &["--crash-probability", "1"],
        ],
    );
}

/// The order of the dedup places as claims, judged on the small grid; and the judge says no when
/// the inbox in the effect's transaction duplicates once or the window protects past its length.
#[test]
fn claims_hold_on_a_small_grid_and_fail_on_a_changed_cell() {
    use retrylab::experiments::dedup_window::claims::evaluate;
    use retrylab::experiments::ClaimVerdict;
    let config = small();
    let mut cells = sweep(&config, SEED, RUNS);
    let judged = evaluate(&config, &cells);
    assert_eq!(judged.len(), 5);
    for claim in &judged {
        assert_eq!(claim.verdict, ClaimVerdict::Reproduced, "{claim:?}");
    }
    cells
        .iter_mut()
        .find(|c| c.place == Place::InboxSameTransaction)
        .unwrap()
        .duplicates = 1;
    for cell in cells
        .iter_mut()
        .filter(|c| c.place == Place::BrokerWindow && c.ratio == 10.0)
    {
        cell.duplicates = 0;
    }
    let judged = evaluate(&config, &cells);
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
    // A grid without a ratio past the window cannot judge the window.
    let inside = Config {
        ratios: vec![0.1],
        ..Config::default()
    };
    let judged = evaluate(&inside, &sweep(&inside, SEED, 50));
    assert_eq!(judged[1].verdict, ClaimVerdict::NotTested);
}
