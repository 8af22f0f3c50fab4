//! What a gate holds for the service, bounded: a service under test is not trusted to be small (a leak that
//! pipelines without reading, a driver that prepares a statement per call), and the gate must refuse it by name
//! rather than grow until the machine kills the probe. The per-message limits stay with their protocol
//! (`pg_wire::MESSAGE_BYTES_MAX`, `resp::BULK_BYTES_MAX`); this holds the limits on what accumulates across
//! messages and connections, and the shared budget of buffered bytes.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

/// The total size of the prepared statement texts one PostgreSQL connection keeps.
pub const STATEMENT_TEXT_BYTES_MAX: usize = 16 << 20;
/// The total size of the statement texts of one group (its boundary's text): an Execute of a parsed statement
/// costs a few bytes on the wire but its whole text here.
pub const GROUP_TEXT_BYTES_MAX: usize = 16 << 20;
/// The most messages of one group before its `Sync`, `Flush` or `Query`.
pub const GROUP_MESSAGES_MAX: usize = 1 << 18;
/// The most forwarded units one connection may have waiting for their answers (a service that pipelines and
/// never reads makes the store answer into a buffer nobody drains).
pub const ANSWERS_WAITING_MAX: usize = 1 << 16;
/// The largest RESP frame (a command or a reply, all its elements together).
pub const FRAME_BYTES_MAX: usize = 64 << 20;
/// What all the connections of both gates together may have buffered from their services.
pub const BUFFERED_BYTES_MAX: usize = 256 << 20;
/// The most connections one gate serves at once.
pub const CONNECTIONS_MAX: usize = 256;
/// The events the gates may have sent and the controller not read yet. The controller reads them whenever it
/// waits (a request, an answer, a decision), so a full channel only makes connections wait for it.
pub const EVENTS_MAX: usize = 1 << 16;

/// Bytes buffered by every connection, against `BUFFERED_BYTES_MAX`.
#[derive(Debug, Default)]
pub struct Budget {
    used: AtomicUsize,
}

/// One connection's part of a `Budget`, given back when it ends.
#[derive(Debug)]
pub struct Charge {
    budget: Arc<Budget>,
    held: usize,
}

impl Budget {
    /// What is used now, in bytes.
    pub fn used(&self) -> usize {
        self.used.load(Ordering::SeqCst)
    }

    pub fn charge(self: &Arc<Self>) -> Charge {
        Charge {
            budget: Arc::clone(self),
            held: 0,
        }
    }
}

impl Charge {
    /// The connection now buffers `bytes`. Err (naming the bound) when that would take all connections over
    /// `limit`; what it held before is kept.
    pub fn set(&mut self, bytes: usize, limit: usize) -> Result<(), String> {
        if bytes > self.held {
            let more = bytes - self.held;
            let before = self.budget.used.fetch_add(more, Ordering::SeqCst);
            if before + more > limit {
                self.budget.used.fetch_sub(more, Ordering::SeqCst);
                return Err(format!(
                    "bytes buffered over {} MiB across all gate connections",
                    limit >> 20
                ));
            }
        } else {
            self.budget
                .used
                .fetch_sub(self.held - bytes, Ordering::SeqCst);
        }
        self.held = bytes;
        Ok(())
    }
}

impl Drop for Charge {
    fn drop(&mut self) {
        self.budget.used.fetch_sub(self.held, Ordering::SeqCst);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_budget_refuses_what_would_take_all_connections_over_it_and_is_given_back() {
        let budget = Arc::new(Budget::default());
        let mut one = budget.charge();
        let mut two = budget.charge();
        assert_eq!(one.set(600 << 20, 1 << 30), Ok(()));
        // Just under the bound together: fine.
        assert_eq!(two.set((1 << 30) - (600 << 20), 1 << 30), Ok(()));
        assert_eq!(budget.used(), 1 << 30);
        // One byte over: refused by name, and what it held stays.
        assert_eq!(
            two.set((1 << 30) - (600 << 20) + 1, 1 << 30),
            Err("bytes buffered over 1024 MiB across all gate connections".into())
        );
        assert_eq!(budget.used(), 1 << 30);
        two.set(0, 1 << 30).unwrap();
        assert_eq!(budget.used(), 600 << 20);
        drop(one);
        assert_eq!(budget.used(), 0);
    }
}
