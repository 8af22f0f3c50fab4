//! retrylab's explorer against stateright's on the same model: the article's design with a lease and fencing
//! (`models/lease-fenced.toml`: 2 clients, 2 server processes, a lost response, a crash, a pause, an early
//! timeout). Both checkers explore the very same transition relation (`World::actions` / `World::next_state`),
//! so equal unique-state counts show that they searched the same space. Both use all cores by default.
//!
//! `cargo run --release --example vs_stateright [MODEL] [--threads N] [--runs N]`; the last line is `ratio: X`,
//! retrylab's unique states per second over stateright's. Each checker runs `--runs` times (default 5) in a
//! row and keeps its best time: the machine may be busy, and a first run pays for warming up.

use retrylab::check::Model as _;
use stateright::{Checker, Model};

#[path = "support/stateright_model.rs"]
mod stateright_model;
mod support;
use stateright_model::Stateright;
use std::time::{Duration, Instant};

/// Keep the fastest of the runs: (unique states, time).
fn keep_best(best: &mut Option<(u64, Duration)>, run: (u64, Duration)) {
    if best.is_none_or(|(_, fastest)| run.1 < fastest) {
        *best = Some(run);
    }
}

fn main() {
    let args = support::args("models/lease-fenced.toml", 5, false);
    // Plain searches on both sides: the flags that would reduce one are not taken here.
    assert!(!args.por && !args.symmetry);
    let model = &args.model;
    let threads = args.threads;
    println!(
        "model: {} ({threads} threads each, best of {} runs)",
        args.model_path, args.runs
    );
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .expect("a thread pool");
    let mut ours = None;
    for _ in 0..args.runs {
        keep_best(
            &mut ours,
            pool.install(|| {
                let started = Instant::now();
                let report = model.world.checker().bfs();
                (report.states, started.elapsed())
            }),
        );
    }
    // Gone before stateright starts: idle workers must not compete with its threads.
    drop(pool);
    let mut theirs = None;
    for _ in 0..args.runs {
        let started = Instant::now();
        let checker = Stateright(model.world.clone())
            .checker()
            .threads(threads)
            .spawn_bfs()
            .join();
        keep_best(
            &mut theirs,
            (checker.unique_state_count() as u64, started.elapsed()),
        );
    }
    let (ours, ours_time) = ours.expect("at least one run");
    let (theirs, theirs_time) = theirs.expect("at least one run");
    let rate = |states: u64, time: Duration| states as f64 / time.as_secs_f64();
    println!(
        "retrylab:   {ours} unique states in {:.3} s = {:.0} states/s",
        ours_time.as_secs_f64(),
        rate(ours, ours_time)
    );
    println!(
        "stateright: {theirs} unique states in {:.3} s = {:.0} states/s",
        theirs_time.as_secs_f64(),
        rate(theirs, theirs_time)
    );
    if ours != theirs {
        println!("WARNING: the unique-state counts differ: the two searches did not cover the same space");
    }
    println!(
        "ratio: {:.2}",
        rate(ours, ours_time) / rate(theirs, theirs_time)
    );
}
