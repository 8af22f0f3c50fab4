//! Helpers shared by the model-checking tests: load a model file, judge one property of a world (a full search,
//! or for a broken twin a search that stops at the first violation), and a seeded proptest runner.

#![allow(dead_code)] // each test file uses a different subset

use retrylab::builtin::{World, WorldProperty};
use retrylab::check::{Checker, Model as _, Report, Verdict};
use retrylab::spec::{load_model, ModelFile};
use std::path::Path;

pub fn load(name: &str) -> ModelFile {
    load_model(
        &Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("models")
            .join(name),
    )
    .expect("model parses")
}

/// A checker with the bounds the model file declares.
pub fn checker(model: &ModelFile) -> Checker<'_, World> {
    model
        .world
        .checker()
        .states_max(model.limits.states_max)
        .depth_max(model.limits.depth_max)
}

/// The model file's own search.
pub fn search(model: &ModelFile) -> Report<World> {
    checker(model).bfs()
}

pub fn verdict(world: &World, property: WorldProperty) -> Verdict {
    world.checker().bfs().verdict(property.name())
}

/// The broken twin: stop at its first violation (the full space is not needed to show a bug).
pub fn twin_verdict(world: &World, property: WorldProperty) -> Verdict {
    world
        .checker()
        .stop_on(property.name())
        .bfs()
        .verdict(property.name())
}

/// A proptest runner on a fixed ChaCha seed that persists nothing, so the same cases run every time.
pub fn seeded_runner(seed: &[u8; 32], cases: u32) -> proptest::test_runner::TestRunner {
    use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};
    let config = Config {
        cases,
        failure_persistence: None,
        ..Config::default()
    };
    TestRunner::new_with_rng(config, TestRng::from_seed(RngAlgorithm::ChaCha, seed))
}
