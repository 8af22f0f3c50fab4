//! Faults of named calls: a call the handler makes (a provider's `capture`, a `webhook`, a `COMMIT`, any store
//! call by its timeline name) may fail as "not made" (the handler gets an error, nothing happened) or as "made,
//! answer lost" (the call took effect, the handler gets the same error: a timeout, a connection dropped after the
//! request left). Each fault has its own budget and name, so a world can say "the capture's answer may be lost
//! once" without every other call failing too. The handler cannot tell the two apart, as in production: what it
//! does next (retry inline with the same key, with a fresh one, or give up) is what the checker explores.
//!
//! A lost answer is offered only for a call that takes effect on its own: outside a transaction, or the `COMMIT`
//! itself. A statement inside an open transaction whose answer is lost has lost its connection, and with it the
//! transaction: that is a crash (`HandlerFaults::crashes`), not a made call.

use super::api::{Handler, Worker};
use super::calls::Call;
use super::replay::{refused, Next};
use super::world::{HandlerAction, HandlerState, HandlerWorld};
use crate::builtin::{Budgets, Event, Events};

/// At most this many call faults in one world (their budgets are a fixed array of the state: no allocation).
pub const CALL_FAULTS_MAX: usize = 4;

/// How a named call fails; its name in timelines is the variant's in kebab case (`answer-lost`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, strum::IntoStaticStr)]
#[strum(serialize_all = "kebab-case")]
pub enum Failure {
    /// Not made: nothing happened, the handler gets an error.
    NotMade,
    /// Made, its answer lost: it took effect, the handler gets the same error.
    AnswerLost,
}

impl Failure {
    pub fn name(self) -> &'static str {
        self.into()
    }
}

/// A fault of the calls named `call` (an external call's own name such as `capture`, or a store call's timeline
/// name such as `COMMIT`, `provider-charge`, `kv-set`; case does not matter), within its own budget.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CallFault {
    pub call: String,
    pub failure: Failure,
    pub budget: u8,
}

impl CallFault {
    /// Up to `budget` calls named `call` fail without being made.
    pub fn not_made(call: &str, budget: u8) -> CallFault {
        CallFault {
            call: call.to_string(),
            failure: Failure::NotMade,
            budget,
        }
    }

    /// Up to `budget` calls named `call` are made and their answers lost.
    pub fn answer_lost(call: &str, budget: u8) -> CallFault {
        CallFault {
            call: call.to_string(),
            failure: Failure::AnswerLost,
            budget,
        }
    }

    /// Its name in timelines and the explorer's budgets: `capture answer-lost`.
    pub fn name(&self) -> String {
        format!("{} {}", self.call, self.failure.name())
    }

    /// Whether it is a fault of `call`.
    pub fn applies_to(&self, call: &Call) -> bool {
        call.kind().eq_ignore_ascii_case(&self.call)
    }
}

impl<H: Handler, W: Worker> HandlerWorld<H, W> {
    /// Faults of named calls, each within its own budget (at most four; a name may not be empty).
    pub fn call_faults(mut self, faults: impl IntoIterator<Item = CallFault>) -> Self {
        let faults: Vec<CallFault> = faults.into_iter().collect();
        assert!(
            faults.len() <= CALL_FAULTS_MAX,
            "at most {CALL_FAULTS_MAX} call faults"
        );
        assert!(
            faults.iter().all(|fault| !fault.call.is_empty()),
            "a call fault names its call"
        );
        self.call_faults = faults;
        self
    }

    /// The call faults' budgets at the start.
    pub(super) fn call_budgets(&self) -> Budgets<CALL_FAULTS_MAX> {
        let mut budgets = [0; CALL_FAULTS_MAX];
        for (budget, fault) in budgets.iter_mut().zip(&self.call_faults) {
            *budget = fault.budget;
        }
        Budgets::new(budgets)
    }

    /// Whether some call may lose its answer (the `answer-lost` scenario is then reported).
    pub(super) fn answers_lost(&self) -> bool {
        (self.call_faults.iter()).any(|fault| fault.failure == Failure::AnswerLost)
    }

    /// The call faults enabled: each busy process's next call, for each fault of it with budget left.
    pub(super) fn enabled_call_faults(&self, state: &HandlerState, out: &mut Vec<HandlerAction>) {
        if self.call_faults.is_empty() {
            return;
        }
        for (proc, job) in state.procs.iter().enumerate() {
            let Some(job) = job else { continue };
            let Next::Call(call) = job.next() else {
                continue;
            };
            for (index, fault) in self.call_faults.iter().enumerate() {
                if !state.call_budgets.has(index) || !fault.applies_to(call) {
                    continue;
                }
                let possible = match fault.failure {
                    Failure::NotMade => true,
                    // Made now: it needs what the call needs (the write lock), and takes effect on its own.
                    Failure::AnswerLost => {
                        state.store.enabled(proc as u8, call, job.txn.as_ref())
                            && !(call.in_transaction() && job.txn.is_some())
                    }
                };
                if possible {
                    out.push(HandlerAction::CallFault {
                        proc: proc as u8,
                        fault: index as u8,
                    });
                }
            }
        }
    }

    /// Process `proc`'s next call fails as call fault `fault` says.
    pub(super) fn call_fault(
        &self,
        state: &mut HandlerState,
        proc: u8,
        fault: u8,
        events: &mut Events,
    ) {
        state.call_budgets.spend(fault as usize);
        match self.call_faults[fault as usize].failure {
            Failure::NotMade => {
                events.add(Event::HandlerError);
                self.fail_call(state, proc);
            }
            Failure::AnswerLost => {
                events.add(Event::AnswerLost);
                let job = state.procs[proc as usize].as_ref().expect("a busy process");
                let (task, before) = (job.task.clone(), job.prefix.clone());
                // Made as any call is (the store, the ledger, a duplicate it causes) ...
                self.run_call(state, proc, events);
                // ... but its answer never reaches the handler (nor does a worker adopt the row it read).
                let job = state.procs[proc as usize].as_mut().expect("still busy");
                job.prefix = self.next(&task, &before, refused("injected failure"));
                job.task = task;
            }
        }
    }

    /// The timeline's line for a call fault.
    pub(super) fn describe_call_fault(&self, before: &HandlerState, proc: u8, fault: u8) -> String {
        let job = before.procs[proc as usize]
            .as_ref()
            .expect("a busy process");
        let Next::Call(call) = job.next() else {
            unreachable!("a process waiting on a call")
        };
        let name = if self.is_worker(proc) {
            format!("W{}", proc - self.processes + 1)
        } else {
            format!("P{}", proc + 1)
        };
        match self.call_faults[fault as usize].failure {
            Failure::NotMade => format!("{name} {}: FAILS, not made", call.text()),
            Failure::AnswerLost => format!(
                "{name} {}: made, its ANSWER IS LOST (the handler gets an error)",
                call.text()
            ),
        }
    }
}
