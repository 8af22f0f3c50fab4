//! The command line: exit codes (0 verdicts as declared, 1 not, 2 bad input) and one-line errors.

use crate::cli_support;
use cli_support::{models, retrylab, write};

const GOOD: &str = r#"
description = "one client, lost responses"
[clients]
count = 1
max-attempts = 2
[[clients.operations]]
body = { amount = 500, currency = "RUB" }
[faults]
drop-responses = 1
[expect]
no-duplicate-effect = "holds"
reached = ["lost-response", "replay"]
"#;

#[test]
fn exit_zero_when_every_verdict_matches_and_one_when_not() {
    let folder = tempfile::tempdir().unwrap();
    let good = write(folder.path(), "good.toml", GOOD);
    let out = retrylab(&["check", &good], folder.path());
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    let wrong = write(
        folder.path(),
        "wrong.toml",
        &GOOD.replace("\"holds\"", "\"violated\""),
    );
    let out = retrylab(&["check", &wrong], folder.path());
    assert_eq!(out.status.code(), Some(1));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("MISMATCH"), "{stdout}");
}

#[test]
fn json_has_the_documented_fields_and_replay_reproduces() {
    let folder = tempfile::tempdir().unwrap();
    let model = models().join("select-then-insert.toml");
    let out = retrylab(
        &["check", "--json", "--traces", "tr", model.to_str().unwrap()],
        folder.path(),
    );
    assert_eq!(out.status.code(), Some(0));
    let stdout = String::from_utf8(out.stdout).unwrap();
    let line: serde_json::Value = serde_json::from_str(stdout.lines().next().unwrap()).unwrap();
    for field in [
        "model",
        "properties",
        "expected",
        "matches",
        "states",
        "depth",
        "counterexample_len",
        "elapsed_ms",
    ] {
        assert!(line.get(field).is_some(), "missing {field} in {line}");
    }
    assert_eq!(line["properties"]["no-duplicate-effect"], "violated");
    assert_eq!(line["expected"]["no-duplicate-effect"], "violated");
    assert_eq!(line["matches"], true);
    let trace = line["traces"]["no-duplicate-effect"]
        .as_str()
        .unwrap()
        .to_string();
    let out = retrylab(&["replay", &trace], folder.path());
    assert_eq!(out.status.code(), Some(0));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("reproduced: no-duplicate-effect violated at step"),
        "{stdout}"
    );
    assert!(stdout.contains("DUPLICATE EFFECT"), "{stdout}");
}

#[test]
fn human_output_ends_with_the_replay_command() {
    let folder = tempfile::tempdir().unwrap();
    let model = models().join("new-key-per-attempt.toml");
    let out = retrylab(&["check", model.to_str().unwrap()], folder.path());
    let stdout = String::from_utf8_lossy(&out.stdout);
    let last = stdout.lines().last().unwrap();
    assert!(
        last.trim_start()
            .starts_with("retrylab replay target/retrylab/traces/"),
        "{stdout}"
    );
}

#[test]
fn simulate_json_is_identical_across_runs_and_thread_counts() {
    let folder = tempfile::tempdir().unwrap();
    let model = models().join("article-sqlite.toml");
    let run = |threads: &str| {
        let out = retrylab(
            &[
                "simulate",
                model.to_str().unwrap(),
                "--seeds",
                "200",
                "--seed",
                "5",
                "--json",
                "--threads",
                threads,
            ],
            folder.path(),
        );
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&out.stdout)
        );
        let mut line: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        line.as_object_mut().unwrap().remove("elapsed_ms");
        line
    };
    let first = run("1");
    assert_eq!(first["properties"]["no-stuck-key"], "violated");
    assert_eq!(
        first["properties"]["no-duplicate-effect"], "incomplete",
        "walks never claim holds"
    );
    assert_eq!(first, run("2"));
    assert_eq!(first, run("1"));
}

