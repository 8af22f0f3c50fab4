//! Real code of the protocol under other checkers and real databases: the library's article handler under loom
//! and shuttle, proptest's fault schedules, real SQLite files (a killed child process included), and the model
//! checker's counterexamples replayed on them. Feature `real`. One test binary for the area; each file is a
//! module (`cargo test --test real real_sqlite::`).

#[path = "../model_support/mod.rs"]
mod model_support;

#[cfg(feature = "real")]
mod real_loom;
#[cfg(feature = "real")]
mod real_proptest;
#[cfg(feature = "real")]
mod real_shuttle;
#[cfg(feature = "real")]
mod real_sqlite;
#[cfg(feature = "real")]
mod real_traces;
