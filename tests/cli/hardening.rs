//! Issue 14, items 1-6: what a cluster job, a second model with the same name, a fixed model, a huge seed count,
//! a closed pipe and an absurd thread count do. Each test here failed before its fix.

use std::path::Path;
use std::process::{Command, Output, Stdio};

use crate::cli_support;
use cli_support::{assert_one_line_error, model_text, models, retrylab, write};

/// `simulate --json` of `model`, 60 seeds with `extra` flags (`--seed 3` unless they give one), into `folder/file`.
fn shard(folder: &Path, file: &str, model: &str, extra: &[&str]) -> String {
    let mut args = vec!["simulate", model, "--seeds", "60", "--json"];
    if !extra.contains(&"--seed") {
        args.extend_from_slice(&["--seed", "3"]);
    }
    args.extend_from_slice(extra);
    let out = retrylab(&args, folder);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    write(folder, file, &String::from_utf8(out.stdout).unwrap())
}

#[test]
fn merge_refuses_missing_duplicated_mixed_and_foreign_shards() {
    let folder = tempfile::tempdir().unwrap();
    let dir = folder.path();
    let model = models().join("article-sqlite.toml");
    let model = model.to_str().unwrap();
    let s1 = shard(dir, "s1.jsonl", model, &["--shard", "1/3"]);
    let s2 = shard(dir, "s2.jsonl", model, &["--shard", "2/3"]);
    let s3 = shard(dir, "s3.jsonl", model, &["--shard", "3/3"]);
    let merge = |files: &[&str]| {
        let mut args = vec!["merge"];
        args.extend_from_slice(files);
        retrylab(&args, dir)
    };
    let whole = merge(&[&s1, &s2, &s3]);
    assert_eq!(
        whole.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&whole.stderr)
    );
    let line: serde_json::Value = serde_json::from_slice(&whole.stdout).unwrap();
    assert_eq!(line["walks"], 60);

    assert_one_line_error(&merge(&[&s1]), &["2/3, 3/3 missing", "s1.jsonl:1"]);
    assert_one_line_error(&merge(&[&s1, &s1, &s1]), &["1/3 given twice", "s1.jsonl:1"]);
    let other_seed = shard(
        dir,
        "seed9.jsonl",
        model,
        &["--shard", "3/3", "--seed", "9"],
    );
    assert_one_line_error(&merge(&[&s1, &s2, &other_seed]), &["--seed 3", "--seed 9"]);
    let half = shard(dir, "half.jsonl", model, &["--shard", "2/2"]);
    assert_one_line_error(&merge(&[&s1, &half]), &["mixed shard counts", "1/3", "2/2"]);
    let unsharded = shard(dir, "all.jsonl", model, &[]);
    assert_one_line_error(&merge(&[&unsharded, &s2]), &["mixed shard counts"]);
    let empty = write(dir, "empty.jsonl", "\n");
    assert_one_line_error(
        &merge(&[&empty]),
        &["no `simulate --json` lines", "empty.jsonl"],
    );

    // A line without what identifies it (as written before shards carried it) is not a shard.
    let mut old: serde_json::Value =
        serde_json::from_str(std::fs::read_to_string(&s2).unwrap().trim()).unwrap();
    old.as_object_mut().unwrap().remove("model_sha256");
    let old = write(dir, "old.jsonl", &old.to_string());
    assert_one_line_error(&merge(&[&s1, &old, &s3]), &["old.jsonl:1", "model_sha256"]);
    // A shard that says it walked fewer seeds than it had, without saying why.
    let short = std::fs::read_to_string(&s2)
        .unwrap()
        .replace("\"walks\":20", "\"walks\":19");
    let short = write(dir, "short.jsonl", &short);
    assert_one_line_error(&merge(&[&s1, &short, &s3]), &["19 walks of its 20 seeds"]);
}

