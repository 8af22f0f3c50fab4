//! Check, save the trace, load it, replay it: the same violation at the same step, the same timeline.

use retrylab::check::{explore, parse_trace, replay, timeline, BfsOptions, Trace};
use retrylab::model::{Property, PropertyKind};
use retrylab::spec::load_model;
use std::path::Path;

#[test]
fn every_counterexample_round_trips_through_a_trace_file() {
    let folder = tempfile::tempdir().unwrap();
    for name in [
        "article-sqlite.toml",
        "select-then-insert.toml",
        "new-key-per-attempt.toml",
    ] {
        let model = load_model(
            &Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("models")
                .join(name),
        )
        .unwrap();
        let report = explore(&model.world, &BfsOptions::default(), &mut |_, _| {});
        assert!(
            !report.counterexamples.is_empty(),
            "{name} should have a counterexample"
        );
        for (property, actions) in &report.counterexamples {
            let (steps, _, events) = timeline(&model.world, actions).unwrap();
            if property.kind() == PropertyKind::Always {
                assert!(
                    property.violated_by(*events.last().unwrap()),
                    "{name}: the last step violates"
                );
            }
            let trace = Trace::new(&model, *property, "bfs", None, steps.clone());
            let file = folder
                .path()
                .join(format!("{name}.{}.json", property.name()));
            std::fs::write(&file, trace.to_json()).unwrap();
            let text = std::fs::read_to_string(&file).unwrap();
            let parsed = parse_trace("trace", &text).unwrap();
            assert_eq!(parsed, trace);
            let outcome = replay("trace", &parsed).unwrap();
            assert_eq!(outcome.property, *property);
            assert_eq!(
                outcome.violated_at,
                Some(actions.len()),
                "{name} {}",
                property.name()
            );
            assert_eq!(outcome.steps, steps);
        }
    }
}

#[test]
fn a_tampered_trace_diverges_loudly() {
    let model = load_model(
        &Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("models")
            .join("select-then-insert.toml"),
    )
    .unwrap();
    let report = explore(&model.world, &BfsOptions::default(), &mut |_, _| {});
    let actions = &report.counterexamples[&Property::NoDuplicateEffect];
    let (mut steps, _, _) = timeline(&model.world, actions).unwrap();
    steps.swap(0, 1); // deliver before send: not enabled
    let trace = Trace::new(&model, Property::NoDuplicateEffect, "bfs", None, steps);
    let error = replay("t.json", &trace).unwrap_err();
    assert!(error.to_string().contains("diverges at step 1"), "{error}");
    // A trace cut before its last step does not reproduce.
    let (mut steps, _, _) = timeline(&model.world, actions).unwrap();
    steps.pop();
    let trace = Trace::new(&model, Property::NoDuplicateEffect, "bfs", None, steps);
    assert_eq!(replay("t.json", &trace).unwrap().violated_at, None);
}
