//! A handler in a world: clients that retry (one key per operation or per attempt, timeouts, a bounded number
//! of attempts), a lossy network (drop and duplicate within budgets), server processes that run the handler one
//! store call at a time and may crash between any two calls or be paused while the clock jumps past leases and
//! TTLs, the simulated store, and the ghost ledger. It is a `check::Model`, so every explorer works on it.
//!
//! A process's state is its request and the answers its calls got (see `replay`): hashable, and the handler's
//! futures never need to be kept. Background workers (see [`Worker`]) are processes of their own beside the
//! server processes: woken whenever something they could see has changed, crashing (and restarting) like the
//! others. This first version has its own clients and network (simpler than the built-in
//! world's: a 409 counts as an attempt; with `retry_after_ms` the client waits that long before retrying, which
//! moves the clock). At rest the clock moves to the next lease or TTL expiry, and `eventually-*` properties are
//! judged under weak fairness of the clock and of retries: see `time`.

mod assert;
mod describe;
pub mod properties;
mod records;
pub mod report;
pub mod requests;
mod step;
pub mod time;
pub(super) mod trace;
mod view;

use super::api::{Activation, Handler, NoWorker, Reply, Request, Worker};
use super::calls::{Answer, Call};
use super::lost::{CallFault, CALL_FAULTS_MAX};
use super::prefix::{Prefix, Prefixes};
use super::replay::Next;
use super::shared::Shared;
use super::sim::{Committed, Ghost, Txn};
use crate::builtin::{Budgets, Event, Events, WorldProperty};
use crate::check::{self, Model};
use records::no_stuck_key;
pub use records::{Records, RecordsIn};
use requests::Hooks;
use std::collections::BTreeMap;
use time::Expiries;

/// Fault budgets of a handler world.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct HandlerFaults {
    pub drop_requests: u8,
    pub drop_responses: u8,
    pub duplicate_requests: u8,
    pub crashes: u8,
    pub early_timeouts: u8,
    /// A busy process paused while the clock jumps by `pause_ms` (leases and TTLs run out meanwhile).
    pub pauses: u8,
    /// A store call fails instead of being made (a timeout, a dropped connection, an exception in the driver):
    /// the handler gets an error (a failed `commit` rolls the transaction back). Faults of named calls only, and
    /// calls made whose answers are lost, each with a budget of its own: `HandlerWorld::call_faults`.
    pub call_failures: u8,
}

/// A handler world's fault kind, by the name the explorer's budget panel shows (the variant's kebab case,
/// derived here once). Its discriminant is its index in `HandlerState::budgets`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, strum::EnumIter, strum::IntoStaticStr)]
#[strum(serialize_all = "kebab-case")]
pub(super) enum HandlerFault {
    DropRequests,
    DropResponses,
    DuplicateRequests,
    Crashes,
    EarlyTimeouts,
    Pauses,
    CallFailures,
}

impl HandlerFaults {
    /// The budgets in `HandlerFault` order.
    fn as_array(self) -> [u8; 7] {
        [
            self.drop_requests,
            self.drop_responses,
            self.duplicate_requests,
            self.crashes,
            self.early_timeouts,
            self.pauses,
            self.call_failures,
        ]
    }
}

