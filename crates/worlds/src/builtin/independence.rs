//! The worlds' independence, for the checker's partial-order reduction (`Model::independent_of_rest`, the
//! conditions in `check::por`): the actions that may be explored alone because nothing that can happen before
//! them interferes with them. Each rule below says why; anything not covered is explored in all orders.
//!
//! The world shares little on purpose: fencing tokens are per key (a claim bumps its own key's version), a
//! payment is named by its operation and its execution number (two commits of different operations give the
//! same ids in either order), and a request may be delivered to any idle process (two deliveries to two
//! processes commute). What is still shared: the records of keys that two operations both use, the liveness of
//! an attempt that a timeout reads, and the fault budgets.
//!
//! # Fault budgets stay shared, one per kind
//! Each kind of fault has one budget for the whole world (`crashes = 1`: one crash in all), not one per process
//! or client. A shared budget makes two faults of a kind dependent (with one crash left, crashing P1 disables
//! crashing P2), but it orders no step that the reduction commutes. A budget is only read and spent by faults of
//! its kind (and the liveness tests of early timeouts and pauses, which spend it only when they are faults), a
//! spender is enabled only while its budget is not spent, and a budget is never given back. So the last of a
//! budget is a race that C1's stubborn form (`check::por`) allows: if a path `w` spends some of a budget and an
//! action `x` spends one more after it, the budget held at least `w`'s spending plus one in every state along
//! `w`, so `x` taken first leaves enough for every spender of `w`, and the budget ends the same either way;
//! whichever of two racing faults a path takes, the other is not enabled after it and C1 asks nothing of it.
//! Faults are never declared alone (`check::por` picks a non-fault action), and no key action needs a budget:
//! a non-fault step, send, delivery, lost attempt's timeout or dead owner's lease expiry is enabled whatever is
//! left. The single actions below still require every budget they could race with (response drops and copies,
//! early timeouts, crashes, handler errors) to be spent: they are persistent in the strict sense. Budgets per
//! process would be another fault model (n crashes per process, more behaviours, larger spaces).
//!
//! # The declarations
//! The actions declared alone are the ones that touch only their own client or process:
//! - `Send` of a client that is about to send (no response to it is in the network, none can appear while it
//!   is not waiting, and, with a lease, it is not waiting out a 409, which a claim could prolong);
//! - `DeliverResponse` of the one response its client is waiting for, once no response can be lost, copied or
//!   timed out (those budgets are spent) and no other copy of the attempt can still answer;
//! - `Timeout` of a client whose attempt was lost (nothing of it is in the network or in a process, so the
//!   timeout is no fault, nothing can revive the attempt, and the resend or the giving up touches only the
//!   client and its own new request);
//! - `Step` of a process that has written its effect and is about to commit it (the step changes its own job
//!   only), once no crash or handler error can hit it.
//!
//! In every case no republish may be left (a republish reads its client's latest event).
//!
//! When no single action qualifies, an HTTP world may still declare a persistent set (`persistent_set`): every
//! enabled server-side action (steps, crashes, handler errors, key and lease expiries), from a state where every
//! process is busy. What happens outside the set (sends, timeouts, response deliveries, drops and copies) never
//! reads or writes a process, the store or the crash, error, pause and expiry budgets, so it commutes with the
//! set but for three links, each ruled out while no server action is taken:
//! - a delivered request needs an idle process: every process is busy, and only a server action frees one;
//! - under a lease, a send after a 409 reads the record it waits on: no client waits out a 409, and no 409 is in
//!   the network (only a response, a server action, makes one);
//! - a process holding the attempt its client waits for: a crash would make the client's timeout a non-fault
//!   (and its response would race the client's other moves), so no early timeout may be left and no response to
//!   that client may be in the network (none can appear: the client cannot move on without one, and only the
//!   process's response makes one).
//!
//! A response to an attempt its client no longer waits for goes nowhere in either order, and a client's send or
//! timeout purges the responses to it, so a response step commutes with them.
//!
//! # One client's part
//! Under per-client key scope an HTTP world is one part per client, sharing only the fault budgets and the idle
//! processes. Client `c`'s part is its own state, the messages from and to it, the processes busy with its
//! requests, and the keys, records and fencing versions of scope `c` (`key_for` gives every key of `c` the scope
//! `c`, and a record is only ever written under its request's key), with the payments, provider charges and first
//! successes of its operations. `persistent_set` may declare every enabled action of the part (its send or
//! timeout, the deliveries of responses to it, drops and copies of its messages, the steps, crashes and handler
//! errors of its processes, the expiries of its keys and leases), from a state where
//! - no request of `c` is in the network: so no action of the part takes an idle process (a delivery of `c`'s
//!   request would race the other parts' deliveries for it, and its `ParallelRetry` reads `c`'s processes),
//!   and none can appear but through the part's own send or timeout;
//! - no process of `c` is about to call the provider: the provider's charges are a list in call order, so two
//!   parts' calls do not commute (a step that only leads to the call does);
//! - the part holds a non-fault action (the key).
//!
//! The C1 argument (`check::por`, stubborn form). Every action of the part reads and writes the part alone,
//! spends at most one fault, and frees at most its own process (a response or a crash); every event it
//! observes is read from the part (`owner_alive` looks at the processes holding the key, all of the part;
//! `ParallelRetry` at processes busy with the same operation, one client's). Whether an action of the part is
//! enabled, and whether it is a fault, depends on the part and, for a fault, on its budget not being spent, and
//! budgets only decrease. An action of another part reads and writes its own part, spends budgets, and takes
//! or frees processes of its own: it never delivers to a process of `c` (busy with `c`'s request until `c`'s
//! step or crash frees it, an action of the part) and never reads `c`'s. So along a path `w` that takes no
//! action of the set, the part is as it was in the state: no action of the part is taken (one enabled with the
//! part unchanged and budgets no larger was enabled in the state already, so is in the set), and an action
//! `x` of the set enabled at the end of `w` is taken in the same part first: `x w` writes the same part and
//! the same other parts, spends the same budgets (the argument of the budgets above), and each step observes
//! what it did, so it ends in the same state. The key: a non-fault action of the part is enabled without a
//! budget (a send, a lost attempt's timeout, a delivered response, a step, a dead owner's lease expiry), so it
//! stays enabled and a non-fault action along `w`. Budgets are the only link left: with one crash left a crash
//! of another part disables the crashes of the set, which C1's stubborn form allows (above).
//!
//! The checker takes the client whose part has the fewest enabled actions, or the server-side set above when it
//! is smaller.

