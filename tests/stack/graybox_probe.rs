//! The gray-box probe's controller end to end (issue 32) on a tiny Python service of its own
//! (tests/graybox_tiny/service.py, stdlib + Debian's psycopg2) and a PostgreSQL the test starts: the article's
//! claim-first design is reported stuck after the claim commits and its saved schedule replays; a check-then-act
//! design pays twice in some order of two requests, which replays; the fixed twin (one transaction) passes every
//! check; with what an ORM adds (`+orm`: introspection in the first request after each start, thread-named
//! savepoints) the fixed twin still passes crash-at-every-statement and claim-first still fails and replays
//! (issue 44); a probe killed mid-run leaves no process of the service; bad input is
//! refused before anything runs (a FIFO or a device as an input file too, in one line), and a service that exits early is exit 2 with its own output. Skipped with one
//! line when PostgreSQL or /usr/bin/python3 with psycopg2 is missing (a failure under RETRYLAB_REQUIRE_SERVERS=1).

use crate::tiny_service::{probe, servers, BIN};
use serde_json::Value;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

fn run(command: &mut Command) -> (Output, Vec<Value>) {
    let output = command.output().expect("retrylab runs");
    let lines = String::from_utf8_lossy(&output.stdout)
        .lines()
        .map(|line| serde_json::from_str(line).unwrap_or_else(|_| panic!("not JSON: {line}")))
        .collect();
    (output, lines)
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

#[test]
fn the_claim_first_design_is_stuck_after_its_claim_commits_and_the_schedule_replays() {
    let Some(pg) = servers() else { return };
    let dir = tempfile::tempdir().unwrap();
    let started = Instant::now();
    let (output, lines) = run(probe(&pg, "claim-first", dir.path()).args([
        "--check",
        "crash-at-every-statement",
        "--resolve-within-s",
        "2",
    ]));
    println!(
        "claim-first crash-at-every-statement: {:?}",
        started.elapsed()
    );
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    let result = &lines[0];
    assert_eq!(result["result"], "fail", "{result}");
    let evidence = result["evidence"].as_str().unwrap();
    assert!(
        evidence.starts_with("stuck: killed after \"INSERT INTO idempotency_keys")
            && evidence.contains("committed (statement 1 of 4); retries answered 409 for 2 s"),
        "{evidence}"
    );
    let schedule = result["schedule"].as_str().unwrap();
    assert!(result["reproduce"]
        .as_str()
        .unwrap()
        .ends_with(&format!("--replay {schedule}")));
    let saved: Value = serde_json::from_str(&std::fs::read_to_string(schedule).unwrap()).unwrap();
    assert_eq!(
        (saved["format"].as_str(), saved["version"].as_u64()),
        (Some("retrylab-schedule"), Some(2))
    );
    assert_eq!(saved["crash"]["when"], "after");
    assert_eq!(
        (&saved["crash"]["request"], &saved["crash"]["statement"]),
        (&Value::from(0), &Value::from(0))
    );
    let (replayed, lines) = run(probe(&pg, "claim-first", dir.path()).args([
        "--resolve-within-s",
        "2",
        "--replay",
        schedule,
    ]));
    assert_eq!(replayed.status.code(), Some(1), "{}", stderr(&replayed));
    assert_eq!(lines[0]["replay"], "reproduced", "{}", lines[0]);
    // The same schedule against the fixed twin: its first step is the same claim, inside its transaction, so
    // the crash after it is reached and rolled back, and the retry pays once.
    let (twin, lines) = run(probe(&pg, "one-transaction", dir.path()).args(["--replay", schedule]));
    assert_eq!(twin.status.code(), Some(0), "{}", stderr(&twin));
    assert_eq!(lines[0]["replay"], "not reproduced", "{}", lines[0]);
    assert_eq!(
        lines[0]["evidence"], "the service survived it this time",
        "{}",
        lines[0]
    );
}

#[test]
fn the_one_transaction_twin_passes_every_check() {
    let Some(pg) = servers() else { return };
    let dir = tempfile::tempdir().unwrap();
    let started = Instant::now();
    let (output, lines) =
        run(probe(&pg, "one-transaction", dir.path()).args(["--resolve-within-s", "5"]));
    println!("one-transaction, every check: {:?}", started.elapsed());
    assert_eq!(
        output.status.code(),
        Some(0),
        "{lines:?}\n{}",
        stderr(&output)
    );
    let checks: Vec<&str> = lines.iter().map(|l| l["check"].as_str().unwrap()).collect();
    assert_eq!(
        checks,
        [
            "crash-at-every-statement",
            "interleaved-same-key",
            "lost-response"
        ]
    );
    for line in &lines {
        assert_eq!(line["result"], "pass", "{line}");
        assert!(line.get("schedule").is_none(), "{line}");
    }
    assert!(
        lines[0]["evidence"]
            .as_str()
            .unwrap()
            .starts_with("8 crashes (4 statements"),
        "{}",
        lines[0]
    );
    assert!(
        std::fs::read_dir(dir.path()).map_or(true, |mut d| d.next().is_none()),
        "no schedule saved on a pass"
    );
}

/// What `+orm` sends unheld in the first request after a start (the learning run's), as the evidence counts it.
const ORM_HOUSEKEEPING: &str =
    "housekeeping passed unheld: 4 introspection queries, 1 validation query, 1 ROLLBACK with no transaction";

#[test]
fn an_orm_introspecting_after_each_start_with_thread_named_savepoints_passes_when_its_design_is_right(
) {
    // Introspection in the learning run only, a new savepoint name in every run: the same 6 steps each time
    // (the bare BEGIN passes unheld, as does the introspection transaction's).
    let Some(pg) = servers() else { return };
    let dir = tempfile::tempdir().unwrap();
    let (output, lines) = run(probe(&pg, "one-transaction+orm", dir.path()).args([
        "--check",
        "crash-at-every-statement",
        "--resolve-within-s",
        "5",
    ]));
    assert_eq!(
        output.status.code(),
        Some(0),
        "{lines:?}\n{}",
        stderr(&output)
    );
    assert_eq!(lines[0]["result"], "pass", "{}", lines[0]);
    let evidence = lines[0]["evidence"].as_str().unwrap();
    assert!(
        evidence
            .starts_with("12 crashes (6 statements, before and after each): every retry resolved")
            && evidence.contains(ORM_HOUSEKEEPING),
        "{evidence}"
    );
}

#[test]
fn an_orm_introspecting_after_each_start_does_not_hide_the_claim_first_failure() {
    let Some(pg) = servers() else { return };
    let dir = tempfile::tempdir().unwrap();
    let (output, lines) = run(probe(&pg, "claim-first+orm", dir.path()).args([
        "--check",
        "crash-at-every-statement",
        "--resolve-within-s",
        "2",
    ]));
    assert_eq!(
        output.status.code(),
        Some(1),
        "{lines:?}\n{}",
        stderr(&output)
    );
    let evidence = lines[0]["evidence"].as_str().unwrap();
    assert!(
        evidence.starts_with("stuck: killed after \"INSERT INTO idempotency_keys")
            && evidence.contains("committed (statement 1 of 6); retries answered 409 for 2 s")
            && evidence.contains(ORM_HOUSEKEEPING),
        "{evidence}"
    );
    // The replay's run is again the first after a start: it introspects, and that is no divergence.
    let schedule = lines[0]["schedule"].as_str().unwrap();
    let (replayed, lines) = run(probe(&pg, "claim-first+orm", dir.path()).args([
        "--resolve-within-s",
        "2",
        "--replay",
        schedule,
    ]));
    assert_eq!(replayed.status.code(), Some(1), "{}", stderr(&replayed));
    assert_eq!(lines[0]["replay"], "reproduced", "{}", lines[0]);
}

#[test]
fn check_then_act_pays_twice_when_interleaved_and_the_order_replays() {
    let Some(pg) = servers() else { return };
    let dir = tempfile::tempdir().unwrap();
    let (output, lines) =
        run(probe(&pg, "check-then-act", dir.path()).args(["--check", "interleaved-same-key"]));
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    let evidence = lines[0]["evidence"].as_str().unwrap();
    assert!(
        evidence.starts_with("2 effects: 2 requests with one key"),
        "{evidence}"
    );
    assert!(
        evidence.contains("request 2 `SELECT status, body FROM idempotency_keys WHERE key = ?`"),
        "{evidence}"
    );
    let schedule = lines[0]["schedule"].as_str().unwrap();
    let (replayed, lines) =
        run(probe(&pg, "check-then-act", dir.path()).args(["--replay", schedule]));
    assert_eq!(replayed.status.code(), Some(1), "{}", stderr(&replayed));
    assert_eq!(lines[0]["replay"], "reproduced", "{}", lines[0]);
    let (twin, lines) = run(probe(&pg, "one-transaction", dir.path()).args(["--replay", schedule]));
    assert_eq!(twin.status.code(), Some(0), "{}", stderr(&twin));
    assert!(
        lines[0]["evidence"]
            .as_str()
            .unwrap()
            .starts_with("boundary 1: request 1 sent `INSERT"),
        "{}",
        lines[0]
    );
}

#[test]
fn a_search_cut_by_schedules_max_is_incomplete() {
    let Some(pg) = servers() else { return };
    let dir = tempfile::tempdir().unwrap();
    let (output, lines) = run(probe(&pg, "one-transaction", dir.path()).args([
        "--check",
        "interleaved-same-key",
        "--schedules-max",
        "2",
    ]));
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(lines[0]["result"], "incomplete", "{}", lines[0]);
    assert!(
        lines[0]["evidence"]
            .as_str()
            .unwrap()
            .contains("--schedules-max 2"),
        "{}",
        lines[0]
    );
}

/// Running (a zombie counts as gone: it runs no code).
fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        !stat
            .rsplit(')')
            .next()
            .unwrap_or("")
            .trim_start()
            .starts_with('Z')
    })
}

