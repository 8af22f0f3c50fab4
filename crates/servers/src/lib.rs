//! Real servers for tests, started by the tests themselves: a temporary directory, a free loopback port, stopped
//! when dropped. Debian's packages start no service, so nothing else runs them. Under
//! `RETRYLAB_REQUIRE_SERVERS=1` (CI) a server that is not installed is a failure; otherwise the caller gets
//! `None` after one line saying what was skipped and how to install it.

pub mod nats;
pub mod postgres;
pub mod redis;
pub mod slurm;

use std::net::TcpListener;

/// Whether a missing server must fail the test (`RETRYLAB_REQUIRE_SERVERS=1`).
pub fn servers_required() -> bool {
    std::env::var("RETRYLAB_REQUIRE_SERVERS").is_ok_and(|value| value == "1")
}

/// A server is not installed: fail under `RETRYLAB_REQUIRE_SERVERS=1`, otherwise say so in one line.
pub fn missing(what: &str, install: &str) -> Option<std::convert::Infallible> {
    assert!(
        !servers_required(),
        "{what} is required (RETRYLAB_REQUIRE_SERVERS=1) but not installed: {install}"
    );
    println!("skipped: {what} is not installed; install with {install}");
    None
}

/// A loopback port free right now (the server is started on it at once; loopback only, never another address).
pub fn free_loopback_port() -> std::io::Result<u16> {
    Ok(TcpListener::bind("127.0.0.1:0")?.local_addr()?.port())
}
