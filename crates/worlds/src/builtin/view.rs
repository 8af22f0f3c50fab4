//! The worlds' states as the trace explorer shows them (`check::Model::view`): the store's records, the
//! payments and provider charges with their operations, what the ghost ledger counts per operation, the
//! messages in flight, each process and its open transaction, each client and what it was told, and the fault
//! budgets left. Labels name things that live on (a key, a payment, a process), so the explorer can highlight
//! what a step changed; every panel is listed in the state's own (sorted) order.

use super::config::Fault;
use super::state::*;
use super::world::{HttpWorld, QueueWorld, WorldOf};
use crate::check::{Row, StateView};
use crate::protocol::fingerprint;

/// How a role names its things; everything else about the view is shared. (Public only so that the bound
/// below is no less visible than the impl; the module is private.)
pub trait Names {
    fn key(&self, key: Key) -> String;
    fn op(&self, op: OpRef) -> String;
    fn message(&self, message: &Message) -> String;
    /// The first hex digits of the fingerprint the server stores for `body`, if the role has one.
    fn fingerprint_prefix(&self, body: u8) -> Option<String>;
}

/// Hex digits of a fingerprint shown: enough to tell bodies apart at a glance.
const FINGERPRINT_PREFIX_CHARS: usize = 8;

impl Names for HttpWorld {
    fn key(&self, key: Key) -> String {
        self.key_name(key)
    }

    fn op(&self, op: OpRef) -> String {
        format!("C{}.op{}", op.client + 1, op.op + 1)
    }

    fn message(&self, message: &Message) -> String {
        self.message_name(message)
    }

    fn fingerprint_prefix(&self, body: u8) -> Option<String> {
        let body = &self.bodies[body as usize];
        let policy = self.server.protocol.fingerprint;
        let hex = fingerprint(policy, body.text.as_bytes(), &body.json).to_hex();
        Some(hex[..FINGERPRINT_PREFIX_CHARS].to_string())
    }
}

impl Names for QueueWorld {
    fn key(&self, key: Key) -> String {
        self.inbox_key_name(key)
    }

    fn op(&self, op: OpRef) -> String {
        self.event_name(op)
    }

    fn message(&self, message: &Message) -> String {
        match message {
            Message::Request(request) => self.delivery_name(request),
            Message::Response(response) => format!(
                "ack {} for {} delivery {}",
                response.code,
                self.event_name(response.to),
                response.attempt
            ),
        }
    }

    fn fingerprint_prefix(&self, _body: u8) -> Option<String> {
        None
    }
}

