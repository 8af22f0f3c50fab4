//! One schedule executed over the gates: the probe sends the requests itself, one at a time until each is held
//! at its first boundary (so which request a connection serves is known), then releases the held boundaries
//! one by one in the order a prefix of choices says (past it, `explore::default_choice`), and reports every
//! decision point it met (`explore::Point`) and the boundaries in the order released.
//!
//! A decision point is reached when every unfinished request is held (one held boundary per connection),
//! blocked (released, no answer, and waiting on a lock: the others go on), or finished (its HTTP answer came).
//! Everything waits on events with a timeout; a run with no event for `stall` is an error.
//!
//! Blocked is the store's word where the store can say (`Judge`): a released PostgreSQL statement is blocked
//! exactly while `pg_blocking_pids` of its connection's backend is non-empty, asked every `STORE_POLL` while it
//! has no answer and asked again at every decision point before anything is released (a lock granted since the
//! last look makes its request go on: no decision until it is held or blocked again). Between a snapshot and
//! the release nothing runs that could end a wait: every other request is held (its backend idle), blocked or
//! finished. So the decision points do not depend on how fast the machine is, nor on the poll interval. A
//! timer (`blocked`, `--blocked-ms`) stays only where the store cannot say: a Redis blocking command (`BLPOP`,
//! `XREAD ... BLOCK`, `WAIT` ...; any other Redis command always answers, and is never blocked), a PostgreSQL
//! connection whose backend the gate did not learn, and a request sent but with no boundary seen yet (it may
//! queue behind another request's on a shared connection: `Waiting`).
//!
//! Attribution: a boundary on connection C belongs to the request C's previous boundary belonged to while that
//! request is unfinished and not held; otherwise to the request released most recently (same conditions);
//! otherwise to the first sent request not seen yet. A boundary nobody can own is released at once.
//!
//! Steps: only request statements are held (session settings and housekeeping pass unheld, counted in
//! `RunOutcome::passed`), and a released one the store refused without running it (`Protocol::ran_nothing`,
//! Redis `NOSCRIPT`) is dropped again. A crash point and the comparison with a recorded schedule address
//! "request R's k-th step in this run", so a run that differs from the recorded one only in what passed unheld
//! crashes at the same statement.

use super::explore::{default_choice, Point};
use super::gate::{Boundary, BoundaryId, ConnectionId, Decision, Event, Mode, Wire};
use super::kind::Passed;
use super::lab::{Lab, LabError};
use super::protocol;
use crate::stack::http::{exchange, HttpRequest, HttpResponse};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};
use tokio::sync::mpsc;

/// A boundary as released, in order: which request, which store, its normalised text.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Released {
    pub request: u32,
    pub wire: Wire,
    pub text: String,
    /// A transaction was open on its connection once it ran (`Boundary::in_transaction`); absent in older
    /// schedules.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub in_transaction: bool,
}

/// Where a crash-run kills the service.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum When {
    /// The boundary is held and never runs.
    Before,
    /// It runs; its answer is withheld (for a `COMMIT`, the lost acknowledgement).
    After,
}

/// A crash point: request `request`'s step `statement` (0-based, request statements only), met in the run as
/// it goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CrashAt {
    pub request: u32,
    pub statement: usize,
    pub when: When,
}

/// What a run follows.
#[derive(Clone, Copy, Debug, Default)]
pub struct Plan<'a> {
    /// The choices at the first decision points (request indices).
    pub prefix: &'a [u32],
    /// Kill there.
    pub crash: Option<CrashAt>,
    /// A recorded schedule's boundaries: the first step of a request that differs from that request's step at
    /// the same place in the recording is reported.
    pub expected: Option<&'a [Released]>,
}

/// What a run did.
#[derive(Clone, Debug, Default)]
pub struct RunOutcome {
    pub points: Vec<Point>,
    pub released: Vec<Released>,
    /// Each request's HTTP answer (None: the service was killed first).
    pub answers: Vec<Option<Result<HttpResponse, String>>>,
    /// The crash point was reached (the caller kills now).
    pub crashed: bool,
    /// Where the run left the expected texts or the prefix.
    pub divergence: Option<String>,
    /// What passed without being a step.
    pub passed: Passed,
    /// Released PostgreSQL statements the store said wait on a lock, at a decision point.
    pub store_waits: usize,
    /// Released statements counted as blocked by the timer (`blocked`), at a decision point.
    pub timer_waits: usize,
}

