//! The gates: one loopback listener per store (PostgreSQL, Redis) that the service connects to instead of the
//! store. Each connection is forwarded to the real store, message by message; what the service sends is cut into
//! boundaries (PostgreSQL: the messages up to a `Query`, a `Sync` or a `Flush`; Redis: one command, or a
//! `MULTI ... EXEC` block gated at its `EXEC`). In `Mode::Hold` each boundary waits for the controller's
//! `Decision`; in `Mode::Pass` it runs at once. Either way the controller hears of it (`Event`).
//!
//! At most one boundary per connection is held at a time: the next one on the same connection is announced only
//! after the one before it was released (the order within a connection is the service's, never ours).
//!
//! API contract (the controller is written against it; keep the names):
//! - `Gates::start(postgres_upstream, redis_upstream)`: listeners on 127.0.0.1:0 (loopback only; the caller
//!   checked the upstreams are loopback).
//! - `Gates::set_mode`, `Gates::decide`, `Gates::next_event`, `Gates::close_all`.

use serde::{Deserialize, Serialize};
use std::net::SocketAddr;
use std::time::Duration;

/// Which store's protocol a gate speaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Wire {
    Postgres,
    Redis,
}

/// A connection the service opened through a gate, numbered in the order the gates accepted them (both gates
/// share one sequence).
pub type ConnectionId = u64;
/// A boundary, numbered in the order the gates saw them (both gates share one sequence).
pub type BoundaryId = u64;

/// One step boundary.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Boundary {
    pub id: BoundaryId,
    pub connection: ConnectionId,
    pub wire: Wire,
    /// Normalised: literals replaced by `?` (`INSERT INTO keys (key, state) VALUES (?, ?)`, `SET ? ? NX PX ?`);
    /// several statements of one boundary joined by `; `.
    pub text: String,
    /// A session statement (PostgreSQL `SET`/`SHOW`/`RESET`/`DISCARD`/`DEALLOCATE`, a group with no `Execute`;
    /// Redis `HELLO`/`AUTH`/`CLIENT`/`SELECT`/`PING`/`INFO`/`COMMAND`/`ECHO`): passed without a decision.
    pub session: bool,
}

/// What the gates tell the controller.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Event {
    Opened {
        connection: ConnectionId,
        wire: Wire,
    },
    /// `held`: it waits for `Gates::decide` (hold mode, not a session statement); otherwise it was forwarded.
    Boundary { boundary: Boundary, held: bool },
    /// The store's whole answer to a forwarded boundary arrived (PostgreSQL: up to `ReadyForQuery`; Redis: the
    /// command's reply, or `EXEC`'s). Delivered to the service unless the decision was `Withhold`.
    Answered {
        id: BoundaryId,
        /// The store's error, if it answered one (PostgreSQL `ErrorResponse`'s message, Redis `-ERR ...`).
        error: Option<String>,
    },
    /// The service (or the store) closed the connection.
    Closed { connection: ConnectionId },
    /// A message the gate does not understand (TLS required, COPY, replication, SUBSCRIBE, MONITOR ...), by
    /// name; the connection was closed, never passed through silently.
    Unsupported {
        connection: ConnectionId,
        wire: Wire,
        what: String,
    },
    /// The real store could not be reached or broke the connection.
    UpstreamFailed {
        connection: ConnectionId,
        wire: Wire,
        error: String,
    },
}

/// Whether held boundaries wait for a decision.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    Pass,
    Hold,
}

/// What to do with a held boundary.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Decision {
    /// Forward it; its answer goes back to the service.
    Release,
    /// Forward it and let it run; its answer is kept from the service (the controller then kills the service:
    /// for a `COMMIT` this is the lost acknowledgement).
    Withhold,
}

/// Both gates and the one event stream.
pub struct Gates {
    _private: (),
}

impl Gates {
    /// Listen on 127.0.0.1:0 for each store given; forward to it.
    pub async fn start(
        _postgres_upstream: Option<SocketAddr>,
        _redis_upstream: Option<SocketAddr>,
    ) -> std::io::Result<Gates> {
        todo!("issue 32: the gates")
    }

    /// Where the service should connect for PostgreSQL (None: no PostgreSQL gate).
    pub fn postgres_address(&self) -> Option<SocketAddr> {
        todo!()
    }

    /// Where the service should connect for Redis (None: no Redis gate).
    pub fn redis_address(&self) -> Option<SocketAddr> {
        todo!()
    }

    /// Applies to boundaries announced after the call.
    pub fn set_mode(&self, _mode: Mode) {
        todo!()
    }

    /// Decide a held boundary. False when it is not held (its connection closed, or already decided).
    pub fn decide(&self, _id: BoundaryId, _decision: Decision) -> bool {
        todo!()
    }

    /// The next event, or None when none came within `timeout`.
    pub async fn next_event(&mut self, _timeout: Duration) -> Option<Event> {
        todo!()
    }

    /// Close every connection (both sides) and drop what is held: after the service was killed, so the store
    /// rolls back what its open transactions did.
    pub fn close_all(&self) {
        todo!()
    }
}
