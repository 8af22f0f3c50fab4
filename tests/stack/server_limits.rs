//! Issue 31 item 10: the servers' limits. `retrylab serve` cuts off a slow-loris client within its header timeout
//! and a body that stops half way within its body timeout, and SIGTERM exits promptly with a half-sent request
//! open; the fault proxy forwards a chunked request (it waited for ever) and drops a client that never finishes
//! its request. Each test failed before its fix (the reads below hit their 60 s guard, or the wait its bound).

use retrylab::stack::http::{exchange, HttpRequest, Url};
use retrylab::stack::proxy::{FaultPlan, Proxy};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// Far above every limit under test (10 s): reaching it means the server never cut the client off.
const GUARD: Duration = Duration::from_secs(60);

/// `retrylab serve --listen 127.0.0.1:0` (killed when dropped) and its `127.0.0.1:PORT`.
struct Serve(Child, String);

impl Serve {
    fn start() -> Serve {
        let mut child = Command::new(env!("CARGO_BIN_EXE_retrylab"))
            .args(["serve", "--listen", "127.0.0.1:0"])
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("retrylab serve starts");
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let address = line.trim().trim_start_matches("listening on http://");
        Serve(child, address.to_string())
    }
}

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A connection that has sent `bytes` and then nothing more; what the server answers until it closes, or
/// `Err` when `GUARD` passed first.
fn stalled(address: &str, bytes: &[u8]) -> std::io::Result<String> {
    let mut stream = TcpStream::connect(address)?;
    stream.set_read_timeout(Some(GUARD))?;
    stream.write_all(bytes)?;
    let mut answer = Vec::new();
    stream.read_to_end(&mut answer)?;
    Ok(String::from_utf8_lossy(&answer).into_owned())
}

#[test]
fn a_slow_loris_is_cut_off_by_the_header_timeout() {
    let serve = Serve::start();
    let answer = stalled(&serve.1, b"POST /payments HTTP/1.1\r\nHost: x\r\nIdempot");
    // Closed by the server (with or without a 408 first), not left open.
    assert!(answer.is_ok(), "still open after {GUARD:?}: {answer:?}");
}

#[test]
fn a_body_that_stops_half_way_gets_408() {
    let serve = Serve::start();
    let head = "POST /payments HTTP/1.1\r\nHost: x\r\nIdempotency-Key: k\r\nContent-Type: application/json\r\n\
                Content-Length: 40\r\n\r\n{\"amo";
    let answer = stalled(&serve.1, head.as_bytes()).expect("answered within the guard");
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
}

#[test]
fn sigterm_exits_promptly_with_a_half_sent_request_open() {
    let mut serve = Serve::start();
    let mut stream = TcpStream::connect(&serve.1).unwrap();
    stream
        .write_all(b"POST /payments HTTP/1.1\r\nHost: x\r\n")
        .unwrap();
    // The server has the connection before the signal (a read of it is under way).
    std::thread::sleep(Duration::from_millis(200));
    let pid = serve.0.id().to_string();
    assert!(Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .unwrap()
        .success());
    let mut code = None;
    for _ in 0..600 {
        if let Some(status) = serve.0.try_wait().unwrap() {
            code = status.code();
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(code, Some(0), "no exit within 60 s of SIGTERM");
    drop(stream);
}

#[test]
fn the_proxy_forwards_a_chunked_request_and_drops_a_stalled_one() {
    let serve = Serve::start();
    let upstream = Url::parse(&format!("http://{}/payments", serve.1)).unwrap();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let proxy = runtime
        .block_on(Proxy::start(
            upstream.address,
            FaultPlan::none(1),
            "Idempotency-Key",
        ))
        .unwrap();
    let chunked = "POST /payments HTTP/1.1\r\nHost: x\r\nIdempotency-Key: c1\r\nContent-Type: application/json\r\n\
                   Transfer-Encoding: chunked\r\n\r\n5\r\n{\"amo\r\n8\r\nunt\":12}\r\n0\r\n\r\n";
    let answer = stalled(&proxy.address.to_string(), chunked.as_bytes())
        .expect("the chunked request is answered, not left waiting");
    assert!(answer.starts_with("HTTP/1.1 201"), "{answer}");
    // A client that never finishes its head is dropped (a reset, or a close).
    let half = stalled(
        &proxy.address.to_string(),
        b"POST /payments HTTP/1.1\r\nHost",
    );
    assert!(
        !matches!(&half, Err(e) if e.kind() == std::io::ErrorKind::WouldBlock || e.kind() == std::io::ErrorKind::TimedOut),
        "still open after {GUARD:?}"
    );
    // The record has the chunked request's key and its answer.
    let record = proxy.record();
    assert_eq!(record.len(), 1, "{record:?}");
    assert_eq!(record[0].key.as_deref(), Some("c1"));
    assert_eq!(record[0].upstream_statuses, [201]);
    // The twin: a plain request through the same proxy is answered as before.
    let through = Url::parse(&format!("http://{}/payments", proxy.address)).unwrap();
    let request = HttpRequest::post(
        "/payments",
        vec![("Idempotency-Key".into(), "c2".into())],
        r#"{"amount":1}"#,
    );
    let response = runtime
        .block_on(exchange(&through, &request, Duration::from_secs(30)))
        .unwrap();
    assert_eq!(response.status, 201);
}

/// A loopback listener that accepts connections and answers each with `reply` (or holds them open when `None`),
/// in a thread of its own; its address.
fn fake_upstream(reply: Option<Vec<u8>>) -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let address = listener.local_addr().unwrap().to_string();
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for stream in listener.incoming().take(16) {
            let Ok(mut stream) = stream else { continue };
            let mut head = [0u8; 4096];
            let _ = stream.read(&mut head);
            match &reply {
                Some(bytes) => {
                    let _ = stream.write_all(bytes);
                }
                None => held.push(stream),
            }
        }
    });
    address
}

