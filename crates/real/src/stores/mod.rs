//! The real stores behind the handler API (`retrylab_worlds::handler::Store`): one home for every backend a
//! handler, a trace replay or the HTTP stack runs on.
//!
//! - [`memory`]: in memory, generic over its lock, so that std, loom and shuttle run the same store code.
//! - [`sql`]: the SQL shape every SQL store shares (tables, statements, transactions, row mapping), written once
//!   over a small [`sql::SqlConnection`] trait; [`sqlite`] (bundled, one file per world) and [`postgres`] (a
//!   server is needed to run it) are that trait on each database.
//! - [`redis`] (feature `stack`): the key-value calls on a real Redis, for `retrylab serve --keys redis://...`.
//!
//! Adding a SQL database (MySQL, say) is one new file here: implement `sql::SqlConnection` for its client (run a
//! statement, read rows, a `begin` that serialises writers, its spelling of a self-numbered key and of byte
//! order), give it `create` and `connect` as `sqlite.rs` and `postgres.rs` do, and add `pub mod` below. A store
//! that is not SQL implements `Store` itself, as `memory.rs` does.

pub mod memory;
pub mod postgres;
#[cfg(feature = "stack")]
pub mod redis;
pub mod sql;
pub mod sqlite;
