//! Hold mode and closing: the order of release is the order of effect, a withheld COMMIT commits unanswered,
//! `close_all` rolls an open transaction back.

use super::{pg, Harness, EVENT_WAIT};
use retrylab::graybox::gate::{Decision, Event, Mode};
use retrylab::servers::postgres::TempPostgres;
use std::thread;
use std::time::Duration;

/// Events until the boundary `id` was answered; its error.
fn answered(harness: &mut Harness, id: u64) -> Option<String> {
    loop {
        if let Event::Answered { id: done, error } = harness.event() {
            if done == id {
                return error;
            }
        }
    }
}

/// Two clients insert, each held; released in `order` (indexes of the clients): the table's order.
fn insert_order(server: &TempPostgres, order: [usize; 2]) -> String {
    let mut direct = pg(&server.params());
    direct
        .batch_execute("DROP TABLE IF EXISTS o; CREATE TABLE o (id serial, who text)")
        .unwrap();
    let mut harness = Harness::start(Some(server.port), None);
    let params = harness.pg_params();
    let clients = [pg(&params), pg(&params)];
    harness.gates().set_mode(Mode::Hold);
    let mut held = Vec::new();
    let mut threads = Vec::new();
    for (mut client, who) in clients.into_iter().zip(["a", "b"]) {
        let sql = format!("INSERT INTO o (who) VALUES ('{who}')");
        threads.push(thread::spawn(move || {
            client.batch_execute(&sql).map(|_| client)
        }));
        // Announced, and held: the insert has not run.
        let boundary = harness.held();
        assert_eq!(boundary.text, "INSERT INTO o (who) VALUES (?)");
        held.push(boundary.id);
    }
    let before: i64 = direct
        .query_one("SELECT count(*) FROM o", &[])
        .unwrap()
        .get(0);
    assert_eq!(before, 0, "a held insert ran");
    for index in order {
        assert!(harness.gates().decide(held[index], Decision::Release));
        assert_eq!(answered(&mut harness, held[index]), None);
    }
    for thread in threads {
        thread.join().unwrap().expect("the insert succeeds");
    }
    // Decided once: a second decision finds nothing held.
    assert!(!harness.gates().decide(held[0], Decision::Release));
    let row = direct
        .query_one("SELECT string_agg(who, '' ORDER BY id) FROM o", &[])
        .unwrap();
    row.get(0)
}

#[test]
fn held_statements_run_in_the_order_released() {
    let Some(server) = TempPostgres::start() else {
        return;
    };
    assert_eq!(insert_order(&server, [1, 0]), "ba");
    assert_eq!(insert_order(&server, [0, 1]), "ab");
}

/// A transaction whose COMMIT gets `decision`: the rows committed, and whether the client got its answer
/// (before `close_all`).
fn commit_with(decision: Decision) -> Option<(i64, bool)> {
    let server = TempPostgres::start()?;
    let mut direct = pg(&server.params());
    direct
        .batch_execute("CREATE TABLE t (id int PRIMARY KEY)")
        .unwrap();
    let mut harness = Harness::start(Some(server.port), None);
    let mut client = pg(&harness.pg_params());
    harness.gates().set_mode(Mode::Hold);
    let thread = thread::spawn(move || {
        client.batch_execute("BEGIN")?;
        client.batch_execute("INSERT INTO t VALUES (1)")?;
        client.batch_execute("COMMIT")
    });
    // The bare BEGIN passes unheld: the first held step is the INSERT.
    for (text, decision) in [
        ("INSERT INTO t VALUES (?)", Decision::Release),
        ("COMMIT", decision),
    ] {
        let boundary = harness.held();
        assert_eq!(boundary.text, text);
        assert!(harness.gates().decide(boundary.id, decision));
        assert_eq!(answered(&mut harness, boundary.id), None);
    }
    let rows: i64 = direct
        .query_one("SELECT count(*) FROM t", &[])
        .unwrap()
        .get(0);
    // The client's answer, if it is delivered, arrives right after the Answered event; waiting is generous.
    let deadline = std::time::Instant::now() + EVENT_WAIT;
    while decision == Decision::Release
        && !thread.is_finished()
        && std::time::Instant::now() < deadline
    {
        thread::sleep(Duration::from_millis(10));
    }
    if decision == Decision::Withhold {
        // Nothing more happens on that connection: no event, and the client still waits.
        assert_eq!(harness.quiet_events(Duration::from_millis(300)), []);
    }
    let answered_before_close = thread.is_finished();
    harness.gates().close_all();
    let result = thread.join().unwrap();
    assert_eq!(result.is_ok(), answered_before_close, "{result:?}");
    Some((rows, answered_before_close))
}