#[test]
fn the_client_keeps_a_bounded_sample_of_a_huge_body() {
    use retrylab::backoff::{Backoff, RetryPolicy, Strategy};
    use retrylab::stack::client::{ClientConfig, RetryingClient, BODY_KEPT_BYTES};
    let body = vec![b'x'; 8 << 20];
    let mut reply = format!(
        "HTTP/1.1 201 Created\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    )
    .into_bytes();
    reply.extend_from_slice(&body);
    let upstream = fake_upstream(Some(reply));
    let client = RetryingClient::new(ClientConfig {
        policy: RetryPolicy {
            backoff: Backoff::new(Strategy::FullJitter, 10.0, 100.0).unwrap(),
            attempts_max: Some(1),
            deadline_ms: None,
            retry_after: retrylab::backoff::RetryAfter::Ignore,
        },
        attempt_timeout: Duration::from_secs(30),
        key_header: "Idempotency-Key".into(),
        client: None,
        seed: 1,
    })
    .unwrap();
    let url = Url::parse(&format!("http://{upstream}/payments")).unwrap();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let outcome = runtime.block_on(client.send(&url, &client.operation("{}")));
    let (status, kept) = outcome.response.expect("answered");
    assert_eq!(status, 201);
    // Before: all 8 MiB kept per operation.
    assert_eq!(kept.len(), BODY_KEPT_BYTES);
}

#[test]
fn load_refuses_a_rate_above_its_bound_instead_of_panicking() {
    let out = Command::new(env!("CARGO_BIN_EXE_retrylab"))
        .args([
            "load",
            "http://127.0.0.1:9/payments",
            "--rate",
            "3000000000",
            "--duration-s",
            "1",
        ])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("--rate 3000000000: must be 1..=1000000"),
        "{stderr}"
    );
    assert!(!stderr.contains("panicked"), "{stderr}");
}

/// `retrylab proxy UPSTREAM --record FILE`, its address once listening (None: it exited first).
fn proxy_cli(upstream: &str, record: &std::path::Path) -> (Child, Option<String>) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_retrylab"))
        .args(["proxy", &format!("http://{upstream}"), "--record"])
        .arg(record)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let address = line
        .trim()
        .strip_prefix("listening on http://")
        .map(str::to_string);
    (child, address)
}

/// The exit code within 60 s (None: still running).
fn exit_within_guard(child: &mut Child) -> Option<i32> {
    for _ in 0..600 {
        if let Some(status) = child.try_wait().unwrap() {
            return status.code();
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let _ = child.kill();
    None
}

#[test]
fn the_proxys_record_file_is_tried_first_and_keeps_requests_in_flight() {
    let folder = tempfile::tempdir().unwrap();
    let upstream = fake_upstream(None);
    // Unwritable: refused at once (before, the proxy listened and failed only at its stop).
    let (mut child, address) = proxy_cli(&upstream, &folder.path().join("no/such/folder/r.jsonl"));
    assert_eq!(address, None, "it must not listen");
    assert_eq!(exit_within_guard(&mut child), Some(2));
    // Writable: a request the upstream never answers is in the record taken at SIGTERM.
    let record = folder.path().join("r.jsonl");
    let (mut child, address) = proxy_cli(&upstream, &record);
    let address = address.expect("listening");
    let mut stream = TcpStream::connect(&address).unwrap();
    stream
        .write_all(
            b"POST /p HTTP/1.1\r\nHost: x\r\nIdempotency-Key: held\r\nContent-Length: 2\r\n\r\n{}",
        )
        .unwrap();
    let text = |record: &std::path::Path| std::fs::read_to_string(record).unwrap_or_default();
    // The request reaches the proxy before the signal: the proxy is given time, and the check is on the result.
    std::thread::sleep(Duration::from_millis(500));
    let pid = child.id().to_string();
    assert!(Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .unwrap()
        .success());
    assert_eq!(exit_within_guard(&mut child), Some(0));
    let written = text(&record);
    assert!(
        written.contains("\"key\":\"held\"") && written.contains("\"in_flight\":true"),
        "{written}"
    );
    drop(stream);
}
