//! retrylab's real side: the protocol and the handlers run as real code on real stores and real servers.
//!
//! - [`stores`]: the store interface on memory, SQLite and PostgreSQL (one shared SQL shape), keys in Redis.
//! - [`runner`]: handlers run one call at a time on a real store (the one step-by-step runner), and a handler
//!   world's trace driven on a real database in lockstep.
//! - [`real`]: the built-in world's traces replayed on real stores through the article handler.
//! - [`stack`] (feature `stack`): `retrylab serve`, the retrying client, the proxy, `probe`, `load`;
//!   [`graybox`]: the wire-level gate that makes a running service's every statement a step.
//! - [`queue_real`] (feature `nats`): the queue models against NATS JetStream.
//! - [`loopback`]: the address rules (loopback only, every host of a URL checked).

#[cfg(feature = "stack")]
pub mod graybox;
pub mod loopback;
#[cfg(feature = "nats")]
pub mod queue_real;
pub mod real;
pub mod runner;
#[cfg(feature = "stack")]
pub mod stack;
pub mod stores;

#[cfg(test)]
mod handler_tests;

// The layers below, under the names the modules of this crate use for them.
use retrylab_check as check;
#[cfg(test)]
use retrylab_servers as servers;
#[cfg(feature = "stack")]
use retrylab_sim::backoff;
use retrylab_worlds::{builtin, handler, protocol};
