//! Helpers shared by the model-checking tests: load a model file, and judge one property of a world (a full
//! search, or for a broken twin a search that stops at the first violation).

#![allow(dead_code)] // each test file uses a different subset

use retrylab::check::{explore, BfsOptions, Verdict};
use retrylab::model::{Property, World};
use retrylab::spec::{load_model, Model};
use std::path::Path;

pub fn load(name: &str) -> Model {
    load_model(
        &Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("models")
            .join(name),
    )
    .expect("model parses")
}

/// The bounds the model file declares.
pub fn options(model: &Model) -> BfsOptions {
    BfsOptions {
        max_states: model.limits.max_states,
        max_depth: model.limits.max_depth,
        ..BfsOptions::default()
    }
}

pub fn verdict(world: &World, property: Property) -> Verdict {
    explore(world, &BfsOptions::default(), &mut |_, _| {}).verdicts[&property]
}

/// The broken twin: stop at its first violation (the full space is not needed to show a bug).
pub fn twin_verdict(world: &World, property: Property) -> Verdict {
    let options = BfsOptions {
        stop_on: Some(property),
        ..BfsOptions::default()
    };
    explore(world, &options, &mut |_, _| {}).verdicts[&property]
}
