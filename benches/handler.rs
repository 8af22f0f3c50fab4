//! Throughput of the handler world against the built-in world on the same design: unique states per second of an
//! exhaustive search of the article's design, written as a handler (`HandlerWorld`) and as the built-in world's
//! knobs (`models/article-sqlite.toml`), with the same clients, processes and fault budgets.
//!
//!     cargo bench --bench handler                  (everything)
//!     cargo bench --bench handler -- catalogue     (the catalogue's designs only, the biggest first)
//!
//! On a shared machine the figures move by +-30% from run to run: to compare two versions, keep both binaries
//! (`target/release/deps/handler-*`) and run them alternately, many times, comparing the fastest of each.
//!
//! Prints one line per world and configuration, and the ratio. One worker thread, so that the figures compare
//! the worlds and not the machine's load; each search is repeated and the fastest run is kept.

use retrylab::check::Model;
use retrylab::handler::designs::knob_twin;
use retrylab::handler::designs::Article;
use retrylab::spec::{load_model, parse_model};
use std::path::Path;
use std::time::Instant;

#[path = "../examples/handlers/main.rs"]
// Its `main` and output; and its tests (tests/handlers/), whose imports `cargo clippy --all-targets` sees unused
// here: it checks this bench with `cfg(test)` but without the test harness, which leaves out their `#[test]`s.
#[allow(dead_code, unused_imports)]
mod handlers;

/// Searches per figure (the fastest is kept).
const REPEAT_COUNT: usize = 3;

/// The catalogue's `article` configuration: one client, two processes, a crash, a lost response, an early timeout.
const SMALL_MODEL: &str = r#"
description = "the catalogue's article configuration"
[protocol]
claim = "unique-index"
fingerprint = "normalized"
[clients]
count = 1
max-attempts = 3
key-policy = "per-operation"
[[clients.operations]]
body = { amount = 500, currency = "RUB" }
[servers]
processes = 2
[faults]
drop-responses = 1
crashes = 1
early-timeouts = 1
[expect]
no-duplicate-effect = "holds"
"#;

/// The fastest of `REPEAT_COUNT` searches: (states, seconds).
fn measure<M: Model>(model: &M, states_max: u64) -> (u64, f64) {
    let mut best = (0, f64::INFINITY);
    for _ in 0..REPEAT_COUNT {
        let started = Instant::now();
        let report = model.checker().threads(1).states_max(states_max).bfs();
        let seconds = started.elapsed().as_secs_f64();
        if seconds < best.1 {
            best = (report.states, seconds);
        }
    }
    best
}

fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|text| {
            text.split_whitespace()
                .take(3)
                .collect::<Vec<_>>()
                .join(" ")
        })
        .unwrap_or_else(|_| "unknown".to_string())
}

fn compare(name: &str, model: &retrylab::spec::ModelFile, states_max: u64) {
    let handler_world = knob_twin(Article, model);
    let (built_states, built_s) = measure(&model.world, states_max);
    let (handler_states, handler_s) = measure(&handler_world, states_max);
    let built_rate = built_states as f64 / built_s;
    let handler_rate = handler_states as f64 / handler_s;
    println!("{name}: (load average {})", load_average());
    println!(
        "  built-in world {built_states:>9} states {:>8.3} s {:>11.0} states/s",
        built_s, built_rate
    );
    println!(
        "  handler world  {handler_states:>9} states {:>8.3} s {:>11.0} states/s",
        handler_s, handler_rate
    );
    println!("  built-in / handler: {:.1}x", built_rate / handler_rate);
}

fn main() {
    // `cargo bench` passes `--bench`; `-- catalogue` runs the catalogue's designs only.
    catalogue::run();
    if std::env::args().any(|arg| arg == "catalogue") {
        return;
    }
    let states_max = std::env::var("HANDLER_BENCH_MAX_STATES")
        .ok()
        .and_then(|text| text.parse().ok())
        .unwrap_or(u64::MAX);
    let small = parse_model("small.toml", SMALL_MODEL).expect("the small model parses");
    compare("article, 1 client (the catalogue's)", &small, states_max);
    let twin_model = load_model(Path::new("models/article-sqlite.toml")).expect("the model parses");
    compare(
        "article, models/article-sqlite.toml",
        &twin_model,
        states_max,
    );
}

/// The catalogue's designs (`examples/handlers`), each searched whole on one thread, fastest of
/// `CATALOGUE_REPEAT_COUNT`: the handler world's own throughput on the worlds users write, the biggest first.
mod catalogue {
    use super::handlers::{self, Visit};
    use retrylab::check::Verdict;
    use retrylab::handler::{Handler, HandlerWorld, Worker};

    const CATALOGUE_REPEAT_COUNT: usize = 7;

    /// (design, states, seconds of the fastest search).
    struct Measure(Vec<(String, u64, f64)>);

    impl Visit for Measure {
        fn design<H: Handler + Send + 'static, W: Worker + Send + 'static>(
            &mut self,
            name: &str,
            world: HandlerWorld<H, W>,
            _: &[(&str, Verdict)],
            _: &[&str],
        ) {
            let mut best = (0, f64::INFINITY);
            for _ in 0..CATALOGUE_REPEAT_COUNT {
                let started = std::time::Instant::now();
                let report = retrylab::check::Model::checker(&world).threads(1).bfs();
                let seconds = started.elapsed().as_secs_f64();
                if seconds < best.1 {
                    best = (report.states, seconds);
                }
            }
            self.0.push((name.to_string(), best.0, best.1));
        }
    }

    pub fn run() {
        let mut measure = Measure(Vec::new());
        handlers::catalogue(&mut measure);
        let mut designs = measure.0;
        designs.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        println!(
            "catalogue, one thread: (load average {})",
            super::load_average()
        );
        for (name, states, seconds) in &designs {
            println!(
                "  {name:<44} {states:>9} states {seconds:>8.4} s {:>11.0} states/s",
                *states as f64 / seconds
            );
        }
        let states: u64 = designs.iter().map(|design| design.1).sum();
        let seconds: f64 = designs.iter().map(|design| design.2).sum();
        println!(
            "  all designs                                  {states:>9} states {seconds:>8.4} s {:>11.0} states/s",
            states as f64 / seconds
        );
    }
}
