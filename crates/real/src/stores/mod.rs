//! The real stores behind the handler API (`retrylab_worlds::handler::Store`): one home for every backend a
//! handler, a trace replay or the HTTP stack runs on. A new backend (MySQL, say) is one more file here that
//! implements `Store`.
//!
//! - [`memory`]: in memory, generic over its lock, so that std, loom and shuttle run the same store code.
//! - [`sqlite`]: SQLite (bundled), one file per world; [`postgres`]: PostgreSQL (a server is needed to run it).

pub mod memory;
pub mod postgres;
pub mod sqlite;
