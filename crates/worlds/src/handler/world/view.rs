//! The handler world's state as the trace explorer's panels: committed rows, effects, key-value entries, charges,
//! then the moving parts (network, processes, clients, budgets).

use super::*;
use crate::check::{self, Row};
use crate::handler::api::{Handler, Worker};
use crate::handler::sim::Committed;

impl<H: Handler, W: Worker> HandlerWorld<H, W> {
    /// The explorer's panels: committed rows, effects, key-value entries, charges, then the moving parts.
    pub(super) fn panels(&self, state: &HandlerState) -> check::StateView {
        let mut view = check::StateView::default();
        view.panel("Store", store_rows(&state.store))
            .panel("Effects and provider charges", effect_rows(&state.store))
            .panel("Network (in flight)", network_rows(state))
            .panel("Processes", self.process_rows(state))
            .panel("Clients", client_rows(state))
            .panel("Fault budgets left", self.budget_rows(state));
        view
    }

    /// Each process (`P1`...) and worker (`W1`...): idle, or what it serves and its next call.
    fn process_rows(&self, state: &HandlerState) -> Vec<Row> {
        let procs = state.procs.iter().enumerate().map(|(n, job)| {
            let text = job.as_ref().map_or("idle".to_string(), |job| {
                let open = if job.txn.is_some() {
                    ", transaction open"
                } else {
                    ""
                };
                let task = match job.task.serving() {
                    Some((from, attempt)) => format!("{} attempt {attempt}", op(from.ghost())),
                    None => format!("worker run, for {}", op(job.task.ghost())),
                };
                let next = match job.next() {
                    super::Next::Call(call) => call.text(),
                    super::Next::Reply(reply) => format!("answer {} {}", reply.status, reply.body),
                };
                format!(
                    "{task}, {} calls answered{open}; next: {next}",
                    job.answered().len(),
                )
            });
            let name = if self.is_worker(n as u8) {
                format!("W{}", n as u8 - self.processes + 1)
            } else {
                format!("P{}", n + 1)
            };
            Row::new(name, text)
        });
        procs.collect()
    }

    /// What is left of each fault's budget, then of each call fault's.
    fn budget_rows(&self, state: &HandlerState) -> Vec<Row> {
        let budgets = <HandlerFault as strum::IntoEnumIterator>::iter()
            .zip(state.budgets.to_array())
            .map(|(fault, left)| Row::new(<&str>::from(fault), format!("{left} left")))
            .chain(
                (self.call_faults.iter().zip(state.call_budgets.to_array()))
                    .map(|(fault, left)| Row::new(fault.name(), format!("{left} left"))),
            );
        budgets.collect()
    }
}

/// The operation a ghost stands for: `C1.op2`.
fn op(ghost: u16) -> String {
    format!("C{}.op{}", ghost / 16 + 1, ghost % 16 + 1)
}

/// Committed rows, key-value entries, then the clock and the write lock.
fn store_rows(store: &Committed) -> Vec<Row> {
    let mut rows: Vec<Row> = (store.rows.iter())
        .map(|((table, key), (value, ghost))| {
            Row::new(
                format!("{table}[{key}]"),
                format!("{value} (for {})", op(*ghost)),
            )
        })
        .collect();
    rows.extend(store.kv.iter().map(|(key, (value, expiry))| {
        Row::new(
            format!("kv {key}"),
            match expiry {
                Some(at_ms) => format!("{value} (expires at {at_ms} ms)"),
                None => format!("{value} (no expiry)"),
            },
        )
    }));
    let lock = store
        .writer
        .map_or("free".to_string(), |proc| format!("held by P{}", proc + 1));
    rows.push(Row::new(
        "clock",
        format!("{} ms, write lock {lock}", store.now_ms),
    ));
    rows
}

/// Effects, provider charges, then external calls made.
fn effect_rows(store: &Committed) -> Vec<Row> {
    let keyed = |key: &Option<String>, ghost: u16| match key {
        Some(key) => format!("for {}, idempotency key {key}", op(ghost)),
        None => format!("for {}, no idempotency key", op(ghost)),
    };
    let effects = (store.effects.iter().enumerate())
        .map(|(n, (table, value, ghost))| {
            Row::new(
                format!("{table} #{}", n + 1),
                format!("{value}, for {}", op(*ghost)),
            )
        })
        .chain(store.charges.iter().enumerate().map(|(n, (key, ghost))| {
            Row::new(format!("provider charge #{}", n + 1), keyed(key, *ghost))
        }))
        .chain(
            (store.calls.iter().enumerate()).map(|(n, (call, key, ghost))| {
                Row::new(format!("{call} call #{}", n + 1), keyed(key, *ghost))
            }),
        );
    effects.collect()
}

fn network_rows(state: &HandlerState) -> Vec<Row> {
    let network = (state.network.iter()).map(|(message, copies)| {
        let label = super::describe::message_name(message);
        Row::new(label, format!("{copies} copy(ies)"))
    });
    network.collect()
}

fn client_rows(state: &HandlerState) -> Vec<Row> {
    let clients = state.clients.iter().enumerate().map(|(n, client)| {
        Row::new(
            format!("C{}", n + 1),
            format!(
                "op{} attempt {}, {}; told {}",
                client.op + 1,
                client.attempts,
                client.phase.text(),
                outcomes_text(&client.outcomes)
            ),
        )
    });
    clients.collect()
}

/// What a client was told, for the explorer's panel.
fn outcomes_text(outcomes: &[OpOutcome]) -> String {
    if outcomes.is_empty() {
        return "nothing yet".to_string();
    }
    let told: Vec<String> = outcomes
        .iter()
        .map(|outcome| match outcome {
            OpOutcome::Pending => "pending".to_string(),
            OpOutcome::Succeeded(reply) => format!("{} {}", reply.status, reply.body),
            OpOutcome::Failed(status) => format!("failed with {status}"),
            OpOutcome::GaveUp => "gave up".to_string(),
        })
        .collect();
    told.join(", ")
}

impl Phase {
    pub(super) fn text(&self) -> &'static str {
        match self {
            Phase::Ready {
                after_conflict: false,
            } => "ready to send",
            Phase::Ready {
                after_conflict: true,
            } => "ready to send after a 409",
            Phase::Waiting => "waiting",
            Phase::Done => "done",
            Phase::Patient => "told 409 with no attempts left, asks again later",
        }
    }
}