/// The world around a handler (and its background workers, if any).
pub struct HandlerWorld<H, W = NoWorker> {
    pub(super) handler: H,
    pub(super) clients: u8,
    /// Each client performs these operations (JSON bodies), in order.
    pub(super) bodies: Vec<String>,
    /// A new key for every attempt (docs/src/domain.md mistake 2) instead of one per operation.
    pub(super) key_per_attempt: bool,
    pub(super) attempts_max: u8,
    pub(super) processes: u8,
    pub(super) faults: HandlerFaults,
    pub(super) pause_ms: u64,
    /// A client told 409 waits this long before its next attempt (Retry-After): the clock moves on.
    pub(super) retry_after_ms: Option<u64>,
    pub(super) worker: W,
    /// Worker processes running `worker` (after the server processes in `HandlerState::procs`).
    pub(super) workers: u8,
    /// The handler's and the workers' runs met so far (see `prefix`): each prefix is run once, whatever the
    /// thread.
    pub(super) prefixes: Prefixes,
    pub(super) worker_prefixes: Prefixes,
    /// For `no-stuck-key`: where the records are, and which are unfinished.
    pub(super) records: Option<Records>,
    /// Where the design keeps leases and when each runs out: at rest the clock moves to the next one.
    pub(super) expiries: Option<Expiries>,
    /// Judge `eventually-*` under weak fairness of the clock and of retries (`time`); on by default.
    pub(super) fair: bool,
    /// The user's request hook and reactions (`requests`).
    pub(super) hooks: Hooks,
    /// Faults of named calls, each with its own budget (`lost`).
    pub(super) call_faults: Vec<CallFault>,
    /// The design's own properties and wanted scenarios (`properties`).
    pub(super) own: properties::Own,
}

impl<H: Handler> HandlerWorld<H, NoWorker> {
    /// `clients` clients each performing one operation with `body`, one server process, no faults.
    pub fn new(handler: H, clients: u8, body: &str) -> Self {
        assert!((1..=8).contains(&clients), "1 to 8 clients");
        HandlerWorld {
            handler,
            clients,
            bodies: vec![body.to_string()],
            key_per_attempt: false,
            attempts_max: 3,
            processes: 1,
            faults: HandlerFaults::default(),
            pause_ms: 60_000,
            retry_after_ms: None,
            worker: NoWorker,
            workers: 0,
            prefixes: Prefixes::default(),
            worker_prefixes: Prefixes::default(),
            records: None,
            expiries: None,
            fair: true,
            hooks: Hooks::default(),
            call_faults: Vec::new(),
            own: Default::default(),
        }
    }
}

impl<H: Handler, W: Worker> HandlerWorld<H, W> {
    /// `count` background processes running `worker` (1 or 2), each woken after any change it could see.
    pub fn worker<V: Worker>(self, worker: V, count: u8) -> HandlerWorld<H, V> {
        assert!((1..=2).contains(&count), "1 or 2 worker processes");
        HandlerWorld {
            handler: self.handler,
            clients: self.clients,
            bodies: self.bodies,
            key_per_attempt: self.key_per_attempt,
            attempts_max: self.attempts_max,
            processes: self.processes,
            faults: self.faults,
            pause_ms: self.pause_ms,
            retry_after_ms: self.retry_after_ms,
            worker,
            workers: count,
            records: self.records,
            prefixes: self.prefixes,
            worker_prefixes: Prefixes::default(),
            expiries: self.expiries,
            fair: self.fair,
            hooks: self.hooks,
            call_faults: self.call_faults,
            own: self.own,
        }
    }

    /// Declare where the records are and which are unfinished: adds the `no-stuck-key` property (once faults
    /// stop, the world comes to rest with no unfinished record). `in_progress(value, now_ms)` may be a closure.
    pub fn records(
        mut self,
        place: RecordsIn,
        in_progress: impl Fn(&str, u64) -> bool + Send + Sync + 'static,
    ) -> Self {
        let in_progress = std::sync::Arc::new(in_progress);
        self.records = Some(Records { place, in_progress });
        self
    }

    /// Declare where the design keeps its leases and when the one in a value runs out (`None`: no lease), in
    /// the store's milliseconds: at rest the clock moves to the next one (`time`). TTLs need no declaring.
    pub fn expiries(
        mut self,
        place: RecordsIn,
        expiry_of: impl Fn(&str) -> Option<u64> + Send + Sync + 'static,
    ) -> Self {
        self.expiries = Some(Expiries {
            place,
            expiry_of: std::sync::Arc::new(expiry_of),
        });
        self
    }

    /// Judge `eventually-*` under weak fairness of the clock and of retries (`true`, the default), or let a
    /// client give up on its last 409 (`false`): see `time`.
    pub fn fair(mut self, yes: bool) -> Self {
        self.fair = yes;
        self
    }