#[test]
fn merge_refuses_shards_of_different_model_texts() {
    let folder = tempfile::tempdir().unwrap();
    let dir = folder.path();
    let text = model_text("article-sqlite.toml");
    write(dir, "m.toml", &text);
    let first = shard(dir, "1.jsonl", "m.toml", &["--shard", "1/2"]);
    // The model file changed between the two tasks of the job.
    write(dir, "m.toml", &format!("# edited\n{text}"));
    let second = shard(dir, "2.jsonl", "m.toml", &["--shard", "2/2"]);
    let out = retrylab(&["merge", &first, &second], dir);
    assert_one_line_error(&out, &["m.toml", "different model texts"]);
}

#[test]
fn two_models_with_one_file_name_get_their_own_traces_and_report_entries() {
    let folder = tempfile::tempdir().unwrap();
    let dir = folder.path();
    write(dir, "a/model.toml", &model_text("select-then-insert.toml"));
    write(dir, "b/model.toml", &model_text("new-key-per-attempt.toml"));
    let out = retrylab(
        &[
            "check",
            "a/model.toml",
            "b/model.toml",
            "--json",
            "--traces",
            "tr",
            "--report",
            "rep/verdicts.md",
        ],
        dir,
    );
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8(out.stdout).unwrap();
    let traces: Vec<String> = stdout
        .lines()
        .map(|line| {
            let line: serde_json::Value = serde_json::from_str(line).unwrap();
            line["traces"]["no-duplicate-effect"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect();
    assert_eq!(
        traces,
        [
            "tr/a+model.no-duplicate-effect.json",
            "tr/b+model.no-duplicate-effect.json"
        ]
    );
    for (trace, model) in traces.iter().zip(["a/model.toml", "b/model.toml"]) {
        let trace: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(dir.join(trace)).unwrap()).unwrap();
        assert_eq!(trace["model"], model, "each trace is its own model's");
    }
    let report = std::fs::read_to_string(dir.join("rep/verdicts.md")).unwrap();
    for name in ["a+model", "b+model"] {
        let svg = format!("verdicts/{name}.no-duplicate-effect.svg");
        assert!(dir.join("rep").join(&svg).is_file(), "{svg}");
        assert!(report.contains(&format!("({svg})")), "{svg} linked");
    }
    assert!(report.contains("<a id=\"a-model--no-duplicate-effect\">"));
    assert!(report.contains("<a id=\"b-model--no-duplicate-effect\">"));
    assert!(report.contains("| `a/model.toml` |") && report.contains("| `b/model.toml` |"));
}

#[test]
fn a_fixed_model_loses_its_old_trace_and_replay_says_the_file_changed_or_went() {
    let folder = tempfile::tempdir().unwrap();
    let dir = folder.path();
    write(dir, "m.toml", &model_text("select-then-insert.toml"));
    let check = || retrylab(&["check", "m.toml", "--traces", "tr"], dir);
    assert_eq!(check().status.code(), Some(0));
    let trace = "tr/m.no-duplicate-effect.json";
    let replay = |trace: &str| retrylab(&["replay", trace], dir);
    let out = replay(trace);
    assert_eq!(out.status.code(), Some(0));
    assert!(
        out.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    // The fix: one server process, so the race is gone and no-duplicate-effect holds.
    write(
        dir,
        "m.toml",
        &model_text("select-then-insert-one-process.toml"),
    );
    let out = replay(trace);
    assert_eq!(
        out.status.code(),
        Some(0),
        "still replays the text it keeps"
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.contains("m.toml has changed since this trace was written"),
        "{stderr}"
    );
    std::fs::copy(dir.join(trace), dir.join("kept.json")).unwrap();

    let out = check();
    assert_eq!(out.status.code(), Some(0));
    assert!(!dir.join(trace).exists(), "the stale trace is removed");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains(&format!("removed {trace}")), "{stdout}");

    std::fs::remove_file(dir.join("m.toml")).unwrap();
    let out = replay("kept.json");
    assert_eq!(out.status.code(), Some(0));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("m.toml is gone"), "{stderr}");
}

#[test]
fn a_trace_of_another_model_with_the_same_name_is_not_removed() {
    let folder = tempfile::tempdir().unwrap();
    let dir = folder.path();
    write(dir, "a/m.toml", &model_text("select-then-insert.toml"));
    write(
        dir,
        "b/m.toml",
        &model_text("select-then-insert-one-process.toml"),
    );
    let check = |model: &str| retrylab(&["check", model, "--traces", "tr"], dir);
    assert_eq!(check("a/m.toml").status.code(), Some(0));
    assert_eq!(check("b/m.toml").status.code(), Some(0));
    assert!(
        dir.join("tr/m.no-duplicate-effect.json").is_file(),
        "a's trace stays"
    );
}

fn simulate_json(args: &[&str]) -> serde_json::Value {
    let folder = tempfile::tempdir().unwrap();
    let model = models().join("article-sqlite.toml");
    let mut all = vec!["simulate", model.to_str().unwrap(), "--json"];
    all.extend_from_slice(args);
    let out = retrylab(&all, folder.path());
    assert!(
        matches!(out.status.code(), Some(0 | 1)),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut line: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    line.as_object_mut().unwrap().remove("elapsed_ms");
    line
}

#[test]
fn simulate_streams_within_max_memory_and_refuses_uncountable_runs() {
    // 1 MiB holds a few hundred walks of 20 steps at once: the run goes in many small chunks, and says the same.
    let small = simulate_json(&["--seeds", "3000", "--max-depth", "20", "--max-memory", "1"]);
    assert_eq!(small["walks"], 3000);
    assert_eq!(small["stopped_by"], serde_json::Value::Null);
    assert_eq!(
        small,
        simulate_json(&["--seeds", "3000", "--max-depth", "20"])
    );
    // No room for one walk: stopped at once, incomplete, nothing claimed.
    let none = simulate_json(&["--seeds", "3000", "--max-memory", "0"]);
    assert_eq!(none["walks"], 0);
    assert_eq!(none["stopped_by"], "max-memory 0 bytes reached", "{none}");
    assert!(none["properties"]
        .as_object()
        .unwrap()
        .values()
        .all(|v| v == "incomplete"));
    assert_eq!(none["reached"], serde_json::json!([]));

    let folder = tempfile::tempdir().unwrap();
    let model = models().join("article-sqlite.toml");
    let model = model.to_str().unwrap();
    let out = retrylab(
        &["simulate", model, "--seeds", "18446744073709551615"],
        folder.path(),
    );
    assert_one_line_error(&out, &["--seeds", "64 bits"]);
    assert!(out.stdout.is_empty());
    let out = retrylab(
        &[
            "simulate",
            model,
            "--seeds",
            "18446744073709551615",
            "--max-depth",
            "1",
            "--max-memory",
            "0",
        ],
        folder.path(),
    );
    assert_eq!(
        out.status.code(),
        Some(1),
        "fits: runs (and stops at once, incomplete)"
    );
}

/// Run the binary with a stdout whose reader has already gone, as in `retrylab check models | head -0`.
fn with_closed_stdout(args: &[&str], cwd: &Path) -> Output {
    // The write end of a pipe whose only reader (`true`) has exited.
    let mut reader = Command::new("true").stdin(Stdio::piped()).spawn().unwrap();
    let write_end = reader.stdin.take().unwrap();
    reader.wait().unwrap();
    Command::new(env!("CARGO_BIN_EXE_retrylab"))
        .args(args)
        .current_dir(cwd)
        .stdout(write_end)
        .stderr(Stdio::piped())
        .output()
        .unwrap()
}

#[test]
fn a_closed_stdout_ends_every_command_quietly() {
    let folder = tempfile::tempdir().unwrap();
    let dir = folder.path();
    let model = models().join("select-then-insert.toml");
    let model = model.to_str().unwrap();
    assert_eq!(
        retrylab(&["check", model, "--traces", "tr"], dir)
            .status
            .code(),
        Some(0)
    );
    let runs: [&[&str]; 5] = [
        &["check", model, "--traces", "tr"],
        &["check", model, "--traces", "tr", "--json"],
        &["simulate", model, "--seeds", "20", "--traces", "tr"],
        &["replay", "tr/select-then-insert.no-duplicate-effect.json"],
        &[
            "replay",
            "tr/select-then-insert.no-duplicate-effect.json",
            "--json",
        ],
    ];
    for args in runs {
        let out = with_closed_stdout(args, dir);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{args:?}: {stderr}");
        assert!(stderr.is_empty(), "{args:?}: {stderr}");
    }
}

#[test]
fn absurd_thread_counts_are_refused_before_any_thread_starts() {
    let folder = tempfile::tempdir().unwrap();
    let model = models().join("select-then-insert.toml");
    let model = model.to_str().unwrap();
    for threads in ["1025", "100000", "0"] {
        for command in ["check", "simulate"] {
            let out = retrylab(&[command, model, "--threads", threads], folder.path());
            assert_one_line_error(&out, &["--threads"]);
            assert!(out.stdout.is_empty());
        }
    }
    let out = retrylab(&["check", model, "--threads", "2"], folder.path());
    assert_eq!(out.status.code(), Some(0));
}

/// Without `--threads`, rayon would start `RAYON_NUM_THREADS` threads: the same bound applies to it.
#[test]
fn an_absurd_rayon_num_threads_is_refused_too() {
    let folder = tempfile::tempdir().unwrap();
    let model = models().join("select-then-insert.toml");
    let run = |value: &str| {
        std::process::Command::new(env!("CARGO_BIN_EXE_retrylab"))
            .args(["check", model.to_str().unwrap()])
            .env("RAYON_NUM_THREADS", value)
            .current_dir(folder.path())
            .output()
            .unwrap()
    };
    for value in ["100000", "many"] {
        let out = run(value);
        assert_one_line_error(&out, &["RAYON_NUM_THREADS"]);
        assert!(out.stdout.is_empty());
    }
    assert_eq!(run("2").status.code(), Some(0));
}

/// A diagnostic to a stderr whose reader has gone (`retrylab check missing.toml 2>&1 | head -0`) is dropped: the
/// exit code still says "bad input", where `eprintln!` panicked (exit 101).
#[test]
fn a_closed_stderr_does_not_turn_an_error_into_a_panic() {
    let folder = tempfile::tempdir().unwrap();
    for args in [
        &["check", "missing.toml"][..],
        &["replay", "missing.json"],
        &["check", "missing.toml", "--threads", "0"],
    ] {
        let mut reader = Command::new("true").stdin(Stdio::piped()).spawn().unwrap();
        let write_end = reader.stdin.take().unwrap();
        reader.wait().unwrap();
        let out = Command::new(env!("CARGO_BIN_EXE_retrylab"))
            .args(args)
            .current_dir(folder.path())
            .stdout(Stdio::piped())
            .stderr(write_end)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
    }
}

/// The verdict tables label every column, and a walk's counterexample names its seed as a number (it printed
/// `(seed Some(57), ...)` under a table whose match column had no label). Issue 14, item 10.
#[test]
fn tables_have_a_header_row_and_seeds_print_as_numbers() {
    let folder = tempfile::tempdir().unwrap();
    let model = models().join("select-then-insert.toml");
    let model = model.to_str().unwrap();
    let header = "property                   verdict     declared   match     counterexample";
    for command in ["check", "simulate"] {
        let out = retrylab(&[command, model, "--verbose"], folder.path());
        let stdout = String::from_utf8_lossy(&out.stdout);
        let lines: Vec<&str> = stdout.lines().collect();
        assert!(lines[0].starts_with(model), "{stdout}");
        assert_eq!(lines[1].trim(), header, "{stdout}");
        assert!(
            lines[2].trim_start().starts_with("no-duplicate-effect "),
            "{stdout}"
        );
        assert!(!stdout.contains("Some("), "{stdout}");
        assert!(
            stdout.contains("counterexample for no-duplicate-effect ("),
            "{stdout}"
        );
        if command == "simulate" {
            assert!(stdout.contains("(seed "), "{stdout}");
        }
    }
}
