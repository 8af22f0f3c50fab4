//! retrylab's explorer against stateright's on the same model: the article's design with a lease and fencing
//! (`models/lease-fenced.toml`: 2 clients, 2 server processes, a lost response, a crash, a pause, an early
//! timeout). Both checkers explore the very same transition relation (`World::actions` / `World::next_state`),
//! so equal unique-state counts show that they searched the same space. Both use all cores; each is run three
//! times and the best time is kept (the machine may be busy).
//!
//! `cargo run --release --example vs_stateright [MODEL]`; the last line is `ratio: X`, retrylab's unique states
//! per second over stateright's.

use retrylab::check::{explore, BfsOptions};
use retrylab::model::{Action, State, World};
use retrylab::spec::load_model;
use stateright::{Checker, Model, Property};
use std::time::{Duration, Instant};

/// The retrylab world as a stateright model.
struct Stateright(World);

fn no_duplicate_effect(state: &State) -> bool {
    let payments = &state.store.payments;
    payments
        .iter()
        .enumerate()
        .all(|(index, op)| !payments[..index].contains(op))
}

impl Model for Stateright {
    type State = State;
    type Action = Action;

    fn init_states(&self) -> Vec<State> {
        vec![self.0.init_state()]
    }

    fn actions(&self, state: &State, actions: &mut Vec<Action>) {
        self.0.actions(state, actions);
    }

    fn next_state(&self, state: &State, action: Action) -> Option<State> {
        Some(self.0.next_state(state, &action).0)
    }

    fn properties(&self) -> Vec<Property<Self>> {
        vec![Property::always(
            "no-duplicate-effect",
            |_, state: &State| no_duplicate_effect(state),
        )]
    }
}

fn best_of_three(mut run: impl FnMut() -> (u64, Duration)) -> (u64, Duration) {
    let mut best: Option<(u64, Duration)> = None;
    for _ in 0..3 {
        let (states, elapsed) = run();
        if best.is_none_or(|(_, fastest)| elapsed < fastest) {
            best = Some((states, elapsed));
        }
    }
    best.expect("three runs")
}

fn main() {
    let path = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "models/lease-fenced.toml".to_string());
    let model = match load_model(std::path::Path::new(&path)) {
        Ok(model) => model,
        Err(error) => {
            eprintln!("error: {error}");
            std::process::exit(2);
        }
    };
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    println!("model: {path} ({threads} threads each, best of 3)");

    let (ours, ours_time) = best_of_three(|| {
        let started = Instant::now();
        let report = explore(&model.world, &BfsOptions::default(), &mut |_, _| {});
        (report.states, started.elapsed())
    });
    let (theirs, theirs_time) = best_of_three(|| {
        let started = Instant::now();
        let checker = Stateright(model.world.clone())
            .checker()
            .threads(threads)
            .spawn_bfs()
            .join();
        (checker.unique_state_count() as u64, started.elapsed())
    });
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