/// Bad input: exit 2, one line on stderr naming file:line:column and the field, nothing on stdout.
fn assert_bad_input(text: &str, expect_position: &str, expect_field: &str) {
    let folder = tempfile::tempdir().unwrap();
    let file = write(folder.path(), "bad.toml", text);
    let out = retrylab(&["check", &file], folder.path());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        out.stdout.is_empty(),
        "nothing half-written: {}",
        String::from_utf8_lossy(&out.stdout)
    );
    assert_eq!(stderr.trim_end().lines().count(), 1, "one line: {stderr}");
    assert!(
        stderr.contains(&format!("bad.toml:{expect_position}")),
        "position {expect_position}: {stderr}"
    );
    assert!(
        stderr.contains(expect_field),
        "field {expect_field}: {stderr}"
    );
    assert!(!stderr.contains("panicked"), "{stderr}");
}

#[test]
fn a_syntax_error_is_reported_with_its_position() {
    assert_bad_input(
        &GOOD.replace("count = 1", "count = = 1"),
        "4:",
        "clients.count",
    );
}

#[test]
fn an_unknown_knob_names_the_field() {
    assert_bad_input(
        &GOOD.replace("[faults]", "[faults]\ndrop-everything = 3"),
        "9:1",
        "faults.drop-everything",
    );
}

#[test]
fn fencing_without_a_lease_is_contradictory() {
    assert_bad_input(
        &GOOD.replace("[clients]", "[protocol]\nfencing = true\n[clients]"),
        "4:11",
        "protocol.fencing",
    );
}

#[test]
fn zero_clients_is_refused() {
    assert_bad_input(
        &GOOD.replace("count = 1", "count = 0"),
        "4:9",
        "clients.count",
    );
}

#[test]
fn an_unknown_property_or_scenario_is_refused() {
    assert_bad_input(
        &GOOD.replace("no-duplicate-effect =", "no-duplicate-effects ="),
        "11:1",
        "expect",
    );
    assert_bad_input(
        &GOOD.replace("\"replay\"]", "\"replays\"]"),
        "12:",
        "expect.reached",
    );
}

#[test]
fn usage_errors_exit_two() {
    let folder = tempfile::tempdir().unwrap();
    assert_eq!(retrylab(&["check"], folder.path()).status.code(), Some(2));
    assert_eq!(
        retrylab(&["check", "no-such-folder"], folder.path())
            .status
            .code(),
        Some(2)
    );
    assert_eq!(
        retrylab(&["simulate", "x.toml", "--seeds", "many"], folder.path())
            .status
            .code(),
        Some(2)
    );
    assert_eq!(
        retrylab(&["frobnicate"], folder.path()).status.code(),
        Some(2)
    );
    let junk = write(folder.path(), "junk.json", "{}");
    assert_eq!(
        retrylab(&["replay", &junk], folder.path()).status.code(),
        Some(2)
    );
}

#[test]
fn shards_merge_into_the_unsharded_result() {
    let folder = tempfile::tempdir().unwrap();
    let model = models().join("article-sqlite.toml");
    let model = model.to_str().unwrap();
    let simulate = |extra: &[&str]| {
        let mut args = vec!["simulate", model, "--seeds", "120", "--seed", "3", "--json"];
        args.extend_from_slice(extra);
        let out = retrylab(&args, folder.path());
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    };
    let whole: serde_json::Value = serde_json::from_str(&simulate(&[])).unwrap();
    let first = write(folder.path(), "1.jsonl", &simulate(&["--shard", "1/2"]));
    let second = write(folder.path(), "2.jsonl", &simulate(&["--shard", "2/2"]));
    let out = retrylab(&["merge", &first, &second], folder.path());
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let merged: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    for field in [
        "properties",
        "walks",
        "states",
        "cut_walks",
        "counterexample_len",
        "counterexample_lens",
        "counterexample_seeds",
        "matches",
    ] {
        assert_eq!(merged[field], whole[field], "{field}");
    }
    assert_eq!(
        retrylab(&["simulate", model, "--shard", "3/2"], folder.path())
            .status
            .code(),
        Some(2)
    );
    let junk = write(folder.path(), "junk.jsonl", "{\"not\": 1}\n");
    assert_eq!(
        retrylab(&["merge", &junk], folder.path()).status.code(),
        Some(2)
    );
}

