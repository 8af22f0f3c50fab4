//! Symmetry reduction merges states but changes no verdict, no counterexample length, and its counterexamples
//! replay on the unreduced model.

use retrylab::check::{explore, timeline, BfsOptions};
use retrylab::model::{Property, PropertyKind};
use retrylab::spec::{load_model, model_files};
use std::path::Path;

#[test]
fn reduction_keeps_verdicts_and_shortest_lengths_and_traces_replay() {
    let files = model_files(&Path::new(env!("CARGO_MANIFEST_DIR")).join("models")).unwrap();
    let mut reduced_somewhere = false;
    for file in files {
        let model = load_model(&file).unwrap();
        let reduced = explore(
            &model.world,
            &BfsOptions {
                symmetry: true,
                ..BfsOptions::default()
            },
            &mut |_, _| {},
        );
        assert!(reduced.complete, "{}", model.path);
        for (property, expected) in &model.expected {
            assert_eq!(
                reduced.verdicts[property],
                *expected,
                "{} {}",
                model.path,
                property.name()
            );
        }
        for (property, actions) in &reduced.counterexamples {
            let (_, last, events) = timeline(&model.world, actions).unwrap_or_else(|step| {
                panic!("{} {}: diverges at {step}", model.path, property.name())
            });
            match property.kind() {
                PropertyKind::Always => assert!(property.violated_by(*events.last().unwrap())),
                PropertyKind::Eventually => assert!(property.violated_at_rest(&model.world, &last)),
            }
        }
        // Compare with the full search where that is cheap.
        if reduced.states < 50_000 {
            let full = explore(&model.world, &BfsOptions::default(), &mut |_, _| {});
            assert_eq!(full.verdicts, reduced.verdicts, "{}", model.path);
            for property in Property::ALL {
                assert_eq!(
                    full.counterexamples.get(&property).map(Vec::len),
                    reduced.counterexamples.get(&property).map(Vec::len),
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
        "the reduction should merge states in some model"
    );
}
