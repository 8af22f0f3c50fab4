//! The worlds: every model file's declared verdicts (key-value, HTTP and queue), model-file errors, and the
//! handler world's README example and HTML page. One test binary for the area; each file is a module
//! (`cargo test --test worlds models::`). The handler catalogue's tests (`examples/handlers`: per-attempt
//! requests, time and fairness, traces, knob twins, a design's own properties, lockstep on SQLite and
//! PostgreSQL) are `tests/handlers/`, built into the example's test target (`cargo test --example handlers`).

#[cfg(feature = "cli")]
#[allow(dead_code)] // what only other tests use
#[path = "../explore_support/mod.rs"]
mod explore_support;
#[path = "../model_support/mod.rs"]
mod model_support;

mod html_handler;
mod models;
mod queue_models;
mod readme_handler;
mod spec_errors;
