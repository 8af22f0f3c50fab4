//! Timeline text: one line a person can follow for each transition of a counterexample.

use super::action::Action;
use super::described::{kind_of_action, DescribedStep, Party, StepKind};
use super::events::{Event, Events};
use super::state::*;
use super::world::{HttpWorld, Server, Transition, WorldOf};
use crate::protocol::{KeyScope, Provider};

fn client_name(client: u8) -> String {
    format!("C{}", client + 1)
}

fn proc_name(proc: u8) -> String {
    format!("P{}", proc + 1)
}

fn op_name(op: OpRef) -> String {
    format!("C{}.op{}", op.client + 1, op.op + 1)
}

fn response_name(response: &Response) -> String {
    let payload = match response.payload {
        Some(payment) => format!(" payment {payment}"),
        None => String::new(),
    };
    format!(
        "{}{} for {} attempt {}",
        response.code,
        payload,
        op_name(response.to),
        response.attempt
    )
}

impl HttpWorld {
    pub(super) fn key_name(&self, key: Key) -> String {
        match self.server.key_scope {
            KeyScope::PerClient => format!("key k{} of C{}", key.value, key.scope + 1),
            KeyScope::Global => format!("global key k{}", key.value),
        }
    }

    fn request_name(&self, request: &Request) -> String {
        format!(
            "{} attempt {} ({})",
            op_name(request.from),
            request.attempt,
            self.key_name(request.key)
        )
    }

    pub(super) fn message_name(&self, message: &Message) -> String {
        match message {
            Message::Request(request) => format!("request {}", self.request_name(request)),
            Message::Response(response) => format!("response {}", response_name(response)),
        }
    }
}

impl HttpWorld {
    /// An HTTP world's step.
    pub(super) fn describe_http(&self, transition: &Transition) -> DescribedStep {
        let (before, action, after, events) = transition.parts();
        let mut step = match *action {
            Action::Step { proc } => self.describe_handler_step(transition, proc),
            Action::Timeout { client } if !events.has(Event::RetryAfterTimeout) => {
                DescribedStep::new(StepKind::GiveUp { client }, self.action_text(transition))
            }
            _ => DescribedStep::new(kind_of_action(action), self.action_text(transition)),
        };
        step.violations = http_violations(before, after, events);
        step
    }

    /// The text of a step that is not a handler step.
    fn action_text(&self, transition: &Transition) -> String {
        let (before, action, after, events) = transition.parts();
        match *action {
            Action::Send { client } => {
                let state = &after.clients[client as usize];
                let (op, body) = self.sent(client, state);
                let key = self.key_for(client, state.op, state.attempts);
                format!(
                    "{} sends {} attempt {} ({}) body {}",
                    client_name(client),
                    op_name(op),
                    state.attempts,
                    self.key_name(key),
                    body
                )
            }
            Action::Timeout { client } => {
                let was = &before.clients[client as usize];
                let op = OpRef { client, op: was.op };
                if events.has(Event::RetryAfterTimeout) {
                    format!(
                        "{} times out on {} attempt {} (outcome unknown) and retries as attempt {}",
                        client_name(client),
                        op_name(op),
                        was.attempts,
                        was.attempts + 1
                    )
                } else {
                    format!(
                        "{} times out on {} attempt {} and GIVES UP: attempts exhausted, outcome unknown",
                        client_name(client),
                        op_name(op),
                        was.attempts
                    )
                }
            }
            Action::DeliverRequest { request, proc } => {
                format!(
                    "network delivers {} to {}",
                    self.request_name(&request),
                    proc_name(proc)
                )
            }
            Action::DeliverResponse { response } => {
                let client = response.to.client;
                let outcome = describe_client_reaction(before, after, client);
                format!(
                    "network delivers {} to {}: {}",
                    response_name(&response),
                    client_name(client),
                    outcome
                )
            }
            Action::Step { proc } => self.describe_handler_step(transition, proc).text,
            _ => self.fault_text(transition),
        }
    }

    /// The text of a fault or an expiry.
    fn fault_text(&self, transition: &Transition) -> String {
        let (before, _, _, events) = transition.parts();
        match *transition.action {
            Action::Drop { message } => format!("network LOSES {}", self.message_name(&message)),
            Action::Duplicate { message } => {
                format!("network DUPLICATES {}", self.message_name(&message))
            }
            Action::Crash { proc } => {
                format!(
                    "{} CRASHES{} and restarts empty",
                    proc_name(proc),
                    self.crash_point(before.procs[proc as usize])
                )
            }
            Action::Fail { proc } => {
                format!("{} FAILS (a downstream timeout): the open transaction rolls back, it will answer 500", proc_name(proc))
            }
            Action::ExpireKey { key } => {
                format!(
                    "{} EXPIRES (its TTL is shorter than the client's retry window)",
                    self.key_name(key)
                )
            }
            Action::Republish { client, .. } => {
                format!("{} republishes (queue worlds only)", client_name(client))
            }
            Action::ExpireLease { key } => {
                if events.has(Event::SlowOwner) {
                    format!(
                        "lease on {} EXPIRES while its owner is only paused",
                        self.key_name(key)
                    )
                } else {
                    format!(
                        "lease on {} expires (its owner is gone)",
                        self.key_name(key)
                    )
                }
            }
            // The caller describes every other action itself.
            _ => unreachable!("not a fault or an expiry: {:?}", transition.action),
        }
    }

