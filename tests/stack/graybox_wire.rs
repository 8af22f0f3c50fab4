//! The gates between real clients and real stores (issue 32): a PostgreSQL and a Redis started by the test,
//! the `postgres` and `redis` crates and psql (libpq) connecting through the gates. Each boundary's text is
//! asserted exactly; hold mode releases in a chosen order and both orders are seen to take effect; a withheld
//! COMMIT commits without answering; `close_all` rolls an open transaction back; COPY is refused by name.

use retrylab::graybox::gate::{Boundary, Event, Gates, Wire};
use retrylab::graybox::pg_wire::TLS_REQUIRED;
use retrylab::servers::postgres::TempPostgres;
use std::net::SocketAddr;
use std::process::Command;
use std::time::Duration;

/// Generous: a loaded machine must not fail a test; a missing event fails it after this long.
const EVENT_WAIT: Duration = Duration::from_secs(20);

/// The gates on their own runtime: the blocking clients run on the test's thread, outside it.
struct Harness {
    runtime: tokio::runtime::Runtime,
    gates: Option<Gates>,
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
        Harness {
            runtime,
            gates: Some(gates),
        }
    }

    fn gates(&mut self) -> &mut Gates {
        self.gates.as_mut().expect("gates")
    }

    fn pg_params(&mut self) -> String {
        let port = self
            .gates()
            .postgres_address()
            .expect("a PostgreSQL gate")
            .port();
        format!("host=127.0.0.1 port={port} user=postgres dbname=postgres")
    }

    fn redis_url(&mut self) -> String {
        let port = self.gates().redis_address().expect("a Redis gate").port();
        format!("redis://127.0.0.1:{port}")
    }

    fn event(&mut self) -> Event {
        let gates = self.gates.as_mut().expect("gates");
        self.runtime
            .block_on(gates.next_event(EVENT_WAIT))
            .expect("an event within the wait")
    }

    /// Events until (and including) the first that `stop` accepts.
    fn until(&mut self, stop: impl Fn(&Event) -> bool) -> Vec<Event> {
        let mut seen = Vec::new();
        loop {
            let event = self.event();
            let last = stop(&event);
            seen.push(event);
            if last {
                return seen;
            }
        }
    }

    /// The next held boundary.
    fn held(&mut self) -> Boundary {
        loop {
            if let Event::Boundary {
                boundary,
                held: true,
            } = self.event()
            {
                return boundary;
            }
        }
    }

    /// Whatever arrives within a short while (to show that something did NOT happen).
    fn quiet_events(&mut self, wait: Duration) -> Vec<Event> {
        let gates = self.gates.as_mut().expect("gates");
        let mut seen = Vec::new();
        while let Some(event) = self.runtime.block_on(gates.next_event(wait)) {
            seen.push(event);
        }
        seen
    }
}

/// The texts of the boundaries that are not session statements, in order.
fn texts(events: &[Event]) -> Vec<String> {
    events
        .iter()
        .filter_map(|event| match event {
            Event::Boundary { boundary, .. } if !boundary.session() => Some(boundary.text.clone()),
            _ => None,
        })
        .collect()
}

/// Whether `event` answers a boundary (not a session one) with this text, among the `events` seen before.
fn is_answer_to(event: &Event, text: &str, events: &[Event]) -> bool {
    let Event::Answered { id, .. } = event else {
        return false;
    };
    events.iter().any(|e| {
        matches!(e, Event::Boundary { boundary, .. }
            if boundary.id == *id && boundary.text == text && !boundary.session())
    })
}

/// Events until the (non-session) boundary with this text was answered.
fn until_answered(harness: &mut Harness, text: &str) -> Vec<Event> {
    let mut seen: Vec<Event> = Vec::new();
    loop {
        let event = harness.event();
        let done = is_answer_to(&event, text, &seen);
        seen.push(event);
        if done {
            return seen;
        }
    }
}

fn pg(params: &str) -> postgres::Client {
    postgres::Client::connect(params, postgres::NoTls).expect("connect through the gate")
}

