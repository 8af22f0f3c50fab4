//! The store interface in memory: tables of rows under unique keys, effect tables, a key-value map with expiry
//! times and the provider's charges, behind one lock of the caller's choice, so that std, loom and shuttle run the
//! same store code under the same handlers.
//!
//! One writer at a time, as SQLite's `BEGIN IMMEDIATE`: `begin` (and a row call outside a transaction, which is
//! a transaction of its own) takes the write flag, waiting (`Lock::with_when`) while another connection holds
//! it. A transaction's writes are kept in its connection and applied in one critical section at `commit`;
//! a dropped connection (a crashed worker) loses them and frees the flag. Each call is one critical section, so
//! every store call is a point where loom and shuttle may run another thread.

use crate::handler::api::{Clock, SetMode, Store, StoreError, StoreResult};
use crate::real::Lock;
use std::collections::BTreeMap;
use std::sync::Arc;

/// What the store holds. Public for assertions (`MemoryStore::snapshot`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Tables {
    /// (table, key) -> value.
    pub rows: BTreeMap<(String, String), String>,
    /// Effect rows in commit order: (table, value).
    pub effects: Vec<(String, String)>,
    /// key -> (value, expiry time in ms).
    pub kv: BTreeMap<String, (String, Option<u64>)>,
    /// Provider charges: (idempotency key, body).
    pub charges: Vec<(Option<String>, String)>,
    /// Calls other services acted on (`Store::external_call`): (name, idempotency key, body).
    pub calls: Vec<(String, Option<String>, String)>,
    /// The connection holding the write flag.
    writer: Option<u64>,
    connections: u64,
}

/// A connection's open transaction: its writes, not yet committed.
#[derive(Default)]
struct Txn {
    /// (table, key) -> new value, or `None` for a delete.
    writes: BTreeMap<(String, String), Option<String>>,
    effects: Vec<(String, String)>,
}

/// The in-memory store. `L` is the lock: [`super::StdLock`] in a service, loom's or shuttle's mutex in tests.
pub struct MemoryStore<L> {
    tables: L,
    clock: Clock,
}

impl<L: Lock<Tables>> MemoryStore<L> {
    /// An empty store whose connections read time from `clock`.
    pub fn new(clock: Clock) -> Self {
        MemoryStore {
            tables: L::new(Tables::default()),
            clock,
        }
    }

    /// A new connection (one per worker, as a service opens one per handler).
    pub fn connect(self: &Arc<Self>) -> MemoryConnection<L> {
        let id = self.tables.with(|tables| {
            tables.connections += 1;
            tables.connections
        });
        MemoryConnection {
            store: Arc::clone(self),
            id,
            txn: None,
        }
    }

    /// A copy of the tables (for assertions).
    pub fn snapshot(&self) -> Tables {
        self.tables.with(|tables| tables.clone())
    }

    /// Committed effect rows of a table, in id order.
    pub fn effects(&self, table: &str) -> Vec<String> {
        self.tables.with(|tables| {
            tables
                .effects
                .iter()
                .filter(|(t, _)| t == table)
                .map(|(_, value)| value.clone())
                .collect()
        })
    }

    pub fn clock(&self) -> &Clock {
        &self.clock
    }
}

/// One connection to a [`MemoryStore`]: its open transaction, if any. Dropping it rolls that back.
pub struct MemoryConnection<L: Lock<Tables>> {
    store: Arc<MemoryStore<L>>,
    id: u64,
    txn: Option<Txn>,
}

impl<L: Lock<Tables>> Drop for MemoryConnection<L> {
    fn drop(&mut self) {
        if self.txn.take().is_some() {
            let id = self.id;
            self.store.tables.with(|tables| release(tables, id));
        }
    }
}

fn release(tables: &mut Tables, id: u64) {
    if tables.writer == Some(id) {
        tables.writer = None;
    }
}

