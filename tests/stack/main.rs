//! The real stack and the probes: `retrylab serve` and `retrylab probe` end to end, the probe against an API that
//! answers early, the servers' limits, the gray-box probe's controller and its gates between real drivers and
//! real stores, and the trace explorer in a browser. Features `stack` and `cli`. One test binary for the area;
//! each file is a module (`cargo test --test stack serve_probe::`). The gray-box samples of `examples/graybox`
//! are in the `serial` binary: their probes must not share the cores with another test.

#[cfg(feature = "cli")]
#[allow(dead_code)] // what only other tests use
#[path = "../explore_support/mod.rs"]
mod explore_support;

#[cfg(feature = "cli")]
mod explorer;
#[cfg(all(feature = "cli", feature = "stack"))]
mod graybox_background;
#[cfg(all(feature = "cli", feature = "stack"))]
mod graybox_blocking;
#[cfg(feature = "stack")]
mod graybox_drivers;
#[cfg(all(feature = "cli", feature = "stack"))]
mod graybox_orphans;
#[cfg(all(feature = "cli", feature = "stack"))]
mod graybox_probe;
#[cfg(all(feature = "cli", feature = "stack"))]
mod graybox_unearned;
#[cfg(feature = "stack")]
mod graybox_wire;
#[cfg(feature = "stack")]
mod probe_early_answer;
#[cfg(all(feature = "cli", feature = "stack"))]
mod serve_probe;
#[cfg(all(feature = "cli", feature = "stack"))]
mod server_limits;
#[cfg(all(feature = "cli", feature = "stack"))]
mod tiny_service;
