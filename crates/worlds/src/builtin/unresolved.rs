//! What a liveness counterexample leaves unresolved at rest, as data read from its final state (which operation,
//! which record, which budget ran out), and the slice of its path that the unresolved operation depends on: its
//! client's steps, the steps of processes handling its client's messages, and the steps on the records those
//! messages touched. The rest of the path is other clients' traffic, which a reader can skip.

use super::action::Action;
use super::config::{Fault, Faults};
use super::properties::WorldProperty;
use super::state::{
    ClientPhase, Key, Message, OpOutcome, OpRef, Proc, RecordStatus, Request, State,
};
use super::world::World;
use crate::check;
use serde::Serialize;
use std::collections::BTreeSet;

/// Why an operation or a record is unresolved at rest.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Reason {
    /// The client used every attempt it may charge and stopped, the outcome unknown to it.
    GaveUp,
    /// The client is still waiting or ready, and nothing but a fault can happen any more.
    NeverAnswered,
    /// The record stays in_progress, its lease (if any) held by nobody alive.
    StuckInProgress,
}

/// One thing left unresolved at rest.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Unresolved {
    /// The operation, as the timeline names it (`C2.op1`; queue worlds: the event, `E2`).
    pub operation: String,
    #[serde(skip)]
    pub op: OpRef,
    /// Its record in the store (the key's name), when there is one.
    pub record: Option<String>,
    #[serde(skip)]
    pub key: Option<Key>,
    /// What that record holds at rest.
    pub record_status: Option<String>,
    pub reason: Reason,
    /// The client's attempts used and allowed (`clients.max-attempts`).
    pub attempts_used: u8,
    pub attempts_max: u8,
    /// The fault budgets used up along the path, by their model-file names.
    pub faults_exhausted: Vec<String>,
}

impl Unresolved {
    /// The short form the diagrams' last step carries ("C2.op1 never resolves: its client gave up, ...").
    pub fn short(&self) -> String {
        match self.reason {
            Reason::StuckInProgress => format!(
                "{} stays in_progress",
                self.record.as_deref().unwrap_or("a key")
            ),
            Reason::GaveUp => format!(
                "{} never resolves: its client gave up, the outcome unknown",
                self.operation
            ),
            Reason::NeverAnswered => format!(
                "{} never resolves: it never gets a definite answer",
                self.operation
            ),
        }
    }

    /// The whole sentence: what, why, the record and the budgets that ran out.
    pub fn sentence(&self) -> String {
        let mut text = match self.reason {
            Reason::GaveUp => format!(
                "{} is unresolved: its client gave up after {} of {} attempts (clients.max-attempts ran out), \
                 not knowing the outcome",
                self.operation, self.attempts_used, self.attempts_max
            ),
            Reason::NeverAnswered => format!(
                "{} is unresolved: its client never gets a definite answer ({} of {} attempts used)",
                self.operation, self.attempts_used, self.attempts_max
            ),
            Reason::StuckInProgress => format!(
                "{} stays in_progress for {}, and no process that could finish it is alive",
                self.record.as_deref().unwrap_or("a key"),
                self.operation
            ),
        };
        match (&self.record, &self.record_status, self.reason) {
            (_, _, Reason::StuckInProgress) => {}
            (Some(record), Some(status), _) => {
                text.push_str(&format!("; its record {record} is {status}"))
            }
            _ => text.push_str("; the store has no record of it"),
        }
        if !self.faults_exhausted.is_empty() {
            text.push_str(&format!(
                "; fault budgets used up: {}",
                self.faults_exhausted.join(", ")
            ));
        }
        text
    }
}

/// A liveness counterexample explained at its end: what stays unresolved, and the steps that depend on it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct AtRest {
    pub unresolved: Vec<Unresolved>,
    /// The 1-based numbers of the steps the unresolved operations depend on, in path order.
    pub slice_steps: Vec<usize>,
}

impl World {
    /// `actions` (a counterexample of `property`) explained at its end; `Ok(None)` for a safety property or a
    /// path whose end leaves nothing unresolved, `Err(step)` when step `step` is not enabled.
    pub fn at_rest(
        &self,
        property: WorldProperty,
        actions: &[Action],
    ) -> Result<Option<AtRest>, usize> {
        if property.kind() != super::properties::PropertyKind::Eventually {
            return Ok(None);
        }
        let run = check::timeline(self, actions)?;
        let unresolved = self.unresolved(property, run.last_state());
        if unresolved.is_empty() {
            return Ok(None);
        }
        let slice_steps = self
            .slice(&run, &unresolved)
            .into_iter()
            .map(|index| index + 1)
            .collect();
        Ok(Some(AtRest {
            unresolved,
            slice_steps,
        }))
    }