    /// Where in its handler a process crashed: what it had written and what it loses.
    fn crash_point(&self, proc: Proc) -> String {
        let Proc::Busy(job) = proc else {
            return String::new();
        };
        let key = self.key_name(job.request.key);
        match job.step {
            JobStep::Claim => " before its claim (nothing written)".to_string(),
            JobStep::Insert => format!(" between its SELECT and its INSERT of {key} (nothing written)"),
            JobStep::Provider => {
                " after the claim, before calling the provider (nothing charged)".to_string()
            }
            JobStep::Commit => {
                " before committing (the open transaction with the payment is lost)".to_string()
            }
            JobStep::Effect if self.provider != Provider::None => {
                " after the provider call, before the payment transaction".to_string()
            }
            JobStep::Effect => " right after the claim (nothing else written)".to_string(),
            JobStep::CompleteKv { .. } => format!(
                " after committing the payment, before marking {key} completed in the key store (it stays in_progress there)"
            ),
            JobStep::Respond { .. } => " after committing, before answering".to_string(),
        }
    }

    /// A handler step: with whom the process talks (the store, the provider, or the network when it answers),
    /// and what it did.
    fn describe_handler_step(&self, transition: &Transition, proc: u8) -> DescribedStep {
        let (before, _, after, events) = transition.parts();
        let Proc::Busy(job) = before.procs[proc as usize] else {
            let kind = StepKind::Handler {
                proc,
                with: Party::Store,
            };
            return DescribedStep::new(kind, format!("{} has nothing to do", proc_name(proc)));
        };
        let who = proc_name(proc);
        let key = self.key_name(job.request.key);
        let claimed =
            matches!(after.procs[proc as usize], Proc::Busy(next) if next.step != JobStep::Claim);
        let with = match job.step {
            JobStep::Claim if !claimed => Party::Network,
            JobStep::Respond { .. } => Party::Network,
            JobStep::Provider => Party::Provider,
            _ => Party::Store,
        };
        let text = match job.step {
            JobStep::Claim => self.claim_text(transition, proc, job),
            JobStep::Insert => self.insert_text(before, after, &job, &who),
            JobStep::Provider => {
                let op = op_name(job.request.from);
                if after.store.provider_charges.len() > before.store.provider_charges.len() {
                    format!("{who} calls the provider for {op}: CHARGED (no database can roll this back)")
                } else {
                    format!("{who} calls the provider for {op}: the provider recognises the derived key, no new charge")
                }
            }
            JobStep::CompleteKv { .. } => {
                if events.has(Event::FencedCompletion) {
                    format!("{who} tries to mark {key} completed in the key store: FENCED (the payment stays committed)")
                } else {
                    format!("{who} marks {key} completed in the key store (a second write, after the database commit)")
                }
            }
            JobStep::Effect => format!(
                "{who} begins the transaction and inserts the payment for {} (not committed)",
                op_name(job.request.from)
            ),
            JobStep::Commit => commit_text(after, proc, events, &who, &key),
            JobStep::Respond { code, .. } => {
                format!("{who} answers {}", answer_sent(before, after, &job, code))
            }
        };
        DescribedStep::new(StepKind::Handler { proc, with }, text)
    }

    /// The claim (or the SELECT), and the answer when it refuses.
    fn claim_text(&self, transition: &Transition, proc: u8, job: Job) -> String {
        let (before, _, after, events) = transition.parts();
        let who = proc_name(proc);
        let key = self.key_name(job.request.key);
        match after.procs[proc as usize] {
            Proc::Busy(next) if next.step == JobStep::Insert => {
                format!("{who} SELECTs {key}: no live claim found (no unique index)")
            }
            Proc::Busy(next) if next.token.is_some() => {
                if events.has(Event::LeaseTakeover) {
                    format!(
                        "{who} takes over {key}: its lease expired (claim token {})",
                        next.token.unwrap_or(0)
                    )
                } else {
                    format!(
                        "{who} claims {key}: INSERT OR IGNORE inserted it, status in_progress (token {})",
                        next.token.unwrap_or(0)
                    )
                }
            }
            _ => {
                let (reason, code) = if events.has(Event::Replay) {
                    ("completed: replays the stored response", 200)
                } else if events.has(Event::Conflict) {
                    ("in_progress", 409)
                } else {
                    ("used with another fingerprint", 422)
                };
                let answer = answer_sent(before, after, &job, code);
                format!("{who} finds {key} {reason}, answers {answer}")
            }
        }
    }

