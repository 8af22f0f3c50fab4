//! retrylab: simulate and model-check retry and deduplication protocols.
//!
//! - [`protocol`]: the idempotency-key protocol as pure logic, written once.
//! - [`model`]: the checked world (clients, lossy network, server processes, store, ghost ledger).
//! - [`check`]: exhaustive BFS, seeded swarm walks, trace replay.
//! - [`spec`]: the model-file format.
//! - [`real`]: the protocol as real code (in-memory and SQLite stores).
//! - [`backoff`]: retry strategies and retry control.
//! - [`sim`]: timed discrete-event kernel and the AWS backoff experiment.
//! - [`plot`]: line charts with 95% bands, SVG and PNG, bundled font.
//! - [`report`]: the verdict matrix (Markdown, Mermaid and SVG).
//! - [`storms`]: retry-storm experiments (layered retries, retry budgets).

pub mod atomic;
pub mod backoff;
pub mod check;
pub mod model;
#[cfg(feature = "plot")]
pub mod plot;
pub mod protocol;
#[cfg(feature = "real")]
pub mod real;
pub mod report;
pub mod sim;
pub mod spec;
pub mod storms;