fn apply(tables: &mut Tables, txn: Txn) {
    for (place, value) in txn.writes {
        match value {
            Some(value) => tables.rows.insert(place, value),
            None => tables.rows.remove(&place),
        };
    }
    tables.effects.extend(txn.effects);
}

fn read(tables: &Tables, txn: &Txn, table: &str, key: &str) -> Option<String> {
    let place = (table.to_string(), key.to_string());
    match txn.writes.get(&place) {
        Some(written) => written.clone(),
        None => tables.rows.get(&place).cloned(),
    }
}

/// The keys of `table` as this transaction sees them (its own writes and deletes included), in byte order.
fn scan(tables: &Tables, txn: &Txn, table: &str) -> Vec<String> {
    let mut keys: std::collections::BTreeSet<String> = tables
        .rows
        .keys()
        .filter(|(t, _)| t == table)
        .map(|(_, key)| key.clone())
        .collect();
    for ((t, key), value) in &txn.writes {
        if t == table {
            match value {
                Some(_) => keys.insert(key.clone()),
                None => keys.remove(key),
            };
        }
    }
    keys.into_iter().collect()
}

fn write(txn: &mut Txn, table: &str, key: &str, value: Option<&str>) {
    txn.writes.insert(
        (table.to_string(), key.to_string()),
        value.map(str::to_string),
    );
}

impl<L: Lock<Tables>> MemoryConnection<L> {
    /// Wait for the write flag, then hold it.
    fn acquire(&self) {
        let id = self.id;
        self.store.tables.with_when(
            |tables| tables.writer.is_none(),
            |tables| tables.writer = Some(id),
        );
    }

    /// A row call: in the open transaction, or as a transaction of its own.
    fn rows<R>(&mut self, call: impl FnOnce(&Tables, &mut Txn) -> R) -> R {
        if let Some(txn) = self.txn.as_mut() {
            return self.store.tables.with(|tables| call(tables, txn));
        }
        self.acquire();
        let id = self.id;
        self.store.tables.with(|tables| {
            let mut txn = Txn::default();
            let result = call(tables, &mut txn);
            apply(tables, txn);
            release(tables, id);
            result
        })
    }

    /// A key-value call (no transaction): expired keys are gone first.
    fn kv<R>(&self, call: impl FnOnce(&mut Tables, u64) -> R) -> R {
        let now_ms = self.store.clock.now_ms();
        self.store.tables.with(|tables| {
            tables
                .kv
                .retain(|_, (_, expiry)| expiry.is_none_or(|at| at > now_ms));
            call(tables, now_ms)
        })
    }

    fn end(&mut self, commit: bool) -> StoreResult<()> {
        let txn = self.txn.take().ok_or(StoreError::NoTransaction)?;
        let id = self.id;
        self.store.tables.with(|tables| {
            if commit {
                apply(tables, txn);
            }
            release(tables, id);
        });
        Ok(())
    }
}

