//! One schedule executed over the gates: the probe sends the requests itself, one at a time until each is held
//! at its first boundary (so which request a connection serves is known), then releases the held boundaries
//! one by one in the order a prefix of choices says (past it, `explore::default_choice`), and reports every
//! decision point it met (`explore::Point`) and the boundaries in the order released.
//!
//! A decision point is reached when every unfinished request is held (one held boundary per connection),
//! blocked (released, no answer within `blocked`: it waits on a lock, and the others go on), or finished (its
//! HTTP answer came). Everything waits on events with a timeout; a run with no event for `stall` is an error.
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
}

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
    Released {
        id: BoundaryId,
        at: Instant,
    },
    /// Released, no answer within `blocked`: waits on a lock.
    Blocked {
        id: BoundaryId,
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
                    if matches!(self.phases[request], Phase::Released { id: r, .. } | Phase::Blocked { id: r } if r == id)
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

    /// Released or sent requests that waited `blocked` are blocked (or waiting).
    fn promote(&mut self, now: Instant) {
        for phase in &mut self.phases {
            *phase = match *phase {
                Phase::Released { id, at } if now - at >= self.blocked => Phase::Blocked { id },
                Phase::Sent { at } if now - at >= self.blocked => Phase::Waiting,
                other => other,
            };
        }
    }

    fn next_deadline(&self) -> Option<Instant> {
        self.phases
            .iter()
            .filter_map(|phase| match phase {
                Phase::Released { at, .. } | Phase::Sent { at } => Some(*at + self.blocked),
                _ => None,
            })
            .min()
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
    let (sender, mut answers) = mpsc::unbounded_channel();
    let mut tracker = Tracker::new(requests.len(), lab.config.blocked);
    for (index, request) in requests.iter().enumerate() {
        let (url, request, timeout, sender) = (
            lab.config.url.clone(),
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
    fn record_release(&mut self, request: usize, id: BoundaryId, expected: Option<&[Released]>) {
        let boundary = self
            .held
            .remove(&id)
            .expect("a held request's boundary is recorded");
        let released = Released {
            request: request as u32,
            wire: boundary.wire,
            text: boundary.text,
        };
        compare(self, &released, expected);
        self.outcome.released.push(released);
        self.released_ids.push(id);
        self.last_released = Some(request);
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
    tracker.record_release(request, id, expected);
    tracker.phases[request] = if lab.gates.decide(id, decision) {
        Phase::Released {
            id,
            at: Instant::now(),
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
            tracker.promote(Instant::now());
            Ok(())
        }
        None if Instant::now() >= stall_at => Err(LabError::NoProgress {
            seconds: stall.as_secs(),
            state: tracker.describe(),
        }),
        None => {
            tracker.promote(Instant::now());
            Ok(())
        }
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
        tracker.phases[0] = Phase::Released { id: 1, at: now };
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
        tracker.phases = vec![Phase::Held { id: 1 }, Phase::Released { id: 2, at: start }];
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
