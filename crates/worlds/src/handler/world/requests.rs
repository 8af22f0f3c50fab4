//! Per-attempt requests and the client's reaction to each answer, as the user says them.
//!
//! Real clients do not resend one fixed request: an API key is rotated between two attempts, an agent mints a
//! new idempotency key for each retry, a client told 400 fixes its body and retries under the same key (as
//! Stripe documents for a request that failed validation). So a [`HandlerWorld`] takes a request hook
//! ([`HandlerWorld::requests`]: the attempt in, key, body and headers out), several operations with their own
//! bodies ([`HandlerWorld::bodies`]) and a reaction per status ([`HandlerWorld::react`]: end the operation as
//! a success or a failure, or retry). Without them the world is the one it always was, state for state.
//!
//! The hook must be a function of the [`Attempt`] alone (no clock, no counter, no randomness): the checker
//! builds an attempt's request again whenever it needs it (delivering it, printing a step, driving a trace on a
//! real database), and a request that differed between two builds would make the search unsound. What the hook
//! may depend on, beyond the attempt's number, is the status that made the client send it
//! ([`Attempt::after_status`]); the client keeps it, per operation and attempt, only in worlds with a hook.

use super::{HandlerState, HandlerWorld, Op};
use crate::builtin::{Event, Events};
use crate::handler::api::{Handler, Request, Worker};
use crate::protocol::status;
use std::sync::Arc;

/// The attempt a client is about to send: what a request hook is given.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Attempt<'a> {
    /// The client, 0-based (its default scope is `c{client}`).
    pub client: u8,
    /// The operation, 0-based, in the order of [`HandlerWorld::bodies`].
    pub op: u8,
    /// The attempt, 1-based.
    pub attempt: u8,
    /// The status of the answer the client retried after: `None` for a first attempt and for one sent after a
    /// timeout (no answer came).
    pub after_status: Option<u16>,
    /// Every status this operation's earlier attempts were answered with before this one was sent, oldest
    /// first (a client that fixed its body after a 400 keeps it fixed after a later timeout).
    pub statuses: &'a [u16],
    /// The operation's body.
    pub body: &'a str,
    key_per_attempt: bool,
}

impl Attempt<'_> {
    /// The request a world without a hook sends: scope `c{client}`, key `k{op}` (`k{op}-{attempt}` with
    /// `key_per_attempt`), the operation's body, no headers. A hook usually starts from it.
    pub fn request(&self) -> Request {
        let key = if self.key_per_attempt {
            format!("k{}-{}", self.op, self.attempt)
        } else {
            format!("k{}", self.op)
        };
        Request::new(format!("c{}", self.client), key, self.body)
    }
}

/// What a client does with an answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Reaction {
    /// The operation succeeded (its outcome is this answer).
    Succeed,
    /// The operation failed for good (a definite failure: it counts as resolved).
    Fail,
    /// Send another attempt (within `attempts_max`; after a 409 it waits `retry_after_ms` first). The request
    /// hook sees the status in [`Attempt::after_status`]: "fix the body and retry with the same key".
    Retry,
}

impl Reaction {
    /// The reaction of a world without [`HandlerWorld::react`]: 2xx succeeds, a 4xx other than 409 and 429
    /// fails, anything else (409, 429, 5xx) is retried.
    pub fn default_for(code: u16) -> Reaction {
        if status::is_success(code) {
            Reaction::Succeed
        } else if status::is_definite_failure(code) {
            Reaction::Fail
        } else {
            Reaction::Retry
        }
    }
}

pub(super) type RequestHook = Arc<dyn Fn(&Attempt) -> Request + Send + Sync>;
pub(super) type ReactionHook = Arc<dyn Fn(u16) -> Reaction + Send + Sync>;

/// The user's hooks (none: the world as it always was).
#[derive(Clone, Default)]
pub(in crate::handler) struct Hooks {
    pub(super) request: Option<RequestHook>,
    pub(super) reaction: Option<ReactionHook>,
}

impl Hooks {
    /// The scenarios only a world with these hooks can show.
    pub(super) fn scenarios(&self) -> impl Iterator<Item = Event> {
        let request = self.request.is_some().then_some(Event::RequestChanged);
        let reaction = self.reaction.is_some().then_some(Event::ClientErrorRetried);
        request.into_iter().chain(reaction)
    }
}

impl<H: Handler, W: Worker> HandlerWorld<H, W> {
    /// Each client performs these operations, in order, each with its own body (1 to 8).
    pub fn bodies(mut self, bodies: &[&str]) -> Self {
        assert!((1..=8).contains(&bodies.len()), "1 to 8 operations");
        self.bodies = bodies.iter().map(|body| body.to_string()).collect();
        self
    }

