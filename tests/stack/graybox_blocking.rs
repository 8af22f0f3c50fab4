//! Blocking decided by the database (issue 44): the probe learns each gate connection's PostgreSQL backend and
//! asks PostgreSQL whether a released statement waits on a lock, instead of reading a silence of `--blocked-ms`
//! as one. The store's word itself (an advisory lock and a row lock waited on, then granted; a terminated
//! holder); the tiny service's `one-transaction` design, whose second claim waits on the first one's
//! uncommitted insert, explored to the exact number of schedules and waits reasoned out below, whatever
//! `--blocked-ms` says; and a killed service whose long statement held a row lock in an open transaction: its
//! backend is ended, so the restarted service gets the lock. Skipped with one line when PostgreSQL or
//! /usr/bin/python3 with psycopg2 is missing (a failure under RETRYLAB_REQUIRE_SERVERS=1).

use crate::tiny_service::{servers, tiny, BIN, PYTHON};
use retrylab::graybox::backends::Backends;
use retrylab::graybox::effects::{CountBy, Effects, ResetBy};
use retrylab::graybox::lab::{EnvNames, Lab, LabConfig};
use retrylab::graybox::urls::{parse_postgres, PostgresTarget};
use retrylab::servers::postgres::TempPostgres;
use retrylab::stack::http::{exchange, HttpRequest, Url};
use serde_json::Value;
use std::collections::BTreeSet;
use std::process::Command;
use std::time::{Duration, Instant};

fn pg_url(pg: &TempPostgres) -> String {
    format!("postgres://postgres@127.0.0.1:{}/postgres", pg.port)
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a runtime")
}

