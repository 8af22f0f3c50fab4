//! Real stores for the handlers of `crate::handler` and the runs that use them.
//!
//! - [`MemoryStore`]: the store interface (`handler::Store`) in memory, generic over its lock, so that std, loom
//!   and shuttle run the same store code under the library's handlers (the SQLite and PostgreSQL stores are
//!   `stores::sqlite` and `stores::postgres`).
//! - [`article`]: the article's script (five parallel requests, a repeat, a changed body) on real SQLite, with
//!   the library's article handler.
//! - [`drive`]: the built-in world's traces replayed on a real store through the same handler, with the world's
//!   knobs, one call at a time by `crate::runner`'s [`Stepped`](crate::runner::Stepped).
//!
//! No decision of the protocol is made here: the handler (`handler::designs::article`) asks `crate::protocol`.

pub mod article;
pub mod drive;
mod lock;

pub use crate::stores::memory::{MemoryConnection, MemoryStore, Tables};
pub use lock::{Lock, StdLock};

use crate::handler::api::{Clock, StoreResult};
use std::sync::Arc;

/// A [`MemoryStore`] as a lockstep backend (`runner::lockstep`): connections on one shared store.
pub struct MemoryBackend<L: Lock<Tables>> {
    store: Arc<MemoryStore<L>>,
}

impl<L: Lock<Tables>> MemoryBackend<L> {
    pub fn new() -> Self {
        MemoryBackend {
            store: Arc::new(MemoryStore::new(Clock::default())),
        }
    }

    pub fn store(&self) -> &Arc<MemoryStore<L>> {
        &self.store
    }
}

impl<L: Lock<Tables>> Default for MemoryBackend<L> {
    fn default() -> Self {
        Self::new()
    }
}

impl<L: Lock<Tables> + 'static> crate::runner::lockstep::Backend for MemoryBackend<L> {
    type Store = MemoryConnection<L>;
    fn connect(&self) -> StoreResult<Self::Store> {
        Ok(self.store.connect())
    }
    fn effects(&self) -> StoreResult<usize> {
        Ok(self.store.snapshot().effects.len())
    }
    fn charges(&self) -> StoreResult<usize> {
        Ok(self.store.snapshot().charges.len())
    }
    fn calls(&self) -> StoreResult<usize> {
        Ok(self.store.snapshot().calls.len())
    }
    fn clock(&self) -> &Clock {
        self.store.clock()
    }
}