use super::action::Action;
use super::state::{ClientPhase, JobStep, Message, OpRef, Proc, State};
use super::step::{CRASHES, DROP_RESPONSES, DUPLICATE_RESPONSES, EARLY_TIMEOUTS, HANDLER_ERRORS};
use super::world::{Server, WorldOf};
use crate::protocol::{status, KeyScope};

impl<S: Server> WorldOf<S> {
    /// Whether `action` (enabled in `state`) is independent of every action that can happen before it.
    pub fn independent_of_rest(&self, state: &State, action: &Action) -> bool {
        if state.budgets.has(super::queue::REPUBLISHES) {
            return false;
        }
        match *action {
            Action::Send { client } => self.send_stands_alone(state, client),
            Action::Timeout { client } => lost_attempt(state, client),
            Action::DeliverResponse { response } => {
                let spent = [DROP_RESPONSES, DUPLICATE_RESPONSES, EARLY_TIMEOUTS]
                    .iter()
                    .all(|budget| !state.budgets.has(*budget));
                spent && only_answer(state, response.to, response.attempt)
            }
            Action::Step { proc } => {
                !state.budgets.has(CRASHES)
                    && !state.budgets.has(HANDLER_ERRORS)
                    && matches!(state.procs[proc as usize], Proc::Busy(job) if job.step == JobStep::Effect)
            }
            _ => false,
        }
    }

    /// A persistent set of the module docs, as indices into `actions` (every enabled action): the smaller of
    /// the server-side set and the smallest client's part, where they apply; nothing otherwise.
    pub fn persistent_set(&self, state: &State, actions: &[Action], out: &mut Vec<usize>) {
        if !S::SERVER_STAYS_INSIDE || state.budgets.has(super::queue::REPUBLISHES) {
            return;
        }
        self.server_side_set(state, actions, out);
        if self.server.key_scope() == KeyScope::PerClient {
            self.smallest_part(state, actions, out);
        }
    }

    /// The part of the client whose part has the fewest enabled actions, among those that may be declared,
    /// into `out` when `out` is empty or holds more. Sound under per-client key scope only (the module docs).
    pub(super) fn smallest_part(&self, state: &State, actions: &[Action], out: &mut Vec<usize>) {
        let mut smallest: Option<(usize, u8)> = None;
        for client in 0..state.clients.len() as u8 {
            let Some(size) = self.part_size(state, actions, client) else {
                continue;
            };
            if smallest.is_none_or(|(best, _)| size < best) {
                smallest = Some((size, client));
            }
        }
        if let Some((size, client)) = smallest {
            if out.is_empty() || size < out.len() {
                out.clear();
                out.extend(
                    (0..actions.len()).filter(|&index| in_part(state, client, &actions[index])),
                );
            }
        }
    }

    /// How many enabled actions `client`'s part holds, when the part may be declared (the module docs): no
    /// request of the client in the network, none of its processes about to call the provider, and a non-fault
    /// action in the part.
    fn part_size(&self, state: &State, actions: &[Action], client: u8) -> Option<usize> {
        let requested = state.network.keys().any(
            |message| matches!(message, Message::Request(request) if request.from.client == client),
        );
        let calls_provider = state.procs.iter().any(|proc| {
            matches!(proc, Proc::Busy(job)
                if job.request.from.client == client && job.step == JobStep::Provider)
        });
        if requested || calls_provider {
            return None;
        }
        let mut size = 0;
        let mut key = false;
        for action in actions
            .iter()
            .filter(|action| in_part(state, client, action))
        {
            size += 1;
            key |= !self.is_fault(state, action);
        }
        key.then_some(size)
    }

