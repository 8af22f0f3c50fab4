//! One line per step of a handler world, for timelines and traces.

use super::*;
use crate::builtin::{Event, Events};
use crate::handler::api::{Handler, Worker};
use crate::handler::replay::Next;

fn op_name(op: Op) -> String {
    format!("C{}.op{}", op.client + 1, op.op + 1)
}

impl<H: Handler, W: Worker> HandlerWorld<H, W> {
    pub(super) fn describe(
        &self,
        before: &HandlerState,
        action: &HandlerAction,
        after: &HandlerState,
        obs: Events,
    ) -> String {
        let mut text = self.action_text(before, action);
        text.push_str(&self.notes(before, action, after));
        if obs.has(Event::DuplicateEffect) {
            text.push_str("   <-- DUPLICATE EFFECT");
        }
        text
    }

    /// What the action does, as the state before it names things.
    fn action_text(&self, before: &HandlerState, action: &HandlerAction) -> String {
        match action {
            HandlerAction::Send { client } => self.send_text(before, *client),
            HandlerAction::Timeout { client } => {
                format!(
                    "C{} times out{}",
                    client + 1,
                    self.retry_note(before, *client)
                )
            }
            HandlerAction::DeliverRequest {
                message: Message::Request { from, attempt },
                proc,
            } => {
                format!(
                    "network delivers {} attempt {attempt} to P{}",
                    op_name(*from),
                    proc + 1
                )
            }
            HandlerAction::DeliverResponse {
                message: Message::Response { to, reply, .. },
            } => {
                format!(
                    "network delivers {} {} to C{}",
                    reply.status,
                    reply.body,
                    to.client + 1
                )
            }
            HandlerAction::Step { proc, .. } => self.describe_call(before, *proc),
            HandlerAction::Wake { worker } => format!("W{} (worker) begins a run", worker + 1),
            HandlerAction::Drop { message } => format!("network LOSES {}", message_name(message)),
            HandlerAction::Duplicate { message } => {
                format!("network DUPLICATES {}", message_name(message))
            }
            HandlerAction::Crash { proc } if self.is_worker(*proc) => format!(
                "{} CRASHES (its open transaction is lost; it restarts)",
                self.proc_name(*proc)
            ),
            HandlerAction::Crash { proc } => {
                format!("P{} CRASHES (its open transaction is lost)", proc + 1)
            }
            HandlerAction::Pause => format!("a busy process is paused for {} ms", self.pause_ms),
            HandlerAction::Fail { proc } => {
                format!("{}'s next store call FAILS", self.proc_name(*proc))
            }
            HandlerAction::Later => self.describe_later(before),
            HandlerAction::CallFault { proc, fault } => {
                self.describe_call_fault(before, *proc, *fault)
            }
            other => format!("{other:?}"),
        }
    }

    /// A client sends its next attempt: which, with which key, and how the request differs from the last.
    fn send_text(&self, before: &HandlerState, client: u8) -> String {
        let current = &before.clients[client as usize];
        let op = Op {
            client,
            op: current.op,
        };
        let request = self.request_in(before, op, current.attempts + 1);
        format!(
            "{} sends attempt {} (key {}{})",
            op_name(op),
            current.attempts + 1,
            request.key,
            self.request_note(&request, op)
        )
    }

    /// `P1`, `P2` for server processes, `W1`, `W2` for workers.
    fn proc_name(&self, proc: u8) -> String {
        if self.is_worker(proc) {
            format!("W{}", proc - self.processes + 1)
        } else {
            format!("P{}", proc + 1)
        }
    }

    fn describe_call(&self, before: &HandlerState, proc: u8) -> String {
        let job = before.procs[proc as usize]
            .as_ref()
            .expect("a busy process");
        let name = self.proc_name(proc);
        match (job.next(), job.task.serving()) {
            (Next::Call(call), _) => format!("{name} {}", call.text()),
            (Next::Reply(reply), Some((from, attempt))) => format!(
                "{name} answers {} {} for {} attempt {attempt}",
                reply.status,
                reply.body,
                op_name(from),
            ),
            (Next::Reply(_), None) => format!("{name} ends its run"),
        }
    }
}

/// A message in flight, as timelines and the explorer's network panel name it (unique among those in flight:
/// the operation and the attempt both ways, as the model-file worlds name theirs).
pub(super) fn message_name(message: &Message) -> String {
    match message {
        Message::Request { from, attempt } => {
            format!("request {} attempt {attempt}", op_name(*from))
        }
        Message::Response { to, attempt, reply } => {
            format!(
                "response {} for {} attempt {attempt}",
                reply.status,
                op_name(*to)
            )
        }
    }
}
