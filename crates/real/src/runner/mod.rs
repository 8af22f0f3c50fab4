//! Where a trace meets a real database: handlers run on real stores one call at a time.
//!
//! - [`drive`]: one handler future over a gated store, moved a call at a time; a crash drops it.
//! - [`lockstep`]: a handler world's trace driven on a real backend (SQLite, PostgreSQL, memory) in lockstep,
//!   compared with the model after every step.

pub mod drive;
pub mod lockstep;
