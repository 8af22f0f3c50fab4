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
