//! The gray-box probe end to end on real services in two languages (issue 32): `retrylab probe --exec` starts
//! each sample of examples/graybox/ behind its PostgreSQL (and Redis) gates, against a real PostgreSQL and Redis
//! this test starts. The article's design (Python) is stuck after the crash that follows the claim's commit and
//! never pays twice; the Redis-key design (Node) pays twice after a crash between the PostgreSQL commit and the
//! Redis completion; both fixed twins pass every check, and each twin's mutant (one statement moved) is caught;
//! every failure's saved schedule replays (`--replay` says reproduced).
//!
//! Needs Debian's python3-psycopg2, Node.js with npm (the test runs `npm ci` in a Node sample without
//! node_modules), PostgreSQL and redis-server: each missing one is a `skipped:` line, or a failure under
//! RETRYLAB_REQUIRE_SERVERS=1. The samples run one at a time (a lock): the probe releases statements and takes
//! a request with no statement seen within `--blocked-ms` as queued (a PostgreSQL lock wait is the store's
//! word), so it should not share the two cores with another probe.

use retrylab::servers::missing;
use retrylab::servers::postgres::TempPostgres;
use retrylab::servers::redis::TempRedis;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const BIN: &str = env!("CARGO_BIN_EXE_retrylab");

// One sample at a time (see the module header), and never beside a broker test: the binary's one lock.
use crate::ONE_AT_A_TIME;

/// The number of effects: the same table in every sample but the ORM one (its tables have their own names).
const COUNT_SQL: &str = "SELECT count(*) FROM payments";

/// Debian's interpreter: the one python3-psycopg2 installs into (not a pyenv shim earlier on the PATH).
const PYTHON: &str = "/usr/bin/python3";

/// The lease the Node samples take on a key (their default LEASE_MS), declared to the probe.
const LEASE_MS: &str = "1000";

/// A sample directory with how to start it and whether it needs Redis.
struct Sample {
    name: &'static str,
    exec: String,
    redis: bool,
    count_sql: &'static str,
    /// The scheme of `--postgres` (SQLAlchemy takes only `postgresql://`; the others are given `postgres://`).
    scheme: &'static str,
    /// `--instances`.
    instances: usize,
}

impl Sample {
    fn python(name: &'static str, mutant: bool) -> Sample {
        Sample {
            name,
            exec: format!("{}{PYTHON} app.py", mutant_prefix(mutant)),
            redis: false,
            count_sql: COUNT_SQL,
            scheme: "postgres",
            instances: 1,
        }
    }

    fn orm(mutant: bool) -> Sample {
        Sample {
            count_sql: "SELECT count(*) FROM orm_payments",
            scheme: "postgresql",
            ..Sample::python("python-sqlalchemy", mutant)
        }
    }

    fn node(name: &'static str, mutant: bool) -> Sample {
        Sample {
            name,
            exec: format!("{}node app.js", mutant_prefix(mutant)),
            redis: true,
            count_sql: COUNT_SQL,
            scheme: "postgres",
            instances: 1,
        }
    }

    /// The ioredis sample, as services run: two instances.
    fn ioredis(mutant: bool) -> Sample {
        Sample {
            count_sql: "SELECT count(*) FROM ioredis_payments",
            instances: 2,
            ..Sample::node("node-ioredis", mutant)
        }
    }

    fn dir(&self) -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("examples/graybox")
            .join(self.name)
    }
}

fn mutant_prefix(mutant: bool) -> &'static str {
    if mutant {
        "RETRYLAB_SAMPLE_MUTANT=1 "
    } else {
        ""
    }
}

/// The real stores a run uses, and where its failing schedules go.
struct Stores {
    postgres: TempPostgres,
    redis: Option<TempRedis>,
    schedules: tempfile::TempDir,
}

impl Stores {
    /// PostgreSQL, and Redis when the sample needs it; `None` (after a `skipped:` line) when one is not
    /// installed.
    fn start(sample: &Sample) -> Option<Stores> {
        let postgres = TempPostgres::start()?;
        let redis = if sample.redis {
            Some(TempRedis::start()?)
        } else {
            None
        };
        let schedules = tempfile::tempdir().expect("a temporary directory");
        Some(Stores {
            postgres,
            redis,
            schedules,
        })
    }

