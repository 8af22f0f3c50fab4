//! The `retrylab` command and its inputs: exit codes and one-line errors, the committed verdict matrix, hostile
//! and mutated input files, the hardening of issue 14, the cluster recipe (`docs/cluster/shard.sh`), and the
//! README's and the book's links. One test
//! binary for the area; each file is a module (`cargo test --test cli hardening::`). `fuzz_inputs` bounds each
//! case's time, so it lives here, where the other tests run the checker in child processes, not on this
//! process's rayon pool (where a case could queue behind another test's search).

#[path = "../cli_support/mod.rs"]
mod cli_support;
#[path = "../model_support/mod.rs"]
mod model_support;

#[cfg(feature = "cli")]
mod cli;
#[cfg(feature = "cli")]
mod cluster;
mod docs_links;
mod fuzz_inputs;
#[cfg(feature = "cli")]
mod hardening;
#[cfg(feature = "cli")]
mod hostile_inputs;
#[cfg(feature = "cli")]
mod report;
