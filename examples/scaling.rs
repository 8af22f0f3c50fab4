//! How much faster the exhaustive search is on N threads than on one: `--runs` runs on an N-thread pool, then
//! as many on a one-thread pool, each keeping its best time (warm, like `vs_stateright`).
//!
//! `cargo run --release --example scaling [MODEL] [--threads N] [--runs N]`; the last line is `speedup: X`.

use retrylab::check::Model as _;
use std::time::{Duration, Instant};

mod support;

fn main() {
    let support::Args {
        model_path,
        threads,
        runs,
        model,
    } = support::args("models/article-sqlite.toml", 7);
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
            let report = pool.install(|| model.world.checker().bfs());
            best[index] = best[index].min(started.elapsed());
            states[index] = report.states;
        }
    }
    assert_eq!(states[0], states[1], "the thread count changed the search");
    println!(
        "model: {model_path} ({} unique states, best of {runs} runs each)",
        states[0]
    );
    println!("1 thread:  {:.3} s", best[1].as_secs_f64());
    println!("{threads} threads: {:.3} s", best[0].as_secs_f64());
    println!(
        "speedup: {:.2}",
        best[1].as_secs_f64() / best[0].as_secs_f64()
    );
}
