//! Traces that know their run. Each process step records the call it makes (its kind and the key it touches;
//! for a reply, its status), so a trace found on one design and replayed on another stops at the first step where
//! their calls part, and says why (`check::Diverged::reason`), instead of replaying process numbers that happen
//! to line up. And the step texts print what otherwise moves silently: the clock (a pause, a Retry-After wait,
//! any step that advances time) and the value a write replaces (the old value of an unconditional update).

use super::*;
use crate::handler::api::{Handler, Worker};
use crate::handler::calls::Call;
use crate::handler::replay::Next;
use crate::handler::sim::{Committed, Txn};
use std::collections::BTreeSet;
use std::sync::Mutex;

/// What a process's step does, as its action records it: the call's kind and the key it touches (a row as
/// `table[key]`, a table for `scan` and `insert-effect`, a key-value key, a provider idempotency key), or
/// `answer` and the reply's status (`end-of-run` for a worker). Values are left out: two designs that write different record formats under
/// the same keys still run the same trace. Small and `Copy`, made once per prefix (see `prefix`), so listing a
/// state's actions allocates nothing.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Made {
    pub kind: &'static str,
    pub key: Option<&'static str>,
}

impl Made {
    /// What a process whose run is at `next` does in its next step.
    pub fn of(next: &Next) -> Made {
        match next {
            Next::Call(call) => Made {
                kind: kind(call),
                key: key_of(call).map(|key| intern(&key)),
            },
            // A worker's run ends with status 0 (see `Activation`): it answers no one.
            Next::Reply(reply) if reply.status == 0 => Made {
                kind: "end-of-run",
                key: None,
            },
            Next::Reply(reply) => Made {
                kind: "answer",
                key: Some(intern(&reply.status.to_string())),
            },
        }
    }
}

impl std::fmt::Display for Made {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.key {
            Some(key) if self.kind == "answer" => write!(f, "answer {key}"),
            Some(key) => write!(f, "{} on {key}", self.kind),
            None if self.kind == "provider-charge" => write!(f, "provider-charge without a key"),
            None => write!(f, "{}", self.kind),
        }
    }
}

/// A call's kind: its name, with a compare-and-set update and a `SET NX` told apart from the plain writes (the
/// difference between many a bug and its fix).
fn kind(call: &Call) -> &'static str {
    match call {
        Call::Update {
            expected: Some(_), ..
        } => "update-if-holds",
        Call::KvSet { mode, .. } if mode.if_absent => "kv-set-nx",
        Call::External { call, .. } => intern(call),
        other => other.name(),
    }
}

fn key_of(call: &Call) -> Option<String> {
    match call {
        Call::InsertIfAbsent { table, key, .. }
        | Call::Get { table, key }
        | Call::Update { table, key, .. }
        | Call::Delete { table, key } => Some(format!("{table}[{key}]")),
        Call::Scan { table } | Call::InsertEffect { table, .. } => Some(table.clone()),
        Call::KvSet { key, .. }
        | Call::KvGet { key }
        | Call::KvDel { key }
        | Call::KvExpire { key, .. } => Some(key.clone()),
        Call::ProviderCharge {
            idempotency_key, ..
        }
        | Call::External {
            idempotency_key, ..
        } => idempotency_key.clone(),
        Call::Begin | Call::Commit | Call::Rollback | Call::Now => None,
    }
}

/// Keys as `&'static str`, one copy each, so that `Made` is `Copy`. Leaked on purpose: a world's keys are few
/// (derived from its requests' keys), and the prefix cache that meets them keeps far more for its world's life.
/// Looked up once per new prefix, never per state.
fn intern(text: &str) -> &'static str {
    static KEYS: Mutex<BTreeSet<&'static str>> = Mutex::new(BTreeSet::new());
    let mut keys = KEYS.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    if let Some(known) = keys.get(text) {
        return known;
    }
    let leaked: &'static str = Box::leak(text.to_string().into_boxed_str());
    keys.insert(leaked);
    leaked
}

impl<H: Handler, W: Worker> HandlerWorld<H, W> {
    /// The action that runs process `proc`'s next step in `state`, as a trace records it (`None`: it is idle).
    pub fn step_action(&self, state: &HandlerState, proc: u8) -> Option<HandlerAction> {
        let job = state.procs.get(proc as usize)?.as_ref()?;
        Some(HandlerAction::Step {
            proc,
            made: job.prefix.made(),
        })
    }

