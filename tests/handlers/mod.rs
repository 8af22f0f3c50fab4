//! The handler catalogue's tests, compiled into the `handlers` example's test target
//! (`cargo test --example handlers`, and `cargo test`): every design gets the verdicts it declares, per-attempt
//! requests, time and fairness, traces, knob twins, a design's own properties, and every counterexample driven
//! in lockstep on SQLite and PostgreSQL (feature `real`). They live with the catalogue, not in a `tests/` binary
//! of their own, because the catalogue is the heaviest code of the repository to compile (every design is a world
//! of its own type, the checker and the explorer instantiated for each): built once, as the example's tests,
//! instead of once as the example and again inside a test binary. Each file is a module
//! (`cargo test --example handlers handler_time::`). Cargo does not take this folder for a test target: it has no
//! `main.rs`.

#[cfg(feature = "cli")]
#[allow(dead_code)] // what only other tests use
#[path = "../explore_support/mod.rs"]
mod explore_support;

mod handler_properties;
mod handler_requests;
mod handler_time;
mod handler_traces;
mod handler_twins;
#[cfg(feature = "real")]
mod handlers;