/// tests/vacuous/: a model with no fault enabled, and its twin with a lost response.
fn vacuous_model(name: &str) -> String {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/vacuous")
        .join(name)
        .display()
        .to_string()
}

#[test]
fn a_model_with_no_fault_holds_vacuously_and_strict_fails_it() {
    let folder = tempfile::tempdir().unwrap();
    let model = vacuous_model("no-fault.toml");
    let out = retrylab(&["check", &model, "--traces", "tr"], folder.path());
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "a warning only: {stdout}");
    assert!(stdout.contains("  scenarios reached: none\n"), "{stdout}");
    assert!(
        stdout.contains("  scenarios not reached: crash-after-claim, lost-response,"),
        "{stdout}"
    );
    assert!(
        stdout.contains("WARNING: no-duplicate-effect, no-lost-effect, consistent-replay")
            && stdout.contains("hold, but vacuously: no fault is enabled"),
        "{stdout}"
    );
    let strict = retrylab(
        &["check", &model, "--traces", "tr", "--strict"],
        folder.path(),
    );
    assert_eq!(strict.status.code(), Some(1));
    let json = retrylab(
        &["check", &model, "--traces", "tr", "--json"],
        folder.path(),
    );
    let line: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    assert_eq!(line["vacuous"], "no-fault");
    assert_eq!(line["reached"], serde_json::json!([]));
    assert!(line["not_reached"].as_array().unwrap().len() > 10, "{line}");
    assert_eq!(
        line["matches"], true,
        "the existing fields keep their meaning"
    );
}

