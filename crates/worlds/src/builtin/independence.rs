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
//! crashing P2), but it orders no step that the reduction commutes: a budget is only read or written by faults
//! of its kind (and the liveness tests of early timeouts and pauses), faults are never declared alone
//! (`check::por` picks a non-fault action), and every budget's spenders lie on one side of the persistent set
//! below: crashes, handler errors, pauses and key expiries are server-side actions, all inside it; drops,
//! copies and early timeouts are all outside it. So no action outside the set can disable one inside by spending
//! a shared budget, nor the reverse. The single actions below require every budget they could race with
//! (response drops and copies, early timeouts, crashes, handler errors) to be spent. Budgets per process would
//! be another fault model (n crashes per process, more behaviours, larger spaces) and would make no declared
//! action independent that is not already.
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

use super::action::Action;
use super::state::{ClientPhase, JobStep, Message, OpRef, Proc, State};
use super::step::{CRASHES, DROP_RESPONSES, DUPLICATE_RESPONSES, EARLY_TIMEOUTS, HANDLER_ERRORS};
use super::world::{Server, WorldOf};
use crate::protocol::status;

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

    /// The persistent set of the module docs, as indices into `actions` (every enabled action), when it
    /// applies; nothing otherwise.
    pub fn persistent_set(&self, state: &State, actions: &[Action], out: &mut Vec<usize>) {
        if !S::SERVER_STAYS_INSIDE
            || state.budgets.has(super::queue::REPUBLISHES)
            || state.procs.contains(&Proc::Idle)
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
