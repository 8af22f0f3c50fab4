//! Store calls and their answers as data: what the checker records of a handler run, hashes into the state, and
//! replays (see `replay`).

use super::api::{SetMode, StoreError};

/// One store call, with its arguments.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Call {
    Begin,
    Commit,
    Rollback,
    InsertIfAbsent {
        table: String,
        key: String,
        value: String,
    },
    Get {
        table: String,
        key: String,
    },
    Update {
        table: String,
        key: String,
        value: String,
        expected: Option<String>,
    },
    Delete {
        table: String,
        key: String,
    },
    Scan {
        table: String,
    },
    InsertEffect {
        table: String,
        value: String,
    },
    KvSet {
        key: String,
        value: String,
        mode: SetMode,
    },
    KvGet {
        key: String,
    },
    KvDel {
        key: String,
    },
    KvExpire {
        key: String,
        ttl_ms: u64,
    },
    ProviderCharge {
        idempotency_key: Option<String>,
        body: String,
    },
    Now,
}

/// What a call returned.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Answer {
    Done,
    Flag(bool),
    Row(Option<String>),
    Id(u64),
    Text(String),
    Keys(Vec<String>),
    Time(u64),
    Failed(StoreError),
}

impl Call {
    /// A short name for timelines.
    pub fn name(&self) -> &'static str {
        match self {
            Call::Begin => "BEGIN",
            Call::Commit => "COMMIT",
            Call::Rollback => "ROLLBACK",
            Call::InsertIfAbsent { .. } => "insert-if-absent",
            Call::Get { .. } => "get",
            Call::Update { .. } => "update",
            Call::Delete { .. } => "delete",
            Call::Scan { .. } => "scan",
            Call::InsertEffect { .. } => "insert-effect",
            Call::KvSet { .. } => "kv-set",
            Call::KvGet { .. } => "kv-get",
            Call::KvDel { .. } => "kv-del",
            Call::KvExpire { .. } => "kv-expire",
            Call::ProviderCharge { .. } => "provider-charge",
            Call::Now => "now",
        }
    }

    /// Whether the call reads or writes table rows (and so needs the process's transaction, if any).
    pub fn in_transaction(&self) -> bool {
        matches!(
            self,
            Call::InsertIfAbsent { .. }
                | Call::Get { .. }
                | Call::Update { .. }
                | Call::Delete { .. }
                | Call::Scan { .. }
                | Call::InsertEffect { .. }
        )
    }
}