/// Who says whether a released statement waits on a lock.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Judge {
    /// PostgreSQL, asked about the backend serving the statement's connection.
    Store { pid: i32 },
    /// No answer within `blocked` (a Redis blocking command; a PostgreSQL backend not learnt).
    Timer,
    /// A Redis command that is not a blocking one: Redis runs one command at a time and always answers it.
    Never,
}

/// Redis commands that may wait for another client (`XREAD` and `XREADGROUP` only with `BLOCK`). Inside
/// `MULTI ... EXEC` they do not block (the boundary's text then starts with `MULTI`).
const REDIS_BLOCKING: [&str; 12] = [
    "BLPOP",
    "BRPOP",
    "BRPOPLPUSH",
    "BLMOVE",
    "BLMPOP",
    "BZPOPMIN",
    "BZPOPMAX",
    "BZMPOP",
    "WAIT",
    "WAITAOF",
    "XREAD",
    "XREADGROUP",
];

/// How a boundary, once released, is judged blocked. `pid`: its connection's backend, if learnt.
fn judge_of(boundary: &Boundary, pid: Option<i32>) -> Judge {
    match (boundary.wire, pid) {
        (Wire::Postgres, Some(pid)) => Judge::Store { pid },
        (Wire::Postgres, None) => Judge::Timer,
        (Wire::Redis, _) => {
            let mut words = boundary.text.split_whitespace();
            let name = words.next().unwrap_or("");
            let streams = name == "XREAD" || name == "XREADGROUP";
            let blocking =
                REDIS_BLOCKING.contains(&name) && (!streams || words.any(|w| w == "BLOCK"));
            if blocking {
                Judge::Timer
            } else {
                Judge::Never
            }
        }
    }
}

/// Between two questions to the store about released PostgreSQL statements with no answer yet. Only how soon
/// a wait is seen depends on it, never what is decided.
pub const STORE_POLL: Duration = Duration::from_millis(3);

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    /// Sent; no boundary of it seen yet.
    Sent {
        at: Instant,
    },
    /// Sent long ago and still not seen (it may queue behind another request's boundary on a shared connection).
    Waiting,
    Held {
        id: BoundaryId,
    },
    /// Released, no answer yet, not known to wait: it runs (or the store has not seen it yet).
    Released {
        id: BoundaryId,
        at: Instant,
        judge: Judge,
    },
    /// Released, no answer, and waiting on a lock (the store said so, or `judge` is the timer and it ran out).
    Blocked {
        id: BoundaryId,
        judge: Judge,
    },
    /// Its last boundary was answered; the service works on it.
    Running,
    Finished,
}

enum Input {
    Answer(usize, Result<HttpResponse, String>),
    Gate(Event),
}

struct Tracker {
    phases: Vec<Phase>,
    outcome: RunOutcome,
    connection_owner: BTreeMap<ConnectionId, usize>,
    boundary_owner: BTreeMap<BoundaryId, usize>,
    held: BTreeMap<BoundaryId, Boundary>,
    answered: BTreeSet<BoundaryId>,
    /// The ids of `outcome.released`, in the same order.
    released_ids: Vec<BoundaryId>,
    last_released: Option<usize>,
    blocked: Duration,
    progress_at: Instant,
    /// When the store was last asked about the released statements.
    asked_at: Instant,
    /// Boundaries seen blocked at a decision point, by who said so (the store: true).
    waits: BTreeMap<BoundaryId, bool>,
}

impl Tracker {
    fn new(requests: usize, blocked: Duration) -> Tracker {
        Tracker {
            phases: vec![Phase::Finished; requests],
            outcome: RunOutcome {
                answers: vec![None; requests],
                ..RunOutcome::default()
            },
            connection_owner: BTreeMap::new(),
            boundary_owner: BTreeMap::new(),
            held: BTreeMap::new(),
            answered: BTreeSet::new(),
            released_ids: Vec::new(),
            last_released: None,
            blocked,
            progress_at: Instant::now(),
            asked_at: Instant::now(),
            waits: BTreeMap::new(),
        }
    }

