//! The real stack (issue 16): the handler designs served over HTTP, a retrying client, a fault-injecting
//! proxy, a black-box probe of any API's idempotency, and a load generator; all on loopback.
//!
//! - [`design`]: the designs `retrylab serve` runs, by name (handlers of `crate::handler::designs`).
//! - [`service`]: the axum service (`POST /payments`, `GET /payments/count`); [`connection`]: one handler's
//!   store (SQLite or PostgreSQL, keys in the database or in Redis via `crate::stores::redis`), with the
//!   [`crash_at`] failpoint.
//! - [`client`]: the retrying client (reqwest and `crate::backoff`).
//! - [`proxy`]: the seeded fault-injecting proxy; [`http`]: HTTP/1.1 by hand for it and the probe.
//! - [`answer`]: whether two answers are the same (JSON as values, bytes otherwise).
//! - [`probe`]: `retrylab probe`'s checks; [`load`]: `retrylab load`.

pub mod answer;
pub mod client;
pub mod connection;
pub mod crash_at;
pub mod design;
pub mod http;
pub mod load;
pub mod probe;
pub mod proxy;
pub mod server;
pub mod service;

/// A run's id from the wall clock (nanoseconds, 48 bits in hex), for the keys of `retrylab probe` and `retrylab
/// load`: two runs against one store must not share keys, or the second run's requests are replays of the
/// first's and hide its duplicates. Only the default: `--run-id` fixes it, and the seed keeps the schedule.
pub fn run_id_from_clock() -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |since| since.as_nanos());
    format!("{:x}", nanos & 0xffff_ffff_ffff)
}
