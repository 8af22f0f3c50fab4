//! Check, save the trace, load it, replay it: the same violation at the same step, the same timeline.

use retrylab::builtin::WorldProperty;
use retrylab::check::{timeline, Kind, Model as _};
use retrylab::spec::{load_model, new_trace, parse_trace, replay};
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
        let report = model.world.checker().bfs();
        assert!(
            report.counterexamples().count() > 0,
            "{name} should have a counterexample"
        );
        for (found, actions) in report.counterexamples() {
            let property = WorldProperty::by_name(&found.name).unwrap();
            let run = timeline(&model.world, actions).unwrap();
            if found.kind == Kind::Always {
                assert!(
                    property.violated_by(*run.observed.last().unwrap()),
                    "{name}: the last step violates"
                );
            }
            let trace = new_trace(&model, &found.name, "bfs", None, run.steps.clone());
            let file = folder.path().join(format!("{name}.{}.json", found.name));
            std::fs::write(&file, trace.to_json()).unwrap();
            let text = std::fs::read_to_string(&file).unwrap();
            let parsed = parse_trace("trace", &text).unwrap();
            assert_eq!(parsed, trace);
            let outcome = replay("trace", &text, &parsed).unwrap();
            assert_eq!(outcome.property, property);
            assert_eq!(
                outcome.violated_at,
                Some(actions.len()),
                "{name} {}",
                found.name
            );
            assert_eq!(outcome.steps, run.steps);
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
    let report = model.world.checker().bfs();
    let name = WorldProperty::NoDuplicateEffect.name();
    let actions = report.counterexample(name).unwrap();
    let mut steps = timeline(&model.world, actions).unwrap().steps;
    steps.swap(0, 1); // deliver before send: not enabled
    let trace = new_trace(&model, name, "bfs", None, steps);
    let error = replay("t.json", &trace.to_json(), &trace).unwrap_err();
    assert!(error.to_string().contains("diverges at step 1"), "{error}");
    // ... and why: what is enabled there instead.
    assert!(
        error
            .to_string()
            .contains("is not enabled here; enabled instead: "),
        "{error}"
    );
    // A trace cut before its last step does not reproduce.
    let mut steps = timeline(&model.world, actions).unwrap().steps;
    steps.pop();
    let trace = new_trace(&model, name, "bfs", None, steps);
    assert_eq!(
        replay("t.json", &trace.to_json(), &trace)
            .unwrap()
            .violated_at,
        None
    );
}

/// A trace of another format or version is refused at the field that is wrong, by line and column (the fuzz
/// test found a version refused with no position at all).
#[test]
fn a_wrong_format_or_version_is_refused_where_it_is_written() {
    let model = load_model(
        &Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("models")
            .join("select-then-insert.toml"),
    )
    .unwrap();
    let report = model.world.checker().bfs();
    let name = WorldProperty::NoDuplicateEffect.name();
    let actions = report.counterexample(name).unwrap();
    let steps = timeline(&model.world, actions).unwrap().steps;
    let text = new_trace(&model, name, "bfs", None, steps).to_json();
    let value: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(value["version"], serde_json::json!(2), "{text}");
    for (field, from, to) in [
        ("version", "\"version\": 2", "\"version\": 2561"),
        ("format", "\"retrylab-trace\"", "\"other-trace\""),
    ] {
        assert!(text.contains(from), "{field}: {text}");
        let wrong = text.replacen(from, to, 1);
        let error = parse_trace("t.json", &wrong).unwrap_err();
        let key = format!("\"{field}\"");
        let (line, column) = wrong[..wrong.find(&key).unwrap()]
            .lines()
            .enumerate()
            .last()
            .map(|(index, line)| (index + 1, line.chars().count() + 1))
            .unwrap();
        assert_eq!(error.field, field, "{error}");
        assert_eq!(error.line, line, "{error}");
        // The value, not the key: past the key's quotes and colon.
        assert!(
            error.column > column,
            "{error}: the key is at column {column}"
        );
        assert!(
            error.to_string().starts_with(&format!("t.json:{line}:")),
            "{error}"
        );
    }
}