    /// May `request` take a new boundary?
    fn open(&self, request: usize) -> bool {
        !matches!(self.phases[request], Phase::Finished | Phase::Held { .. })
    }

    fn attribute(&self, connection: ConnectionId) -> Option<usize> {
        let previous = self.connection_owner.get(&connection).copied();
        previous
            .filter(|&r| self.open(r))
            .or(self.last_released.filter(|&r| self.open(r)))
            .or_else(|| {
                (0..self.phases.len())
                    .find(|&r| matches!(self.phases[r], Phase::Sent { .. } | Phase::Waiting))
            })
    }

    /// Take in one input. Returns a boundary nobody owns (to be released at once).
    fn take(&mut self, input: Input) -> Result<Option<BoundaryId>, LabError> {
        self.progress_at = Instant::now();
        self.observe(&input);
        match input {
            Input::Answer(request, answer) => {
                self.outcome.answers[request] = Some(answer);
                self.phases[request] = Phase::Finished;
            }
            Input::Gate(Event::Boundary {
                boundary,
                held: true,
            }) => {
                let Some(request) = self.attribute(boundary.connection) else {
                    return Ok(Some(boundary.id));
                };
                self.phases[request] = Phase::Held { id: boundary.id };
                self.connection_owner.insert(boundary.connection, request);
                self.boundary_owner.insert(boundary.id, request);
                self.held.insert(boundary.id, boundary);
            }
            Input::Gate(Event::Answered { id, .. }) => {
                self.answered.insert(id);
                if let Some(&request) = self.boundary_owner.get(&id) {
                    if matches!(self.phases[request], Phase::Released { id: r, .. } | Phase::Blocked { id: r, .. } if r == id)
                    {
                        self.phases[request] = Phase::Running;
                    }
                }
            }
            Input::Gate(Event::Unsupported { wire, what, .. }) => {
                return Err(LabError::Unsupported { wire, what })
            }
            Input::Gate(Event::UpstreamFailed { wire, error, .. }) => {
                return Err(LabError::Upstream { wire, error })
            }
            Input::Gate(_) => {}
        }
        Ok(None)
    }

    /// Where only a timer can say: released statements judged by it and sent requests that waited `blocked` are
    /// blocked (or waiting). A statement the store judges is never promoted by time, however long it runs.
    fn promote(&mut self, now: Instant) {
        for phase in &mut self.phases {
            *phase = match *phase {
                Phase::Released {
                    id,
                    at,
                    judge: Judge::Timer,
                } if now - at >= self.blocked => Phase::Blocked {
                    id,
                    judge: Judge::Timer,
                },
                Phase::Sent { at } if now - at >= self.blocked => Phase::Waiting,
                other => other,
            };
        }
    }

    /// The backends of the released statements the store judges (blocked or not), in request order.
    fn to_ask(&self) -> Vec<i32> {
        self.phases
            .iter()
            .filter_map(|phase| match phase {
                Phase::Released {
                    judge: Judge::Store { pid },
                    ..
                }
                | Phase::Blocked {
                    judge: Judge::Store { pid },
                    ..
                } => Some(*pid),
                _ => None,
            })
            .collect()
    }

    /// The store's answer: these backends wait on a lock now. A released statement whose backend waits is
    /// blocked; a blocked one whose backend no longer waits (its lock was granted) runs again. True when a
    /// phase changed.
    fn judge(&mut self, waiting: &BTreeSet<i32>, now: Instant) -> bool {
        let mut changed = false;
        for phase in &mut self.phases {
            let next = match *phase {
                Phase::Released { id, judge, .. } if store_says(judge, waiting) == Some(true) => {
                    Phase::Blocked { id, judge }
                }
                Phase::Blocked { id, judge } if store_says(judge, waiting) == Some(false) => {
                    Phase::Released { id, at: now, judge }
                }
                other => other,
            };
            changed |= next != *phase;
            *phase = next;
        }
        changed
    }

