//! The gates with the drivers people use (issue 32's "any language"): psycopg 3, pgjdbc and pgx on PostgreSQL,
//! redis-py and redis-rb on Redis, each a small client program under tests/graybox_drivers/ run against a real
//! store that the test starts, through gates in hold mode. The test releases every held boundary and records each
//! boundary's text; the texts are asserted exactly, including the named prepared statements that the drivers bind
//! without their text (psycopg's and pgjdbc's threshold of 5, pgx's statement cache) and their pipelines and
//! batches; the rows and keys are then read directly from the store. Before the first write is released the store
//! is read too: the write must not have run (a gate that passed it through would be caught there).
//!
//! Needs Debian's python3-psycopg, python3-redis, ruby-redis, libpostgresql-jdbc-java (with a JDK) and golang-go
//! with golang-github-jackc-pgx-v4-dev (Debian has no pgx v5); a missing one prints a `skipped:` line, or fails
//! under RETRYLAB_REQUIRE_SERVERS=1.

use retrylab::graybox::gate::{Decision, Event, Gates, Mode};
use retrylab::servers::missing;
use retrylab::servers::postgres::TempPostgres;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

#[path = "../graybox_drivers/redis_clients.rs"]
mod redis_clients;

/// One poll of the event stream; the client is checked for exit between polls.
const POLL: Duration = Duration::from_millis(200);
/// Polls with no event before a run is given up as hung (three minutes: a JVM starting on a loaded machine).
const QUIET_POLLS_MAX: u32 = 900;
/// Debian's interpreter, where python3-psycopg and python3-redis install (not a pyenv shim on the PATH).
const PYTHON: &str = "/usr/bin/python3";
/// Debian's pgjdbc.
const PGJDBC_JAR: &str = "/usr/share/java/postgresql.jar";
/// Where Debian's Go packages keep their sources (a GOPATH: Debian's pgx builds offline with modules off).
const GOPATH: &str = "/usr/share/gocode";

/// The text the insert of every PostgreSQL client normalises to.
const INSERT: &str = "INSERT INTO t (k, v) VALUES ($1, $2)";
/// A bare `BEGIN` passes unheld, announced as housekeeping (PostgreSQL takes no snapshot or lock at it).
const BEGIN: &str = "session: BEGIN";
const COMMIT: &str = "COMMIT";

/// What one client run did through the gates.
#[derive(Debug)]
struct Recorded {
    /// Each boundary in the order announced: its text, `session: ` before a session statement's.
    boundaries: Vec<String>,
    /// `Unsupported` and `UpstreamFailed` events (none expected).
    trouble: Vec<Event>,
    /// Boundaries held and released.
    released: usize,
    /// Whether the check before the first write ran.
    checked: bool,
    /// The store's errors, as the gate reported them in `Answered`.
    errors: Vec<String>,
}

/// The gates on their own runtime; the client runs as a child process.
struct Harness {
    runtime: tokio::runtime::Runtime,
    gates: Gates,
}

impl Harness {
    fn start(postgres: Option<u16>, redis: Option<u16>) -> Harness {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("a runtime");
        let address = |port: u16| SocketAddr::from(([127, 0, 0, 1], port));
        let gates = runtime
            .block_on(Gates::start(postgres.map(address), redis.map(address)))
            .expect("the gates start");
        gates.set_mode(Mode::Hold);
        Harness { runtime, gates }
    }

    fn postgres_port(&self) -> u16 {
        self.gates
            .postgres_address()
            .expect("a PostgreSQL gate")
            .port()
    }

    fn redis_url(&self) -> String {
        let port = self.gates.redis_address().expect("a Redis gate").port();
        format!("redis://127.0.0.1:{port}")
    }

    /// Run `command` to its end, releasing every held boundary; `before_write` runs once, while the first held
    /// boundary whose text contains `write` waits.
    fn drive(
        &mut self,
        mut command: Command,
        write: &str,
        before_write: impl FnOnce(),
    ) -> Recorded {
        let name = format!("{command:?}");
        let client = std::thread::spawn(move || command.output());
        self.record(client, &name, (write, before_write))
    }