    fn postgres_url(&self, scheme: &str) -> String {
        format!(
            "{scheme}://postgres@127.0.0.1:{}/postgres",
            self.postgres.port
        )
    }
}

/// What every probe of `sample` is given: the service, the real stores, the reset and the count, and bounds
/// that keep the run short (the Python samples declare no lease: a stuck key is judged after 2 s of retries).
fn base_args(sample: &Sample, stores: &Stores) -> Vec<String> {
    let mut args: Vec<String> = ["probe", "http://127.0.0.1:0/payments", "--exec"]
        .map(String::from)
        .to_vec();
    args.push(sample.exec.clone());
    args.extend(["--postgres".into(), stores.postgres_url(sample.scheme)]);
    if let Some(redis) = &stores.redis {
        args.extend([
            "--redis".into(),
            redis.url(),
            "--lease-ms".into(),
            LEASE_MS.into(),
        ]);
    }
    args.extend(["--reset-sql", "schema.sql", "--count-sql", sample.count_sql].map(String::from));
    args.extend(["--resolve-within-s", "3", "--schedules-max", "200"].map(String::from));
    args.extend(["--instances".into(), sample.instances.to_string()]);
    args.push("--schedule-dir".into());
    args.push(stores.schedules.path().display().to_string());
    args
}

/// `retrylab` with `args` in the sample's directory (the service's cwd, and where `schema.sql` is).
fn run(sample: &Sample, args: &[String]) -> Output {
    Command::new(BIN)
        .args(args)
        .current_dir(sample.dir())
        .output()
        .expect("retrylab runs")
}

fn text(out: &Output) -> String {
    format!(
        "exit {:?}\nstdout:\n{}\nstderr:\n{}",
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// The sample's tables, made once before its first probe, as a user would (`psql -f schema.sql`): the probe
/// counts effects before anything else runs.
fn create_tables(sample: &Sample, stores: &Stores) {
    let schema = std::fs::read_to_string(sample.dir().join("schema.sql")).expect("schema.sql");
    postgres::Client::connect(&stores.postgres.params(), postgres::NoTls)
        .and_then(|mut client| client.batch_execute(&schema))
        .unwrap_or_else(|e| panic!("{}: schema.sql: {e}", sample.name));
}

/// `retrylab probe --json` on a sample: the exit code and each check's result line.
fn probe(sample: &Sample, stores: &Stores) -> (i32, Vec<Value>) {
    create_tables(sample, stores);
    let mut args = base_args(sample, stores);
    args.push("--json".into());
    let out = run(sample, &args);
    let lines: Vec<Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|line| {
            serde_json::from_str(line).unwrap_or_else(|e| {
                panic!(
                    "{}: not a JSON line ({e}): {line}\n{}",
                    sample.name,
                    text(&out)
                )
            })
        })
        .collect();
    assert!(
        !lines.is_empty(),
        "{}: no result line\n{}",
        sample.name,
        text(&out)
    );
    (out.status.code().unwrap_or(-1), lines)
}

fn result_of<'a>(lines: &'a [Value], check: &str) -> &'a Value {
    lines
        .iter()
        .find(|line| line["check"] == check)
        .unwrap_or_else(|| panic!("no {check} line in {lines:?}"))
}

/// Every failing line's saved schedule runs again and is `reproduced` (exit 1).
fn assert_failures_replay(sample: &Sample, stores: &Stores, lines: &[Value]) {
    let failures: Vec<&Value> = lines
        .iter()
        .filter(|line| line["result"] == "fail")
        .collect();
    assert!(
        !failures.is_empty(),
        "{}: nothing failed: {lines:?}",
        sample.name
    );
    for line in failures {
        let schedule = line["schedule"].as_str().unwrap_or_else(|| {
            panic!(
                "{}: a failure without a saved schedule: {line}",
                sample.name
            )
        });
        assert!(Path::new(schedule).is_file(), "{schedule}: not saved");
        let mut args = base_args(sample, stores);
        args.extend(["--replay".into(), schedule.to_string()]);
        let out = run(sample, &args);
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            stdout.contains("reproduced") && !stdout.contains("not reproduced"),
            "{}: {schedule} did not reproduce\n{}",
            sample.name,
            text(&out)
        );
        assert_eq!(
            out.status.code(),
            Some(1),
            "{}: a reproduced replay exits 1",
            sample.name
        );
    }
}

