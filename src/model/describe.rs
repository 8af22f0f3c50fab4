//! Timeline text: one line a person can follow for each transition of a counterexample.

use super::action::Action;
use super::events::Event;
use super::state::*;
use super::world::{HttpWorld, Transition};
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
        Some(payment) => format!(" payment #{payment}"),
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
    fn key_name(&self, key: Key) -> String {
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

    fn message_name(&self, message: &Message) -> String {
        match message {
            Message::Request(request) => format!("request {}", self.request_name(request)),
            Message::Response(response) => format!("response {}", response_name(response)),
        }
    }
}

impl HttpWorld {
    /// An HTTP world's timeline line.
    pub(super) fn describe_http(&self, transition: &Transition) -> String {
        let (before, action, after, events) = transition.parts();
        let mut line = match *action {
            Action::Send { client } => {
                let state = &after.clients[client as usize];
                let op = OpRef {
                    client,
                    op: state.op,
                };
                let key = self.key_for(client, state.op, state.attempts);
                let body =
                    &self.bodies[self.clients.operations[state.op as usize].body as usize].text;
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
            Action::Step { proc } => self.describe_handler_step(transition, proc),
            Action::Drop { message } => format!("network LOSES {}", self.message_name(&message)),
            Action::Duplicate { message } => {
                format!("network DUPLICATES {}", self.message_name(&message))
            }
            Action::Crash { proc } => {
                let what = match before.procs[proc as usize] {
                    Proc::Busy(job) => match job.step {
                        JobStep::Commit => {
                            " before committing (the open transaction with the payment is lost)"
                        }
                        JobStep::Effect if self.provider != Provider::None => {
                            " after the provider call, before the payment transaction"
                        }
                        JobStep::Effect => " right after the claim (nothing else written)",
                        JobStep::Respond { .. } => " after committing, before answering",
                        _ => "",
                    },
                    Proc::Idle => "",
                };
                format!("{} CRASHES{what} and restarts empty", proc_name(proc))
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
        };
        for (event, note) in [
            (
                Event::DuplicateEffect,
                "DUPLICATE EFFECT: this operation now has two payments",
            ),
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
        ] {
            if events.has(event) {
                line.push_str("   <-- ");
                line.push_str(note);
            }
        }
        line
    }

    fn describe_handler_step(&self, transition: &Transition, proc: u8) -> String {
        let (before, _, after, events) = transition.parts();
        let Proc::Busy(job) = before.procs[proc as usize] else {
            return format!("{} has nothing to do", proc_name(proc));
        };
        let who = proc_name(proc);
        let key = self.key_name(job.request.key);
        let sent = |after: &State, code: u16| -> String {
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
        };
        match job.step {
            JobStep::Claim => match after.procs[proc as usize] {
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
                    format!("{who} finds {key} {reason}, answers {}", sent(after, code))
                }
            },
            JobStep::Insert => format!(
                "{who} INSERTs {key} as in_progress (token {})",
                after.store.next_token.saturating_sub(1)
            ),
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
            JobStep::Commit => {
                if events.has(Event::FencedCompletion) {
                    format!("{who} tries to commit but its claim was taken over: FENCED, rolled back, starts over")
                } else if matches!(
                    after.procs[proc as usize],
                    Proc::Busy(Job {
                        step: JobStep::CompleteKv { .. },
                        ..
                    })
                ) {
                    format!("{who} commits payment #{} in the database (the key store is not in this transaction)", after.store.payments.len())
                } else {
                    format!(
                        "{who} commits payment #{} and marks {key} completed with 201",
                        after.store.payments.len()
                    )
                }
            }
            JobStep::Respond { code, .. } => format!("{who} answers {}", sent(after, code)),
        }
    }
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
            Some(Outcome::Succeeded { .. }) => "success".to_string(),
            Some(Outcome::Failed { code }) => format!("definite failure {code}"),
            Some(Outcome::GaveUp) => "GIVES UP: attempts exhausted, outcome unknown".to_string(),
            _ => "noted".to_string(),
        },
    }
}