    /// After a 409 a client waits `wait_ms` (the server's Retry-After) before it retries: time passes.
    pub fn retry_after_ms(mut self, wait_ms: u64) -> Self {
        self.retry_after_ms = Some(wait_ms);
        self
    }

    pub fn processes(mut self, processes: u8) -> Self {
        assert!((1..=4).contains(&processes), "1 to 4 processes");
        self.processes = processes;
        self
    }

    pub fn attempts_max(mut self, attempts: u8) -> Self {
        assert!((1..=8).contains(&attempts), "1 to 8 attempts");
        self.attempts_max = attempts;
        self
    }

    pub fn faults(mut self, faults: HandlerFaults) -> Self {
        self.faults = faults;
        self
    }

    pub fn key_per_attempt(mut self, yes: bool) -> Self {
        self.key_per_attempt = yes;
        self
    }

    /// How far the clock jumps when a process is paused.
    pub fn pause_ms(mut self, pause_ms: u64) -> Self {
        self.pause_ms = pause_ms;
        self
    }

    /// The request attempt `attempt` of operation `op` of `client` carries when it follows no answer (see
    /// `request_in` for a state's run).
    pub fn request(&self, client: u8, op: u8, attempt: u8) -> Request {
        self.request_after(Op { client, op }, attempt, None, &[])
    }

    /// A run of `task` from its start in `state`; a handler (or worker) that is not deterministic stops the
    /// search.
    pub(super) fn start(&self, task: &Task, state: &HandlerState) -> Prefix {
        match task {
            Task::Serve { from, attempt } => {
                let request = self.request_in(state, *from, *attempt);
                self.prefixes.start(&self.handler, &request)
            }
            Task::Work { .. } => self
                .worker_prefixes
                .start(&Activation(&self.worker), &no_request()),
        }
    }

    /// The run after its next call got `answer`.
    pub(super) fn next(&self, task: &Task, prefix: &Prefix, answer: Answer) -> Prefix {
        match task {
            Task::Serve { .. } => self.prefixes.answer(&self.handler, prefix, answer),
            Task::Work { .. } => {
                self.worker_prefixes
                    .answer(&Activation(&self.worker), prefix, answer)
            }
        }
    }

    /// Whether process `proc` is a worker (they come after the server processes).
    pub fn is_worker(&self, proc: u8) -> bool {
        proc >= self.processes
    }
}

/// What the real side's runner (`retrylab_real::runner::lockstep`) reads of a world to drive one of its traces.
impl<H: Handler, W: Worker> HandlerWorld<H, W> {
    /// The handler code the server processes run.
    pub fn handler_code(&self) -> &H {
        &self.handler
    }

    /// The background worker code.
    pub fn worker_code(&self) -> &W {
        &self.worker
    }

    /// How many server processes run the handler (the workers come after them).
    pub fn server_processes(&self) -> u8 {
        self.processes
    }

    /// The named call fault a trace's `HandlerAction` refers to by index.
    pub fn declared_call_fault(&self, index: usize) -> &CallFault {
        &self.call_faults[index]
    }
}

/// What a worker's run is given as its request: nothing.
pub fn no_request() -> Request {
    Request::default()
}

/// An operation: client and index.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Op {
    pub client: u8,
    pub op: u8,
}