    /// Whether the store should be asked now: a released statement it judges has no answer, and the last
    /// question is `STORE_POLL` old.
    fn ask_due(&self, now: Instant) -> bool {
        now >= self.asked_at + STORE_POLL && self.asking()
    }

    /// A released statement the store judges is not known to be blocked yet.
    fn asking(&self) -> bool {
        self.phases.iter().any(|phase| {
            matches!(
                phase,
                Phase::Released {
                    judge: Judge::Store { .. },
                    ..
                }
            )
        })
    }

    fn next_deadline(&self) -> Option<Instant> {
        let timers = self.phases.iter().filter_map(|phase| match phase {
            Phase::Released {
                at,
                judge: Judge::Timer,
                ..
            }
            | Phase::Sent { at } => Some(*at + self.blocked),
            _ => None,
        });
        let ask = self.asking().then_some(self.asked_at + STORE_POLL);
        timers.chain(ask).min()
    }

    /// At a decision point: note who is blocked, and who said so.
    fn note_waits(&mut self) {
        for phase in &self.phases {
            if let Phase::Blocked { id, judge } = phase {
                self.waits.insert(*id, matches!(judge, Judge::Store { .. }));
            }
        }
        self.outcome.store_waits = self.waits.values().filter(|&&store| store).count();
        self.outcome.timer_waits = self.waits.len() - self.outcome.store_waits;
    }

    /// Every unfinished request is held, blocked or waiting.
    fn at_decision(&self) -> bool {
        self.phases.iter().all(|phase| {
            matches!(
                phase,
                Phase::Held { .. } | Phase::Blocked { .. } | Phase::Waiting | Phase::Finished
            )
        })
    }

    fn enabled(&self) -> Vec<u32> {
        (0..self.phases.len())
            .filter(|&r| matches!(self.phases[r], Phase::Held { .. }))
            .map(|r| r as u32)
            .collect()
    }

    fn describe(&self) -> String {
        let phases: Vec<String> = self
            .phases
            .iter()
            .enumerate()
            .map(|(r, phase)| {
                format!("request {} {:?}", r + 1, phase)
                    .replace(" { ", " ")
                    .replace(" }", "")
            })
            .collect();
        phases.join(", ")
    }
}

/// Run `requests` (each on its own task) under `plan`, the gates holding every boundary.
pub async fn run_schedule(
    lab: &mut Lab,
    requests: &[HttpRequest],
    plan: Plan<'_>,
) -> Result<RunOutcome, LabError> {
    assert!(!requests.is_empty(), "a schedule has requests");
    lab.gates.set_mode(Mode::Pass);
    lab.settle().await?;
    lab.gates.set_mode(Mode::Hold);
    let _busy = lab.gates.busy();
    let (sender, mut answers) = mpsc::unbounded_channel();
    let mut tracker = Tracker::new(requests.len(), lab.config.blocked);
    for (index, request) in requests.iter().enumerate() {
        let (url, request, timeout, sender) = (
            lab.url_of(index).clone(),
            request.clone(),
            lab.config.request_timeout,
            sender.clone(),
        );
        tokio::spawn(async move {
            let answer = exchange(&url, &request, timeout)
                .await
                .map_err(|e| e.to_string());
            let _ = sender.send((index, answer));
        });
        tracker.phases[index] = Phase::Sent { at: Instant::now() };
        while matches!(tracker.phases[index], Phase::Sent { .. }) {
            advance(lab, &mut answers, &mut tracker).await?;
        }
    }
    let result = decide_all(lab, &mut answers, &mut tracker, plan).await;
    if result.is_ok() && !tracker.outcome.crashed {
        // Whatever the service sends after its answers (a pool's reset) runs freely.
        for id in std::mem::take(&mut tracker.held).into_keys() {
            lab.gates.decide(id, Decision::Release);
        }
        lab.gates.set_mode(Mode::Pass);
        lab.settle().await?;
    }
    result.map(|()| tracker.outcome)
}