    /// Build each attempt's request with `hook` (see [`Attempt`]; it must depend on its argument alone). Adds
    /// the scenario `request-changed`: a retry whose request differs from the attempt before it.
    pub fn requests(mut self, hook: impl Fn(&Attempt) -> Request + Send + Sync + 'static) -> Self {
        self.hooks.request = Some(Arc::new(hook));
        self
    }

    /// React to each answer's status with `reaction` (see [`Reaction::default_for`] for the default). Adds the
    /// scenario `client-error-retried`: a client retried after a 4xx other than 409 and 429.
    pub fn react(mut self, reaction: impl Fn(u16) -> Reaction + Send + Sync + 'static) -> Self {
        self.hooks.reaction = Some(Arc::new(reaction));
        self
    }

    /// The request attempt `attempt` of `op` carries when sent after answers with `statuses`, the last of
    /// them just before it (`after_status`).
    pub fn request_after(
        &self,
        op: Op,
        attempt: u8,
        after_status: Option<u16>,
        statuses: &[u16],
    ) -> Request {
        let attempt = Attempt {
            client: op.client,
            op: op.op,
            attempt,
            after_status,
            statuses,
            body: &self.bodies[op.op as usize],
            key_per_attempt: self.key_per_attempt,
        };
        match &self.hooks.request {
            Some(hook) => hook(&attempt),
            None => attempt.request(),
        }
    }

    /// The request attempt `attempt` of `op` carries in `state`'s run.
    pub fn request_in(&self, state: &HandlerState, op: Op, attempt: u8) -> Request {
        if self.hooks.request.is_none() {
            return self.request_after(op, attempt, None, &[]);
        }
        // Attempts are at most 8, so the statuses fit on the stack.
        let mut statuses = [0u16; 8];
        let mut count = 0;
        let mut after_status = None;
        for (o, a, code) in &state.clients[op.client as usize].sent_after {
            if *o == op.op && *a <= attempt {
                statuses[count] = *code;
                count += 1;
                if *a == attempt {
                    after_status = Some(*code);
                }
            }
        }
        self.request_after(op, attempt, after_status, &statuses[..count])
    }

    pub(super) fn reaction(&self, code: u16) -> Reaction {
        match &self.hooks.reaction {
            Some(reaction) => reaction(code),
            None => Reaction::default_for(code),
        }
    }

    /// The client of `op` will retry after `code`: remember the status for the hook (only a world with one
    /// needs it, so no other world has more states), and note a retried client error.
    pub(super) fn retrying(
        &self,
        state: &mut HandlerState,
        op: Op,
        code: u16,
        events: &mut Events,
    ) {
        if status::is_definite_failure(code) {
            events.add(Event::ClientErrorRetried);
        }
        if self.hooks.request.is_some() {
            let client = &mut state.clients[op.client as usize];
            let next = client.attempts + 1;
            client.sent_after.push((op.op, next, code));
        }
    }

    /// After the client of `op` sent attempt `attempt` (a retry): whether its request differs from the one
    /// before it. Built only in worlds with a hook; without one, every retry is the same request but for a
    /// per-attempt key, which `key_per_attempt` already says.
    pub(super) fn request_changed(&self, state: &HandlerState, op: Op, attempt: u8) -> bool {
        self.hooks.request.is_some()
            && attempt > 1
            && self.request_in(state, op, attempt) != self.request_in(state, op, attempt - 1)
    }

    /// What `describe` adds to a timeout in a world with a request hook: the attempt the client sends next,
    /// which may differ from the last (a rotated API key, a minted key). Nothing without a hook, where a retry
    /// is the same request.
    pub(super) fn retry_note(&self, before: &HandlerState, client: u8) -> String {
        let current = &before.clients[client as usize];
        if self.hooks.request.is_none() || current.attempts >= self.attempts_max {
            return String::new();
        }
        let op = Op {
            client,
            op: current.op,
        };
        let attempt = current.attempts + 1;
        let request = self.request_in(before, op, attempt);
        let note = self.request_note(&request, op);
        format!(" and sends attempt {attempt} (key {}{note})", request.key)
    }

    /// What `describe` adds to a send line for a request built by a hook: headers, and a body other than the
    /// operation's.
    pub(super) fn request_note(&self, request: &Request, op: Op) -> String {
        let mut note = String::new();
        if self.hooks.request.is_none() {
            return note;
        }
        for (name, value) in &request.headers {
            note.push_str(&format!(", {name}: {value}"));
        }
        if request.body != self.bodies[op.op as usize] {
            note.push_str(&format!(", body {}", request.body));
        }
        note
    }
}