    /// Why `action` (a trace's step, found on this design or another) is not enabled in `state`.
    pub(super) fn why_not_here(&self, state: &HandlerState, action: &HandlerAction) -> String {
        match action {
            HandlerAction::Step { proc, made } => self.why_not_step(state, *proc, *made),
            HandlerAction::Send { client } | HandlerAction::Timeout { client } => {
                match state.clients.get(*client as usize) {
                    Some(current) => format!(
                        "C{} is {} here, at op{} attempt {}",
                        client + 1,
                        current.phase.text(),
                        current.op + 1,
                        current.attempts
                    ),
                    None => format!("there is no client C{}", client + 1),
                }
            }
            HandlerAction::DeliverRequest { message, .. }
            | HandlerAction::DeliverResponse { message }
            | HandlerAction::Drop { message }
            | HandlerAction::Duplicate { message } => {
                let name = super::describe::message_name(message);
                if state.network.contains_key(message) {
                    format!("{name} is in flight, but no process is idle or the budget is spent")
                } else {
                    format!("{name} is not in flight here")
                }
            }
            HandlerAction::Crash { proc }
            | HandlerAction::Fail { proc }
            | HandlerAction::CallFault { proc, .. } => format!(
                "{} is idle here, or its budget is spent",
                self.proc_label(*proc)
            ),
            HandlerAction::Wake { worker } => {
                format!("W{} is busy, or has nothing new to see", worker + 1)
            }
            HandlerAction::Pause => "no process is busy, or no pause is left".to_string(),
            HandlerAction::Later => {
                "the world is not at rest here, or no lease or TTL is left to run out".to_string()
            }
        }
    }

    fn why_not_step(&self, state: &HandlerState, proc: u8, made: Made) -> String {
        let name = self.proc_label(proc);
        let Some(slot) = state.procs.get(proc as usize) else {
            return format!("there is no process {name}");
        };
        let Some(job) = slot else {
            return format!("{name} is idle here; in the trace it made {made}");
        };
        let here = job.prefix.made();
        if here != made {
            let next = match job.next() {
                Next::Call(call) => call.text(),
                Next::Reply(reply) => format!("answer {} {}", reply.status, reply.body),
            };
            // The kind and key in brackets where the call's text does not start with them.
            let here = if next.starts_with(here.kind) && here.key.is_none() {
                String::new()
            } else {
                format!(" ({here})")
            };
            return format!(
                "the calls differ: {name}'s next step here is `{next}`{here}; in the trace it was {made}"
            );
        }
        let holder = state
            .store
            .writer
            .map_or("another process".to_string(), |writer| {
                self.proc_label(writer)
            });
        format!("{name}'s {made} waits for the write lock, which {holder} holds")
    }

    fn proc_label(&self, proc: u8) -> String {
        if self.is_worker(proc) {
            format!("W{}", proc - self.processes + 1)
        } else {
            format!("P{}", proc + 1)
        }
    }

    /// What a step's text adds: a Retry-After wait, the value a write replaces, and the clock when it moved.
    pub(super) fn notes(
        &self,
        before: &HandlerState,
        action: &HandlerAction,
        after: &HandlerState,
    ) -> String {
        let mut notes = String::new();
        match action {
            HandlerAction::Send { client } => {
                let waited = matches!(
                    before.clients[*client as usize].phase,
                    Phase::Ready {
                        after_conflict: true
                    }
                );
                if let (true, Some(wait_ms)) = (waited, self.retry_after_ms) {
                    notes.push_str(&format!(" after waiting {wait_ms} ms (Retry-After)"));
                }
            }
            HandlerAction::Step { proc, .. } => {
                if let Some(job) = &before.procs[*proc as usize] {
                    if let Next::Call(call) = job.next() {
                        notes.push_str(&replaced(&before.store, job.txn.as_ref(), call));
                    }
                }
            }
            _ => {}
        }
        let (then_ms, now_ms) = (before.store.now_ms, after.store.now_ms);
        if then_ms != now_ms {
            notes.push_str(&format!("; clock {then_ms} ms -> {now_ms} ms"));
        }
        notes
    }
}

/// What a write finds where it writes, as the process sees it: the value it replaces, or why it writes nothing.
fn replaced(store: &Committed, txn: Option<&Txn>, call: &Call) -> String {
    match call {
        Call::Update {
            table,
            key,
            expected,
            ..
        } => match (store.row(txn, table, key), expected) {
            (None, _) => " (no such row: nothing written)".to_string(),
            (Some((old, _)), Some(expected)) if old != *expected => {
                format!(" (it holds {old}: nothing written)")
            }
            (Some((old, _)), _) => format!(" (replaces {old})"),
        },
        Call::Delete { table, key } => match store.row(txn, table, key) {
            Some((old, _)) => format!(" (removes {old})"),
            None => String::new(),
        },
        Call::KvSet { key, mode, .. } => {
            let live = store
                .kv
                .get(key)
                .filter(|(_, expiry)| expiry.is_none_or(|at_ms| at_ms > store.now_ms));
            match (live, mode.if_absent) {
                (Some((old, _)), true) => format!(" (it holds {old}: nothing written)"),
                (Some((old, _)), false) => format!(" (replaces {old})"),
                (None, _) => String::new(),
            }
        }
        _ => String::new(),
    }
}

#[cfg(test)]
#[path = "trace_tests.rs"]
mod tests;