#[test]
fn simple_queries_are_one_boundary_each_with_literals_replaced() {
    let Some(server) = TempPostgres::start() else {
        return;
    };
    let mut harness = Harness::start(Some(server.port), None);
    let mut client = pg(&harness.pg_params());
    client
        .batch_execute("CREATE TABLE t (id int PRIMARY KEY, v text)")
        .unwrap();
    client
        .batch_execute("INSERT INTO t VALUES (1, 'a'), (2, 'it''s')")
        .unwrap();
    client
        .batch_execute("SET statement_timeout = 5000")
        .unwrap();
    client
        .batch_execute("SELECT v FROM t WHERE id = 2")
        .unwrap();
    let events = until_answered(&mut harness, "SELECT v FROM t WHERE id = ?");
    assert!(
        matches!(
            events[0],
            Event::Opened {
                wire: Wire::Postgres,
                ..
            }
        ),
        "{events:?}"
    );
    assert_eq!(
        texts(&events),
        [
            "CREATE TABLE t (id int PRIMARY KEY, v text)",
            "INSERT INTO t VALUES (?, ?), (?, ?)",
            "SELECT v FROM t WHERE id = ?"
        ]
    );
    let session: Vec<&Boundary> = events
        .iter()
        .filter_map(|e| match e {
            Event::Boundary {
                boundary,
                held: false,
            } if boundary.session() => Some(boundary),
            _ => None,
        })
        .collect();
    assert_eq!(session.len(), 1, "{events:?}");
    assert_eq!(session[0].text, "SET statement_timeout = ?");
    // Every boundary was answered, without an error.
    let answered = events
        .iter()
        .filter(|e| matches!(e, Event::Answered { error: None, .. }))
        .count();
    assert_eq!(answered, 4, "{events:?}");
}

#[test]
fn a_statement_bigger_than_one_read_passes_whole() {
    let Some(server) = TempPostgres::start() else {
        return;
    };
    let mut direct = pg(&server.params());
    direct.batch_execute("CREATE TABLE big (v text)").unwrap();
    let mut harness = Harness::start(Some(server.port), None);
    let mut client = pg(&harness.pg_params());
    let value = "x".repeat(3 << 20);
    client
        .batch_execute(&format!("INSERT INTO big VALUES ('{value}')"))
        .unwrap();
    let rows = client.query("SELECT v FROM big", &[]).unwrap();
    assert_eq!(rows[0].get::<_, String>(0).len(), value.len());
    let events = until_answered(&mut harness, "SELECT v FROM big");
    assert_eq!(
        texts(&events),
        ["INSERT INTO big VALUES (?)", "SELECT v FROM big"]
    );
}

#[test]
fn an_error_is_answered_with_the_stores_message() {
    let Some(server) = TempPostgres::start() else {
        return;
    };
    let mut harness = Harness::start(Some(server.port), None);
    let mut client = pg(&harness.pg_params());
    assert!(client.batch_execute("SELECT * FROM missing_table").is_err());
    let events = until_answered(&mut harness, "SELECT * FROM missing_table");
    let errors: Vec<&Option<String>> = events
        .iter()
        .filter_map(|e| match e {
            Event::Answered { error, .. } => Some(error),
            _ => None,
        })
        .collect();
    assert_eq!(
        errors,
        [&Some(
            "relation \"missing_table\" does not exist".to_string()
        )]
    );
    // The connection still works after the error.
    client.batch_execute("SELECT 1").unwrap();
}

#[test]
fn a_prepared_statement_executed_twice_keeps_its_text() {
    let Some(server) = TempPostgres::start() else {
        return;
    };
    let mut direct = pg(&server.params());
    direct
        .batch_execute("CREATE TABLE t (id int PRIMARY KEY, v text); INSERT INTO t VALUES (7, 'x')")
        .unwrap();
    let mut harness = Harness::start(Some(server.port), None);
    let mut client = pg(&harness.pg_params());
    let statement = client.prepare("SELECT v FROM t WHERE id = $1").unwrap();
    for _ in 0..2 {
        let rows = client.query(&statement, &[&7i32]).unwrap();
        assert_eq!(rows[0].get::<_, String>(0), "x");
    }
    // Three boundaries with that text, each answered: the prepare, two executions.
    let mut events = Vec::new();
    while events
        .iter()
        .filter(|e| matches!(e, Event::Answered { .. }))
        .count()
        < 3
    {
        events.push(harness.event());
    }
    // The Parse/Describe/Sync of prepare() runs nothing: a session boundary, with the statement's text.
    let prepared: Vec<(&str, bool)> = events
        .iter()
        .filter_map(|e| match e {
            Event::Boundary { boundary, .. } => Some((boundary.text.as_str(), boundary.session())),
            _ => None,
        })
        .collect();
    let text = "SELECT v FROM t WHERE id = $1";
    assert_eq!(prepared, [(text, true), (text, false), (text, false)]);
}

