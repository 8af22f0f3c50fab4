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
    /// A call to another service by its name (`capture`, `refund`, `webhook`): see `Store::external_call`.
    External {
        call: String,
        idempotency_key: Option<String>,
        body: String,
    },
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
            Call::External { .. } => "external-call",
        }
    }

    /// What a call fault names (`CallFault`): an external call's own name (`capture`), any other call's `name`.
    pub fn kind(&self) -> &str {
        match self {
            Call::External { call, .. } => call,
            other => other.name(),
        }
    }

    /// The call as timelines show it: its name and arguments, rows as `table[key]`, values as written.
    pub fn text(&self) -> String {
        let name = self.name();
        match self {
            Call::Begin | Call::Commit | Call::Rollback | Call::Now => name.to_string(),
            Call::InsertIfAbsent { table, key, value } => {
                format!("{name} {table}[{key}] = {value}")
            }
            Call::Get { table, key } | Call::Delete { table, key } => {
                format!("{name} {table}[{key}]")
            }
            Call::Update {
                table,
                key,
                value,
                expected,
            } => match expected {
                Some(expected) => format!("{name} {table}[{key}] = {value} if it holds {expected}"),
                None => format!("{name} {table}[{key}] = {value}"),
            },
            Call::Scan { table } => format!("{name} {table}"),
            Call::InsertEffect { table, value } => format!("{name} {table} {value}"),
            Call::KvSet { key, value, mode } => {
                let nx = if mode.if_absent { " NX" } else { "" };
                let px = mode
                    .ttl_ms
                    .map_or(String::new(), |ttl| format!(" PX {ttl}"));
                format!("{name} {key} = {value}{nx}{px}")
            }
            Call::KvGet { key } | Call::KvDel { key } => format!("{name} {key}"),
            Call::KvExpire { key, ttl_ms } => format!("{name} {key} in {ttl_ms} ms"),
            Call::ProviderCharge {
                idempotency_key,
                body,
            } => match idempotency_key {
                Some(key) => format!("{name} {body} with key {key}"),
                None => format!("{name} {body} without a key"),
            },
            Call::External {
                call,
                idempotency_key,
                body,
            } => match idempotency_key {
                Some(key) => format!("{call} {body} with key {key}"),
                None => format!("{call} {body} without a key"),
            },
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

#[cfg(test)]
mod tests {
    use super::Call;
    use crate::handler::SetMode;

    #[test]
    fn calls_read_as_their_arguments() {
        let row = |value: &str| value.to_string();
        let insert = Call::InsertIfAbsent {
            table: row("keys"),
            key: row("k0"),
            value: row("in_progress"),
        };
        assert_eq!(insert.text(), "insert-if-absent keys[k0] = in_progress");
        let update = Call::Update {
            table: row("keys"),
            key: row("k0"),
            value: row("{\"payment\":1}"),
            expected: Some(row("in_progress")),
        };
        assert_eq!(
            update.text(),
            "update keys[k0] = {\"payment\":1} if it holds in_progress"
        );
        let set = Call::KvSet {
            key: row("k0"),
            value: row("v"),
            mode: SetMode {
                if_absent: true,
                ttl_ms: Some(500),
            },
        };
        assert_eq!(set.text(), "kv-set k0 = v NX PX 500");
        assert_eq!(Call::Commit.text(), "COMMIT");
        let charge = Call::ProviderCharge {
            idempotency_key: None,
            body: row("{}"),
        };
        assert_eq!(charge.text(), "provider-charge {} without a key");
    }
}
