//! redis-py and redis-rb through the Redis gate: plain commands, a pipeline (one boundary per command) and a
//! MULTI/EXEC block (one boundary).

use super::{program, runs, strings, Harness, Recorded, PYTHON};
use retrylab::servers::missing;
use retrylab::servers::redis::TempRedis;
use std::process::Command;

/// Run a Redis client through the gate; its boundaries and the keys it left (`key=value`, sorted), after
/// checking that nothing was written before the first release.
fn run_redis_client(
    command: impl FnOnce(String) -> Command,
    prefix: &str,
) -> Option<(Recorded, Vec<String>)> {
    let server = TempRedis::start()?;
    let mut direct = redis::Client::open(server.url())
        .expect("a URL")
        .get_connection()
        .expect("connect directly");
    let mut harness = Harness::start(None, Some(server.port));
    let command = command(harness.redis_url());
    let url = server.url();
    let recorded = harness.drive(command, "SET", move || {
        let mut early = redis::Client::open(url).unwrap().get_connection().unwrap();
        let keys: Vec<String> = redis::cmd("KEYS").arg("*").query(&mut early).unwrap();
        assert_eq!(
            keys,
            Vec::<String>::new(),
            "a held write ran before its release"
        );
    });
    assert_eq!(recorded.trouble, [], "{recorded:?}");
    assert!(recorded.checked, "no SET was held: {recorded:?}");
    assert_eq!(recorded.errors, Vec::<String>::new());
    let mut keys: Vec<String> = redis::cmd("KEYS")
        .arg(format!("{prefix}:*"))
        .query(&mut direct)
        .unwrap();
    keys.sort();
    let state = keys
        .into_iter()
        .map(|key| {
            let value: String = redis::cmd("GET").arg(&key).query(&mut direct).unwrap();
            format!("{key}={value}")
        })
        .collect();
    Some((recorded, state))
}

/// What both Redis clients send, in order (`incr`: redis-py sends INCR as `INCRBY key 1`; redis-rb sends its
/// commands in lower case, the text is upper case).
fn expected_texts(incr: &str) -> Vec<String> {
    strings(&[
        "SET ? ? PX ? NX",
        incr,
        "SET ? ?",
        incr,
        "GET ?",
        &format!("MULTI; SET ? ?; {incr}; EXEC"),
    ])
}

fn expected_state(prefix: &str) -> Vec<String> {
    ["a=1", "b=2", "count=3", "plain=1"]
        .iter()
        .map(|kv| format!("{prefix}:{kv}"))
        .collect()
}

#[test]
fn redis_py_pipelines_and_transactions_keep_their_texts() {
    if !runs(PYTHON, &["-c", "import redis"]) {
        missing("python3-redis", "apt-get install -y python3-redis");
        return;
    }
    let client = |url: String| {
        let mut command = Command::new(PYTHON);
        command.arg(program("redis_py.py")).arg(url);
        command
    };
    let Some((recorded, state)) = run_redis_client(client, "redis-py") else {
        return;
    };
    println!("redis-py: {:#?}", recorded.boundaries);
    assert_eq!(state, expected_state("redis-py"));
    assert_eq!(recorded.boundaries, expected_texts("INCRBY ? ?"));
}

#[test]
fn redis_rb_pipelines_and_transactions_keep_their_texts() {
    if !runs("ruby", &["-e", "require 'redis'"]) {
        missing("ruby-redis", "apt-get install -y ruby-redis");
        return;
    }
    let client = |url: String| {
        let mut command = Command::new("ruby");
        command.arg(program("redis_rb.rb")).arg(url);
        command
    };
    let Some((recorded, state)) = run_redis_client(client, "redis-rb") else {
        return;
    };
    println!("redis-rb: {:#?}", recorded.boundaries);
    assert_eq!(state, expected_state("redis-rb"));
    assert_eq!(recorded.boundaries, expected_texts("INCR ?"));
}

/// redis-py's script call through the gate, once against a server that does not have the script and once
/// again: its boundaries (`session: ` before the ones that pass unheld) and the store's errors.
#[test]
fn a_script_refused_noscript_is_loaded_unheld_and_sent_again_only_the_first_time() {
    if !runs(PYTHON, &["-c", "import redis"]) {
        missing("python3-redis", "apt-get install -y python3-redis");
        return;
    }
    let Some(server) = TempRedis::start() else {
        return;
    };
    let mut harness = Harness::start(None, Some(server.port));
    let mut call = |key: &str| {
        let mut command = Command::new(PYTHON);
        command
            .arg(program("redis_script.py"))
            .arg(harness.redis_url())
            .arg(key);
        harness.drive(command, "EVALSHA", || {})
    };
    let evalsha = "EVALSHA ? ? ? ?";
    let first = call("script:a");
    assert_eq!(first.trouble, [], "{first:?}");
    assert_eq!(
        first.boundaries,
        strings(&[evalsha, "session: SCRIPT LOAD ?", evalsha])
    );
    assert_eq!(first.errors.len(), 1, "{first:?}");
    assert!(first.errors[0].starts_with("NOSCRIPT"), "{first:?}");
    // Scripts outlive the client: the next call runs at once, and its one step is the one that counted above.
    let second = call("script:b");
    assert_eq!(second.boundaries, strings(&[evalsha]));
    assert_eq!(second.errors, Vec::<String>::new());
    let mut direct = redis::Client::open(server.url())
        .unwrap()
        .get_connection()
        .unwrap();
    let keys: Vec<String> = redis::cmd("KEYS")
        .arg("script:*")
        .query(&mut direct)
        .unwrap();
    assert_eq!(keys.len(), 2, "{keys:?}");
}