/// No line of a run shows a second effect (the article's design never pays twice).
fn assert_never_two_effects(name: &str, lines: &[Value]) {
    for line in lines {
        let evidence = line["evidence"].as_str().unwrap_or_default();
        assert!(
            !evidence.contains("2 effects"),
            "{name}: paid twice: {line}"
        );
    }
}

/// Every check passes; `interleaved-same-key` may be n/a only where the service serialises the requests itself
/// (one shared connection): then it must say that no order was chosen, never a bare pass.
fn assert_all_pass(name: &str, code: i32, lines: &[Value], serialised: bool) {
    for check in ["crash-at-every-statement", "lost-response"] {
        let line = result_of(lines, check);
        assert_eq!(line["result"], "pass", "{name}: {line}");
    }
    let interleaved = result_of(lines, "interleaved-same-key");
    let evidence = interleaved["evidence"].as_str().unwrap_or_default();
    if serialised && interleaved["result"] == "n/a" {
        assert!(
            evidence.contains("no order to choose"),
            "{name}: {interleaved}"
        );
    } else {
        assert_eq!(interleaved["result"], "pass", "{name}: {interleaved}");
        assert!(
            !evidence.contains("no order to choose"),
            "{name}: {interleaved}"
        );
    }
    assert_eq!(code, 0, "{name}: exit 0 when every check passes: {lines:?}");
}

/// Debian's python3 with psycopg2, or `None` after a `skipped:` line.
fn python_ready() -> Option<()> {
    let import = Command::new(PYTHON)
        .args(["-c", "import psycopg2"])
        .output();
    if !import.is_ok_and(|out| out.status.success()) {
        missing("python3-psycopg2", "apt-get install -y python3-psycopg2")?;
    }
    Some(())
}

/// Node.js and npm, and the sample's locked dependencies (`npm ci` when node_modules is missing), or `None`
/// after a `skipped:` line.
fn node_ready(sample: &Sample) -> Option<()> {
    let found = |program: &str| {
        Command::new(program)
            .arg("--version")
            .output()
            .is_ok_and(|out| out.status.success())
    };
    if !(found("node") && found("npm")) {
        missing("Node.js with npm", "apt-get install -y nodejs npm")?;
    }
    if !sample.dir().join("node_modules").is_dir() {
        let out = Command::new("npm")
            .args(["ci", "--no-audit", "--no-fund"])
            .current_dir(sample.dir())
            .output()
            .expect("npm runs");
        assert!(
            out.status.success(),
            "npm ci in {}: {}",
            sample.name,
            text(&out)
        );
    }
    Some(())
}

#[test]
fn the_article_design_is_stuck_after_the_claims_commit_and_never_pays_twice() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let sample = Sample::python("python-article", false);
    let Some(()) = python_ready() else { return };
    let Some(stores) = Stores::start(&sample) else {
        return;
    };
    let (code, lines) = probe(&sample, &stores);
    let crash = result_of(&lines, "crash-at-every-statement");
    assert_eq!(crash["result"], "fail", "{crash}");
    let evidence = crash["evidence"].as_str().unwrap_or_default();
    // psycopg2 claims with BEGIN (unheld), INSERT, COMMIT: the crash after that COMMIT leaves the key in progress.
    assert!(
        evidence.starts_with("stuck: killed after \"COMMIT\" committed (statement 2 of 5)"),
        "{evidence}"
    );
    assert_never_two_effects(sample.name, &lines);
    assert_eq!(code, 1, "exit 1 when a check fails");
    assert_failures_replay(&sample, &stores, &lines);
}

