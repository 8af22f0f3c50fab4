//! The simulated store the checker runs handlers against: committed state (tables of rows under unique keys, the
//! effect tables, a key-value map with expiry times, the provider's charges, a logical clock) and each
//! process's open transaction (its write set; reads see it over the committed state). Isolation: one writer at a
//! time, as SQLite's `BEGIN IMMEDIATE` gives (a `begin` is not enabled while another process holds the write
//! lock). Effects and charges carry the ghost operation of the request being handled, for the properties.

use super::api::{SetMode, StoreError};
use super::calls::{Answer, Call};
use super::shared::Shared;
use std::collections::BTreeMap;

/// A ghost operation id (the checker's, never shown to the handler).
pub type Ghost = u16;

/// The ghost of work done for no operation (a worker that has read no record yet).
pub const NO_OPERATION: Ghost = Ghost::MAX;

/// A row's place: (table, key).
type Place = (String, String);

/// What survives a crash. Its collections are copy-on-write (see `shared`): a step that takes the write lock or
/// moves the clock copies none of them, a commit copies only what it writes.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct Committed {
    /// (table, key) -> (value, the operation that wrote it). The ghost lets a background worker's work be
    /// counted for the operation whose record it read.
    pub rows: Shared<BTreeMap<(String, String), (String, Ghost)>>,
    /// Effect rows in commit order: (table, value, operation).
    pub effects: Shared<Vec<(String, String, Ghost)>>,
    /// key -> (value, expiry time in ms).
    pub kv: Shared<BTreeMap<String, (String, Option<u64>)>>,
    /// Provider charges: (idempotency key, operation).
    pub charges: Shared<Vec<(Option<String>, Ghost)>>,
    pub now_ms: u64,
    /// The process holding the write lock.
    pub writer: Option<u8>,
    /// Calls other services acted on (`Call::External`): (name, idempotency key, operation).
    pub calls: Shared<Vec<(String, Option<String>, Ghost)>>,
}

/// A process's open transaction: what it wrote, not yet committed (copy-on-write, as the committed state).
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct Txn {
    /// (table, key) -> new value and its operation, or `None` for a delete.
    writes: Shared<BTreeMap<Place, Option<(String, Ghost)>>>,
    /// Effect rows: (table, value, operation).
    effects: Shared<Vec<(String, String, Ghost)>>,
}

impl Committed {
    /// Whether process `proc` may make `call` now: a transaction (or a row call outside one, which is its own
    /// transaction) needs the write lock, which another process may hold.
    pub fn enabled(&self, proc: u8, call: &Call, txn: Option<&Txn>) -> bool {
        let needs_lock = matches!(call, Call::Begin) || (call.in_transaction() && txn.is_none());
        !needs_lock || self.writer.is_none_or(|writer| writer == proc)
    }

    /// The effects committed so far for an operation.
    pub fn effects_of(&self, op: Ghost) -> usize {
        self.effects
            .iter()
            .filter(|(_, _, owner)| *owner == op)
            .count()
    }

    /// The provider charges made so far for an operation.
    pub fn charges_of(&self, op: Ghost) -> usize {
        self.charges
            .iter()
            .filter(|(_, owner)| *owner == op)
            .count()
    }

    /// The calls named as `call` (an external call; 0 for any other) acted on so far for an operation.
    pub fn calls_of(&self, op: Ghost, call: &Call) -> usize {
        let Call::External { call, .. } = call else {
            return 0;
        };
        (self.calls.iter())
            .filter(|(name, _, owner)| name == call && *owner == op)
            .count()
    }

    /// A process crashed: its transaction is gone, and with it the write lock.
    pub fn crashed(&mut self, proc: u8) {
        if self.writer == Some(proc) {
            self.writer = None;
        }
    }

    /// Make `call` for process `proc` handling operation `op`; `txn` is its open transaction.
    pub fn execute(&mut self, proc: u8, op: Ghost, call: &Call, txn: &mut Option<Txn>) -> Answer {
        match call {
            Call::Begin if txn.is_some() => Answer::Failed(StoreError::NoTransaction),
            Call::Begin => {
                self.writer = Some(proc);
                *txn = Some(Txn::default());
                Answer::Done
            }
            Call::Commit | Call::Rollback => match txn.take() {
                None => Answer::Failed(StoreError::NoTransaction),
                Some(open) => {
                    if *call == Call::Commit {
                        self.apply(open);
                    }
                    self.writer = None;
                    Answer::Done
                }
            },
            row_call if row_call.in_transaction() => match txn {
                Some(open) => self.row_call(open, op, row_call),
                None => {
                    // Autocommit: a transaction of one statement.
                    let mut open = Txn::default();
                    let answer = self.row_call(&mut open, op, row_call);
                    self.apply(open);
                    answer
                }
            },
            other => self.outside_call(op, other),
        }
    }

    fn apply(&mut self, txn: Txn) {
        // An empty write set or effect list writes (and so copies) nothing.
        if !txn.writes.is_empty() {
            let rows = &mut *self.rows;
            for (place, value) in txn.writes.iter() {
                match value {
                    Some(row) => rows.insert(place.clone(), row.clone()),
                    None => rows.remove(place),
                };
            }
        }
        if !txn.effects.is_empty() {
            self.effects.extend(txn.effects.iter().cloned());
        }
    }

    /// A row as `txn` (if any) sees it: its value and the operation that wrote it.
    pub fn row(&self, txn: Option<&Txn>, table: &str, key: &str) -> Option<(String, Ghost)> {
        let place = (table.to_string(), key.to_string());
        match txn.and_then(|txn| txn.writes.get(&place)) {
            Some(written) => written.clone(),
            None => self.rows.get(&place).cloned(),
        }
    }