    /// Every enabled server-side action (the first persistent set of the module docs) when it applies.
    fn server_side_set(&self, state: &State, actions: &[Action], out: &mut Vec<usize>) {
        if state.procs.contains(&Proc::Idle)
            || (self.server.lease().is_some() && waits_out_conflict(state))
            || !current_attempts_held_safely(state)
        {
            return;
        }
        out.extend(actions.iter().enumerate().filter_map(|(index, action)| {
            let server_side = matches!(
                action,
                Action::Step { .. }
                    | Action::Crash { .. }
                    | Action::Fail { .. }
                    | Action::ExpireLease { .. }
                    | Action::ExpireKey { .. }
            );
            server_side.then_some(index)
        }));
    }

    /// A ready client's send reads and writes only the client and adds its own new request. What could
    /// interfere: responses to the client (the send purges them; none is created while it is not waiting) and,
    /// after a 409 under a lease, the record it waits on (a claim could disable the send).
    fn send_stands_alone(&self, state: &State, client: u8) -> bool {
        let ClientPhase::Ready { after_conflict } = state.clients[client as usize].phase else {
            return false;
        };
        let waits_on_lease = after_conflict && self.server.lease().is_some();
        let answered = state.network.keys().any(
            |message| matches!(message, Message::Response(response) if response.to.client == client),
        );
        !waits_on_lease && !answered
    }
}

/// Whether a client waits out a 409, or a 409 is on its way to one.
fn waits_out_conflict(state: &State) -> bool {
    let waiting = state.clients.iter().any(|client| {
        client.phase
            == ClientPhase::Ready {
                after_conflict: true,
            }
    });
    waiting
        || state.network.keys().any(|message| {
            matches!(message, Message::Response(response) if response.code == status::CONFLICT_IN_PROGRESS)
        })
}

/// Whether every waiting client whose current attempt a process holds can neither time out early nor be
/// answered before that process moves.
fn current_attempts_held_safely(state: &State) -> bool {
    state.clients.iter().enumerate().all(|(index, client)| {
        let client_id = index as u8;
        let op = OpRef {
            client: client_id,
            op: client.op,
        };
        let held = client.phase == ClientPhase::Waiting && in_process(state, op, client.attempts);
        let answered = state.network.keys().any(
            |message| matches!(message, Message::Response(response) if response.to.client == client_id),
        );
        !held || (!state.budgets.has(EARLY_TIMEOUTS) && !answered)
    })
}

/// Whether everything of `client`'s current attempt is gone, and no response to the client is in the network.
fn lost_attempt(state: &State, client: u8) -> bool {
    let client_state = &state.clients[client as usize];
    let op = OpRef {
        client,
        op: client_state.op,
    };
    let attempt = client_state.attempts;
    let in_network = state.network.keys().any(|message| match message {
        Message::Request(request) => request.from == op && request.attempt == attempt,
        Message::Response(response) => response.to.client == client,
    });
    client_state.phase == ClientPhase::Waiting && !in_network && !in_process(state, op, attempt)
}

/// Whether a process is handling `attempt` of `op`.
fn in_process(state: &State, op: OpRef, attempt: u8) -> bool {
    state.procs.iter().any(|proc| {
        matches!(proc, Proc::Busy(job) if job.request.from == op && job.request.attempt == attempt)
    })
}

/// Whether the response to `attempt` of `op` is what its client waits for and the only answer it can get:
/// no other response to the client is in the network, and no copy of the attempt's request is in the network
/// or in a process (it could answer before or after, and the two orders leave different networks).
fn only_answer(state: &State, op: OpRef, attempt: u8) -> bool {
    let client = &state.clients[op.client as usize];
    let waiting =
        client.phase == ClientPhase::Waiting && client.op == op.op && client.attempts == attempt;
    let mut responses = 0;
    let mut requests = 0;
    for message in state.network.keys() {
        match message {
            Message::Response(response) if response.to.client == op.client => responses += 1,
            Message::Request(request) if request.from == op && request.attempt == attempt => {
                requests += 1
            }
            _ => {}
        }
    }
    waiting && responses == 1 && requests == 0 && !in_process(state, op, attempt)
}

/// Whether `action` belongs to `client`'s part (the module docs): it acts on the client, a message from or to
/// it, a process busy with its request, or a key of its scope.
pub(super) fn in_part(state: &State, client: u8, action: &Action) -> bool {
    match *action {
        Action::Send { client: owner }
        | Action::Timeout { client: owner }
        | Action::Republish { client: owner, .. } => owner == client,
        Action::DeliverRequest { request, .. } => request.from.client == client,
        Action::DeliverResponse { response } => response.to.client == client,
        Action::Step { proc } | Action::Crash { proc } | Action::Fail { proc } => matches!(
            state.procs[proc as usize],
            Proc::Busy(job) if job.request.from.client == client
        ),
        Action::Drop { message } | Action::Duplicate { message } => match message {
            Message::Request(request) => request.from.client == client,
            Message::Response(response) => response.to.client == client,
        },
        Action::ExpireKey { key } | Action::ExpireLease { key } => key.scope == client,
    }
}

#[cfg(test)]
#[path = "independence_tests.rs"]
mod tests;