impl<L: Lock<Tables>> Store for MemoryConnection<L> {
    async fn begin(&mut self) -> StoreResult<()> {
        if self.txn.is_some() {
            return Err(StoreError::NoTransaction);
        }
        self.acquire();
        self.txn = Some(Txn::default());
        Ok(())
    }
    async fn commit(&mut self) -> StoreResult<()> {
        self.end(true)
    }
    async fn rollback(&mut self) -> StoreResult<()> {
        self.end(false)
    }
    async fn insert_if_absent(&mut self, table: &str, key: &str, value: &str) -> StoreResult<bool> {
        Ok(self.rows(|tables, txn| {
            let absent = read(tables, txn, table, key).is_none();
            if absent {
                write(txn, table, key, Some(value));
            }
            absent
        }))
    }
    async fn get(&mut self, table: &str, key: &str) -> StoreResult<Option<String>> {
        Ok(self.rows(|tables, txn| read(tables, txn, table, key)))
    }
    async fn update(
        &mut self,
        table: &str,
        key: &str,
        value: &str,
        expected: Option<&str>,
    ) -> StoreResult<bool> {
        Ok(self.rows(|tables, txn| {
            let current = read(tables, txn, table, key);
            let matches = match expected {
                Some(expected) => current.as_deref() == Some(expected),
                None => current.is_some(),
            };
            if matches {
                write(txn, table, key, Some(value));
            }
            matches
        }))
    }
    async fn delete(&mut self, table: &str, key: &str) -> StoreResult<bool> {
        Ok(self.rows(|tables, txn| {
            let present = read(tables, txn, table, key).is_some();
            write(txn, table, key, None);
            present
        }))
    }
    async fn scan(&mut self, table: &str) -> StoreResult<Vec<String>> {
        Ok(self.rows(|tables, txn| scan(tables, txn, table)))
    }
    async fn insert_effect(&mut self, table: &str, value: &str) -> StoreResult<u64> {
        Ok(self.rows(|tables, txn| {
            txn.effects.push((table.to_string(), value.to_string()));
            let committed = tables.effects.iter().filter(|(t, _)| t == table).count();
            let pending = txn.effects.iter().filter(|(t, _)| t == table).count();
            (committed + pending) as u64
        }))
    }
    async fn kv_set(&mut self, key: &str, value: &str, mode: SetMode) -> StoreResult<bool> {
        Ok(self.kv(|tables, now_ms| {
            if mode.if_absent && tables.kv.contains_key(key) {
                return false;
            }
            let expiry = mode.ttl_ms.map(|ttl_ms| now_ms + ttl_ms);
            tables
                .kv
                .insert(key.to_string(), (value.to_string(), expiry));
            true
        }))
    }
    async fn kv_get(&mut self, key: &str) -> StoreResult<Option<String>> {
        Ok(self.kv(|tables, _| tables.kv.get(key).map(|(value, _)| value.clone())))
    }
    async fn kv_del(&mut self, key: &str) -> StoreResult<bool> {
        Ok(self.kv(|tables, _| tables.kv.remove(key).is_some()))
    }
    async fn kv_expire(&mut self, key: &str, ttl_ms: u64) -> StoreResult<bool> {
        Ok(self.kv(|tables, now_ms| match tables.kv.get_mut(key) {
            Some((_, expiry)) => {
                *expiry = Some(now_ms + ttl_ms);
                true
            }
            None => false,
        }))
    }
    async fn provider_charge(
        &mut self,
        idempotency_key: Option<&str>,
        body: &str,
    ) -> StoreResult<String> {
        Ok(self.kv(|tables, _| {
            let earlier = idempotency_key.and_then(|key| {
                tables
                    .charges
                    .iter()
                    .position(|(charged, _)| charged.as_deref() == Some(key))
            });
            let index = earlier.unwrap_or_else(|| {
                tables
                    .charges
                    .push((idempotency_key.map(str::to_string), body.to_string()));
                tables.charges.len() - 1
            });
            format!("ch_{}", index + 1)
        }))
    }
    async fn now_ms(&mut self) -> StoreResult<u64> {
        Ok(self.store.clock.now_ms())
    }
    async fn external_call(
        &mut self,
        call: &str,
        idempotency_key: Option<&str>,
        body: &str,
    ) -> StoreResult<String> {
        Ok(self.kv(|tables, _| {
            let same = |(name, key, _): &(String, Option<String>, String)| {
                name == call && idempotency_key.is_some() && key.as_deref() == idempotency_key
            };
            let index = tables.calls.iter().position(same).unwrap_or_else(|| {
                let key = idempotency_key.map(str::to_string);
                tables.calls.push((call.to_string(), key, body.to_string()));
                tables.calls.len() - 1
            });
            let number = tables.calls[..=index]
                .iter()
                .filter(|(name, _, _)| name == call)
                .count();
            format!("{call}_{number}")
        }))
    }
}
