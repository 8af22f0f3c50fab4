//! Hostile input, in process through the library (fast enough for every `cargo test`): the committed model files
//! and counterexample traces, mutated (bytes deleted, tokens inserted, numbers pushed to extremes, lines repeated
//! or cut), must give a located error (file:line:column, a field, a message) or a verdict, never a panic, and
//! never take more than a few seconds. Seeded, nothing persisted: the same cases run every time.

use proptest::prelude::*;
use proptest::test_runner::TestRunner;
use retrylab::builtin::World;
use retrylab::check::Model as _;
use retrylab::spec::{new_trace, parse_model, parse_trace, replay, SpecError};
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use crate::model_support;
use model_support::seeded_runner;

const RUNNER_SEED: &[u8; 32] = b"retrylab fuzz_inputs seed 000001";
/// A mutated model may be a valid one with a large state space: the search is bounded, so a case stays short.
const FUZZ_STATES_MAX: u64 = 20_000;
const CASE_TIME_MAX: Duration = Duration::from_secs(3);

/// Text that parsers meet at their edges: syntax, other tables, types, extremes, non-ASCII.
const TOKENS: &[&str] = &[
    "=",
    "[",
    "]",
    "{",
    "}",
    ",",
    "\"",
    "'",
    "\n",
    "#",
    "key =",
    "[[clients.operations]]\n",
    "\n[faults]\nrepublishes = 9\n",
    "[broker]\n",
    "[consumer]\n",
    "[expect]\n",
    "[protocol]\nfencing = true\n",
    "lease-ms = 0\n",
    "key-policy = \"per-attempt\"\n",
    "1979-05-27T07:32:00Z",
    "-1",
    "0",
    "255",
    "256",
    "18446744073709551616",
    "1e309",
    "true",
    "null",
    "\"x\"",
    "é",
    "\u{0}",
    "\\u0000",
    "body-json = 'null'\n",
    "same-key-as = 9\n",
    "\"steps\": []",
    "\"property\": \"nope\"",
    "\"action\": \"send\"",
    "{\"client\": 200}",
];

#[derive(Clone, Debug)]
enum Mutation {
    Delete { at: u16, len: u8 },
    Insert { at: u16, token: usize },
    Number { nth: u8, value: usize },
    DuplicateLine { nth: u8 },
    Truncate { at: u16 },
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        (any::<u16>(), 1..16u8).prop_map(|(at, len)| Mutation::Delete { at, len }),
        (any::<u16>(), 0..TOKENS.len()).prop_map(|(at, token)| Mutation::Insert { at, token }),
        (any::<u8>(), 0..TOKENS.len()).prop_map(|(nth, value)| Mutation::Number { nth, value }),
        any::<u8>().prop_map(|nth| Mutation::DuplicateLine { nth }),
        any::<u16>().prop_map(|at| Mutation::Truncate { at }),
    ]
}

/// The char boundary at or after `at` (scaled into the text).
fn boundary(text: &str, at: u16) -> usize {
    let mut index = usize::from(at) % (text.len() + 1);
    while !text.is_char_boundary(index) {
        index += 1;
    }
    index
}

fn apply(text: &str, mutation: &Mutation) -> String {
    let mut text = text.to_string();
    match *mutation {
        Mutation::Delete { at, len } => {
            let start = boundary(&text, at);
            let mut end = (start + usize::from(len)).min(text.len());
            while !text.is_char_boundary(end) {
                end += 1;
            }
            text.replace_range(start..end, "");
        }
        Mutation::Insert { at, token } => text.insert_str(boundary(&text, at), TOKENS[token]),
        Mutation::Number { nth, value } => {
            let digits: Vec<usize> = text
                .match_indices(char::is_numeric)
                .map(|(index, _)| index)
                .collect();
            if let Some(&index) = digits.get(usize::from(nth) % digits.len().max(1)) {
                text.replace_range(index..index + 1, TOKENS[value]);
            }
        }
        Mutation::DuplicateLine { nth } => {
            let lines: Vec<&str> = text.lines().collect();
            let nth = usize::from(nth) % lines.len().max(1);
            let mut out: Vec<&str> = lines.clone();
            if let Some(line) = lines.get(nth) {
                out.insert(nth, line);
            }
            text = out.join("\n");
        }
        Mutation::Truncate { at } => text.truncate(boundary(&text, at)),
    }
    text
}

fn models() -> Vec<(String, String)> {
    let folder = Path::new(env!("CARGO_MANIFEST_DIR")).join("models");
    retrylab::spec::model_files(&folder)
        .unwrap()
        .into_iter()
        .map(|path| {
            let name = path.file_name().unwrap().to_string_lossy().to_string();
            (name, std::fs::read_to_string(&path).unwrap())
        })
        .collect()
}