#[test]
fn the_redis_design_pays_twice_after_a_crash_between_the_commit_and_the_completion() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let sample = Sample::node("node-redis", false);
    let Some(()) = node_ready(&sample) else {
        return;
    };
    let Some(stores) = Stores::start(&sample) else {
        return;
    };
    let (code, lines) = probe(&sample, &stores);
    let crash = result_of(&lines, "crash-at-every-statement");
    assert_eq!(crash["result"], "fail", "{crash}");
    let evidence = crash["evidence"].as_str().unwrap_or_default();
    // The first crash point that pays twice: the INSERT committed, the Redis completion never sent.
    assert!(
        evidence.starts_with("2 effects: killed after \"INSERT INTO payments")
            && evidence.contains("committed"),
        "{evidence}"
    );
    assert_eq!(code, 1, "exit 1 when a check fails");
    assert_failures_replay(&sample, &stores, &lines);
}

#[test]
fn the_fixed_article_passes_every_check_and_its_mutant_is_caught() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let fixed = Sample::python("python-article-fixed", false);
    let Some(()) = python_ready() else { return };
    let Some(stores) = Stores::start(&fixed) else {
        return;
    };
    let (code, lines) = probe(&fixed, &stores);
    assert_all_pass(fixed.name, code, &lines, false);
    // The claim committed on its own: the article's bug again, stuck after that commit.
    let mutant = Sample::python("python-article-fixed", true);
    let (code, lines) = probe(&mutant, &stores);
    let crash = result_of(&lines, "crash-at-every-statement");
    assert_eq!(
        crash["result"], "fail",
        "the mutant must be caught: {crash}"
    );
    assert!(
        crash["evidence"]
            .as_str()
            .unwrap_or_default()
            .contains("stuck"),
        "{crash}"
    );
    assert_eq!(code, 1, "exit 1 when a check fails");
    assert_failures_replay(&mutant, &stores, &lines);
}

#[test]
fn the_fixed_redis_design_passes_every_check_and_its_mutant_is_caught() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let fixed = Sample::node("node-redis-fixed", false);
    let Some(()) = node_ready(&fixed) else { return };
    let Some(stores) = Stores::start(&fixed) else {
        return;
    };
    let (code, lines) = probe(&fixed, &stores);
    // node-redis sends every request's commands over one shared connection, in its own order.
    assert_all_pass(fixed.name, code, &lines, true);
    // The completion cached before the INSERT: a crash between them replays a payment never made.
    let mutant = Sample::node("node-redis-fixed", true);
    let (code, lines) = probe(&mutant, &stores);
    let crash = result_of(&lines, "crash-at-every-statement");
    assert_eq!(
        crash["result"], "fail",
        "the mutant must be caught: {crash}"
    );
    assert_eq!(code, 1, "exit 1 when a check fails");
    assert_failures_replay(&mutant, &stores, &lines);
}

/// A mutant that pays twice both ways: after a crash and in some order of two requests; each failure replays.
fn assert_pays_twice_after_a_crash_and_in_some_order(mutant: &Sample, stores: &Stores) {
    let (code, lines) = probe(mutant, stores);
    for check in ["crash-at-every-statement", "interleaved-same-key"] {
        let line = result_of(&lines, check);
        assert_eq!(line["result"], "fail", "the mutant must be caught: {line}");
        let evidence = line["evidence"].as_str().unwrap_or_default();
        assert!(evidence.starts_with("2 effects"), "{line}");
    }
    assert_eq!(code, 1, "exit 1 when a check fails");
    assert_failures_replay(mutant, stores, &lines);
}

/// Debian's python3 with SQLAlchemy and psycopg2, or `None` after a `skipped:` line.
fn sqlalchemy_ready() -> Option<()> {
    let import = Command::new(PYTHON)
        .args(["-c", "import sqlalchemy, psycopg2"])
        .output();
    if !import.is_ok_and(|out| out.status.success()) {
        missing(
            "python3-sqlalchemy",
            "apt-get install -y python3-sqlalchemy python3-psycopg2",
        )?;
    }
    Some(())
}