/// The decision loop: until every request finished, or the crash point.
async fn decide_all(
    lab: &mut Lab,
    answers: &mut mpsc::UnboundedReceiver<(usize, Result<HttpResponse, String>)>,
    tracker: &mut Tracker,
    plan: Plan<'_>,
) -> Result<(), LabError> {
    let mut previous = None;
    loop {
        tracker.promote(Instant::now());
        if tracker.phases.iter().all(|p| *p == Phase::Finished) {
            return Ok(());
        }
        let enabled = tracker.enabled();
        if !tracker.at_decision() || enabled.is_empty() {
            advance(lab, answers, tracker).await?;
            continue;
        }
        // The store's word as of now, after every event so far: a blocked statement may have been granted.
        if ask_store(lab, tracker).await? {
            continue;
        }
        tracker.note_waits();
        let step = tracker.outcome.points.len();
        let taken = match plan.prefix.get(step) {
            Some(choice) if enabled.contains(choice) => *choice,
            Some(choice) => {
                note(
                    tracker,
                    format!(
                        "decision {}: request {} was not ready (ready: {enabled:?})",
                        step + 1,
                        choice + 1
                    ),
                );
                default_choice(previous, &enabled)
            }
            None => default_choice(previous, &enabled),
        };
        previous = Some(taken);
        tracker.outcome.points.push(Point { enabled, taken });
        let Phase::Held { id } = tracker.phases[taken as usize] else {
            unreachable!("an enabled request is held")
        };
        if let Some(at) = plan.crash.filter(|&at| tracker.crash_due(at, taken)) {
            let boundary = &tracker.held[&id];
            let crashing = Released {
                request: taken,
                wire: boundary.wire,
                text: boundary.text.clone(),
                in_transaction: boundary.in_transaction,
            };
            compare(tracker, &crashing, plan.expected);
            return crash(lab, answers, tracker, id, at.when).await;
        }
        release(
            lab,
            tracker,
            taken as usize,
            id,
            Decision::Release,
            plan.expected,
        );
    }
}

fn note(tracker: &mut Tracker, divergence: String) {
    tracker.outcome.divergence.get_or_insert(divergence);
}

impl Tracker {
    /// How many steps `request` took so far: the index its next one gets.
    fn steps_of(&self, request: u32) -> usize {
        self.outcome
            .released
            .iter()
            .filter(|r| r.request == request)
            .count()
    }

    /// Whether releasing `taken`'s held boundary now would be the crash point's step.
    fn crash_due(&self, at: CrashAt, taken: u32) -> bool {
        at.request == taken && self.steps_of(taken) == at.statement
    }

    /// `request`'s held boundary `id` is released: compared with the recording, then one more step.
    /// The held boundary `id` released for `request`: recorded (and compared); returned for who judges it.
    fn record_release(
        &mut self,
        request: usize,
        id: BoundaryId,
        expected: Option<&[Released]>,
    ) -> Boundary {
        let boundary = self
            .held
            .remove(&id)
            .expect("a held request's boundary is recorded");
        let released = Released {
            request: request as u32,
            wire: boundary.wire,
            text: boundary.text.clone(),
            in_transaction: boundary.in_transaction,
        };
        compare(self, &released, expected);
        self.outcome.released.push(released);
        self.released_ids.push(id);
        self.last_released = Some(request);
        boundary
    }

    /// What is no step: an unheld boundary is counted; a released one the store refused unrun is dropped from
    /// the steps (the client sends it again, and that is the step).
    fn observe(&mut self, input: &Input) {
        match input {
            Input::Gate(Event::Boundary {
                boundary,
                held: false,
            }) => self.outcome.passed.note(boundary.kind),
            Input::Gate(Event::Answered {
                id,
                error: Some(error),
            }) => {
                let Some(index) = self.released_ids.iter().position(|r| r == id) else {
                    return;
                };
                if protocol::of(self.outcome.released[index].wire).ran_nothing(error) {
                    self.released_ids.remove(index);
                    self.outcome.released.remove(index);
                    self.outcome.passed.note_ran_nothing();
                }
            }
            _ => {}
        }
    }
}