/// A located error: `file:line:column: field: message`, the position inside `text`.
fn assert_located(error: &SpecError, file: &str, text: &str) {
    let shown = error.to_string();
    assert!(error.file.starts_with(file), "{shown}");
    assert!(error.line >= 1 && error.column >= 1, "no position: {shown}");
    assert!(
        error.line <= text.lines().count() + 1,
        "past the end: {shown}"
    );
    assert!(!error.message.trim().is_empty(), "no message: {shown}");
    assert!(
        shown.starts_with(&format!("{}:{}:{}: ", error.file, error.line, error.column)),
        "{shown}"
    );
}

fn verdict_of(world: &World) {
    let report = world.checker().states_max(FUZZ_STATES_MAX).bfs();
    assert!(report.states >= 1);
}

fn runner(cases: u32) -> TestRunner {
    seeded_runner(RUNNER_SEED, cases)
}

#[test]
fn mutated_model_files_give_a_located_error_or_a_verdict() {
    let models = models();
    let strategy = (0..models.len(), prop::collection::vec(mutation(), 1..4));
    let (accepted, refused) = (AtomicUsize::new(0), AtomicUsize::new(0));
    runner(400)
        .run(&strategy, |(index, mutations)| {
            let (_, original) = &models[index];
            let text = mutations
                .iter()
                .fold(original.clone(), |text, m| apply(&text, m));
            let started = Instant::now();
            match parse_model("m.toml", &text) {
                Ok(model) => {
                    verdict_of(&model.world);
                    accepted.fetch_add(1, Ordering::Relaxed);
                }
                Err(error) => {
                    assert_located(&error, "m.toml", &text);
                    refused.fetch_add(1, Ordering::Relaxed);
                }
            }
            assert!(started.elapsed() < CASE_TIME_MAX, "slow case:\n{text}");
            Ok(())
        })
        .unwrap();
    // Both sides were exercised: some mutants are still models (and were checked), most are refused.
    let (accepted, refused) = (accepted.into_inner(), refused.into_inner());
    eprintln!("{accepted} mutated models accepted and checked, {refused} refused");
    assert!(
        accepted >= 20 && refused >= 100,
        "{accepted} accepted, {refused} refused"
    );
}

/// A counterexample trace of each of a few small models, as its JSON text. The models are loaded by a relative
/// path (tests run in the package's folder): a trace names its model file, and an absolute path would make the
/// mutated inputs depend on where the checkout is.
fn traces() -> Vec<String> {
    let folder = Path::new("models");
    let mut traces = Vec::new();
    for name in [
        "select-then-insert.toml",
        "queue-inbox-after-effect.toml",
        "store-5xx-as-final.toml",
    ] {
        let model = retrylab::spec::load_model(&folder.join(name)).unwrap();
        let report = model.world.checker().bfs();
        let (found, actions) = report.counterexamples().next().expect("a violation");
        let run = retrylab::check::timeline(&model.world, actions).unwrap();
        traces.push(new_trace(&model, &found.name, "bfs", None, run.steps).to_json());
    }
    traces
}

#[test]
fn mutated_traces_give_a_located_error_or_a_replay() {
    let traces = traces();
    let models = models();
    let strategy = (
        0..traces.len(),
        prop::collection::vec(mutation(), 1..4),
        prop::option::of((0..models.len(), prop::collection::vec(mutation(), 1..3))),
    );
    let replayed = AtomicUsize::new(0);
    runner(300)
        .run(&strategy, |(index, mutations, embedded)| {
            let mut text = traces[index].clone();
            if let Some((model, model_mutations)) = embedded {
                // Swap in another (mutated) model: the trace's own JSON stays well-formed.
                let mut value: serde_json::Value = serde_json::from_str(&text).unwrap();
                let source = model_mutations
                    .iter()
                    .fold(models[model].1.clone(), |t, m| apply(&t, m));
                value["model_source"] = serde_json::Value::String(source);
                text = value.to_string();
            }
            let text = mutations.iter().fold(text, |text, m| apply(&text, m));
            let started = Instant::now();
            match parse_trace("t.json", &text) {
                Err(error) => assert_located(&error, "t.json", &text),
                Ok(trace) => match replay("t.json", &text, &trace) {
                    Ok(_) => {
                        replayed.fetch_add(1, Ordering::Relaxed);
                    }
                    Err(error) if error.file.contains("(its embedded model") => {
                        assert_located(&error, "t.json", &trace.model_source)
                    }
                    // Its property, or a step that diverges: placed at that value in the trace.
                    Err(error) => {
                        assert!(
                            ["property", "steps"].contains(&error.field.as_str()),
                            "{error}"
                        );
                        assert_located(&error, "t.json", &text)
                    }
                },
            }
            assert!(started.elapsed() < CASE_TIME_MAX, "slow case:\n{text}");
            Ok(())
        })
        .unwrap();
    let replayed = replayed.into_inner();
    // Most mutations break the JSON or the model; some must still replay, or the replay path went untested.
    assert!(replayed >= 5, "only {replayed} mutated traces replayed");
}
