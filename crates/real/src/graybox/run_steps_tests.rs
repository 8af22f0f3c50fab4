//! The Tracker's steps: a crash point is a request's k-th request statement, whatever was released for other
//! requests or passed unheld before it; comparisons are per request; a `NOSCRIPT`-refused boundary is no step.

use super::*;
use crate::graybox::kind::{Chore, Kind};

fn boundary(id: u64, connection: u64, wire: Wire, text: &str, kind: Kind) -> Boundary {
    Boundary {
        id,
        connection,
        wire,
        text: text.into(),
        kind,
        in_transaction: false,
    }
}

fn event(boundary: Boundary, held: bool) -> Input {
    Input::Gate(Event::Boundary { boundary, held })
}

fn step(request: u32, wire: Wire, text: &str) -> Released {
    Released {
        request,
        wire,
        text: text.into(),
        in_transaction: false,
    }
}

/// Two requests sent, each on its own connection (10, 11).
fn two_requests() -> Tracker {
    let mut tracker = Tracker::new(2, Duration::from_secs(1));
    let now = Instant::now();
    tracker.phases = vec![Phase::Sent { at: now }, Phase::Sent { at: now }];
    tracker
}

/// Hold `text` on `connection` for the request the Tracker attributes it to.
fn hold(tracker: &mut Tracker, id: u64, connection: u64, text: &str) {
    let held = boundary(id, connection, Wire::Postgres, text, Kind::Request);
    tracker.take(event(held, true)).unwrap();
}

/// Release held `id` (the bookkeeping `release` does); its request then runs.
fn release(tracker: &mut Tracker, id: u64, expected: Option<&[Released]>) {
    let request = tracker.boundary_owner[&id];
    tracker.record_release(request, id, expected);
    tracker.phases[request] = Phase::Running;
}

const INTROSPECTION: Kind = Kind::Housekeeping(Chore::Introspection);

#[test]
fn the_crash_point_is_the_requests_own_kth_step() {
    let mut tracker = two_requests();
    hold(&mut tracker, 1, 10, "BEGIN");
    // Housekeeping passes unheld on request 2's connection: counted, no step.
    let version = "select pg_catalog.version()";
    let catalogue = boundary(2, 11, Wire::Postgres, version, INTROSPECTION);
    tracker.take(event(catalogue, false)).unwrap();
    hold(&mut tracker, 3, 11, "BEGIN");
    assert_eq!(tracker.boundary_owner[&3], 1);
    release(&mut tracker, 1, None);
    // Request 2's first step is due although one boundary was released before it ...
    let first_of_second = CrashAt {
        request: 1,
        statement: 0,
        when: When::Before,
    };
    assert!(tracker.crash_due(first_of_second, 1));
    // ... and the global release index (1) names request 1's second step, which this is not.
    let by_global_index = CrashAt {
        request: 0,
        statement: 1,
        when: When::Before,
    };
    assert!(!tracker.crash_due(by_global_index, 1));
    let second_of_second = CrashAt {
        statement: 1,
        ..first_of_second
    };
    assert!(!tracker.crash_due(second_of_second, 1));
    assert_eq!(
        tracker.outcome.passed.summary().as_deref(),
        Some("housekeeping passed unheld: 1 introspection query")
    );
}

#[test]
fn steps_are_compared_per_request_and_a_real_divergence_names_both_texts() {
    let expected = [
        step(0, Wire::Postgres, "BEGIN"),
        step(1, Wire::Postgres, "BEGIN"),
        step(0, Wire::Postgres, "INSERT INTO keys (key) VALUES (?)"),
    ];
    let mut tracker = two_requests();
    hold(&mut tracker, 1, 10, "BEGIN");
    hold(&mut tracker, 2, 11, "BEGIN");
    // Request 2 goes first this time: its first step is still its recorded first step.
    release(&mut tracker, 2, Some(&expected));
    release(&mut tracker, 1, Some(&expected));
    assert_eq!(tracker.outcome.divergence, None);
    hold(&mut tracker, 3, 10, "SELECT state FROM keys WHERE key = ?");
    release(&mut tracker, 3, Some(&expected));
    assert_eq!(
        tracker.outcome.divergence.as_deref(),
        Some(
            "boundary 3: request 1 sent `SELECT state FROM keys WHERE key = ?` (its statement 2); the schedule \
             has `INSERT INTO keys (key) VALUES (?)` there"
        )
    );
}

#[test]
fn a_request_with_a_step_more_than_recorded_diverges() {
    let expected = [step(0, Wire::Postgres, "BEGIN")];
    let mut tracker = Tracker::new(1, Duration::from_secs(1));
    tracker.phases = vec![Phase::Sent { at: Instant::now() }];
    hold(&mut tracker, 1, 10, "BEGIN");
    release(&mut tracker, 1, Some(&expected));
    assert_eq!(tracker.outcome.divergence, None);
    hold(&mut tracker, 2, 10, "COMMIT");
    release(&mut tracker, 2, Some(&expected));
    let why = tracker.outcome.divergence.unwrap();
    assert!(why.ends_with("the schedule has nothing there"), "{why}");
}

/// One request through the Redis gate: `EVALSHA` (held), answered `error`, then `SCRIPT LOAD` (unheld) and the
/// `EVALSHA` again (held, released).
fn script_call(error: &str, expected: &[Released]) -> Tracker {
    let mut tracker = Tracker::new(1, Duration::from_secs(1));
    tracker.phases = vec![Phase::Sent { at: Instant::now() }];
    let evalsha = "EVALSHA ? ? ? ?";
    let first = boundary(1, 10, Wire::Redis, evalsha, Kind::Request);
    tracker.take(event(first, true)).unwrap();
    tracker.record_release(0, 1, Some(expected));
    tracker.phases[0] = Phase::Released {
        id: 1,
        at: Instant::now(),
        judge: Judge::Never,
    };
    let answered = Event::Answered {
        id: 1,
        error: Some(error.into()),
    };
    tracker.take(Input::Gate(answered)).unwrap();
    let load = boundary(
        2,
        10,
        Wire::Redis,
        "SCRIPT LOAD ?",
        Kind::Housekeeping(Chore::ScriptCache),
    );
    tracker.take(event(load, false)).unwrap();
    let again = boundary(3, 10, Wire::Redis, evalsha, Kind::Request);
    tracker.take(event(again, true)).unwrap();
    tracker.record_release(0, 3, Some(expected));
    tracker
}

#[test]
fn an_evalsha_refused_noscript_is_no_step_and_the_resent_call_is() {
    // Recorded in a run where the script was already loaded: one step, sent by source.
    let expected = [step(0, Wire::Redis, "EVAL ? ? ? ?")];
    let tracker = script_call("NOSCRIPT No matching script. Please use EVAL.", &expected);
    assert_eq!(
        tracker.outcome.released,
        [step(0, Wire::Redis, "EVALSHA ? ? ? ?")]
    );
    assert_eq!(tracker.released_ids, [3]);
    assert_eq!(tracker.outcome.divergence, None);
    assert_eq!(
        tracker.outcome.passed.summary().as_deref(),
        Some(
            "housekeeping passed unheld: 1 script cache command; 1 statement the store refused unrun \
             (NOSCRIPT) not counted as steps"
        )
    );
    // Any other error: the script ran (and failed); it stays a step and the resent one diverges.
    let failed = script_call("ERR Error running script", &expected);
    assert_eq!(failed.outcome.released.len(), 2);
    let why = failed.outcome.divergence.unwrap();
    assert!(
        why.starts_with("boundary 2: request 1 sent `EVALSHA ? ? ? ?` (its statement 2)"),
        "{why}"
    );
}