    fn record(
        &mut self,
        client: std::thread::JoinHandle<std::io::Result<Output>>,
        name: &str,
        (write, before_write): (&str, impl FnOnce()),
    ) -> Recorded {
        let mut recorded = Recorded {
            boundaries: Vec::new(),
            trouble: Vec::new(),
            released: 0,
            checked: false,
            errors: Vec::new(),
        };
        let mut check = Some(before_write);
        let mut quiet = 0;
        loop {
            let Some(event) = self.runtime.block_on(self.gates.next_event(POLL)) else {
                if client.is_finished() {
                    break;
                }
                quiet += 1;
                assert!(quiet < QUIET_POLLS_MAX, "{name} hangs: {recorded:?}");
                continue;
            };
            quiet = 0;
            match event {
                Event::Boundary { boundary, held } => {
                    let prefix = if boundary.session() { "session: " } else { "" };
                    recorded
                        .boundaries
                        .push(format!("{prefix}{}", boundary.text));
                    if held {
                        if boundary.text.contains(write) {
                            if let Some(check) = check.take() {
                                check();
                            }
                        }
                        assert!(self.gates.decide(boundary.id, Decision::Release));
                        recorded.released += 1;
                    }
                }
                Event::Unsupported { .. } | Event::UpstreamFailed { .. } => {
                    recorded.trouble.push(event)
                }
                Event::Answered {
                    error: Some(error), ..
                } => recorded.errors.push(error),
                _ => {}
            }
        }
        recorded.checked = check.is_none();
        let output = client
            .join()
            .expect("the client thread")
            .expect("the client runs");
        assert!(
            output.status.success(),
            "{name}: {}\n{}\nrecorded: {recorded:?}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
        recorded
    }
}

fn program(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/graybox_drivers")
        .join(name)
}

/// Whether `program args` runs and exits 0.
fn runs(program: &str, args: &[&str]) -> bool {
    Command::new(program)
        .args(args)
        .output()
        .is_ok_and(|out| out.status.success())
}

/// A PostgreSQL with the table the clients write, and a direct client to read it.
fn postgres_with_table() -> Option<(TempPostgres, postgres::Client)> {
    let server = TempPostgres::start()?;
    let mut direct =
        postgres::Client::connect(&server.params(), postgres::NoTls).expect("connect directly");
    direct
        .batch_execute("CREATE TABLE t (k int PRIMARY KEY, v text NOT NULL)")
        .expect("create the table");
    Some((server, direct))
}

/// The rows a client wrote: `k:v` in key order.
fn rows(direct: &mut postgres::Client) -> Vec<String> {
    direct
        .query("SELECT k, v FROM t ORDER BY k", &[])
        .expect("read the table")
        .iter()
        .map(|row| format!("{}:{}", row.get::<_, i32>(0), row.get::<_, String>(1)))
        .collect()
}

/// The rows the PostgreSQL clients write: keys 0..7 with `label`, 100..103 with `batch_label`.
fn expected_rows(label: &str, batch_label: &str) -> Vec<String> {
    let single = (0..7).map(|k| format!("{k}:{label}"));
    let batch = (100..103).map(|k| format!("{k}:{batch_label}"));
    single.chain(batch).collect()
}

/// Run a PostgreSQL client through the gate; its boundaries, after checking its rows and that nothing was
/// written before the first release.
fn run_postgres_client(
    server: &TempPostgres,
    mut direct: postgres::Client,
    command: impl FnOnce(u16) -> Command,
) -> (Recorded, Vec<String>) {
    let mut harness = Harness::start(Some(server.port), None);
    let command = command(harness.postgres_port());
    let params = server.params();
    let recorded = harness.drive(command, "INSERT", move || {
        let mut early = postgres::Client::connect(&params, postgres::NoTls).expect("connect");
        let written: i64 = early
            .query_one("SELECT count(*) FROM t", &[])
            .expect("count")
            .get(0);
        assert_eq!(written, 0, "a held write ran before its release");
    });
    assert_eq!(recorded.trouble, [], "{recorded:?}");
    assert!(recorded.checked, "no insert was held: {recorded:?}");
    (recorded, rows(&mut direct))
}

/// A session statement's entry in `Recorded::boundaries`.
fn session(text: &str) -> String {
    format!("session: {text}")
}

/// The three inserts of a pipeline or a batch: one boundary.
fn three_inserts() -> String {
    [INSERT; 3].join("; ")
}

fn strings(texts: &[&str]) -> Vec<String> {
    texts.iter().map(|t| t.to_string()).collect()
}

#[test]
fn psycopg3_prepared_and_pipelined_statements_keep_their_texts() {
    if !runs(PYTHON, &["-c", "import psycopg"]) {
        missing("python3-psycopg", "apt-get install -y python3-psycopg");
        return;
    }
    let Some((server, direct)) = postgres_with_table() else {
        return;
    };
    let conninfo = |port: u16| {
        format!("host=127.0.0.1 port={port} user=postgres dbname=postgres sslmode=prefer")
    };
    let (recorded, rows) = run_postgres_client(&server, direct, |port| {
        let mut command = Command::new(PYTHON);
        command.arg(program("psycopg3.py")).arg(conninfo(port));
        command
    });
    println!("psycopg3: {:#?}", recorded.boundaries);
    assert_eq!(rows, expected_rows("psycopg3", "psycopg3 pipeline"));
    // Five runs with the text (unnamed statements), then the named statement `_pg3_0` parsed alone (no
    // decision: it runs nothing) and bound from then on without its text; the pipeline's three inserts are one
    // group; leaving the pipeline sends a lone Sync.
    let run = [BEGIN, INSERT, COMMIT];
    let mut expected = Vec::new();
    for _ in 0..5 {
        expected.extend(strings(&run));
    }
    expected.extend(strings(&[BEGIN, &session(INSERT), INSERT, COMMIT]));
    expected.extend(strings(&run));
    expected.extend(strings(&[BEGIN, &three_inserts(), COMMIT, "session: Sync"]));
    assert_eq!(recorded.boundaries, expected);
    assert_eq!(recorded.errors, Vec::<String>::new());
    let steps = expected
        .iter()
        .filter(|b| !b.starts_with("session: "))
        .count();
    assert_eq!(recorded.released, steps);
}

#[test]
fn psycopg3_a_flushed_fetch_and_an_aborted_pipeline_are_answered() {
    if !runs(PYTHON, &["-c", "import psycopg"]) {
        missing("python3-psycopg", "apt-get install -y python3-psycopg");
        return;
    }
    let Some((server, direct)) = postgres_with_table() else {
        return;
    };
    let (recorded, rows) = run_postgres_client(&server, direct, |port| {
        let mut command = Command::new(PYTHON);
        command.arg(program("psycopg3_flush.py")).arg(format!(
            "host=127.0.0.1 port={port} user=postgres dbname=postgres sslmode=prefer"
        ));
        command
    });
    assert_eq!(rows, ["200:flush"]);
    // The fetch inside the pipeline makes psycopg send a Flush: that group is answered by its responses, before
    // the pipeline's Sync (a lone Sync). The aborted pipeline is one group; its answer carries the store's error.
    let (returning, insert3) = (format!("{INSERT} RETURNING k"), three_inserts());
    let expected = [
        returning.as_str(),
        "session: Sync",
        &insert3,
        "SELECT count(*) FROM t",
    ];
    assert_eq!(recorded.boundaries, expected);
    assert_eq!(
        recorded.errors,
        ["duplicate key value violates unique constraint \"t_pkey\""]
    );
}

#[test]
fn pgjdbc_named_statements_and_batches_keep_their_texts() {
    let found = Path::new(PGJDBC_JAR).exists() && runs("javac", &["-version"]);
    if !found {
        missing(
            "pgjdbc with a JDK",
            "apt-get install -y libpostgresql-jdbc-java default-jdk-headless",
        );
        return;
    }
    let Some((server, direct)) = postgres_with_table() else {
        return;
    };
    let classes = std::env::temp_dir().join(format!("retrylab-pgjdbc-{}", std::process::id()));
    std::fs::create_dir_all(&classes).expect("a class directory");
    let compiled = Command::new("javac")
        .arg("-d")
        .arg(&classes)
        .arg(program("Pgjdbc.java"))
        .output()
        .expect("javac runs");
    assert!(
        compiled.status.success(),
        "javac: {}",
        String::from_utf8_lossy(&compiled.stderr)
    );
    let classpath = format!("{}:{PGJDBC_JAR}", classes.display());
    let (recorded, rows) = run_postgres_client(&server, direct, |port| {
        let mut command = Command::new("java");
        command.args(["-cp", &classpath, "Pgjdbc", &port.to_string()]);
        command
    });
    let _ = std::fs::remove_dir_all(&classes);
    println!("pgjdbc: {:#?}", recorded.boundaries);
    assert_eq!(rows, expected_rows("pgjdbc", "pgjdbc batch"));
    // pgjdbc's own session settings, then BEGIN and the insert in one group, named after five runs (S_2, S_3)
    // and bound without text from then on; the batch: BEGIN with a Describe, then the three inserts in one group.
    let mut expected = strings(&[
        "session: SET extra_float_digits = ?",
        "session: SET application_name = ?",
    ]);
    for _ in 0..7 {
        expected.extend([format!("BEGIN; {INSERT}"), COMMIT.to_string()]);
    }
    expected.extend(strings(&[BEGIN, &three_inserts(), COMMIT]));
    assert_eq!(recorded.boundaries, expected);
    assert_eq!(recorded.errors, Vec::<String>::new());
}

#[test]
fn pgx_cached_statements_and_batches_keep_their_texts() {
    let pgx = Path::new(GOPATH).join("src/github.com/jackc/pgx/v4");
    if !(pgx.is_dir() && runs("go", &["version"])) {
        missing(
            "Go with pgx",
            "apt-get install -y golang-go golang-github-jackc-pgx-v4-dev",
        );
        return;
    }
    let Some((server, direct)) = postgres_with_table() else {
        return;
    };
    let dir = std::env::temp_dir().join(format!("retrylab-pgx-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a build directory");
    let binary = dir.join("pgx-client");
    let mut build = Command::new("go");
    build
        .args(["build", "-o"])
        .arg(&binary)
        .arg(program("pgx.go"))
        .env("GO111MODULE", "off")
        .env("GOPATH", GOPATH);
    if std::env::var_os("HOME").is_none() && std::env::var_os("GOCACHE").is_none() {
        build.env("GOCACHE", dir.join("cache"));
    }
    let built = build.output().expect("go runs");
    assert!(
        built.status.success(),
        "go build: {}",
        String::from_utf8_lossy(&built.stderr)
    );
    let (recorded, rows) = run_postgres_client(&server, direct, |port| {
        let mut command = Command::new(&binary);
        command.arg(format!(
            "postgres://postgres@127.0.0.1:{port}/postgres?sslmode=prefer"
        ));
        command
    });
    let _ = std::fs::remove_dir_all(&dir);
    println!("pgx: {:#?}", recorded.boundaries);
    assert_eq!(rows, expected_rows("pgx", "pgx batch"));
    // pgx's first connection asks for TLS, gets the N and closes (it reconnects without TLS: no TLS
    // requirement reported, see `trouble`); its statement cache parses the insert once, named, alone; `begin` and
    // `commit` are simple queries, in lower case as pgx sends them.
    let begin = session("begin");
    let run = [begin.as_str(), INSERT, "commit"];
    let mut expected = strings(&[&begin, &session(INSERT), INSERT, "commit"]);
    for _ in 1..7 {
        expected.extend(strings(&run));
    }
    expected.extend(strings(&[&begin, &three_inserts(), "commit"]));
    assert_eq!(recorded.boundaries, expected);
    assert_eq!(recorded.errors, Vec::<String>::new());
}