impl<S> WorldOf<S>
where
    WorldOf<S>: Names,
{
    /// `state` as panels, in a fixed order.
    pub(super) fn state_view(&self, state: &State) -> StateView {
        let mut view = StateView::default();
        view.panel("Store", self.store_rows(state))
            .panel("Payments and provider charges", self.effect_rows(state))
            .panel("Ghost ledger (per operation)", self.ledger_rows(state))
            .panel("Network (in flight)", self.network_rows(state))
            .panel("Processes", self.process_rows(state))
            .panel("Clients", self.client_rows(state))
            .panel("Fault budgets left", self.budget_rows(state));
        view
    }

    fn store_rows(&self, state: &State) -> Vec<Row> {
        let mut rows: Vec<Row> = state
            .store
            .records
            .iter()
            .map(|(key, record)| Row::new(self.key(*key), self.record_text(record)))
            .collect();
        rows.extend(state.store.versions.iter().map(|(key, version)| {
            Row::new(
                format!("{} version", self.key(*key)),
                format!("last claim token {version}"),
            )
        }));
        rows
    }

    fn record_text(&self, record: &Record) -> String {
        let status = match record.status {
            RecordStatus::InProgress {
                token,
                lease_expired,
            } => {
                let lease = if lease_expired {
                    "lease EXPIRED"
                } else {
                    "lease held"
                };
                format!("in_progress, token {token}, {lease}")
            }
            RecordStatus::Completed { code, payload } => {
                format!(
                    "completed, stored response {}",
                    response_text(code, payload)
                )
            }
        };
        let fingerprint = self
            .fingerprint_prefix(record.body)
            .map_or(String::new(), |prefix| format!(", fingerprint {prefix}"));
        format!("{status}{fingerprint}, for {}", self.op(record.op))
    }

    fn effect_rows(&self, state: &State) -> Vec<Row> {
        let payments = state.store.payments.iter().flat_map(|(op, executions)| {
            (1..=*executions).map(move |execution| {
                let payment = Payment { op: *op, execution };
                Row::new(
                    format!("payment {payment}"),
                    format!("committed, for {}", self.op(*op)),
                )
            })
        });
        let charges = state
            .store
            .provider_charges
            .iter()
            .enumerate()
            .map(|(index, (op, key))| {
                Row::new(
                    format!("provider charge #{}", index + 1),
                    format!("for {}, made with {}", self.op(*op), self.key(*key)),
                )
            });
        payments.chain(charges).collect()
    }

    /// Per operation: effects and charges counted, and the first success the ledger saw sent.
    fn ledger_rows(&self, state: &State) -> Vec<Row> {
        let mut rows = Vec::new();
        for client in 0..self.clients.count {
            for op in 0..self.clients.operations.len() as u8 {
                let op = OpRef { client, op };
                let effects = state.effects_of(op);
                let marker = if effects > 1 { " (DUPLICATE)" } else { "" };
                let first = match state.first_success.get(&op) {
                    Some(payload) => response_text(201, *payload).replacen("201", "sent", 1),
                    None => "none sent".to_string(),
                };
                rows.push(Row::new(
                    self.op(op),
                    format!(
                        "{effects} payment(s){marker}, {} provider charge(s), first success: {first}",
                        state.charges_of(op)
                    ),
                ));
            }
        }
        rows
    }

    fn network_rows(&self, state: &State) -> Vec<Row> {
        state
            .network
            .iter()
            .map(|(message, copies)| Row::new(self.message(message), format!("{copies} copy(ies)")))
            .collect()
    }

    fn process_rows(&self, state: &State) -> Vec<Row> {
        let rows = state.procs.iter().enumerate().map(|(index, proc)| {
            let text = match proc {
                Proc::Idle => "idle".to_string(),
                Proc::Busy(job) => self.job_text(job) + &claim_lost(state, index, job),
            };
            Row::new(format!("P{}", index + 1), text)
        });
        rows.collect()
    }

    fn job_text(&self, job: &Job) -> String {
        let request = &job.request;
        let next = match job.step {
            JobStep::Claim => "claim the key".to_string(),
            JobStep::Insert => "INSERT the key (its SELECT found none)".to_string(),
            JobStep::Provider => "call the provider".to_string(),
            JobStep::Effect => "begin the transaction and write the payment".to_string(),
            JobStep::Commit => "commit (open transaction: the payment, not committed)".to_string(),
            JobStep::CompleteKv { .. } => "mark the key completed in the key store".to_string(),
            JobStep::Respond { code, payload } => {
                format!("answer {}", response_text(code, payload))
            }
        };
        let token = job.token.map_or(String::new(), |token| {
            format!(", holds claim token {token}")
        });
        format!(
            "busy with {} attempt {} ({}){token}; next: {next}",
            self.op(request.from),
            request.attempt,
            self.key(request.key)
        )
    }

    fn client_rows(&self, state: &State) -> Vec<Row> {
        let operations = self.clients.operations.len();
        let rows = state.clients.iter().enumerate().map(|(index, client)| {
            let phase = match client.phase {
                ClientPhase::Ready {
                    after_conflict: true,
                } => "ready to retry after a 409",
                ClientPhase::Ready { .. } => "ready to send",
                ClientPhase::Waiting => "waiting for an answer",
                ClientPhase::Done => "done",
            };
            let told: Vec<String> = client
                .outcomes
                .iter()
                .take(operations)
                .enumerate()
                .map(|(op, outcome)| {
                    format!(
                        "op{}: {}",
                        op + 1,
                        outcome_text(*outcome, self.clients.attempts_max)
                    )
                })
                .collect();
            // A finished operation's counters are reset (so that states merge): a done client shows what it was
            // told, where a give-up says all its attempts were used.
            let doing = if client.phase == ClientPhase::Done {
                "all operations ended".to_string()
            } else {
                format!(
                    "op{} attempt {} ({} of {} attempts used), {phase}",
                    usize::from(client.op) + 1,
                    client.attempts,
                    client.charged,
                    self.clients.attempts_max
                )
            };
            Row::new(
                format!("C{}", index + 1),
                format!("{doing}; told {}", told.join(", ")),
            )
        });
        rows.collect()
    }

    /// Only the faults the model allows at all, so the rows are the same at every step.
    fn budget_rows(&self, state: &State) -> Vec<Row> {
        Fault::all()
            .filter(|fault| self.faults.get(*fault) > 0)
            .map(|fault| {
                let (left, total) = (state.budgets.left(fault.index()), self.faults.get(fault));
                Row::new(fault.name(), format!("{left} of {total} left"))
            })
            .collect()
    }
}

/// Whether the claim `job` (on process `proc`) holds is no longer its: the record shows another token or an
/// expired lease, or another process holds a later token for the same key. Without fencing, such a process
/// still commits: this is the lost lease of a slow owner.
fn claim_lost(state: &State, proc: usize, job: &Job) -> String {
    let Some(token) = job.token else {
        return String::new();
    };
    let key = job.request.key;
    let later = state
        .procs
        .iter()
        .enumerate()
        .find_map(|(other, busy)| match busy {
            Proc::Busy(theirs) if other != proc && theirs.request.key == key => theirs
                .token
                .filter(|their_token| *their_token > token)
                .map(|their_token| {
                    format!(
                        " (P{} took the key over with token {their_token})",
                        other + 1
                    )
                }),
            _ => None,
        });
    let record = state.store.records.get(&key).map(|record| record.status);
    match (later, record) {
        (Some(taker), _) => format!("; its claim is LOST{taker}"),
        (None, Some(RecordStatus::InProgress { token: current, .. })) if current != token => {
            format!("; its claim is LOST (the record holds token {current})")
        }
        (
            None,
            Some(RecordStatus::InProgress {
                lease_expired: true,
                ..
            }),
        ) => "; its lease EXPIRED (the key may be taken over)".to_string(),
        _ => String::new(),
    }
}

fn response_text(code: u16, payload: Option<Payment>) -> String {
    match payload {
        Some(payment) => format!("{code} payment {payment}"),
        None => code.to_string(),
    }
}

/// A client gives up only when every attempt it may charge is used (`attempts_max`).
fn outcome_text(outcome: OpOutcome, attempts_max: u8) -> String {
    match outcome {
        OpOutcome::Pending => "pending".to_string(),
        OpOutcome::Succeeded { payload } => match payload {
            Some(payment) => format!("success (payment {payment})"),
            None => "success".to_string(),
        },
        OpOutcome::Failed { code } => format!("failed {code}"),
        OpOutcome::GaveUp => {
            format!("gave up, {attempts_max} of {attempts_max} attempts used (outcome unknown)")
        }
    }
}
