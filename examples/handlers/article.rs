//! The article's design: claim the key with INSERT OR IGNORE in its own transaction, then write the payment and
//! the completion in a second one. Never charges twice; but a crash after the claim leaves the key in_progress
//! forever (no lease): every retry gets 409. Written once in the library (`retrylab::handler::designs::article`),
//! where the checker, the SQLite and PostgreSQL runs, the in-memory store's loom and shuttle tests and
//! `examples/article_sqlite` all run the same code.

pub use retrylab::handler::designs::Article;
