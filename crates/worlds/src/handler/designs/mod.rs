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

use crate::handler::{Handler, HandlerFaults, HandlerWorld, Request};
use crate::protocol::KeyPolicy;

/// The handler world with a model file's clients, operations (each body, `same-key-as`), key policy, processes
/// and faults: a handler checked against the knob model of the same design (`tests/handlers/handler_twins.rs`,
/// `benches/handler.rs`).
pub fn knob_twin<H: Handler>(handler: H, model: &crate::spec::ModelFile) -> HandlerWorld<H> {
    let world = &model.world;
    let faults = world.faults();
    let operations = &world.clients().operations;
    let bodies: Vec<&str> = operations
        .iter()
        .map(|operation| world.body_text(operation.body))
        .collect();
    let per_attempt = world.clients().key_policy == KeyPolicy::PerAttempt;
    let twin = HandlerWorld::new(handler, world.clients().count, bodies[0])
        .bodies(&bodies)
        .key_per_attempt(per_attempt)
        .processes(world.processes())
        .attempts_max(world.clients().attempts_max)
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
        .fair(false);
    // The model numbers operation keys from 1, the handler world from 0: only `same-key-as` needs a hook (and
    // a hook's world records more, so the others do without).
    let keys: Vec<u8> = operations.iter().map(|operation| operation.key).collect();
    if keys
        .iter()
        .enumerate()
        .all(|(op, key)| *key as usize == op + 1)
    {
        return twin;
    }
    twin.requests(move |attempt| {
        let key = keys[attempt.op as usize] - 1;
        let key = if per_attempt {
            format!("k{key}-{}", attempt.attempt)
        } else {
            format!("k{key}")
        };
        Request {
            key,
            ..attempt.request()
        }
    })
}