/// Ask `backends` until `want` comes (at most 20 s): a waiter takes a moment to queue on its lock.
fn waiting_becomes(
    runtime: &tokio::runtime::Runtime,
    backends: &Backends,
    pids: &[i32],
    want: &BTreeSet<i32>,
) {
    let started = Instant::now();
    loop {
        let seen = runtime.block_on(backends.waiting(pids.to_vec())).unwrap();
        if &seen == want {
            return;
        }
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "the store says {seen:?} wait, expected {want:?}"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
}

fn backend_pid(client: &mut postgres::Client) -> i32 {
    client
        .query_one("SELECT pg_backend_pid()", &[])
        .unwrap()
        .get(0)
}

#[test]
fn the_store_says_which_backends_wait_on_a_lock_and_ends_the_ones_it_is_told_to() {
    let Some(pg) = TempPostgres::start() else {
        return;
    };
    let runtime = runtime();
    let backends = Backends::start(&parse_postgres(&pg_url(&pg)).unwrap());
    let mut holder = postgres::Client::connect(&pg.params(), postgres::NoTls).unwrap();
    let mut waiter = postgres::Client::connect(&pg.params(), postgres::NoTls).unwrap();
    let (held_by, waits) = (backend_pid(&mut holder), backend_pid(&mut waiter));
    let pids = [held_by, waits];
    let nobody = BTreeSet::new();
    // An advisory lock: waited on, then granted.
    holder.execute("SELECT pg_advisory_lock(44)", &[]).unwrap();
    let queued = std::thread::spawn(move || {
        waiter.execute("SELECT pg_advisory_lock(44)", &[]).unwrap();
        waiter
    });
    waiting_becomes(&runtime, &backends, &pids, &BTreeSet::from([waits]));
    holder
        .execute("SELECT pg_advisory_unlock(44)", &[])
        .unwrap();
    waiting_becomes(&runtime, &backends, &pids, &nobody);
    let mut waiter = queued.join().unwrap();
    // A row lock held by an open transaction that runs nothing (a held boundary's): still a wait, until the
    // holder is terminated; then the waiter gets the row and the holder is gone.
    waiter
        .batch_execute("SELECT pg_advisory_unlock_all(); CREATE TABLE rows (id int PRIMARY KEY); INSERT INTO rows VALUES (1)")
        .unwrap();
    holder
        .batch_execute("BEGIN; UPDATE rows SET id = 1 WHERE id = 1")
        .unwrap();
    let queued = std::thread::spawn(move || waiter.execute("UPDATE rows SET id = 1", &[]));
    waiting_becomes(&runtime, &backends, &pids, &BTreeSet::from([waits]));
    let ended = runtime.block_on(backends.terminate(vec![held_by])).unwrap();
    assert_eq!((ended.ended, ended.lingering), (1, 0));
    assert_eq!(queued.join().unwrap().unwrap(), 1);
    assert!(holder.is_closed() || holder.batch_execute("SELECT 1").is_err());
    // A pid that is no backend (any more) is nothing to end.
    let again = runtime.block_on(backends.terminate(vec![held_by])).unwrap();
    assert_eq!(again.ended, 0);
}

/// `retrylab probe --check interleaved-same-key` on the tiny service's `one-transaction` design.
fn interleaved(pg: &TempPostgres, blocked_ms: Option<&str>) -> (Option<i32>, Value, String) {
    let dir = tempfile::tempdir().unwrap();
    let mut command = Command::new(BIN);
    command
        .args(["probe", "http://127.0.0.1:0/payments", "--exec"])
        .arg(format!("{PYTHON} {} one-transaction", tiny("service.py")))
        .arg("--postgres")
        .arg(pg_url(pg))
        .args(["--count-sql", "SELECT count(*) FROM payments"])
        .arg("--reset-sql")
        .arg(tiny("reset.sql"))
        .arg("--schedule-dir")
        .arg(dir.path())
        .args(["--check", "interleaved-same-key", "--json"]);
    if let Some(ms) = blocked_ms {
        command.args(["--blocked-ms", ms]);
    }
    let output = command.output().expect("retrylab runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let line = stdout.lines().next().unwrap_or("null");
    let result = serde_json::from_str(line).unwrap_or(Value::Null);
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    (output.status.code(), result, stderr)
}

/// The schedules of `one-transaction` with two requests, reasoned out. Each request's steps are its claim
/// (`INSERT ... ON CONFLICT DO NOTHING`), then the claimer's `INSERT payments`, `UPDATE`, `COMMIT` and the
/// other's `SELECT`, `ROLLBACK` (the bare `BEGIN` before the claim passes unheld: PostgreSQL takes no snapshot
/// and no lock at it). A claim released while the other's is uncommitted waits on it (the key's unique index):
/// blocked, so the claimer is the only choice until its `COMMIT`, after which the waiter's claim ends with no
/// row.
///
/// Say A claims first. A run is fixed by the gap of A's 4 steps where B's claim is released: after A's claim,
/// its payment or its update (B released while A could go on: 1 preemption; B then blocks), or after its
/// `COMMIT` (A finished: none); B's `SELECT` and `ROLLBACK` always come after A's `COMMIT`. 4 runs with A =
/// request 1, 4 mirrored: 8 schedules, every order (none needs more than 1 preemption). B's claim is blocked
/// in 3 of each side's runs: 6 waits. A timer gets this wrong on a loaded machine: a slow statement read as a
/// wait adds decision points, and a long `--blocked-ms` makes each wait cost that long.
const EXPECTED: &str =
    "8 schedules, every order of the 2 requests' boundaries: at most one effect each; \
                        blocking decided by PostgreSQL (pg_blocking_pids): 6 waits seen";

#[test]
fn a_row_lock_wait_is_decided_by_the_store_to_the_same_schedules_whatever_the_timer_says() {
    let Some(pg) = servers() else { return };
    // The default timer, then one far longer than a run: the old rule (a silence of --blocked-ms is a lock)
    // would take a minute to see each wait and time the requests out; the store's word does not wait for it.
    for blocked_ms in [None, Some("60000"), None] {
        let started = Instant::now();
        let (code, result, stderr) = interleaved(&pg, blocked_ms);
        println!(
            "one-transaction interleaved-same-key, --blocked-ms {blocked_ms:?}: {:?}",
            started.elapsed()
        );
        assert_eq!(code, Some(0), "{result}\n{stderr}");
        assert_eq!(result["result"], "pass", "{result}");
        assert_eq!(result["evidence"], EXPECTED, "{result}");
    }
}

/// The bench on the tiny service's `lock-and-sleep` design, in pass mode.
fn lock_and_sleep_lab(runtime: &tokio::runtime::Runtime, target: PostgresTarget) -> Lab {
    let port = retrylab::servers::free_loopback_port().unwrap();
    let config = LabConfig {
        command: format!("{PYTHON} {} lock-and-sleep", tiny("service.py")),
        url: Url::parse(&format!("http://127.0.0.1:{port}/payments")).unwrap(),
        env_names: EnvNames {
            port: "PORT".into(),
            database_url: "DATABASE_URL".into(),
            redis_url: "REDIS_URL".into(),
        },
        postgres: target.clone(),
        redis: None,
        start_timeout: Duration::from_secs(30),
        key_header: "Idempotency-Key".into(),
        headers: Vec::new(),
        body: r#"{"amount": 5, "sleep": 0}"#.into(),
        request_timeout: Duration::from_secs(20),
        blocked: Duration::from_millis(200),
        instances: 1,
    };
    let reset = std::fs::read_to_string(tiny("reset.sql")).unwrap();
    let count = CountBy::Sql("SELECT count(*) FROM payments".into());
    let effects = Effects::new(
        target,
        count,
        Some(ResetBy::Sql(reset)),
        config.request_timeout,
    );
    runtime.block_on(async {
        effects.reset().await.unwrap();
        Lab::start(config, effects).await.unwrap()
    })
}

/// The backends in `SELECT pg_sleep(...)` now.
fn sleeping(client: &mut postgres::Client) -> Vec<i32> {
    let rows = client
        .query(
            "SELECT pid FROM pg_stat_activity WHERE query LIKE 'SELECT pg_sleep%' AND state = 'active'",
            &[],
        )
        .unwrap();
    rows.iter().map(|row| row.get(0)).collect()
}

#[test]
fn a_killed_service_holding_a_row_lock_in_a_long_statement_frees_it_for_the_restarted_one() {
    let Some(pg) = servers() else { return };
    let runtime = runtime();
    let mut lab = lock_and_sleep_lab(&runtime, parse_postgres(&pg_url(&pg)).unwrap());
    let mut watch = postgres::Client::connect(&pg.params(), postgres::NoTls).unwrap();
    // The first request takes the key's row lock, then sleeps a minute in the same transaction.
    let long = HttpRequest::post(
        "/payments",
        vec![("Idempotency-Key".into(), "k".into())],
        r#"{"amount": 5, "sleep": 60}"#,
    );
    let (url, timeout) = (lab.config.url.clone(), Duration::from_secs(90));
    let _dying = runtime.spawn(async move { exchange(&url, &long, timeout).await });
    let started = Instant::now();
    let asleep = loop {
        runtime.block_on(lab.settle()).unwrap();
        if let [pid] = sleeping(&mut watch)[..] {
            break pid;
        }
        assert!(started.elapsed() < Duration::from_secs(20), "never asleep");
        std::thread::sleep(Duration::from_millis(10));
    };
    // The gate learnt that backend from the store's BackendKeyData.
    assert_eq!(lab.gates.backend_pids(), vec![asleep]);
    runtime.block_on(lab.crash_and_restart()).unwrap();
    assert!(
        sleeping(&mut watch).is_empty(),
        "the dead service's statement outlived it"
    );
    // The restarted service's request on the same key gets the row within its 3 s lock_timeout.
    let retry = lab.request("k");
    let answer = runtime.block_on(lab.send_passing(&retry)).unwrap().unwrap();
    assert_eq!(answer.status, 201, "{}", answer.body);
    drop(lab);
}
