//! Symmetry reduction merges states but changes no verdict, no counterexample length, and its counterexamples
//! replay on the unreduced model.

use retrylab::check::{replay_path, Model as _};
use retrylab::model::Property;
use retrylab::spec::{load_model, model_files};
use std::path::Path;

#[test]
fn reduction_keeps_verdicts_and_shortest_lengths_and_traces_replay() {
    let files = model_files(&Path::new(env!("CARGO_MANIFEST_DIR")).join("models")).unwrap();
    let mut reduced_somewhere = false;
    for file in files {
        let model = load_model(&file).unwrap();
        let reduced = model.world.checker().symmetry(true).bfs();
        assert!(reduced.complete, "{}", model.path);
        for (property, expected) in &model.expected {
            assert_eq!(
                reduced.verdict(property.name()),
                *expected,
                "{} {}",
                model.path,
                property.name()
            );
        }
        // Every counterexample, mapped back to real actions, replays on the unreduced model and violates there.
        for (found, actions) in reduced.counterexamples() {
            let replayed = replay_path(&model.world, actions, found.cycle_from)
                .unwrap_or_else(|diverged| {
                    panic!("{} {}: diverges at {}", model.path, found.name, diverged.step)
                });
            assert_eq!(
                replayed.property(&found.name).at_step,
                Some(actions.len()),
                "{} {}",
                model.path,
                found.name
            );
        }
        // Compare with the full search where that is cheap.
        if reduced.states < 50_000 {
            let full = model.world.checker().bfs();
            assert_eq!(full.verdicts(), reduced.verdicts(), "{}", model.path);
            for property in Property::ALL {
                assert_eq!(
                    full.counterexample(property.name()).map(<[_]>::len),
                    reduced.counterexample(property.name()).map(<[_]>::len),
                    "{} {}",
                    model.path,
                    property.name()
                );
            }
            assert!(reduced.states <= full.states);
            reduced_somewhere |= reduced.states < full.states;
        }
    }
    assert!(
        reduced_somewhere,
        "symmetry reduction never merged a state: it is not doing anything"
    );
}
