//! The probe against an API that answers as soon as it has a request's headers (issue 31): real idempotency
//! middlewares answer a key in flight with 409 before reading the body and close, so the probe's held-back
//! last byte meets a closed socket and a reset follows the whole 409. That 409 counts; a request with no answer
//! is never a duplicate; a server that really executes twice is still caught, and the `curl` sequence printed
//! with the failure shows the same duplicate. Also: timeout-then-retry's retries carry `--header` (an API that
//! authenticates answers them, not a 401 page), and an HTML page in evidence is one line.
//!
//! The API here is a tokio listener written for the test, on loopback: it reads a request's head one byte at a
//! time (nothing of the body), answers a known key at once and closes with the body unread, which makes the
//! kernel send a reset, as a middleware in front of a framework does.

use retrylab::stack::http::Url;
use retrylab::stack::probe::{run_checks, CheckResult, ProbeConfig, ProbeVerdict};
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// How the API behaves.
#[derive(Clone, Copy, Debug)]
struct Behaviour {
    /// Requests with one key that execute (1: correct; 2: the twin that pays twice).
    executions_per_key: usize,
    /// A header every POST must carry, or a 401 HTML page.
    required_header: Option<(&'static str, &'static str)>,
}

#[derive(Default)]
struct State {
    count: u64,
    /// Per key: executions started, and the stored response once one finished.
    keys: BTreeMap<String, (usize, Option<String>)>,
}

/// The API, on a free loopback port; stops when the runtime does.
async fn start_api(behaviour: Behaviour) -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    let state = Arc::new(Mutex::new(State::default()));
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            tokio::spawn(serve(stream, state.clone(), behaviour));
        }
    });
    address
}

/// The head, read one byte at a time so that no byte of the body leaves the kernel's buffer.
async fn read_head(stream: &mut TcpStream) -> Option<String> {
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        if stream.read(&mut byte).await.ok()? == 0 || head.len() > 65_536 {
            return None;
        }
        head.push(byte[0]);
    }
    String::from_utf8(head).ok()
}

fn header<'a>(head: &'a str, name: &str) -> Option<&'a str> {
    head.lines()
        .filter_map(|line| line.split_once(':'))
        .find(|(n, _)| n.trim().eq_ignore_ascii_case(name))
        .map(|(_, v)| v.trim())
}

