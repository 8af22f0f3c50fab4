//! retrylab: simulate and model-check retry and deduplication protocols.
//!
//! Check a protocol of your own: write it as a [`check::Model`] (initial state, enabled actions, what an action
//! does, its properties), then run the checker. A request the network may deliver twice (a fault), and a server
//! that applies it once per delivery unless it remembers the request's key:
//!
//! ```
//! use retrylab::check::{Model, Property, Verdict};
//!
//! struct Server {
//!     dedup: bool,
//! }
//!
//! #[derive(Clone, Debug, PartialEq, Eq, Hash)]
//! struct State {
//!     in_flight: u8,
//!     duplicated: bool,
//!     key_seen: bool,
//!     effects: u8,
//! }
//!
//! #[derive(Clone, Debug, PartialEq)]
//! enum Action {
//!     Duplicate,
//!     Deliver,
//! }
//!
//! impl Model for Server {
//!     type State = State;
//!     type Action = Action;
//!     type Obs = ();
//!
//!     fn init_state(&self) -> State {
//!         State { in_flight: 1, duplicated: false, key_seen: false, effects: 0 }
//!     }
//!
//!     fn actions(&self, s: &State, out: &mut Vec<Action>) {
//!         if s.in_flight > 0 && !s.duplicated {
//!             out.push(Action::Duplicate);
//!         }
//!         if s.in_flight > 0 {
//!             out.push(Action::Deliver);
//!         }
//!     }
//!
//!     fn apply(&self, s: &mut State, action: &Action) {
//!         match action {
//!             Action::Duplicate => (s.in_flight, s.duplicated) = (s.in_flight + 1, true),
//!             Action::Deliver => {
//!                 s.in_flight -= 1;
//!                 if !(self.dedup && s.key_seen) {
//!                     s.effects += 1;
//!                 }
//!                 s.key_seen = true;
//!             }
//!         }
//!     }
//!
//!     fn properties(&self) -> Vec<Property<Self>> {
//!         vec![
//!             Property::always("at most one effect", |_, s: &State| s.effects <= 1),
//!             // Evidence that the dangerous case was explored at all (no vacuous pass).
//!             Property::sometimes("delivered twice", |_, s: &State| s.duplicated && s.in_flight == 0),
//!         ]
//!     }
//!
//!     fn is_fault(&self, _state: &State, action: &Action) -> bool {
//!         *action == Action::Duplicate
//!     }
//! }
//!
//! Server { dedup: true }.checker().bfs().assert_properties();
//!
//! let report = Server { dedup: false }.checker().threads(2).bfs();
//! assert_eq!(report.verdict("at most one effect"), Verdict::Violated);
//! assert_eq!(
//!     report.counterexample("at most one effect").unwrap(),
//!     [Action::Duplicate, Action::Deliver, Action::Deliver]
//! );
//! ```
//!
//! `examples/own_protocol.rs` is a longer one (a lock service whose fencing token can be forgotten, with a fault,
//! an `eventually` and the counterexample printed), and docs/src/own-protocol.md explains the rest.
//!
//! The modules:
//! - [`protocol`]: the idempotency-key protocol as pure logic, written once.
//! - [`builtin`]: the built-in worlds (clients, lossy network, server processes, store, ghost ledger).
//! - [`check`]: the model checker, generic over any [`check::Model`]: exhaustive BFS, seeded swarm walks, replay.
//! - [`spec`]: the model-file format.
//! - [`handler`]: your own handler as async Rust over a store interface, checked, and run on SQLite and PostgreSQL.
//! - [`real`]: the protocol as real code (in-memory and SQLite stores).
//! - [`queue_real`]: the queue models against NATS JetStream (a consumer, an outbox relay, a trace driver).
//! - [`backoff`]: retry strategies and retry control.
//! - [`sim`]: the timed discrete-event kernel and its statistics.
//! - [`experiments`]: grid -> seeded runs -> tables -> claims -> charts -> README, and each experiment's world.
//! - [`plot`]: line charts with 95% bands as data; drawn as SVG and PNG with the `plot` feature.
//! - [`report`]: the verdict matrix (Markdown, Mermaid and SVG).
//! - `graybox` (feature `stack`): a running service in any language, crashed and ordered at its SQL and Redis wire.
//! - `stack` (feature `stack`): the designs served over HTTP, the retrying client, the fault proxy, the probe.

// The workspace's crates under one name, at the paths the tests, examples and library users know.
pub use retrylab_check as check;
pub use retrylab_experiments as experiments;
#[cfg(feature = "stack")]
pub use retrylab_real::{graybox, stack};
#[cfg(feature = "real")]
pub use retrylab_real::{loopback, real, runner, stores};
pub use retrylab_servers as servers;
pub use retrylab_sim::{atomic, backoff, plot, sim};
pub use retrylab_worlds::{builtin, handler, input, protocol, spec};

/// Reports (`retrylab_worlds::report`), with the explorer's server.
pub mod report {
    #[cfg(feature = "cli")]
    pub use crate::explore::server as explore_server;
    pub use retrylab_worlds::report::*;
}

/// The queue models on NATS JetStream (`retrylab_real::queue_real`), with the dedup-window experiment measured there.
#[cfg(feature = "nats")]
pub mod queue_real {
    pub use retrylab_experiments::dedup_window::real_broker as window;
    pub use retrylab_real::queue_real::*;
}

#[cfg(feature = "cli")]
mod explore;
