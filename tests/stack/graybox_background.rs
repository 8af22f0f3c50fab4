//! Issue 44, item 11: statements that belong to no request. The tiny service's `+heartbeat` variant writes a
//! heartbeat row every 50 ms from a thread of its own, on its own connection, as a background job or a pool
//! keep-alive does. Its statements were attributed to the request released last: a correct design failed
//! `interleaved-same-key`, its crash check said `incomplete`. Learnt at the gate (a request statement while the
//! probe has nothing in flight), its connection's statements pass unheld: the correct design gets the same
//! schedules and crash points as without the heartbeat (8 and 4, tests/stack/graybox_blocking.rs derives the 8),
//! and the broken ones are still caught.

use crate::tiny_service::{self, servers};
use retrylab::servers::postgres::TempPostgres;
use serde_json::Value;

/// Every check on `design`: the exit code and the result lines by check.
fn probe(pg: &TempPostgres, design: &str) -> (Option<i32>, Vec<Value>) {
    let dir = tempfile::tempdir().unwrap();
    let out = tiny_service::probe(pg, design, dir.path())
        .args(["--resolve-within-s", "3"])
        .output()
        .expect("retrylab runs");
    let lines = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|line| serde_json::from_str(line).unwrap_or_else(|_| panic!("not JSON: {line}")))
        .collect();
    (out.status.code(), lines)
}

fn line<'a>(lines: &'a [Value], check: &str) -> &'a Value {
    lines
        .iter()
        .find(|l| l["check"] == check)
        .unwrap_or_else(|| panic!("no {check} in {lines:?}"))
}

fn evidence(line: &Value) -> &str {
    line["evidence"].as_str().unwrap_or_default()
}

#[test]
fn a_heartbeat_on_its_own_connection_is_no_step_and_hides_no_failure() {
    let Some(pg) = servers() else { return };
    let (code, lines) = probe(&pg, "one-transaction+heartbeat");
    for check in [
        "crash-at-every-statement",
        "interleaved-same-key",
        "lost-response",
    ] {
        assert_eq!(line(&lines, check)["result"], "pass", "{lines:?}");
    }
    assert_eq!(code, Some(0));
    let crash = evidence(line(&lines, "crash-at-every-statement"));
    assert!(crash.starts_with("8 crashes (4 statements"), "{crash}");
    let interleaved = evidence(line(&lines, "interleaved-same-key"));
    assert!(
        interleaved.starts_with("8 schedules, every order of the 2 requests' boundaries"),
        "{interleaved}"
    );
    // The dangerous scenario was reached: heartbeats came while requests were held.
    assert!(
        interleaved.contains(
            "connections that carry no request (a background job, a keep-alive) passed unheld"
        ),
        "{interleaved}"
    );
    // The broken twins with the same heartbeat: still caught.
    let (code, lines) = probe(&pg, "check-then-act+heartbeat");
    let interleaved = line(&lines, "interleaved-same-key");
    assert_eq!(interleaved["result"], "fail", "{interleaved}");
    assert!(
        evidence(interleaved).starts_with("2 effects"),
        "{interleaved}"
    );
    assert_eq!(code, Some(1));
    let (_, lines) = probe(&pg, "claim-first+heartbeat");
    let crash = line(&lines, "crash-at-every-statement");
    assert_eq!(crash["result"], "fail", "{crash}");
    assert!(
        evidence(crash).starts_with("stuck: killed after"),
        "{crash}"
    );
}