impl Op {
    pub(super) fn ghost(self) -> Ghost {
        u16::from(self.client) * 16 + u16::from(self.op)
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Message {
    Request { from: Op, attempt: u8 },
    Response { to: Op, attempt: u8, reply: Reply },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Phase {
    /// About to send; `after_conflict`: the last answer was a 409.
    Ready {
        after_conflict: bool,
    },
    Waiting,
    Done,
    /// Told 409 with its attempts used up, under fairness: asks again once the world is at rest and time moved.
    Patient,
}

/// How one operation ended, from the client's point of view (as the built-in worlds' `builtin::OpOutcome`).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum OpOutcome {
    Pending,
    Succeeded(Reply),
    Failed(u16),
    GaveUp,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Client {
    pub op: u8,
    pub attempts: u8,
    pub phase: Phase,
    pub outcomes: Vec<OpOutcome>,
    /// `(op, attempt, status)`: attempt `attempt` of operation `op` was sent after an answer with `status`.
    /// Kept only in worlds with a request hook (`requests`), for the hook; never cleared, so a late
    /// attempt is rebuilt as it was sent.
    pub sent_after: Vec<(u8, u8, u16)>,
}

/// What a process is doing.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Task {
    /// Serving an attempt of an operation.
    Serve { from: Op, attempt: u8 },
    /// A worker's run; `ghost`: the operation of the last record it read, which its work is counted for.
    Work { ghost: Ghost },
}

impl Task {
    /// The operation whose effects this work counts as.
    pub fn ghost(&self) -> Ghost {
        match self {
            Task::Serve { from, .. } => from.ghost(),
            Task::Work { ghost } => *ghost,
        }
    }

    /// The attempt served, for a server process.
    pub fn serving(&self) -> Option<(Op, u8)> {
        match self {
            Task::Serve { from, attempt } => Some((*from, *attempt)),
            Task::Work { .. } => None,
        }
    }
}

/// A process: what it does (an attempt, or a worker's run), where its run is (its calls' answers and what it does
/// next, interned: see `prefix`), its open transaction.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Job {
    pub task: Task,
    pub prefix: Prefix,
    pub txn: Option<Txn>,
}

impl Job {
    /// What the process does next.
    pub fn next(&self) -> &Next {
        self.prefix.next()
    }

