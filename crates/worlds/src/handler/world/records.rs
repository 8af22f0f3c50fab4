//! What `no-stuck-key` needs to know of a design's record format: where its idempotency records are, and which
//! of their values are unfinished. The built-in world knows its records; a handler's are its own, so the design
//! declares them (`HandlerWorld::records`).

use super::{HandlerState, HandlerWorld};
use crate::handler::sim::Committed;
use std::sync::Arc;

/// Where a design keeps its idempotency records, and which of their values are unfinished: what the
/// `no-stuck-key` property needs to know of a handler's record format.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RecordsIn {
    /// Rows of this table.
    Table(String),
    /// Keys of the key-value store. A key with a TTL is never stuck: it expires.
    KeyValue,
}

/// Whether a record with this value is unfinished at this time (ms): any closure, so it may capture what the
/// design knows (a lease length, a status prefix).
pub type InProgress = Arc<dyn Fn(&str, u64) -> bool + Send + Sync>;

/// The records declaration: where they are, and `in_progress(value, now_ms)`: whether a record with this value
/// is unfinished at that time (a claim whose lease ran out may say no: the next request takes it over).
#[derive(Clone)]
pub struct Records {
    pub place: RecordsIn,
    pub in_progress: InProgress,
}

impl std::fmt::Debug for Records {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Records")
            .field("place", &self.place)
            .finish_non_exhaustive()
    }
}

impl Records {
    /// Whether some record in `store` is unfinished.
    pub fn any_in_progress(&self, store: &Committed) -> bool {
        let now_ms = store.now_ms;
        match &self.place {
            RecordsIn::Table(table) => store
                .rows
                .iter()
                .any(|((t, _), (value, _))| t == table && (self.in_progress)(value, now_ms)),
            RecordsIn::KeyValue => store
                .kv
                .values()
                .any(|(value, expiry)| expiry.is_none() && (self.in_progress)(value, now_ms)),
        }
    }
}

/// No unfinished record (the design declared which those are).
pub(super) fn no_stuck_key<H, W>(world: &HandlerWorld<H, W>, state: &HandlerState) -> bool {
    world
        .records
        .as_ref()
        .is_none_or(|records| !records.any_in_progress(&state.store))
}