    /// What fails a liveness property in `state` (at rest), in the order of keys and then of operations: each
    /// key stuck in_progress, or each operation that never resolves. Empty for a safety property or a state
    /// where it holds.
    pub fn unresolved(&self, property: WorldProperty, state: &State) -> Vec<Unresolved> {
        let clients = self.clients();
        let exhausted = exhausted_faults(self.faults(), state);
        let record_of = |op: OpRef| {
            state
                .store
                .records
                .iter()
                .find(|(_, record)| record.op == op)
                .map(|(key, record)| (*key, record))
        };
        let item = |op: OpRef, reason: Reason, key: Option<Key>| {
            let mut found = self.unresolved_item(state, op, reason, key);
            found.faults_exhausted = exhausted.clone();
            found
        };
        match property {
            WorldProperty::NoStuckKey => state
                .store
                .records
                .iter()
                .filter(|(_, record)| {
                    matches!(
                        record.status,
                        RecordStatus::InProgress {
                            lease_expired: false,
                            ..
                        }
                    )
                })
                .map(|(key, record)| item(record.op, Reason::StuckInProgress, Some(*key)))
                .collect(),
            WorldProperty::EventuallyResolves => {
                let mut found = Vec::new();
                for (client, client_state) in state.clients.iter().enumerate() {
                    for op in 0..clients.operations.len() {
                        let reason = match client_state.outcomes[op] {
                            OpOutcome::GaveUp => Reason::GaveUp,
                            OpOutcome::Pending => Reason::NeverAnswered,
                            _ => continue,
                        };
                        let op = OpRef {
                            client: client as u8,
                            op: op as u8,
                        };
                        found.push(item(op, reason, record_of(op).map(|(key, _)| key)));
                    }
                }
                found
            }
            _ => Vec::new(),
        }
    }

    /// The 0-based indices of `run`'s steps that `unresolved` depends on: steps of its clients, deliveries,
    /// losses and copies of their messages, steps (crashes and failures included) of processes handling their
    /// requests, and expiries of the records their requests touched. In path order.
    pub fn slice(&self, run: &check::Run<World>, unresolved: &[Unresolved]) -> Vec<usize> {
        let clients: BTreeSet<u8> = unresolved.iter().map(|item| item.op.client).collect();
        let mut keys: BTreeSet<Key> = unresolved.iter().filter_map(|item| item.key).collect();
        for state in &run.states {
            for message in state.network.keys() {
                if let Message::Request(request) = message {
                    if clients.contains(&request.from.client) {
                        keys.insert(request.key);
                    }
                }
            }
        }
        let request_relevant = |request: &Request| {
            clients.contains(&request.from.client) || keys.contains(&request.key)
        };
        let message_relevant = |message: &Message| match message {
            Message::Request(request) => request_relevant(request),
            Message::Response(response) => clients.contains(&response.to.client),
        };
        let proc_relevant = |state: &State, proc: u8| match state.procs[usize::from(proc)] {
            Proc::Busy(job) => request_relevant(&job.request),
            Proc::Idle => false,
        };
        (0..run.steps.len())
            .filter(|&index| {
                let before = &run.states[index];
                match run.steps[index].action {
                    Action::Send { client }
                    | Action::Timeout { client }
                    | Action::Republish { client, .. } => clients.contains(&client),
                    Action::DeliverRequest { request, .. } => request_relevant(&request),
                    Action::DeliverResponse { response } => clients.contains(&response.to.client),
                    Action::Drop { message } | Action::Duplicate { message } => {
                        message_relevant(&message)
                    }
                    Action::Step { proc } | Action::Crash { proc } | Action::Fail { proc } => {
                        proc_relevant(before, proc)
                    }
                    Action::ExpireKey { key } | Action::ExpireLease { key } => keys.contains(&key),
                }
            })
            .collect()
    }

    /// One unresolved operation `op` and its record under `key`, as `state` leaves them (fault budgets apart).
    fn unresolved_item(
        &self,
        state: &State,
        op: OpRef,
        reason: Reason,
        key: Option<Key>,
    ) -> Unresolved {
        let attempts_max = self.clients().attempts_max;
        let client = &state.clients[usize::from(op.client)];
        let current = client.phase != ClientPhase::Done && client.op == op.op;
        let record = key.and_then(|key| state.store.records.get(&key).map(|r| (key, r)));
        Unresolved {
            operation: self.op_label(op),
            op,
            record: record.map(|(key, _)| self.key_label(key)),
            key: record.map(|(key, _)| key),
            record_status: record.map(|(_, record)| self.record_status_text(&record.status)),
            reason,
            // A client gives up only with every attempt used; its counters are reset once the operation ended.
            attempts_used: match reason {
                Reason::GaveUp => attempts_max,
                _ if current => client.charged,
                _ => 0,
            },
            attempts_max,
            faults_exhausted: Vec::new(),
        }
    }

    fn record_status_text(&self, status: &RecordStatus) -> String {
        match *status {
            RecordStatus::InProgress {
                token,
                lease_expired,
            } => {
                let lease = if lease_expired {
                    "lease expired"
                } else {
                    "lease held"
                };
                format!("in_progress (token {token}, {lease})")
            }
            RecordStatus::Completed {
                code,
                payload: Some(payment),
            } => {
                format!("completed ({code}, payment {payment})")
            }
            RecordStatus::Completed {
                code,
                payload: None,
            } => format!("completed ({code})"),
        }
    }
}

/// The fault budgets the model allows that `state` has none left of, by their model-file names.
fn exhausted_faults(faults: Faults, state: &State) -> Vec<String> {
    Fault::all()
        .filter(|fault| faults.get(*fault) > 0 && !state.budgets.has(fault.index()))
        .map(|fault| format!("{fault} ({total} of {total})", total = faults.get(fault)))
        .collect()
}
