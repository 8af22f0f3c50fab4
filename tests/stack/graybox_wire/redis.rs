//! Redis through its gate: one command is one boundary, a pipeline is one per command, an atomic pipeline
//! (`MULTI ... EXEC`) is one boundary; SUBSCRIBE is refused by name.

use super::{texts, until_answered, Harness};
use retrylab::graybox::gate::{Decision, Event, Mode, Wire};
use retrylab::servers::redis::TempRedis;

fn connect(harness: &mut Harness) -> redis::Connection {
    let url = harness.redis_url();
    redis::Client::open(url)
        .unwrap()
        .get_connection()
        .expect("connect through the gate")
}

#[test]
fn commands_and_pipelines_are_one_boundary_per_command() {
    let Some(server) = TempRedis::start() else {
        return;
    };
    let mut harness = Harness::start(None, Some(server.port));
    let mut con = connect(&mut harness);
    let set: Option<String> = redis::cmd("SET")
        .arg("key:1")
        .arg("v")
        .arg("NX")
        .arg("PX")
        .arg(30_000)
        .query(&mut con)
        .unwrap();
    assert_eq!(set.as_deref(), Some("OK"));
    let (value, count): (String, i64) = redis::pipe()
        .cmd("GET")
        .arg("key:1")
        .cmd("INCR")
        .arg("n")
        .query(&mut con)
        .unwrap();
    assert_eq!((value.as_str(), count), ("v", 1));
    let events = until_answered(&mut harness, "INCR ?");
    assert!(
        matches!(
            events[0],
            Event::Opened {
                wire: Wire::Redis,
                ..
            }
        ),
        "{events:?}"
    );
    assert_eq!(texts(&events), ["SET ? ? NX PX ?", "GET ?", "INCR ?"]);
}

#[test]
fn an_atomic_pipeline_is_one_boundary_at_exec() {
    let Some(server) = TempRedis::start() else {
        return;
    };
    let mut harness = Harness::start(None, Some(server.port));
    let mut con = connect(&mut harness);
    harness.gates().set_mode(Mode::Hold);
    let thread = std::thread::spawn(move || {
        let (set, value): (bool, String) = redis::pipe()
            .atomic()
            .cmd("SET")
            .arg("k")
            .arg("v")
            .arg("NX")
            .cmd("GET")
            .arg("k")
            .query(&mut con)
            .unwrap();
        (set, value)
    });
    let boundary = harness.held();
    assert_eq!(boundary.text, "MULTI; SET ? ? NX; GET ?; EXEC");
    let direct_url = server.url();
    let mut direct = redis::Client::open(direct_url)
        .unwrap()
        .get_connection()
        .unwrap();
    let before: Option<String> = redis::cmd("GET").arg("k").query(&mut direct).unwrap();
    assert_eq!(before, None, "the block ran before its EXEC was released");
    assert!(harness.gates().decide(boundary.id, Decision::Release));
    assert_eq!(thread.join().unwrap(), (true, "v".to_string()));
    let events = harness.until(|e| matches!(e, Event::Answered { id, .. } if *id == boundary.id));
    assert_eq!(
        texts(&events),
        Vec::<String>::new(),
        "no other boundary: {events:?}"
    );
}

#[test]
fn an_error_reply_is_the_answers_error_and_subscribe_is_refused() {
    let Some(server) = TempRedis::start() else {
        return;
    };
    let mut harness = Harness::start(None, Some(server.port));
    let mut con = connect(&mut harness);
    redis::cmd("SET")
        .arg("s")
        .arg("text")
        .query::<()>(&mut con)
        .unwrap();
    assert!(redis::cmd("INCR").arg("s").query::<i64>(&mut con).is_err());
    let events = until_answered(&mut harness, "INCR ?");
    let Some(Event::Answered { error, .. }) = events.last() else {
        unreachable!()
    };
    assert_eq!(
        error.as_deref(),
        Some("ERR value is not an integer or out of range")
    );
    assert!(redis::cmd("SUBSCRIBE")
        .arg("channel")
        .query::<()>(&mut con)
        .is_err());
    let events = harness.until(|e| matches!(e, Event::Closed { .. }));
    let unsupported: Vec<&str> = events
        .iter()
        .filter_map(|e| match e {
            Event::Unsupported { what, .. } => Some(what.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(unsupported, ["Redis SUBSCRIBE ?"]);
}

#[test]
fn a_pipelined_command_is_announced_only_after_the_one_before_is_released() {
    let Some(server) = TempRedis::start() else {
        return;
    };
    let mut harness = Harness::start(None, Some(server.port));
    let mut con = connect(&mut harness);
    harness.gates().set_mode(Mode::Hold);
    let thread = std::thread::spawn(move || {
        redis::pipe()
            .cmd("SET")
            .arg("a")
            .arg("1")
            .cmd("INCR")
            .arg("a")
            .query::<((), i64)>(&mut con)
            .unwrap()
            .1
    });
    let first = harness.held();
    assert_eq!(first.text, "SET ? ?");
    // Both commands arrived together; the second waits unannounced behind the first.
    assert_eq!(
        harness.quiet_events(std::time::Duration::from_millis(300)),
        []
    );
    assert!(harness.gates().decide(first.id, Decision::Release));
    let second = harness.held();
    assert_eq!(
        (second.text.as_str(), second.connection),
        ("INCR ?", first.connection)
    );
    assert!(harness.gates().decide(second.id, Decision::Release));
    assert_eq!(thread.join().unwrap(), 2);
}

#[test]
fn resp3_replies_maps_included_are_matched_to_their_commands() {
    let Some(server) = TempRedis::start() else {
        return;
    };
    let mut harness = Harness::start(None, Some(server.port));
    let url = format!("{}/?protocol=resp3", harness.redis_url());
    let mut con = redis::Client::open(url).unwrap().get_connection().unwrap();
    redis::cmd("HSET")
        .arg("h")
        .arg("f1")
        .arg("a")
        .arg("f2")
        .arg("b")
        .query::<()>(&mut con)
        .unwrap();
    // HGETALL answers a RESP3 map (%2); the next command must still get its own reply.
    let map: std::collections::BTreeMap<String, String> =
        redis::cmd("HGETALL").arg("h").query(&mut con).unwrap();
    assert_eq!(map.len(), 2);
    let count: i64 = redis::cmd("HLEN").arg("h").query(&mut con).unwrap();
    assert_eq!(count, 2);
    let events = until_answered(&mut harness, "HLEN ?");
    assert_eq!(texts(&events), ["HSET ? ? ? ? ?", "HGETALL ?", "HLEN ?"]);
    let hello = events.iter().any(
        |e| matches!(e, Event::Boundary { boundary, .. } if boundary.session() && boundary.text == "HELLO ?"),
    );
    assert!(
        hello,
        "the RESP3 handshake is a session boundary: {events:?}"
    );
}
