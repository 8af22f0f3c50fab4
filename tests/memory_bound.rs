//! `--max-memory` against what the operating system sees: a search bounded at 32 MiB stops with its own
//! accounting just past the bound, and the process's resident memory grew by the bound within 10%. Alone in
//! its test binary, so no other test's memory is in the figure. Linux only (VmRSS).

use retrylab::check::{resident_bytes, Model as _, StoppedBy};
use retrylab::spec::load_model;
use std::path::Path;

const BOUND_MIB: u64 = 32;

#[test]
fn a_search_bounded_at_32_mib_holds_32_mib_within_ten_percent() {
    if !cfg!(target_os = "linux") {
        println!("skipped: the resident set is read from /proc (Linux)");
        return;
    }
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("models/lease-fenced-3-clients.toml");
    let model = load_model(&path).unwrap();
    let bound = BOUND_MIB << 20;
    let before = resident_bytes().expect("VmRSS on Linux");
    let report = model.world.checker().memory_mib_max(BOUND_MIB).bfs();
    // The model needs more in full (723,123 states, and a debug build keeps the state graph to check
    // `Model::acyclic`): the bound is what stopped it.
    assert_eq!(
        report.stopped_by,
        Some(StoppedBy::MaxMemory(bound)),
        "the bound stopped it"
    );
    assert!(report.states > 200_000, "{} states", report.states);
    let accounted = report.peak_bytes as f64 / bound as f64;
    assert!(
        (1.0..=1.1).contains(&accounted),
        "accounted {accounted:.3} x the bound"
    );
    let grown = (report.rss_peak_bytes.unwrap() - before) as f64 / bound as f64;
    println!(
        "{} states: accounted {accounted:.3} x the bound, resident growth {grown:.3} x",
        report.states
    );
    assert!(
        (0.9..=1.1).contains(&grown),
        "resident set grew {grown:.3} x the bound"
    );
}
