//! Where a handler of `examples/handlers` also exists as a knob model in `models/`, both worlds, built with the
//! same clients, processes and faults, get the same verdict on every property they share.

#[path = "../examples/handlers/main.rs"]
#[allow(dead_code)]
mod handlers;

use retrylab::check::Model;
use retrylab::handler::designs::knob_twin;
use retrylab::handler::Handler;
use retrylab::spec::load_model;
use std::path::Path;

fn compare<H: Handler>(file: &str, handler: H) {
    let model = load_model(
        &Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("models")
            .join(file),
    )
    .unwrap();
    let knobs = model.world.checker().bfs();
    let world = knob_twin(handler, &model);
    let written = world.checker().bfs();
    for property in [
        "no-duplicate-effect",
        "no-lost-effect",
        "consistent-replay",
        "eventually-resolves",
    ] {
        assert_eq!(
            knobs.verdict(property),
            written.verdict(property),
            "{file} {property}: knob model and handler disagree"
        );
    }
    println!(
        "{file}: knob model {} states, handler {} states",
        knobs.states, written.states
    );
}

#[test]
fn select_then_insert_agrees_with_its_knob_model() {
    compare(
        "select-then-insert.toml",
        handlers::select_then_insert_handler(),
    );
}

/// 440,035 knob states against 1.6 M handler states (the handler world's states hold strings): about three
/// minutes in a release build, so it runs on request: `cargo test --release --test handler_twins -- --ignored`.
#[test]
#[ignore]
fn the_article_agrees_with_its_knob_model() {
    compare("article-sqlite.toml", handlers::article_handler());
}