/// Note the first step that differs from the recorded schedule's step of the same request at the same place.
fn compare(tracker: &mut Tracker, released: &Released, expected: Option<&[Released]>) {
    let Some(expected) = expected else {
        return;
    };
    let step = tracker.steps_of(released.request);
    let recorded = expected
        .iter()
        .filter(|r| r.request == released.request)
        .nth(step);
    let same = recorded.is_some_and(|r| {
        r.wire == released.wire && protocol::of(r.wire).same_step(&r.text, &released.text)
    });
    if !same {
        let recorded = recorded.map_or("nothing".to_string(), |r| format!("`{}`", r.text));
        let why = format!(
            "boundary {}: request {} sent `{}` (its statement {}); the schedule has {recorded} there",
            tracker.outcome.released.len() + 1,
            released.request + 1,
            released.text,
            step + 1
        );
        note(tracker, why);
    }
}

fn release(
    lab: &mut Lab,
    tracker: &mut Tracker,
    request: usize,
    id: BoundaryId,
    decision: Decision,
    expected: Option<&[Released]>,
) {
    let boundary_seen = tracker.record_release(request, id, expected);
    let judge = judge_of(
        &boundary_seen,
        lab.gates.backend_pid(boundary_seen.connection),
    );
    tracker.phases[request] = if lab.gates.decide(id, decision) {
        Phase::Released {
            id,
            at: Instant::now(),
            judge,
        }
    } else {
        // Its connection closed meanwhile: its HTTP answer will say what happened.
        Phase::Running
    };
}

/// The crash point: `Before`, the boundary stays held; `After`, it runs with its answer withheld, and the
/// store's answer is awaited (then the caller kills the service).
async fn crash(
    lab: &mut Lab,
    answers: &mut mpsc::UnboundedReceiver<(usize, Result<HttpResponse, String>)>,
    tracker: &mut Tracker,
    id: BoundaryId,
    when: When,
) -> Result<(), LabError> {
    tracker.outcome.crashed = true;
    if when == When::Before {
        return Ok(());
    }
    let request = tracker.boundary_owner[&id];
    release(lab, tracker, request, id, Decision::Withhold, None);
    while !tracker.answered.contains(&id) {
        advance(lab, answers, tracker).await?;
    }
    Ok(())
}

/// Wait for one input (or the next blocked deadline); an unowned boundary is released at once. No input for
/// `stall` is an error naming where every request was.
async fn advance(
    lab: &mut Lab,
    answers: &mut mpsc::UnboundedReceiver<(usize, Result<HttpResponse, String>)>,
    tracker: &mut Tracker,
) -> Result<(), LabError> {
    let stall = lab.config.request_timeout + STALL_SLACK;
    let now = Instant::now();
    let stall_at = tracker.progress_at + stall;
    let until = tracker
        .next_deadline()
        .map_or(stall_at, |d| d.min(stall_at));
    let timeout = until.saturating_duration_since(now);
    let input = tokio::select! {
        biased;
        Some((request, answer)) = answers.recv() => Some(Input::Answer(request, answer)),
        event = lab.gates.next_event(timeout) => event.map(Input::Gate),
    };
    match input {
        Some(input) => {
            if let Some(orphan) = tracker.take(input)? {
                lab.gates.decide(orphan, Decision::Release);
            }
        }
        None if Instant::now() >= stall_at => {
            return Err(LabError::NoProgress {
                seconds: stall.as_secs(),
                state: tracker.describe(),
            })
        }
        None => {}
    }
    tracker.promote(Instant::now());
    if tracker.ask_due(Instant::now()) {
        ask_store(lab, tracker).await?;
    }
    Ok(())
}

/// Ask the store which released statements wait on a lock, and take in its answer. True when a phase changed.
async fn ask_store(lab: &Lab, tracker: &mut Tracker) -> Result<bool, LabError> {
    let pids = tracker.to_ask();
    tracker.asked_at = Instant::now();
    if pids.is_empty() {
        return Ok(false);
    }
    let waiting = lab.backends.waiting(pids).await.map_err(LabError::Store)?;
    Ok(tracker.judge(&waiting, Instant::now()))
}

/// What the store's answer says of a statement judged by `judge`: None when the store is not the judge.
fn store_says(judge: Judge, waiting: &BTreeSet<i32>) -> Option<bool> {
    match judge {
        Judge::Store { pid } => Some(waiting.contains(&pid)),
        Judge::Timer | Judge::Never => None,
    }
}

