//! retrylab's worlds: what is checked.
//!
//! - [`protocol`]: the idempotency protocol's decisions, shared by the models, the real stores and the experiments.
//! - [`builtin`]: the built-in key-value/HTTP and queue worlds (clients, a lossy network, crashing processes, the
//!   store) as `retrylab_check::Model`s; [`spec`]: the model files that configure them.
//! - [`handler`]: the handler API (async Rust over a store interface), the handler world that explores it at every
//!   store call, and the catalogue of designs.
//! - [`report`]: Markdown, Mermaid, SVG and HTML reports of verdicts and traces.

pub mod builtin;
pub mod handler;
pub mod input;
pub mod protocol;
pub mod report;
pub mod spec;

// The layers below, under the names the modules of this crate use for them.
use retrylab_check as check;
use retrylab_sim::atomic;

/// A file of the repository (the workspace's root, where `models/` lives): the unit tests read the shipped model
/// files.
#[cfg(test)]
pub(crate) fn repository_file(relative: &str) -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .join(relative)
}
