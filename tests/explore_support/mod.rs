//! Driving the explorer's server (`report::explore_server`) as its page does: a server on a free loopback port
//! in a thread of its own (it runs until the test process ends), and plain HTTP/1.1 requests.

use retrylab::check::Model;
use retrylab::loopback::loopback_address;
use retrylab::report::explore_server::{serve, Explorer};
use serde_json::Value;
use std::io::{Read, Write};
use std::net::TcpStream;

/// Serve `explorer`; its `host:port`.
pub fn start<M: Model + Send + 'static>(explorer: Explorer<M>) -> String {
    let (sender, address) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let at = loopback_address("127.0.0.1:0").unwrap();
        serve(explorer, at, |url| sender.send(url.to_string()).unwrap()).unwrap();
    });
    let url = address.recv().expect("the server listens");
    url.trim_start_matches("http://")
        .trim_end_matches('/')
        .to_string()
}

/// One request as the page sends it (its Host, and the run's token taken from the page): the status code and
/// the body.
pub fn request(host: &str, method: &str, path: &str, body: &Value) -> (u16, String) {
    let token = page_token(host);
    raw_request(host, host, Some(&token), method, path, body)
}

/// The run's write token, as the served page carries it (`const WRITE_TOKEN = "...";`).
pub fn page_token(host: &str) -> String {
    let (status, page) = raw_request(host, host, None, "GET", "/", &Value::Null);
    assert_eq!(status, 200, "{page}");
    let (_, rest) = page
        .split_once("const WRITE_TOKEN = \"")
        .expect("the page carries the token");
    rest.split('"').next().unwrap().to_string()
}

/// One request (a fresh connection each, closed by the server) to `address` with this `Host` header and token
/// header (none: not sent): the status code and the body.
pub fn raw_request(
    address: &str,
    host_header: &str,
    token: Option<&str>,
    method: &str,
    path: &str,
    body: &Value,
) -> (u16, String) {
    let body = body.to_string();
    let mut stream = TcpStream::connect(address).unwrap();
    let token = token.map_or(String::new(), |token| {
        format!("X-Retrylab-Token: {token}\r\n")
    });
    write!(
        stream,
        "{method} {path} HTTP/1.1\r\nHost: {host_header}\r\n{token}Content-Type: application/json\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut reply = String::new();
    stream.read_to_string(&mut reply).unwrap();
    let status = reply[9..12].parse().unwrap();
    let (_, body) = reply.split_once("\r\n\r\n").unwrap();
    (status, body.to_string())
}

/// A POST that must succeed: its JSON reply.
pub fn post(host: &str, path: &str, body: Value) -> Value {
    let (status, text) = request(host, "POST", path, &body);
    assert_eq!(status, 200, "{path}: {text}");
    serde_json::from_str(&text).unwrap()
}

/// What `/api/path` says of a path given as choices: each step's violated properties.
pub fn violated_per_step(host: &str, choices: &[usize]) -> Vec<Value> {
    let reply = post(host, "/api/path", serde_json::json!({ "actions": choices }));
    reply["path"]["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|step| step["violated"].clone())
        .collect()
}
