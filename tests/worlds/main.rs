//! The worlds: every model file's declared verdicts (key-value, HTTP and queue), model-file errors, and the
//! handler world (`examples/handlers`' catalogue, per-attempt requests, time and fairness, traces, knob twins,
//! a design's own properties, the README's example, its HTML page), the catalogue also driven in lockstep on
//! SQLite and PostgreSQL (feature `real`). One test binary for the area; each file is a module
//! (`cargo test --test worlds handler_time::`).

/// The catalogue of `examples/handlers`, compiled once for every module that checks its designs.
#[path = "../../examples/handlers/main.rs"]
#[allow(dead_code)] // its `main`, its output, and designs only some modules use
mod catalogue;
#[cfg(feature = "cli")]
#[allow(dead_code)] // what only other tests use
#[path = "../explore_support/mod.rs"]
mod explore_support;
#[path = "../model_support/mod.rs"]
mod model_support;

mod handler_properties;
mod handler_requests;
mod handler_time;
mod handler_traces;
mod handler_twins;
#[cfg(feature = "real")]
mod handlers;
mod html_handler;
mod models;
mod queue_models;
mod readme_handler;
mod spec_errors;
