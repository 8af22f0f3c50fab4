//! Designs written once as handlers, in the library so that every use runs the same code: the model checker
//! (`HandlerWorld`), the lockstep runs on SQLite and PostgreSQL (`lockstep`), the in-memory store under loom and
//! shuttle, the built-in world's traces replayed on real stores (`crate::real::drive`), and
//! `examples/article_sqlite`. `examples/handlers` uses them as its catalogue entries.
//!
//! - [`article`]: the article's design, with the protocol's knobs (claim mechanism, lease, fencing, fingerprint,
//!   what a failure does to the key); every decision is `crate::protocol`'s.
//! - [`select_then_insert`], [`separate_kv`] (and what they share, [`common`]): catalogue entries moved here so
//!   that `retrylab serve` runs them too (issue 16).
//! - [`ignores_key`], [`global_key_scope`]: the article's design under two broken front doors (a server-minted
//!   key; a key scope that forgets the client).

pub mod article;
pub mod common;
pub mod global_key_scope;
pub mod ignores_key;
pub mod select_then_insert;
pub mod separate_kv;

pub use article::{Article, ArticleKnobs};
pub use global_key_scope::GlobalKeyScope;
pub use ignores_key::IgnoresKey;
pub use select_then_insert::SelectThenInsert;
pub use separate_kv::{SeparateKv, SeparateKvTtl, SetThenExpire};

use crate::handler::{Handler, HandlerFaults, HandlerWorld};

/// The handler world with a model file's clients, processes and faults (one operation per client): a handler
/// checked against the knob model of the same design (`tests/handler_twins.rs`, `benches/handler.rs`).
pub fn knob_twin<H: Handler>(handler: H, model: &crate::spec::Model) -> HandlerWorld<H> {
    let world = &model.world;
    let faults = world.faults();
    let body = world.body_text(world.clients().operations[0].body);
    HandlerWorld::new(handler, world.clients().count, body)
        .processes(world.processes())
        .max_attempts(world.clients().max_attempts)
        .faults(HandlerFaults {
            drop_requests: faults.drop_requests,
            drop_responses: faults.drop_responses,
            duplicate_requests: faults.duplicate_requests,
            crashes: faults.crashes,
            early_timeouts: faults.early_timeouts,
            pauses: faults.pauses,
            ..HandlerFaults::default()
        })
        // The built-in world's clients give up after their last attempt: compared without fairness.
        .fair(false)
}
