//! Every model-file error names the file, line:column, the field and what is allowed (issue 14, item 7), in
//! process through the library: each case below printed no position, a wrong one, or nothing at all, or was
//! accepted, before.

use retrylab::check::Model;
use retrylab::spec::{parse_model, parse_trace, replay, SpecError};
use std::path::Path;

fn shipped(name: &str) -> String {
    std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("models")
            .join(name),
    )
    .unwrap()
}

fn refused(text: &str) -> SpecError {
    match parse_model("m.toml", text) {
        Ok(_) => panic!("accepted:\n{text}"),
        Err(error) => error,
    }
}

/// The error is at `line:column` of `m.toml`, names `field` and says `allowed` (part of what may be written).
fn assert_refused(text: &str, line: usize, column: usize, field: &str, allowed: &str) {
    let error = refused(text);
    let shown = error.to_string();
    assert_eq!(
        (error.file.as_str(), error.line, error.column),
        ("m.toml", line, column),
        "{shown}"
    );
    assert_eq!(error.field, field, "{shown}");
    assert!(error.message.contains(allowed), "{shown}");
    assert!(
        shown.starts_with(&format!("m.toml:{line}:{column}: {field}: ")),
        "{shown}"
    );
}

/// The 1-based line of the first line of `text` that starts with `prefix`.
fn line_of(text: &str, prefix: &str) -> usize {
    text.lines()
        .position(|line| line.starts_with(prefix))
        .unwrap()
        + 1
}

#[test]
fn queue_faults_in_an_http_model_are_placed() {
    let text = shipped("lease-fenced.toml").replace("pauses = 1", "pauses = 1\nrepublishes = 1");
    let line = line_of(&text, "republishes");
    assert_refused(&text, line, 15, "faults.republishes", "queue model");
}

#[test]
fn http_knobs_in_a_queue_model_are_placed() {
    let queue = shipped("queue-inbox-same-transaction.toml");
    let text = queue.replace("republishes = 1", "republishes = 1\nhandler-errors = 1");
    assert_refused(
        &text,
        line_of(&text, "handler-errors"),
        18,
        "faults.handler-errors",
        "crashes",
    );
    let text = queue.replace(
        "max-attempts = 4",
        "max-attempts = 4\nkey-policy = \"per-attempt\"",
    );
    assert_refused(
        &text,
        line_of(&text, "key-policy"),
        14,
        "clients.key-policy",
        "dedup-key",
    );
    let text = queue.replace("republishes = 1", "republishes = 5");
    assert_refused(
        &text,
        line_of(&text, "republishes"),
        15,
        "faults.republishes",
        "between 0 and 4",
    );
}

#[test]
fn an_expect_that_declares_nothing_is_placed_and_lists_the_properties() {
    let text = shipped("lease-fenced.toml");
    let text = format!(
        "{}[expect]\nreached = [\"replay\"]\n",
        &text[..text.find("[expect]").unwrap()]
    );
    assert_refused(
        &text,
        line_of(&text, "[expect]"),
        1,
        "expect",
        "no-stuck-key",
    );
}

#[test]
fn a_missing_table_is_named_at_the_end_of_the_file() {
    let text = shipped("lease-fenced.toml");
    let without_expect = &text[..text.find("[expect]").unwrap()];
    let lines = without_expect.lines().count();
    assert_refused(without_expect, lines + 1, 1, "expect", "[expect] table");
    let start = text.find("[clients]").unwrap();
    let end = text.find("[servers]").unwrap();
    let without_clients = format!("{}{}", &text[..start], &text[end..]);
    let error = refused(&without_clients);
    assert_eq!(error.field, "clients", "{error}");
    assert!(error.line > 1, "not blamed on the first line: {error}");
}

/// A file that starts with a table has no top-level keys: its missing `description` is the top level's, at
/// 1:1, not the first table's (it was reported as `protocol.description`).
#[test]
fn a_missing_description_is_the_top_levels_even_when_a_table_comes_first() {
    let text = shipped("lease-fenced.toml");
    let start = text.find("[protocol]").unwrap();
    let error = refused(&text[start..]);
    assert_eq!(
        (error.line, error.column, error.field.as_str()),
        (1, 1, "description"),
        "{error}"
    );
    assert!(error.message.contains("description = \"...\""), "{error}");
}

#[test]
fn a_missing_field_inside_a_table_names_the_table() {
    let text = shipped("lease-fenced.toml").replace("count = 2\n", "");
    let error = refused(&text);
    assert_eq!(error.field, "clients.count", "{error}");
    assert!(
        error.line > 1 && error.message.contains("count = 1..8"),
        "{error}"
    );
}

#[test]
fn a_key_without_a_value_at_the_end_of_the_file_says_so() {
    let text = format!("{}key =", shipped("lease-fenced.toml"));
    let error = refused(&text);
    assert_eq!(error.line, text.lines().count(), "{error}");
    assert!(error.message.contains("value is missing"), "{error}");
}