/// How long past a request's own timeout a run may go without any event.
const STALL_SLACK: Duration = Duration::from_secs(5);

/// Crash points and comparisons by request step (issue 44): in a file of their own.
#[cfg(test)]
#[path = "run_steps_tests.rs"]
mod steps_tests;

#[cfg(test)]
mod tests {
    use super::*;

    fn boundary(id: u64, connection: u64) -> Boundary {
        Boundary {
            id,
            connection,
            wire: Wire::Postgres,
            text: format!("SELECT {id}"),
            kind: crate::graybox::kind::Kind::Request,
            in_transaction: false,
        }
    }

    fn held(id: u64, connection: u64) -> Input {
        Input::Gate(Event::Boundary {
            boundary: boundary(id, connection),
            held: true,
        })
    }

    #[test]
    fn boundaries_follow_their_connection_then_the_last_released() {
        let mut tracker = Tracker::new(2, Duration::from_millis(200));
        let now = Instant::now();
        tracker.phases = vec![Phase::Sent { at: now }, Phase::Finished];
        assert_eq!(tracker.take(held(1, 10)).unwrap(), None);
        assert_eq!(tracker.phases[0], Phase::Held { id: 1 });
        tracker.phases[1] = Phase::Sent { at: now };
        tracker.take(held(2, 11)).unwrap();
        assert_eq!(tracker.phases[1], Phase::Held { id: 2 });
        // Request 1 released and answered: its connection's next boundary is its own.
        tracker.phases[0] = Phase::Released {
            id: 1,
            at: now,
            judge: Judge::Store { pid: 100 },
        };
        tracker.last_released = Some(0);
        tracker
            .take(Input::Gate(Event::Answered { id: 1, error: None }))
            .unwrap();
        assert_eq!(tracker.phases[0], Phase::Running);
        tracker.take(held(3, 10)).unwrap();
        assert_eq!(tracker.phases[0], Phase::Held { id: 3 });
        // A boundary on a fresh connection while request 1 is held and request 2 too: nobody can own it.
        assert_eq!(tracker.take(held(4, 12)).unwrap(), Some(4));
        // Request 2 released, answered: a fresh connection goes to the last released request.
        tracker.phases[1] = Phase::Running;
        tracker.last_released = Some(1);
        tracker.take(held(5, 13)).unwrap();
        assert_eq!(tracker.phases[1], Phase::Held { id: 5 });
        assert_eq!(tracker.boundary_owner[&5], 1);
    }

    #[test]
    fn a_decision_waits_for_every_request_to_be_held_blocked_or_finished() {
        let blocked = Duration::from_millis(200);
        let mut tracker = Tracker::new(2, blocked);
        let start = Instant::now();
        // A Redis blocking command: only the timer can say.
        tracker.phases = vec![
            Phase::Held { id: 1 },
            Phase::Released {
                id: 2,
                at: start,
                judge: Judge::Timer,
            },
        ];
        assert!(!tracker.at_decision());
        assert_eq!(tracker.next_deadline(), Some(start + blocked));
        tracker.promote(start + blocked / 2);
        assert!(!tracker.at_decision());
        tracker.promote(start + blocked);
        assert!(tracker.at_decision());
        assert_eq!(tracker.enabled(), vec![0]);
        tracker.phases[0] = Phase::Running;
        assert!(!tracker.at_decision());
        tracker
            .take(Input::Answer(0, Err("closed".into())))
            .unwrap();
        assert!(tracker.at_decision());
        assert!(tracker.enabled().is_empty());
        assert!(
            tracker.describe().contains("request 2 Blocked"),
            "{}",
            tracker.describe()
        );
    }

    fn released(id: BoundaryId, at: Instant, pid: i32) -> Phase {
        Phase::Released {
            id,
            at,
            judge: Judge::Store { pid },
        }
    }

