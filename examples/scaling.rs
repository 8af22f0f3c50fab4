//! How much faster the exhaustive search is on N threads than on one: `--runs` runs on an N-thread pool, then
//! as many on a one-thread pool, each keeping its best time (warm, like `vs_stateright`).
//!
//! `cargo run --release --example scaling [MODEL] [--threads N] [--runs N] [--por on|off] [--symmetry]`
//! (plain by default); the last line is `speedup: X`.

use retrylab::check::{Model as _, Por};
use std::time::{Duration, Instant};

mod support;

fn main() {
    let support::Args {
        model_path,
        threads,
        runs,
        model,
        por,
        symmetry,
    } = support::args("models/article-sqlite.toml", 7, true);
    let por = if por { Por::On } else { Por::Off };
    let pools = [threads, 1].map(|count| {
        rayon::ThreadPoolBuilder::new()
            .num_threads(count)
            .build()
            .expect("a thread pool")
    });
    let mut best = [Duration::MAX; 2]; // [N threads, 1 thread]
    let mut states = [0; 2];
    for (index, pool) in pools.iter().enumerate() {
        for _ in 0..runs {
            let started = Instant::now();
            let report = pool.install(|| model.world.checker().por(por).symmetry(symmetry).bfs());
            best[index] = best[index].min(started.elapsed());
            states[index] = report.states;
        }
    }
    assert_eq!(states[0], states[1], "the thread count changed the search");
    println!(
        "model: {model_path} ({} unique states, best of {runs} runs each; POR {}, symmetry {})",
        states[0],
        if por == Por::On { "on" } else { "off" },
        if symmetry { "on" } else { "off" },
    );
    println!("1 thread:  {:.3} s", best[1].as_secs_f64());
    println!("{threads} threads: {:.3} s", best[0].as_secs_f64());
    println!(
        "speedup: {:.2}",
        best[1].as_secs_f64() / best[0].as_secs_f64()
    );
}
