//! The checker on the shipped models: symmetry and partial-order reduction change no verdict, the same seed gives
//! the same result whatever the thread count, traces round-trip and replay, timelines, SPIN's state counts, and
//! the "check your own protocol" example. One test binary (one link of the library) for the whole area; each
//! file is a module, its tests named `FILE::TEST` (`cargo test --test checker por::`).

#[path = "../cli_support/mod.rs"]
mod cli_support;
#[cfg(feature = "cli")]
#[allow(dead_code)] // what only other tests use
#[path = "../explore_support/mod.rs"]
mod explore_support;
#[path = "../model_support/mod.rs"]
mod model_support;

mod determinism;
mod own_protocol;
mod por;
mod spin_twin;
mod symmetry;
mod timelines;
mod trace_roundtrip;