    /// select-then-insert (or a SET without NX): the write goes through whatever was written since the SELECT,
    /// so say when it overwrote a record.
    fn insert_text(&self, before: &State, after: &State, job: &Job, who: &str) -> String {
        let token = after
            .store
            .versions
            .get(&job.request.key)
            .copied()
            .unwrap_or(0);
        let key_name = self.key_name(job.request.key);
        let previous = before.store.records.get(&job.request.key);
        let overwritten = match previous.map(|record| record.status) {
            Some(RecordStatus::Completed { code, .. }) => {
                format!(", OVERWRITING its completed record (it had answered {code})")
            }
            Some(RecordStatus::InProgress { token, .. }) => {
                format!(", OVERWRITING the in_progress claim of token {token}")
            }
            None => String::new(),
        };
        format!("{who} INSERTs {key_name} as in_progress (token {token}){overwritten}")
    }
}

/// The commit of the effect's transaction: with the completion, alone (a separate key store), or fenced.
fn commit_text(after: &State, proc: u8, events: Events, who: &str, key: &str) -> String {
    let payment = match after.procs[proc as usize] {
        Proc::Busy(Job {
            step:
                JobStep::Respond {
                    payload: Some(payment),
                    ..
                }
                | JobStep::CompleteKv {
                    payload: Some(payment),
                },
            ..
        }) => payment.to_string(),
        _ => String::new(),
    };
    if events.has(Event::FencedCompletion) {
        format!(
            "{who} tries to commit but its claim was taken over: FENCED, rolled back, starts over"
        )
    } else if matches!(
        after.procs[proc as usize],
        Proc::Busy(Job {
            step: JobStep::CompleteKv { .. },
            ..
        })
    ) {
        format!("{who} commits payment {payment} in the database (the key store is not in this transaction)")
    } else {
        format!("{who} commits payment {payment} and marks {key} completed with 201")
    }
}

/// The response `job`'s process just put on the network, or a note that its connection is gone.
fn answer_sent(before: &State, after: &State, job: &Job, code: u16) -> String {
    after
        .network
        .keys()
        .find_map(|message| match message {
            Message::Response(response)
                if response.to == job.request.from
                    && response.attempt == job.request.attempt
                    && !before.network.contains_key(message) =>
            {
                Some(response_name(response))
            }
            _ => None,
        })
        .unwrap_or_else(|| {
            format!("{code}, into a closed connection (its client abandoned this attempt)")
        })
}

/// The violations a step of an HTTP world shows, one note each.
fn http_violations(before: &State, after: &State, events: Events) -> Vec<String> {
    let charged_again = after.store.provider_charges.len() > before.store.provider_charges.len();
    let duplicate = if charged_again {
        "DUPLICATE EFFECT: the provider has now charged this operation twice (one payment row, two charges)"
    } else {
        "DUPLICATE EFFECT: this operation now has two payments"
    };
    violation_notes(events, duplicate, &HTTP_VIOLATIONS)
}

/// What an HTTP world's violations say, but for the duplicate effect (its text depends on the step).
const HTTP_VIOLATIONS: [(Event, &str); 5] = [
    (
        Event::SuccessWithoutEffect,
        "LOST EFFECT: success reported, but no payment exists for this operation",
    ),
    (
        Event::InconsistentReplay,
        "INCONSISTENT REPLAY: another success for this operation said otherwise",
    ),
    (
        Event::CrossClientResponse,
        "CROSS-CLIENT RESPONSE: the payment belongs to another client",
    ),
    (
        Event::MismatchForSameBody,
        "WRONG 422: the body did not change",
    ),
    (
        Event::ConflictWithoutOwner,
        "WRONG 409: nobody is executing the original request",
    ),
];

/// The notes of the violations `events` holds, the duplicate effect's first, then `rest` in its order: both
/// narrators' (HTTP and queue) notes are made here.
pub(super) fn violation_notes(
    events: Events,
    duplicate: &str,
    rest: &[(Event, &str)],
) -> Vec<String> {
    std::iter::once((Event::DuplicateEffect, duplicate))
        .chain(rest.iter().copied())
        .filter(|(event, _)| events.has(*event))
        .map(|(_, note)| note.to_string())
        .collect()
}

fn describe_client_reaction(before: &State, after: &State, client: u8) -> String {
    let was = &before.clients[client as usize];
    let now = &after.clients[client as usize];
    if was == now {
        return "ignored (an abandoned attempt)".to_string();
    }
    match now.phase {
        ClientPhase::Ready { .. } if now.op == was.op => "will retry".to_string(),
        _ => match was
            .op
            .checked_sub(0)
            .and_then(|op| now.outcomes.get(op as usize))
        {
            Some(OpOutcome::Succeeded { .. }) => "success".to_string(),
            Some(OpOutcome::Failed { code }) => format!("definite failure {code}"),
            Some(OpOutcome::GaveUp) => "GIVES UP: attempts exhausted, outcome unknown".to_string(),
            _ => "noted".to_string(),
        },
    }
}

impl<S: Server> WorldOf<S> {
    /// The operation a client is on after its `Send` (or publish), and that operation's body as sent: both
    /// narrators name it the same way.
    pub(super) fn sent(&self, client: u8, state: &ClientState) -> (OpRef, &str) {
        let op = OpRef {
            client,
            op: state.op,
        };
        let body = &self.bodies[self.clients.operations[state.op as usize].body as usize].text;
        (op, body)
    }
}
