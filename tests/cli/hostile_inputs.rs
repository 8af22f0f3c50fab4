//! Issue 31, items 9, 11 and 12: input files that are not what they say (a FIFO or /dev/zero named `*.toml`, a
//! model that is not UTF-8), a shard count of 10^15, and the default memory bound. Each failed before its fix:
//! the FIFO hung `check`, /dev/zero filled memory, the shard count allocated 3.5 GB and aborted.

use std::path::Path;

use crate::cli_support;
use cli_support::{assert_one_line_error, model_text, models, retrylab, write};

#[cfg(unix)]
fn mkfifo(path: &Path) -> bool {
    std::process::Command::new("mkfifo")
        .arg(path)
        .status()
        .is_ok_and(|status| status.success())
}

#[cfg(unix)]
#[test]
fn a_fifo_among_the_models_is_refused_not_waited_on() {
    let folder = tempfile::tempdir().unwrap();
    let dir = folder.path();
    write(
        dir,
        "models/article.toml",
        &model_text("article-sqlite.toml"),
    );
    if !mkfifo(&dir.join("models/stuck.toml")) {
        println!("skipped: no mkfifo");
        return;
    }
    let out = retrylab(&["check", "models"], dir);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("stuck.toml") && stderr.contains("a FIFO, not a regular file"),
        "{stderr}"
    );
    assert!(!stderr.contains("panicked"), "{stderr}");
}

#[cfg(unix)]
#[test]
fn dev_zero_behind_a_symlink_is_refused_by_every_reader() {
    let folder = tempfile::tempdir().unwrap();
    let dir = folder.path();
    for name in ["zero.toml", "zero.json", "zero.jsonl"] {
        std::os::unix::fs::symlink("/dev/zero", dir.join(name)).unwrap();
    }
    for args in [
        &["check", "zero.toml"][..],
        &["simulate", "zero.toml", "--seeds", "1"],
        &["replay", "zero.json"],
        &["merge", "zero.jsonl"],
        &["explore", "zero.toml", "--listen", "127.0.0.1:0"],
    ] {
        let out = retrylab(args, dir);
        assert_one_line_error(&out, &["zero.", "a device, not a regular file"]);
    }
}

#[test]
fn a_model_that_is_not_utf8_is_located() {
    let folder = tempfile::tempdir().unwrap();
    let dir = folder.path();
    let mut bytes = model_text("article-sqlite.toml").into_bytes();
    let second_line = bytes.iter().position(|&b| b == b'\n').unwrap() + 1;
    bytes.splice(second_line..second_line, b"ab\xff".iter().copied());
    std::fs::write(dir.join("bad.toml"), bytes).unwrap();
    let out = retrylab(&["check", "bad.toml"], dir);
    assert_one_line_error(&out, &["bad.toml:2:3", "not UTF-8"]);
}

#[test]
fn a_shard_count_of_ten_to_the_fifteen_is_answered_at_once() {
    let folder = tempfile::tempdir().unwrap();
    let dir = folder.path();
    let model = models().join("article-sqlite.toml");
    let out = retrylab(
        &[
            "simulate",
            model.to_str().unwrap(),
            "--seeds",
            "4",
            "--json",
            "--shard",
            "1/1000000000000000",
        ],
        dir,
    );
    // Exit 1: four seeds do not reach what the model expects; the line is what matters here.
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(matches!(out.status.code(), Some(0 | 1)), "{stderr}");
    let file = write(dir, "s.jsonl", &String::from_utf8(out.stdout).unwrap());
    // Before the fix: every missing shard's name was formatted (3.5 GB), then the process aborted.
    let merged = retrylab(&["merge", &file], dir);
    assert_one_line_error(
        &merged,
        &[
            "2/1000000000000000, 3/1000000000000000",
            "and 999999999999991 more",
        ],
    );
}

/// Issue 44, item 18, and the header rule of item 17: flags whose values could not work are refused by name
/// before anything runs (each was accepted before: a NaN deadline, a header name with a space, a lease near
/// 2^64 reported as another flag's error, a header value with a line break that starts a second header).
#[cfg(feature = "stack")]
#[test]
fn flags_that_cannot_work_are_refused_by_name() {
    let folder = tempfile::tempdir().unwrap();
    let dir = folder.path();
    let nan = retrylab(
        &[
            "load",
            "http://127.0.0.1:9/payments",
            "--deadline-ms",
            "NaN",
        ],
        dir,
    );
    assert_one_line_error(&nan, &["--deadline-ms NaN", "positive"]);
    let header = retrylab(&["serve", "--key-header", "bad header"], dir);
    assert_one_line_error(&header, &["--key-header \"bad header\"", "header name"]);
    let gray = |extra: &[&str]| {
        let mut args = vec![
            "probe",
            "http://127.0.0.1:0/payments",
            "--exec",
            "true",
            "--postgres",
            "postgres://u@127.0.0.1:9/d",
            "--count-sql",
            "SELECT 1",
        ];
        args.extend_from_slice(extra);
        retrylab(&args, dir)
    };
    let lease = gray(&["--lease-ms", "18446744073709551615"]);
    assert_one_line_error(&lease, &["--lease-ms", "18446744073709551615"]);
    let injected = gray(&["--header", "X-A: 1\r\nX-Injected: 2"]);
    assert_one_line_error(&injected, &["--header", "CR or LF"]);
    let tls = retrylab(
        &[
            "probe",
            "http://127.0.0.1:0/payments",
            "--exec",
            "true",
            "--postgres",
            "postgres://u@127.0.0.1:9/d?sslmode=require",
            "--count-sql",
            "SELECT 1",
        ],
        dir,
    );
    assert_one_line_error(&tls, &["sslmode=require", "plain TCP"]);
}