#[test]
fn bodies_are_json_objects() {
    let text = shipped("lease-fenced.toml");
    let line = line_of(&text, "body =");
    let with = |body: &str| text.replace("body = { amount = 500, currency = \"RUB\" }", body);
    assert_refused(
        &with("body = { amount = 500, at = 1979-05-27T07:32:00Z }"),
        line,
        8,
        "clients.operations[1].body.at",
        "write it as a string",
    );
    assert_refused(
        &with("body = { items = [1, { at = 07:32:00 }] }"),
        line,
        8,
        "clients.operations[1].body.items[2].at",
        "datetime",
    );
    // A datetime where the table belongs (toml hands it over as a private marker table).
    assert_refused(
        &with("body = 1979-05-27T07:32:00Z"),
        line,
        8,
        "clients.operations[1].body",
        "found a TOML datetime",
    );
    for (json, kind) in [
        ("null", "null"),
        ("[1,2,3]", "an array"),
        ("\"x\"", "a string"),
    ] {
        assert_refused(
            &with(&format!("body-json = '{json}'")),
            line,
            13,
            "clients.operations[1].body-json",
            &format!("must be a JSON object ('{{\"amount\": 500}}'), found {kind}"),
        );
    }
    assert!(parse_model("m.toml", &with("body-json = '{\"amount\": 500}'")).is_ok());
}

#[test]
fn an_error_in_a_traces_embedded_model_names_the_trace() {
    let model = parse_model("models/lease-fenced.toml", &shipped("lease-fenced.toml")).unwrap();
    let mut trace =
        retrylab::spec::new_trace(&model, "no-duplicate-effect", "bfs", None, Vec::new());
    trace.model_source = trace.model_source.replace("count = 2", "count = 0");
    let parsed = parse_trace("t.json", &trace.to_json()).unwrap();
    let error = replay("t.json", &trace.to_json(), &parsed).unwrap_err();
    assert_eq!(
        error.file,
        "t.json (its embedded model models/lease-fenced.toml)"
    );
    assert_eq!(
        (error.line, error.field.as_str()),
        (line_of(&trace.model_source, "count"), "clients.count")
    );
}

/// A trace whose property is unknown, or whose step is not enabled, is refused at that value's line and column
/// (these were whole-file errors, with no position).
#[test]
fn a_tampered_trace_is_refused_where_it_was_tampered() {
    let model = parse_model(
        "models/select-then-insert.toml",
        &shipped("select-then-insert.toml"),
    )
    .unwrap();
    let report = model.world.checker().threads(1).bfs();
    let (_, path) = report.counterexamples().next().expect("a counterexample");
    let run = retrylab::check::timeline(&model.world, path).unwrap();
    assert!(run.steps.len() >= 3, "a trace worth tampering with");
    let trace = retrylab::spec::new_trace(&model, "no-duplicate-effect", "bfs", None, run.steps);
    let position = |text: &str, offset: usize| {
        let line = text[..offset].matches('\n').count() + 1;
        let column = offset - text[..offset].rfind('\n').map_or(0, |newline| newline + 1) + 1;
        (line, column)
    };

    let mut unknown = trace.clone();
    unknown.property = "no-such-property".to_string();
    let text = unknown.to_json();
    let error = replay("t.json", &text, &parse_trace("t.json", &text).unwrap()).unwrap_err();
    assert_eq!(error.field, "property", "{error}");
    assert_eq!(
        (error.line, error.column),
        position(&text, text.find("\"no-such-property\"").unwrap()),
        "{error}"
    );

    // Step 2 moved before step 1: the new first step is not enabled in the initial state.
    let mut swapped = trace.clone();
    swapped.steps.swap(0, 1);
    let text = swapped.to_json();
    let error = replay("t.json", &text, &parse_trace("t.json", &text).unwrap()).unwrap_err();
    assert_eq!(error.field, "steps", "{error}");
    assert!(error.message.contains("step 1"), "{error}");
    let first_step = text.find("\"steps\": [").unwrap() + "\"steps\": [".len();
    let step_1 = first_step + text[first_step..].find('{').unwrap();
    let expected = position(&text, step_1);
    assert_eq!((error.line, error.column), expected, "{error}");
    assert!(error
        .to_string()
        .starts_with(&format!("t.json:{}:{}: steps: ", expected.0, expected.1)));
}

#[test]
fn a_folder_check_skips_other_tools_toml_and_build_caches() {
    let folder = tempfile::tempdir().unwrap();
    let root = folder.path();
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR")).join("Cargo.toml");
    std::fs::copy(&manifest, root.join("Cargo.toml")).unwrap();
    std::fs::write(root.join("rustfmt.toml"), "edition = \"2021\"\n").unwrap();
    std::fs::write(root.join("model.toml"), shipped("lease-fenced.toml")).unwrap();
    // A model with a typo is still a model file: reported, not passed over.
    std::fs::write(root.join("typo.toml"), "[clients\ncount = 1\n").unwrap();
    for skipped in [".git", "target"] {
        std::fs::create_dir(root.join(skipped)).unwrap();
        std::fs::write(
            root.join(skipped).join("x.toml"),
            shipped("lease-fenced.toml"),
        )
        .unwrap();
    }
    std::fs::write(
        root.join("target/CACHEDIR.TAG"),
        "Signature: 8a477f597d28d172789f06886806bc55",
    )
    .unwrap();
    let files = retrylab::spec::model_files(root).unwrap();
    let names: Vec<_> = files
        .iter()
        .map(|file| file.strip_prefix(root).unwrap().to_path_buf())
        .collect();
    assert_eq!(names, [Path::new("model.toml"), Path::new("typo.toml")]);
    let only_cargo = tempfile::tempdir().unwrap();
    std::fs::copy(&manifest, only_cargo.path().join("Cargo.toml")).unwrap();
    let error = retrylab::spec::model_files(only_cargo.path()).unwrap_err();
    assert!(error.message.contains("Cargo.toml, is skipped"), "{error}");
}