/// The service most users have: an ORM over a pool. SQLAlchemy introspects the server inside the first request
/// after each start, validates each checkout with `SELECT 1`, wraps the payment in a savepoint and stores its
/// answer in jsonb (given back with its keys in another order): every check must still get a verdict, the correct
/// design passing them all, the mutant (pays, then records the key in a second transaction) caught.
#[test]
fn the_orm_service_gets_a_verdict_from_every_check_and_its_mutant_is_caught() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let fixed = Sample::orm(false);
    let Some(()) = sqlalchemy_ready() else { return };
    let Some(stores) = Stores::start(&fixed) else {
        return;
    };
    let (code, lines) = probe(&fixed, &stores);
    assert_all_pass(fixed.name, code, &lines, false);
    let lost = result_of(&lines, "lost-response");
    assert!(
        lost["evidence"]
            .as_str()
            .unwrap_or_default()
            .contains("the same JSON value in other bytes"),
        "the jsonb replay differs in bytes, and that must be said: {lost}"
    );
    let mutant = Sample::orm(true);
    assert_pays_twice_after_a_crash_and_in_some_order(&mutant, &stores);
}

/// SQLAlchemy refuses `postgres://`: the probe keeps the user's scheme, so the service starts with
/// `postgresql://` (above) and, given `postgres://`, fails to start with a line saying what to give instead.
#[test]
fn an_orm_given_the_scheme_it_refuses_is_told_which_to_use() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let sample = Sample {
        scheme: "postgres",
        ..Sample::orm(false)
    };
    let Some(()) = sqlalchemy_ready() else { return };
    let Some(stores) = Stores::start(&sample) else {
        return;
    };
    create_tables(&sample, &stores);
    let out = run(&sample, &base_args(&sample, &stores));
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("give --postgres postgresql://"),
        "{}",
        text(&out)
    );
}

/// Node on ioredis, as most Node services use Redis: one shared auto-pipelined connection per process, a Lua
/// claim sent by EVALSHA (NOSCRIPT, then EVAL on a fresh server), CLIENT SETNAME. With two instances the
/// requests wait at the stores together and every check gets a verdict: the correct design passes them all,
/// the mutant (GET then SET, the key left out of the payment row) pays twice in some order and after a crash.
#[test]
fn node_on_ioredis_gets_a_verdict_from_every_check_with_two_instances_and_its_mutant_is_caught() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let fixed = Sample::ioredis(false);
    let Some(()) = node_ready(&fixed) else { return };
    let Some(stores) = Stores::start(&fixed) else {
        return;
    };
    let (code, lines) = probe(&fixed, &stores);
    assert_all_pass(fixed.name, code, &lines, false);
    let mutant = Sample::ioredis(true);
    assert_pays_twice_after_a_crash_and_in_some_order(&mutant, &stores);
}

/// One process on one shared Redis connection serialises its requests: `n/a`, saying to try two instances;
/// with two, the same service's interleavings get a verdict (node-redis claims by SET NX: a pass).
#[test]
fn a_shared_connection_is_told_to_try_two_instances_and_gets_a_verdict_with_them() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let one = Sample::node("node-redis", false);
    let Some(()) = node_ready(&one) else { return };
    let Some(stores) = Stores::start(&one) else {
        return;
    };
    create_tables(&one, &stores);
    let interleaved = |sample: &Sample| {
        let mut args = base_args(sample, &stores);
        args.extend(["--check", "interleaved-same-key", "--json"].map(String::from));
        let out = run(sample, &args);
        let line: Value =
            serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", text(&out)));
        line
    };
    let line = interleaved(&one);
    assert_eq!(line["result"], "n/a", "{line}");
    assert!(
        line["evidence"]
            .as_str()
            .unwrap_or_default()
            .contains("try --instances 2"),
        "{line}"
    );
    let two = Sample {
        instances: 2,
        ..Sample::node("node-redis", false)
    };
    let line = interleaved(&two);
    assert_eq!(line["result"], "pass", "{line}");
}
