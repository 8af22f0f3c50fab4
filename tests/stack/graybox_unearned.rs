//! Issue 44, items 10 and 12: passes that were not earned, and stores on demand. On the tiny service of
//! tests/graybox_tiny: a service that reaches the store around the gate (its DATABASE_URL replaced by the real
//! one) is exit 2 "reached without the gate", where it was `n/a` and exit 0; a search in which every request was
//! refused (a CHECK constraint) or the count never moved (`--count-sql "SELECT 1"`) is `n/a` saying so, never a
//! pass, and with `--strict` exit 1; the same design with its stores whole passes (the twin, in graybox_probe.rs:
//! `the_one_transaction_twin_passes_every_check`). `--postgres auto` starts a throwaway server for one run.

use crate::tiny_service::{servers, tiny, BIN, PYTHON};
use retrylab::servers::postgres::TempPostgres;
use serde_json::Value;
use std::process::{Command, Output};

/// The probe of the one-transaction design with `exec_prefix` before its command, on `postgres`.
fn probe(
    postgres: &str,
    exec_prefix: &str,
    reset: &str,
    count_sql: &str,
    extra: &[&str],
) -> Output {
    let dir = tempfile::tempdir().unwrap();
    Command::new(BIN)
        .args(["probe", "http://127.0.0.1:0/payments", "--exec"])
        .arg(format!(
            "{exec_prefix}{PYTHON} {} one-transaction",
            tiny("service.py")
        ))
        .args([
            "--postgres",
            postgres,
            "--count-sql",
            count_sql,
            "--reset-sql",
            reset,
        ])
        .arg("--schedule-dir")
        .arg(dir.path())
        .args(["--json", "--resolve-within-s", "2"])
        .args(extra)
        .output()
        .expect("retrylab runs")
}

fn lines(out: &Output) -> Vec<Value> {
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|line| serde_json::from_str(line).unwrap_or_else(|_| panic!("not JSON: {line}")))
        .collect()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn url(pg: &TempPostgres) -> String {
    format!("postgres://postgres@127.0.0.1:{}/postgres", pg.port)
}

#[test]
fn a_service_that_reaches_the_store_around_the_gate_is_exit_2() {
    let Some(pg) = servers() else { return };
    // The shell puts the real URL back over the gate's: the service never talks to the gate.
    let around = format!("DATABASE_URL={} ", url(&pg));
    for check in [
        "crash-at-every-statement",
        "interleaved-same-key",
        "lost-response",
    ] {
        let out = probe(
            &url(&pg),
            &around,
            &tiny("reset.sql"),
            "SELECT count(*) FROM payments",
            &["--check", check],
        );
        assert_eq!(out.status.code(), Some(2), "{check}: {}", stderr(&out));
        assert!(
            stderr(&out).contains("the store was reached without the gate: the count moved +1"),
            "{check}: {}",
            stderr(&out)
        );
    }
    // The twin: through the gate, the same check has a verdict.
    let out = probe(
        &url(&pg),
        "",
        &tiny("reset.sql"),
        "SELECT count(*) FROM payments",
        &["--check", "lost-response"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(lines(&out)[0]["result"], "pass");
}

#[test]
fn a_search_where_nothing_succeeded_or_nothing_was_counted_is_no_pass() {
    let Some(pg) = servers() else { return };
    let dir = tempfile::tempdir().unwrap();
    let refusing = dir.path().join("refusing.sql");
    let schema = std::fs::read_to_string(tiny("reset.sql")).unwrap();
    // Every INSERT INTO payments now fails: no request can succeed.
    std::fs::write(
        &refusing,
        format!(
            "{schema}\nALTER TABLE payments DROP CONSTRAINT IF EXISTS never;\n\
             ALTER TABLE payments ADD CONSTRAINT never CHECK (amount < 0);\n"
        ),
    )
    .unwrap();
    // The constraint outlives a probe: the later probes' reset takes it away again.
    let whole = dir.path().join("whole.sql");
    std::fs::write(
        &whole,
        format!("{schema}\nALTER TABLE payments DROP CONSTRAINT IF EXISTS never;\n"),
    )
    .unwrap();
    let whole = whole.to_str().unwrap();
    let interleaved = ["--check", "interleaved-same-key", "--schedules-max", "200"];
    let out = probe(
        &url(&pg),
        "",
        refusing.to_str().unwrap(),
        "SELECT count(*) FROM payments",
        &interleaved,
    );
    let line = &lines(&out)[0];
    assert_eq!(line["result"], "n/a", "{line}");
    assert!(
        line["evidence"]
            .as_str()
            .unwrap()
            .contains("no request succeeded"),
        "{line}"
    );
    assert_eq!(out.status.code(), Some(0), "n/a is exit 0 without --strict");
    // A count that sees nothing: requests succeed, the count never moves.
    let out = probe(&url(&pg), "", whole, "SELECT 1", &interleaved);
    let line = &lines(&out)[0];
    assert_eq!(line["result"], "n/a", "{line}");
    assert!(
        line["evidence"]
            .as_str()
            .unwrap()
            .contains("count never moved"),
        "{line}"
    );
    let mut strict = interleaved.to_vec();
    strict.push("--strict");
    let out = probe(&url(&pg), "", whole, "SELECT 1", &strict);
    assert_eq!(
        out.status.code(),
        Some(1),
        "--strict: n/a proved nothing: {}",
        stderr(&out)
    );
    // The twin: the stores whole, the same search earns its pass.
    let out = probe(
        &url(&pg),
        "",
        whole,
        "SELECT count(*) FROM payments",
        &strict,
    );
    let line = &lines(&out)[0];
    assert_eq!(line["result"], "pass", "{line}");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
}

#[test]
fn postgres_auto_starts_a_throwaway_server_for_the_run() {
    // The server the test starts is only there to say whether PostgreSQL is installed (skipped otherwise).
    let Some(_installed) = servers() else { return };
    let out = probe(
        "auto",
        "",
        &tiny("reset.sql"),
        "SELECT count(*) FROM payments",
        &["--check", "lost-response"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(lines(&out)[0]["result"], "pass", "{:?}", lines(&out));
}
