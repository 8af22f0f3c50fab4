//! The transactional outbox as real code, over the handler's store interface: the producer commits its event
//! as an outbox row in its own transaction (with whatever business change caused it), and a relay publishes the
//! committed rows that are not marked sent, then marks each one. The relay can crash between the two (its
//! failpoint): the row stays unsent and the restarted relay publishes it again, a duplicate the broker's dedup
//! (a `Nats-Msg-Id` equal to the row's event id, inside the stream's duplicate window) or the consumer's inbox
//! must absorb (docs/src/domain.md section 5).

use crate::handler::{Store, StoreError, StoreResult};
use crate::runner::run_now;
use serde::{Deserialize, Serialize};

/// The producer's outbox table: key the event id, value an `OutboxRow`.
pub const OUTBOX: &str = "outbox";

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct OutboxRow {
    pub body: String,
    pub sent: bool,
}

impl OutboxRow {
    fn text(&self) -> String {
        serde_json::to_string(self).expect("a row serialises")
    }
}

/// What the broker answered a publish.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Published {
    /// The stream sequence of the stored message (of the first one, for a duplicate).
    pub sequence: u64,
    /// The broker recognised the message id inside its window and stored nothing.
    pub duplicate: bool,
}

/// Publishing one event, with the broker's answer: the relay is written against this, the broker implements it.
pub trait Publisher {
    /// Publish `body` of event `event_id`, with `message_id` as the broker's dedup id (`Nats-Msg-Id`) if any.
    fn publish(
        &mut self,
        event_id: &str,
        message_id: Option<&str>,
        body: &str,
    ) -> Result<Published, String>;
}

/// Where a relay run stops early.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Failpoint {
    #[default]
    None,
    /// Crash after the first publish, before marking its row sent.
    CrashAfterPublish,
}

/// What a relay run did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RelayRun {
    /// The rows it published (event id and the broker's answer), in order.
    pub published: Vec<(String, Published)>,
    /// It stopped at its failpoint.
    pub crashed: bool,
}

fn refused(error: impl std::fmt::Display) -> StoreError {
    StoreError::Refused(error.to_string())
}

/// The producer's transaction: the outbox row for a new event (whatever else the producer changes commits with
/// it). Whether the row was new.
pub fn enqueue<S: Store>(store: &mut S, event_id: &str, body: &str) -> StoreResult<bool> {
    let row = OutboxRow {
        body: body.to_string(),
        sent: false,
    };
    run_now(store.begin())?;
    let inserted = run_now(store.insert_if_absent(OUTBOX, event_id, &row.text()))?;
    run_now(store.commit())?;
    Ok(inserted)
}

/// The committed rows not yet marked sent, in event-id order.
fn unsent<S: Store>(store: &mut S) -> StoreResult<Vec<(String, OutboxRow)>> {
    run_now(store.begin())?;
    let mut rows = Vec::new();
    for key in run_now(store.scan(OUTBOX))? {
        let text =
            run_now(store.get(OUTBOX, &key))?.ok_or_else(|| refused("a scanned row vanished"))?;
        let row: OutboxRow = serde_json::from_str(&text).map_err(refused)?;
        if !row.sent {
            rows.push((key, row));
        }
    }
    run_now(store.commit())?;
    Ok(rows)
}

/// One pass of the relay: publish every unsent row with its event id as `Nats-Msg-Id`, then mark it sent (a
/// compare-and-set on the unsent row, so a concurrent relay's mark is not overwritten).
pub fn relay_once<S: Store, P: Publisher>(
    store: &mut S,
    publisher: &mut P,
    failpoint: Failpoint,
) -> Result<RelayRun, String> {
    let mut run = RelayRun::default();
    for (event_id, row) in unsent(store).map_err(|e| e.to_string())? {
        let published = publisher.publish(&event_id, Some(&event_id), &row.body)?;
        run.published.push((event_id.clone(), published));
        if failpoint == Failpoint::CrashAfterPublish {
            run.crashed = true;
            return Ok(run);
        }
        mark_sent(store, &event_id, &row).map_err(|e| e.to_string())?;
    }
    Ok(run)
}

/// Mark a published row sent: a compare-and-set on its unsent value, so a concurrent relay's mark stays.
fn mark_sent<S: Store>(store: &mut S, event_id: &str, row: &OutboxRow) -> StoreResult<bool> {
    let sent = OutboxRow {
        sent: true,
        ..row.clone()
    };
    run_now(store.begin())?;
    let marked = run_now(store.update(OUTBOX, event_id, &sent.text(), Some(&row.text())))?;
    run_now(store.commit())?;
    Ok(marked)
}