async fn answer(mut stream: TcpStream, status: &str, content_type: &str, body: &str) {
    let response = format!(
        "HTTP/1.1 {status}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    let _ = stream.write_all(response.as_bytes()).await;
    // Dropped with the body unread: the kernel resets the connection.
}

const UNAUTHORIZED_PAGE: &str = "<!DOCTYPE html>\n<html>\n<head><title>401 Unauthorized</title></head>\n\
                                 <body>\n<h1>Unauthorized</h1>\n<p>An API key is required.</p>\n</body>\n</html>\n";

async fn serve(mut stream: TcpStream, state: Arc<Mutex<State>>, behaviour: Behaviour) {
    let Some(head) = read_head(&mut stream).await else {
        return;
    };
    if head.starts_with("GET ") {
        let count = state.lock().unwrap().count;
        return answer(
            stream,
            "200 OK",
            "application/json",
            &format!("{{\"count\":{count}}}"),
        )
        .await;
    }
    if let Some((name, value)) = behaviour.required_header {
        if header(&head, name) != Some(value) {
            return answer(stream, "401 Unauthorized", "text/html", UNAUTHORIZED_PAGE).await;
        }
    }
    let Some(key) = header(&head, "Idempotency-Key") else {
        return answer(
            stream,
            "400 Bad Request",
            "application/json",
            "{\"error\":\"no key\"}",
        )
        .await;
    };
    let key = format!(
        "{}/{key}",
        header(&head, "X-Client-Id").unwrap_or("anonymous")
    );
    let claimed = {
        let mut state = state.lock().unwrap();
        let entry = state.keys.entry(key.clone()).or_default();
        match &entry.1 {
            _ if entry.0 < behaviour.executions_per_key => {
                entry.0 += 1;
                None
            }
            Some(stored) => Some(("200 OK", stored.clone())),
            None => Some(("409 Conflict", "{\"error\":\"in flight\"}".to_string())),
        }
    };
    if let Some((status, body)) = claimed {
        // At once, on the headers alone: the body stays unread.
        return answer(stream, status, "application/json", &body).await;
    }
    let length: usize = header(&head, "Content-Length")
        .and_then(|l| l.parse().ok())
        .unwrap_or(0);
    let mut body = vec![0u8; length];
    if stream.read_exact(&mut body).await.is_err() {
        return;
    }
    // The execution takes a while: the other requests with the key arrive meanwhile.
    tokio::time::sleep(Duration::from_millis(30)).await;
    let stored = {
        let mut state = state.lock().unwrap();
        state.count += 1;
        let stored = format!("{{\"payment\":{}}}", state.count);
        state
            .keys
            .get_mut(&key)
            .unwrap()
            .1
            .get_or_insert(stored.clone());
        stored
    };
    answer(stream, "201 Created", "application/json", &stored).await
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

fn config(address: SocketAddr, run: usize, checks: &[&str]) -> ProbeConfig {
    let base = format!("http://{address}");
    ProbeConfig {
        url: Url::parse(&format!("{base}/payments")).unwrap(),
        count_url: Some(Url::parse(&format!("{base}/payments/count")).unwrap()),
        key_header: "Idempotency-Key".into(),
        client_header: Some("X-Client-Id".into()),
        clients: ["probe-a".into(), "probe-b".into()],
        headers: Vec::new(),
        body: r#"{"amount":500,"currency":"RUB"}"#.into(),
        concurrency: 20,
        rounds: 3,
        missing_key_status: 400,
        changed_body_status: 422,
        expiry_ms: None,
        timeout: Duration::from_secs(10),
        run_id: format!("early-{run}"),
        seed: 31,
        only: checks.iter().map(|c| c.to_string()).collect(),
    }
}

fn concurrent(address: SocketAddr, run: usize, runtime: &tokio::runtime::Runtime) -> CheckResult {
    let config = config(address, run, &["concurrent-same-key"]);
    let mut results = runtime
        .block_on(run_checks(&config))
        .expect("the probe runs");
    results.remove(0)
}

#[test]
fn an_early_409_and_its_reset_are_no_false_alarm_in_20_runs() {
    let runtime = runtime();
    let correct = Behaviour {
        executions_per_key: 1,
        required_header: None,
    };
    let address = runtime.block_on(start_api(correct));
    let mut early_conflicts = 0;
    for run in 0..20 {
        let result = concurrent(address, run, &runtime);
        assert_eq!(
            result.result,
            ProbeVerdict::Pass,
            "run {run}: {}",
            result.evidence
        );
        // The early answers were read, not lost: 409s are in the evidence.
        early_conflicts += result.evidence.matches("409 x").count();
    }
    assert!(
        early_conflicts >= 20,
        "409s seen in {early_conflicts} rounds"
    );
}

/// The `reproduce` sequence run by `sh`: the count before and after (the first and last lines).
fn reproduced_count_rise(reproduce: &str) -> u64 {
    let out = std::process::Command::new("sh")
        .args(["-c", reproduce])
        .output()
        .expect("sh runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let counts: Vec<u64> = stdout
        .lines()
        .filter_map(|line| line.trim().strip_prefix("{\"count\":"))
        .filter_map(|rest| rest.trim_end_matches('}').parse().ok())
        .collect();
    assert!(
        counts.len() >= 2,
        "no counts in the reproduction's output: {stdout}"
    );
    counts[counts.len() - 1] - counts[0]
}

#[test]
fn a_server_that_really_executes_twice_is_caught_and_curl_shows_it() {
    let runtime = runtime();
    let twice = Behaviour {
        executions_per_key: 2,
        required_header: None,
    };
    let address = runtime.block_on(start_api(twice));
    let result = concurrent(address, 0, &runtime);
    assert_eq!(result.result, ProbeVerdict::Fail, "{}", result.evidence);
    assert!(result.evidence.contains("count +2"), "{}", result.evidence);
    assert!(
        result
            .evidence
            .contains("Idempotency Enforcement Scenarios"),
        "the draft's rule is cited: {}",
        result.evidence
    );
    if std::process::Command::new("curl")
        .arg("--version")
        .output()
        .is_err()
    {
        println!("skipped: no curl to run the reproduction with");
        return;
    }
    // The printed sequence does what the probe judged: ten bursts, each paying twice.
    let rise = reproduced_count_rise(&result.reproduce);
    assert_eq!(rise, 20, "{}", result.reproduce);
}

#[test]
fn the_retry_check_sends_the_headers_and_an_html_page_is_one_line() {
    let runtime = runtime();
    let authenticated = Behaviour {
        executions_per_key: 1,
        required_header: Some(("X-Api-Key", "secret")),
    };
    let address = runtime.block_on(start_api(authenticated));
    let mut with_key = config(address, 0, &["timeout-then-retry"]);
    with_key.headers = vec![("X-Api-Key".into(), "secret".into())];
    let results = runtime.block_on(run_checks(&with_key)).unwrap();
    assert_eq!(
        results[0].result,
        ProbeVerdict::Pass,
        "{}",
        results[0].evidence
    );
    // The twin: without the header the API answers its 401 page, shown by its title on one line.
    let without = config(address, 1, &["timeout-then-retry"]);
    let results = runtime.block_on(run_checks(&without)).unwrap();
    let evidence = &results[0].evidence;
    assert_eq!(results[0].result, ProbeVerdict::Fail, "{evidence}");
    assert!(evidence.contains("[HTML: 401 Unauthorized]"), "{evidence}");
    assert!(
        !evidence.contains('\n') && !evidence.contains("<h1>"),
        "{evidence}"
    );
}