#[test]
fn a_transaction_is_its_statements_in_order() {
    let Some(server) = TempPostgres::start() else {
        return;
    };
    let mut direct = pg(&server.params());
    direct
        .batch_execute("CREATE TABLE t (id int PRIMARY KEY, v text)")
        .unwrap();
    let mut harness = Harness::start(Some(server.port), None);
    let mut client = pg(&harness.pg_params());
    let mut transaction = client.transaction().unwrap();
    transaction
        .execute("INSERT INTO t VALUES ($1, 'lit')", &[&1i32])
        .unwrap();
    transaction.commit().unwrap();
    let events = until_answered(&mut harness, "COMMIT");
    // The bare START TRANSACTION passes unheld (no snapshot or lock is taken at it): the steps are the rest.
    assert_eq!(texts(&events), ["INSERT INTO t VALUES ($1, ?)", "COMMIT"]);
    let begun = events.iter().any(|event| {
        matches!(event, Event::Boundary { boundary, held: false }
            if boundary.text == "START TRANSACTION" && boundary.in_transaction)
    });
    assert!(
        begun,
        "START TRANSACTION announced, unheld, with its transaction open: {events:?}"
    );
}

#[test]
fn psql_gets_n_to_its_tls_request_and_runs_through_the_gate() {
    let Some(server) = TempPostgres::start() else {
        return;
    };
    let mut harness = Harness::start(Some(server.port), None);
    let port = harness
        .gates()
        .postgres_address()
        .unwrap()
        .port()
        .to_string();
    let psql = |sslmode: &str| {
        Command::new("psql")
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
                "-A",
                "-t",
            ])
            .args(["-c", "SELECT 40 + 2"])
            .env("PGSSLMODE", sslmode)
            .env("PGCONNECT_TIMEOUT", "20")
            .output()
            .expect("psql runs")
    };
    let out = psql("prefer");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "42");
    let events = until_answered(&mut harness, "SELECT ? + ?");
    assert_eq!(texts(&events), ["SELECT ? + ?"]);
    // sslmode=require: psql gives up after the N; the gate says why.
    let out = psql("require");
    assert!(!out.status.success());
    let events = harness.until(|e| matches!(e, Event::Unsupported { .. }));
    let Some(Event::Unsupported { what, wire, .. }) = events.last() else {
        unreachable!()
    };
    assert_eq!((what.as_str(), *wire), (TLS_REQUIRED, Wire::Postgres));
}

#[test]
fn copy_from_stdin_is_refused_by_name() {
    let Some(server) = TempPostgres::start() else {
        return;
    };
    let mut direct = pg(&server.params());
    direct.batch_execute("CREATE TABLE t (id int)").unwrap();
    let mut harness = Harness::start(Some(server.port), None);
    let mut client = pg(&harness.pg_params());
    assert!(client.batch_execute("COPY t FROM STDIN").is_err());
    let events = harness.until(|e| matches!(e, Event::Closed { .. }));
    let unsupported: Vec<&str> = events
        .iter()
        .filter_map(|e| match e {
            Event::Unsupported { what, .. } => Some(what.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(unsupported, ["COPY FROM STDIN (CopyInResponse)"]);
}

#[path = "graybox_wire/hold.rs"]
mod hold;
#[path = "graybox_wire/raw.rs"]
mod raw;
#[path = "graybox_wire/redis.rs"]
mod redis_wire;