    fn read(&self, txn: &Txn, table: &str, key: &str) -> Option<String> {
        self.row(Some(txn), table, key).map(|(value, _)| value)
    }

    /// The keys of `table` as `txn` sees them, in order.
    fn scan(&self, txn: &Txn, table: &str) -> Vec<String> {
        let committed = self
            .rows
            .keys()
            .filter(|(t, _)| t == table)
            .map(|(_, key)| key.clone());
        let written = txn.writes.keys().filter(|(t, _)| t == table);
        let mut keys: std::collections::BTreeSet<String> = committed.collect();
        for place in written {
            match txn.writes[place] {
                Some(_) => keys.insert(place.1.clone()),
                None => keys.remove(&place.1),
            };
        }
        keys.into_iter().collect()
    }

    /// Whether what a worker could see differs (rows, effects, the key-value store, charges, the clock; not
    /// who holds the write lock).
    pub fn differs(&self, other: &Committed) -> bool {
        self.now_ms != other.now_ms
            || self.rows != other.rows
            || self.kv != other.kv
            || self.effects != other.effects
            || self.charges != other.charges
            || self.calls != other.calls
    }

    fn row_call(&self, txn: &mut Txn, op: Ghost, call: &Call) -> Answer {
        match call {
            Call::InsertIfAbsent { table, key, value } => {
                let absent = self.read(txn, table, key).is_none();
                if absent {
                    txn.writes
                        .insert((table.clone(), key.clone()), Some((value.clone(), op)));
                }
                Answer::Flag(absent)
            }
            Call::Get { table, key } => Answer::Row(self.read(txn, table, key)),
            Call::Scan { table } => Answer::Keys(self.scan(txn, table)),
            Call::Update {
                table,
                key,
                value,
                expected,
            } => {
                let current = self.read(txn, table, key);
                let matches = match expected {
                    Some(expected) => current.as_deref() == Some(expected.as_str()),
                    None => current.is_some(),
                };
                if matches {
                    txn.writes
                        .insert((table.clone(), key.clone()), Some((value.clone(), op)));
                }
                Answer::Flag(matches)
            }
            Call::Delete { table, key } => {
                let present = self.read(txn, table, key).is_some();
                txn.writes.insert((table.clone(), key.clone()), None);
                Answer::Flag(present)
            }
            Call::InsertEffect { table, value } => {
                txn.effects.push((table.clone(), value.clone(), op));
                let committed = self.effects.iter().filter(|(t, _, _)| t == table).count();
                let pending = txn.effects.iter().filter(|(t, _, _)| t == table).count();
                Answer::Id((committed + pending) as u64)
            }
            _ => unreachable!("row calls only"),
        }
    }

    /// The key-value store, the provider and the clock: no transaction.
    fn outside_call(&mut self, op: Ghost, call: &Call) -> Answer {
        let now = self.now_ms;
        // Only a store that has an expired key is written (and so copied): most calls expire nothing.
        if (self.kv.values()).any(|(_, expiry)| expiry.is_some_and(|at| at <= now)) {
            self.kv
                .retain(|_, (_, expiry)| expiry.is_none_or(|at| at > now));
        }
        match call {
            Call::KvSet { key, value, mode } => Answer::Flag(self.kv_set(key, value, *mode)),
            Call::KvGet { key } => Answer::Row(self.kv.get(key).map(|(value, _)| value.clone())),
            Call::KvDel { key } => Answer::Flag(self.kv.remove(key).is_some()),
            Call::KvExpire { key, ttl_ms } => match self.kv.get_mut(key) {
                Some((_, expiry)) => {
                    *expiry = Some(now.saturating_add(*ttl_ms));
                    Answer::Flag(true)
                }
                None => Answer::Flag(false),
            },
            Call::ProviderCharge {
                idempotency_key, ..
            } => {
                let earlier = idempotency_key.as_ref().and_then(|key| {
                    self.charges
                        .iter()
                        .position(|(charged, _)| charged.as_ref() == Some(key))
                });
                let index = earlier.unwrap_or_else(|| {
                    self.charges.push((idempotency_key.clone(), op));
                    self.charges.len() - 1
                });
                Answer::Text(format!("ch_{}", index + 1))
            }
            Call::Now => Answer::Time(now),
            Call::External {
                call,
                idempotency_key,
                ..
            } => Answer::Text(self.external(call, idempotency_key.as_ref(), op)),
            _ => unreachable!("calls outside a transaction only"),
        }
    }

    /// The service named `call` acts once per key (always without one); the id of the call it acted on.
    fn external(&mut self, call: &str, key: Option<&String>, op: Ghost) -> String {
        let same =
            |name: &String, charged: &Option<String>| name == call && charged.as_ref() == key;
        let earlier = key.and_then(|_| (self.calls.iter()).position(|(name, k, _)| same(name, k)));
        let index = earlier.unwrap_or_else(|| {
            self.calls.push((call.to_string(), key.cloned(), op));
            self.calls.len() - 1
        });
        let number = (self.calls[..=index].iter())
            .filter(|(name, _, _)| name == call)
            .count();
        format!("{call}_{number}")
    }

    fn kv_set(&mut self, key: &str, value: &str, mode: SetMode) -> bool {
        if mode.if_absent && self.kv.contains_key(key) {
            return false;
        }
        let expiry = mode.ttl_ms.map(|ttl| self.now_ms.saturating_add(ttl));
        self.kv.insert(key.to_string(), (value.to_string(), expiry));
        true
    }
}