#[test]
fn a_withheld_commit_commits_but_is_never_answered() {
    let Some(withheld) = commit_with(Decision::Withhold) else {
        return;
    };
    assert_eq!(withheld, (1, false));
    // The twin: released, the same commit is answered.
    assert_eq!(commit_with(Decision::Release), Some((1, true)));
}

/// An open transaction holds a row lock; whether a direct insert of the same key gets it within `lock_ms`.
fn same_key_insert_after(close_all: bool, lock_ms: u64) -> Option<bool> {
    let server = TempPostgres::start()?;
    let mut direct = pg(&server.params());
    direct
        .batch_execute("CREATE TABLE t (id int PRIMARY KEY)")
        .unwrap();
    let mut harness = Harness::start(Some(server.port), None);
    let mut client = pg(&harness.pg_params());
    client
        .batch_execute("BEGIN; INSERT INTO t VALUES (1)")
        .unwrap();
    if close_all {
        harness.gates().close_all();
        harness.until(|e| matches!(e, Event::Closed { .. }));
        assert!(
            client.batch_execute("SELECT 1").is_err(),
            "the client's connection is closed"
        );
    }
    direct
        .batch_execute(&format!("SET lock_timeout = {lock_ms}"))
        .unwrap();
    Some(direct.batch_execute("INSERT INTO t VALUES (1)").is_ok())
}

#[test]
fn close_all_rolls_an_open_transaction_back() {
    let Some(inserted) = same_key_insert_after(true, EVENT_WAIT.as_millis() as u64) else {
        return;
    };
    assert!(
        inserted,
        "the open transaction's row lock outlived close_all"
    );
    // The twin: without close_all the transaction stays open and keeps its lock.
    assert_eq!(same_key_insert_after(false, 300), Some(false));
}

#[test]
fn a_service_killed_while_held_closes_its_connection_and_the_decision_finds_nothing() {
    let Some(server) = TempPostgres::start() else {
        return;
    };
    let mut harness = Harness::start(Some(server.port), None);
    harness.gates().set_mode(Mode::Hold);
    let port = harness
        .gates()
        .postgres_address()
        .unwrap()
        .port()
        .to_string();
    let mut psql = std::process::Command::new("psql")
        .args([
            "-h",
            "127.0.0.1",
            "-p",
            &port,
            "-U",
            "postgres",
            "-d",
            "postgres",
            "-X",
        ])
        // Not `SELECT 1`: a constant select is a validation query, passed unheld.
        .args(["-c", "SELECT now()"])
        .env("PGSSLMODE", "disable")
        .stdout(std::process::Stdio::null())
        .spawn()
        .expect("psql runs");
    let boundary = harness.held();
    assert_eq!(boundary.text, "SELECT now()");
    psql.kill().unwrap();
    psql.wait().unwrap();
    let events = harness.until(|e| matches!(e, Event::Closed { .. }));
    assert_eq!(
        events,
        [Event::Closed {
            connection: boundary.connection
        }]
    );
    assert!(!harness.gates().decide(boundary.id, Decision::Release));
}

#[test]
fn a_cancel_request_passes_on_its_own_connection() {
    let Some(server) = TempPostgres::start() else {
        return;
    };
    let mut harness = Harness::start(Some(server.port), None);
    let mut client = pg(&harness.pg_params());
    let cancel = client.cancel_token();
    let thread = thread::spawn(move || client.batch_execute("SELECT pg_sleep(60)"));
    harness.until(
        |e| matches!(e, Event::Boundary { boundary, .. } if boundary.text == "SELECT pg_sleep(?)"),
    );
    // Announced is not yet running: a cancel that arrives before the query starts is ignored by the server.
    let mut direct = pg(&server.params());
    let running = "SELECT count(*) FROM pg_stat_activity WHERE state = 'active' AND query LIKE 'SELECT pg_sleep%'";
    let deadline = std::time::Instant::now() + EVENT_WAIT;
    while direct.query_one(running, &[]).unwrap().get::<_, i64>(0) == 0 {
        assert!(
            std::time::Instant::now() < deadline,
            "the sleep never started"
        );
        thread::sleep(Duration::from_millis(20));
    }
    cancel
        .cancel_query(postgres::NoTls)
        .expect("the cancel request is sent");
    let error = thread.join().unwrap().expect_err("the sleep was cancelled");
    let answer = harness.until(|e| matches!(e, Event::Answered { .. }));
    let Some(Event::Answered {
        error: Some(message),
        ..
    }) = answer.last()
    else {
        panic!("{answer:?}")
    };
    assert_eq!(
        message, "canceling statement due to user request",
        "{error}"
    );
}