    #[test]
    fn a_statement_the_store_judges_is_blocked_exactly_when_the_store_says_it_waits() {
        let mut tracker = Tracker::new(2, Duration::from_millis(1));
        let start = Instant::now();
        tracker.phases = vec![Phase::Held { id: 1 }, released(2, start, 700)];
        tracker.boundary_owner.insert(2, 1);
        // However long it has gone unanswered, time alone never makes it blocked.
        for later in [Duration::from_millis(1), Duration::from_secs(3600)] {
            tracker.promote(start + later);
            assert_eq!(tracker.phases[1], released(2, start, 700));
            assert!(!tracker.at_decision());
        }
        // Nor does a store that does not name it (another backend waits, or nobody does).
        assert_eq!(tracker.to_ask(), vec![700]);
        assert!(!tracker.judge(&BTreeSet::from([701]), start));
        assert!(!tracker.at_decision());
        assert!(tracker.ask_due(tracker.asked_at + STORE_POLL));
        assert_eq!(tracker.next_deadline(), Some(tracker.asked_at + STORE_POLL));
        // The store says its backend waits on a lock: blocked, a decision point with request 1 to release.
        assert!(tracker.judge(&BTreeSet::from([700]), start));
        let blocked = Phase::Blocked {
            id: 2,
            judge: Judge::Store { pid: 700 },
        };
        assert_eq!(tracker.phases[1], blocked);
        assert!(tracker.at_decision());
        assert_eq!(tracker.enabled(), vec![0]);
        // Blocked needs no more polling to make progress; it is asked again before a decision, though.
        assert_eq!(tracker.next_deadline(), None);
        assert_eq!(tracker.to_ask(), vec![700]);
        tracker.note_waits();
        assert_eq!(
            (tracker.outcome.store_waits, tracker.outcome.timer_waits),
            (1, 0)
        );
        // Its lock was granted: it runs again (no decision until it is answered or blocked once more).
        let later = start + Duration::from_secs(1);
        assert!(tracker.judge(&BTreeSet::new(), later));
        assert_eq!(tracker.phases[1], released(2, later, 700));
        assert!(!tracker.at_decision());
        tracker
            .take(Input::Gate(Event::Answered { id: 2, error: None }))
            .unwrap();
        assert_eq!(tracker.phases[1], Phase::Running);
        assert!(tracker.to_ask().is_empty() && !tracker.ask_due(later + STORE_POLL));
    }

    #[test]
    fn redis_commands_other_than_blocking_ones_are_never_blocked() {
        let redis = |text: &str| Boundary {
            id: 1,
            connection: 1,
            wire: Wire::Redis,
            text: text.into(),
            kind: crate::graybox::kind::Kind::Request,
            in_transaction: false,
        };
        assert_eq!(judge_of(&redis("SET ? ? NX PX ?"), None), Judge::Never);
        assert_eq!(judge_of(&redis("BLPOP ? ?"), None), Judge::Timer);
        assert_eq!(
            judge_of(&redis("XREAD COUNT ? STREAMS ? ?"), None),
            Judge::Never
        );
        assert_eq!(
            judge_of(&redis("XREAD BLOCK ? STREAMS ? ?"), None),
            Judge::Timer
        );
        assert_eq!(
            judge_of(&redis("MULTI; BLPOP ? ?; EXEC"), None),
            Judge::Never
        );
        assert_eq!(
            judge_of(&boundary(1, 1), Some(42)),
            Judge::Store { pid: 42 }
        );
        assert_eq!(judge_of(&boundary(1, 1), None), Judge::Timer);
        let mut tracker = Tracker::new(1, Duration::from_millis(1));
        let start = Instant::now();
        tracker.phases = vec![Phase::Released {
            id: 1,
            at: start,
            judge: Judge::Never,
        }];
        tracker.promote(start + Duration::from_secs(3600));
        assert!(!tracker.at_decision());
        assert_eq!(tracker.next_deadline(), None);
    }

    #[test]
    fn an_unsupported_message_is_an_error_naming_it() {
        let mut tracker = Tracker::new(1, Duration::from_millis(1));
        let error = tracker
            .take(Input::Gate(Event::Unsupported {
                connection: 1,
                wire: Wire::Postgres,
                what: "CopyInResponse".into(),
            }))
            .unwrap_err();
        assert!(error.to_string().contains("CopyInResponse"), "{error}");
    }
}