/// Wait for `done` at most `bound`, checking every 20 ms.
fn within(bound: Duration, mut done: impl FnMut() -> bool) -> bool {
    let started = Instant::now();
    while started.elapsed() < bound {
        if done() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    done()
}

#[test]
fn a_probe_killed_mid_run_leaves_no_process_of_the_service() {
    let Some(pg) = servers() else { return };
    let dir = tempfile::tempdir().unwrap();
    let pid_file = dir.path().join("service.pid");
    let mut child = probe(&pg, "one-transaction", dir.path())
        .args(["--check", "interleaved-same-key"])
        .env("PID_FILE", &pid_file)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    assert!(
        within(Duration::from_secs(60), || pid_file.exists()),
        "the service never started"
    );
    let service: u32 = within(Duration::from_secs(5), || {
        std::fs::read_to_string(&pid_file).is_ok_and(|t| t.trim().parse::<u32>().is_ok())
    })
    .then(|| {
        std::fs::read_to_string(&pid_file)
            .unwrap()
            .trim()
            .parse()
            .unwrap()
    })
    .unwrap();
    assert!(alive(service));
    // SAFETY: kill(2) on the child this test spawned.
    unsafe {
        libc::kill(child.id() as libc::pid_t, libc::SIGTERM);
    }
    assert!(
        within(Duration::from_secs(30), || child
            .try_wait()
            .unwrap()
            .is_some()),
        "the probe did not exit"
    );
    assert_eq!(child.wait().unwrap().code(), Some(143));
    assert!(
        within(Duration::from_secs(10), || !alive(service)),
        "the service {service} outlived the probe"
    );
}

#[test]
fn bad_input_is_refused_before_anything_runs_and_an_early_exit_shows_its_output() {
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("ran");
    let output = Command::new(BIN)
        .args(["probe", "http://127.0.0.1:0/payments", "--exec"])
        .arg(format!("touch {}", marker.display()))
        .args([
            "--postgres",
            "postgres://app@10.0.0.7:5432/payments",
            "--count-sql",
            "SELECT 1",
        ])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    assert!(
        stderr(&output).contains("10.0.0.7 is not a loopback address"),
        "{}",
        stderr(&output)
    );
    assert_eq!(stderr(&output).lines().count(), 1, "{}", stderr(&output));
    assert!(
        !marker.exists(),
        "the service ran although the input was refused"
    );
    let Some(pg) = servers() else { return };
    let output = Command::new(BIN)
        .args([
            "probe",
            "http://127.0.0.1:0/payments",
            "--exec",
            "echo missing-setting STRIPE_KEY >&2; exit 3",
        ])
        .arg("--postgres")
        .arg(format!(
            "postgres://postgres@127.0.0.1:{}/postgres",
            pg.port
        ))
        .args(["--count-sql", "SELECT 1"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    let text = stderr(&output);
    assert!(
        text.contains("exited early") && text.contains("missing-setting STRIPE_KEY"),
        "{text}"
    );
}

#[test]
fn a_fifo_or_a_device_as_an_input_file_is_refused_in_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("schedule.json");
    let name = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: mkfifo(3) on a NUL-terminated path that lives across the call.
    assert_eq!(unsafe { libc::mkfifo(name.as_ptr(), 0o600) }, 0);
    let fifo = fifo.to_str().unwrap();
    // Nothing writes the FIFO and /dev/zero never ends: either would hang a probe that read them.
    for (flag, file) in [("--replay", fifo), ("--reset-sql", "/dev/zero")] {
        let output = Command::new(BIN)
            .args(["probe", "http://127.0.0.1:0/p", "--exec", "true"])
            .args(["--postgres", "postgres://app@127.0.0.1:5432/x"])
            .args(["--count-sql", "SELECT 1", flag, file])
            .output()
            .unwrap();
        assert_eq!(output.status.code(), Some(2));
        let text = stderr(&output);
        assert!(
            text.contains(&format!("{flag} {file}: ")) && text.contains("not a regular file"),
            "{text}"
        );
        assert_eq!(text.lines().count(), 1, "{text}");
    }
}