#[test]
fn a_model_whose_fault_scenario_is_reached_does_not_warn() {
    let folder = tempfile::tempdir().unwrap();
    let model = vacuous_model("lost-response.toml");
    let out = retrylab(
        &["check", &model, "--traces", "tr", "--strict"],
        folder.path(),
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    assert!(
        stdout.contains("  scenarios reached: lost-response,"),
        "{stdout}"
    );
    assert!(!stdout.contains("WARNING"), "{stdout}");
    let json = retrylab(
        &["check", &model, "--traces", "tr", "--json"],
        folder.path(),
    );
    let line: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    assert_eq!(line["vacuous"], serde_json::Value::Null);
    assert_eq!(line["vacuous_warning"], serde_json::Value::Null);
}

/// simulate --json lists what check --json lists: the scenarios not reached (the no-fault model reached none; its
/// lost-response twin reached lost-response). Walks never say `holds` (their verdicts are incomplete), so neither
/// line is vacuous: `vacuous` is for a `holds` that proves nothing.
#[test]
fn simulate_json_lists_the_scenarios_not_reached() {
    let folder = tempfile::tempdir().unwrap();
    let line_of = |name: &str| -> serde_json::Value {
        let model = vacuous_model(name);
        let args = [
            "simulate", &model, "--seeds", "50", "--traces", "tr", "--json",
        ];
        let out = retrylab(&args, folder.path());
        serde_json::from_slice(&out.stdout).unwrap()
    };
    let no_fault = line_of("no-fault.toml");
    assert_eq!(no_fault["reached"], serde_json::json!([]), "{no_fault}");
    let not_reached = no_fault["not_reached"].as_array().unwrap();
    assert!(not_reached.contains(&"lost-response".into()), "{no_fault}");
    assert_eq!(no_fault["vacuous"], serde_json::Value::Null, "{no_fault}");
    let twin = line_of("lost-response.toml");
    let reached = twin["reached"].as_array().unwrap();
    assert!(reached.contains(&"lost-response".into()), "{twin}");
    let not_reached = twin["not_reached"].as_array().unwrap();
    assert!(!not_reached.contains(&"lost-response".into()), "{twin}");
}

/// lease-fenced-3-clients' eventually-resolves: 27 steps, 14 of them C2's and C3's payments. The text shows the
/// 13 that C1.op1 depends on and says why it stays unresolved; --full-trace shows all 27; JSON keeps the path
/// (the trace) and adds the slice.
#[test]
fn a_liveness_counterexample_says_what_is_unresolved_and_shows_its_slice() {
    let folder = tempfile::tempdir().unwrap();
    let model = models().join("lease-fenced-3-clients.toml");
    let model = model.to_str().unwrap();
    let out = retrylab(&["check", model, "--traces", "tr", "-v"], folder.path());
    assert_eq!(out.status.code(), Some(0));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains(
            "eventually-resolves (27 steps; the 13 that C1.op1 depends on, --full-trace for all):"
        ),
        "{stdout}"
    );
    assert!(
        stdout.contains("C1.op1 is unresolved: its client gave up after 3 of 3 attempts (clients.max-attempts ran out)")
            && stdout.contains("its record key k1 of C1 is in_progress"),
        "{stdout}"
    );
    assert!(
        !stdout.contains("C2 sends"),
        "C2's traffic is left out: {stdout}"
    );
    let replay = |args: &[&str]| {
        let mut all = vec![
            "replay",
            "tr/lease-fenced-3-clients.eventually-resolves.json",
        ];
        all.extend(args);
        retrylab(&all, folder.path())
    };
    let sliced = String::from_utf8(replay(&[]).stdout).unwrap();
    let full = String::from_utf8(replay(&["--full-trace"]).stdout).unwrap();
    let numbered = |text: &str| {
        text.lines()
            .filter(|line| line.contains(". "))
            .filter(|line| {
                line.trim_start()
                    .split('.')
                    .next()
                    .is_some_and(|n| n.parse::<u32>().is_ok())
            })
            .count()
    };
    assert_eq!(
        (numbered(&sliced), numbered(&full)),
        (13, 27),
        "{sliced}\n{full}"
    );
    assert!(full.contains("C2 sends") && sliced.contains("(13 of 27 steps shown"));
    let json: serde_json::Value = serde_json::from_slice(&replay(&["--json"]).stdout).unwrap();
    assert_eq!(json["steps"], 27);
    assert_eq!(
        json["slice_steps"],
        serde_json::json!([1, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15])
    );
    assert_eq!(json["unresolved"][0]["operation"], "C1.op1");
    assert_eq!(json["unresolved"][0]["reason"], "gave-up");
}

/// Escape codes written in a model file (TOML's `\u001b`) reach the terminal as visible text, never as codes:
/// here in an error message quoting the bad value, and in replay's line with the model's description.
#[test]
fn escape_codes_from_input_files_do_not_reach_the_terminal() {
    let folder = tempfile::tempdir().unwrap();
    let bad = write(
        folder.path(),
        "bad.toml",
        &GOOD.replace("\"lost-response\"", r#""\u001b]0;owned\u0007\u001b[2J""#),
    );
    let out = retrylab(&["check", &bad], folder.path());
    assert_eq!(out.status.code(), Some(2));
    assert!(!out.stderr.contains(&0x1b) && !out.stderr.contains(&0x07));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(r"unknown scenario '\x1b]0;owned\x07\x1b[2J'"),
        "{stderr}"
    );
    let text = cli_support::model_text("select-then-insert.toml");
    let (first, rest) = text.split_once('\n').unwrap();
    assert!(first.starts_with("description = "), "{first}");
    let described = write(
        folder.path(),
        "described.toml",
        &format!("description = \"one client\\u001b[31m, red\"\n{rest}"),
    );
    retrylab(&["check", &described, "--traces", "tr"], folder.path());
    let out = retrylab(
        &["replay", "tr/described.no-duplicate-effect.json"],
        folder.path(),
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains(r"(one client\x1b[31m, red)"), "{stdout}");
    assert!(!out.stdout.contains(&0x1b));
}