    /// Its calls so far and their answers.
    pub fn answered(&self) -> &[(Call, Answer)] {
        self.prefix.answered()
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
/// Its parts are copied only when a step writes to them (see `shared`).
pub struct HandlerState {
    pub clients: Shared<Vec<Client>>,
    /// In-flight messages as a multiset.
    pub network: Shared<BTreeMap<Message, u8>>,
    /// Server processes, then worker processes.
    pub procs: Shared<Vec<Option<Job>>>,
    /// Per worker: something it could see changed since its last run began (or it was restarted).
    pub wake: Vec<bool>,
    pub store: Shared<Committed>,
    /// Ghost ledger of responses: the first success sent for each operation.
    pub first_success: Shared<BTreeMap<Op, Reply>>,
    /// What is left of each fault's budget, indexed by `HandlerFault`.
    pub budgets: Budgets<7>,
    /// What is left of each call fault's budget (`HandlerWorld::call_faults`, in its order).
    pub call_budgets: Budgets<CALL_FAULTS_MAX>,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum HandlerAction {
    Send {
        client: u8,
    },
    Timeout {
        client: u8,
    },
    DeliverRequest {
        message: Message,
        proc: u8,
    },
    DeliverResponse {
        message: Message,
    },
    /// Process `proc` makes its next call or sends its reply; `made`: which (so a trace knows its run).
    Step {
        proc: u8,
        made: trace::Made,
    },
    /// A worker begins a run.
    Wake {
        worker: u8,
    },
    Drop {
        message: Message,
    },
    Duplicate {
        message: Message,
    },
    Crash {
        proc: u8,
    },
    Pause,
    Fail {
        proc: u8,
    },
    /// At rest, time passes: the clock moves to the next lease or TTL expiry, patient clients ask again.
    Later,
    /// Process `proc`'s next call fails as the world's call fault number `fault` says.
    CallFault {
        proc: u8,
        fault: u8,
    },
}

/// Every operation ended in one success or one definite failure (a property's predicate: it takes the world).
fn resolved<H, W>(_world: &HandlerWorld<H, W>, state: &HandlerState) -> bool {
    state.clients.iter().all(|client| {
        client.phase == Phase::Done
            && client
                .outcomes
                .iter()
                .all(|outcome| matches!(outcome, OpOutcome::Succeeded(_) | OpOutcome::Failed(_)))
    })
}

impl<H: Handler, W: Worker> Model for HandlerWorld<H, W> {
    type State = HandlerState;
    type Action = HandlerAction;
    type Obs = Events;

    fn init_state(&self) -> HandlerState {
        let client = Client {
            op: 0,
            attempts: 0,
            phase: Phase::Ready {
                after_conflict: false,
            },
            outcomes: vec![OpOutcome::Pending; self.bodies.len()],
            sent_after: Vec::new(),
        };
        HandlerState {
            clients: Shared::new(vec![client; self.clients as usize]),
            network: Shared::default(),
            procs: Shared::new(vec![None; (self.processes + self.workers) as usize]),
            wake: vec![true; self.workers as usize],
            store: Shared::default(),
            first_success: Shared::default(),
            budgets: Budgets::new(self.faults.as_array()),
            call_budgets: self.call_budgets(),
        }
    }

    fn actions(&self, state: &HandlerState, out: &mut Vec<HandlerAction>) {
        self.enabled(state, out)
    }

    fn apply(&self, state: &mut HandlerState, action: &HandlerAction) -> Events {
        self.step(state, action)
    }

    /// The built-in world's safety properties by the same names and events, its `eventually-resolves`,
    /// `no-stuck-key` when the design declared its records, and the scenarios a handler world can show.
    fn properties(&self) -> Vec<check::Property<Self>> {
        let mut properties: Vec<check::Property<Self>> = [
            WorldProperty::NoDuplicateEffect,
            WorldProperty::NoLostEffect,
            WorldProperty::ConsistentReplay,
        ]
        .into_iter()
        .map(|named| check::Property::always_unobserved(named.name(), named.violating_events()))
        .collect();
        properties.push(check::Property::eventually_at_rest(
            WorldProperty::EventuallyResolves.name(),
            resolved,
        ));
        if self.records.is_some() {
            properties.push(check::Property::eventually_at_rest(
                WorldProperty::NoStuckKey.name(),
                no_stuck_key,
            ));
        }
        properties.extend(self.hooks.scenarios().map(|scenario| {
            check::Property::sometimes_observed(scenario.scenario_name(), Events::of(&[scenario]))
        }));
        for scenario in [
            Event::CrashAfterClaim,
            Event::LostResponse,
            Event::LostRequest,
            Event::DuplicatedRequest,
            Event::ParallelRetry,
            Event::RetryAfterTimeout,
            Event::Replay,
            Event::Conflict,
            Event::SlowOwner,
            Event::ProviderRetried,
            Event::HandlerError,
        ]
        .into_iter()
        .chain(self.answers_lost().then_some(Event::AnswerLost))
        {
            properties.push(check::Property::sometimes_observed(
                scenario.scenario_name(),
                Events::of(&[scenario]),
            ));
        }
        properties.extend(self.own_properties());
        properties
    }

    /// Without workers every non-fault step moves a client on or a process along its run (a longer prefix, or
    /// its end), so no state comes back; a worker woken by its own writes could cycle, so worlds with workers
    /// promise nothing. Debug builds check the promise on small searches.
    fn acyclic(&self) -> bool {
        self.workers == 0
    }

    fn is_fault(&self, state: &HandlerState, action: &HandlerAction) -> bool {
        match action {
            HandlerAction::Drop { .. }
            | HandlerAction::Duplicate { .. }
            | HandlerAction::Crash { .. }
            | HandlerAction::Fail { .. }
            | HandlerAction::CallFault { .. }
            | HandlerAction::Pause => true,
            HandlerAction::Timeout { client } => self.attempt_alive(state, *client),
            _ => false,
        }
    }

    fn describe_step(
        &self,
        before: &HandlerState,
        action: &HandlerAction,
        after: &HandlerState,
        obs: Events,
    ) -> String {
        self.describe(before, action, after, obs)
    }

    /// Where a trace found on another design parts from this one, and why.
    fn why_not_enabled(&self, state: &HandlerState, action: &HandlerAction) -> String {
        self.why_not_here(state, action)
    }

    /// The explorer's panels (`view.rs`).
    fn view(&self, state: &HandlerState) -> check::StateView {
        self.panels(state)
    }
}
