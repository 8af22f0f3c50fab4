//! The queue models against a real broker, NATS JetStream (docs/src/domain.md section 5): a consumer whose inbox and
//! effect live in SQLite or PostgreSQL through the handler's store interface, a transactional outbox relay, the
//! broker's producer dedup (`Nats-Msg-Id` within a stream's duplicate window), and a driver that replays a queue
//! model's trace on them in lockstep.
//!
//! - [`consumer`]: what a consumer does with one delivery (inbox placement, dedup key, external call).
//! - [`relay`]: the outbox row and the relay that publishes it, with a failpoint between publish and mark.
//! - [`broker`]: the stream and the pull consumer on `async-nats`.
//! - [`drive`]: a checker trace replayed on them, step by step, with the outcome compared.
//! - [`window`]: the dedup-window experiment's question measured on the real broker.

pub mod broker;
pub mod consumer;
pub mod drive;
mod outcome;
pub mod relay;

use std::future::Future;
use std::pin::pin;
use std::task::{Context, Poll, Waker};

/// The result of a store call on a real database, whose calls complete at once (`Store`'s methods are async
/// so that the checker can interleave them; a real connection never waits inside one).
pub(crate) fn ready<T>(call: impl Future<Output = T>) -> T {
    match pin!(call).poll(&mut Context::from_waker(Waker::noop())) {
        Poll::Ready(value) => value,
        Poll::Pending => panic!("a real store's call did not complete at once"),
    }
}
