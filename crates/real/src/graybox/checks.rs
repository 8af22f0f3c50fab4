//! The gray-box checks, one function each, and the replay of a saved schedule:
//! - `crash-at-every-statement`: learn one request's steps (its request statements: session settings and
//!   housekeeping pass unheld and are only counted, in the evidence), then for each step crash before it runs
//!   and after it ran (answer withheld), restart, retry the same key until a final answer; fails on a second
//!   effect, on a success with no effect, on a retry that never resolves (a stuck key).
//! - `interleaved-same-key`: `clients` requests with one key, their boundaries released in every order the
//!   explorer enumerates; fails on a second effect, `incomplete` when `--schedules-max` cut the search.
//! - `lost-response`: a request's answer is dropped; the retry must get the same answer and no second effect.
//!
//! Replaying a saved schedule is [`super::replay`].

use super::background;
use super::explore::{Bounds, Coverage, Explorer};
use super::gate::Wire;
use super::kind::Passed;
use super::lab::{Lab, LabError};
use super::report::{GrayCheck, GrayVerdict};
use super::run::{run_schedule, CrashAt, Plan, Released, When};
use super::schedule::{CrashPoint, Schedule, ScheduledRequest, FORMAT, VERSION};
use crate::stack::answer;
use crate::stack::http::HttpResponse;
use std::time::{Duration, Instant};

/// What the checks are told beyond the bench.
#[derive(Clone, Debug)]
pub struct CheckOptions {
    pub clients: usize,
    pub bounds: Bounds,
    /// A retry after a crash must get a final answer within it.
    pub resolve_within: Duration,
    /// In every key, so runs against one database do not share keys.
    pub run_id: String,
}

impl CheckOptions {
    fn key(&self, check: GrayCheck, n: usize) -> String {
        format!("graybox-{}-{}-{n}", self.run_id, check.name())
    }
}

/// A check's verdict, its evidence, and (failures) the schedule that shows it.
#[derive(Clone, Debug)]
pub struct Finding {
    pub verdict: GrayVerdict,
    pub evidence: String,
    pub schedule: Option<Schedule>,
}

impl Finding {
    fn new(verdict: GrayVerdict, evidence: String) -> Finding {
        Finding {
            verdict,
            evidence,
            schedule: None,
        }
    }
}

pub async fn run_check(
    lab: &mut Lab,
    check: GrayCheck,
    options: &CheckOptions,
) -> Result<Finding, LabError> {
    lab.gates.take_background_passed();
    let mut finding = match check {
        GrayCheck::CrashAtEveryStatement => crash_at_every_statement(lab, options).await,
        GrayCheck::InterleavedSameKey => interleaved_same_key(lab, options).await,
        GrayCheck::LostResponse => lost_response(lab, options).await,
    }?;
    if let Some(summary) = background::summary(lab.gates.take_background_passed()) {
        finding.evidence = format!("{}; {summary}", finding.evidence);
    }
    Ok(finding)
}

fn success(answer: &Result<HttpResponse, String>) -> bool {
    answer
        .as_ref()
        .is_ok_and(|r| (200..300).contains(&r.status))
}

fn shown(answer: &Option<Result<HttpResponse, String>>) -> String {
    match answer {
        Some(Ok(response)) => format!("{}", response.status),
        Some(Err(error)) => format!("no answer ({error})"),
        None => "no answer".into(),
    }
}

/// A final answer: a success, or a refusal that is not "try again" (409 in progress, 425, 429).
fn is_final(status: u16) -> bool {
    (200..300).contains(&status)
        || ((400..500).contains(&status) && ![409, 425, 429].contains(&status))
}

fn schedule(
    lab: &Lab,
    check: GrayCheck,
    keys: Vec<String>,
    released: Vec<Released>,
    crash: Option<CrashPoint>,
    evidence: &str,
) -> Schedule {
    Schedule {
        format: FORMAT.into(),
        version: VERSION,
        check: check.name().into(),
        url: lab.config.url.to_text(),
        requests: keys
            .into_iter()
            .map(|key| ScheduledRequest {
                key,
                body: lab.config.body.clone(),
            })
            .collect(),
        released,
        crash,
        verdict: GrayVerdict::Fail.name().into(),
        evidence: evidence.into(),
    }
}

async fn crash_at_every_statement(
    lab: &mut Lab,
    options: &CheckOptions,
) -> Result<Finding, LabError> {
    let check = GrayCheck::CrashAtEveryStatement;
    let key = options.key(check, 0);
    let before = lab.fresh_count().await?;
    let seen = lab.gates.boundaries_seen();
    let learned = run_schedule(lab, &[lab.request(&key)], Plan::default()).await?;
    let boundaries = lab.gates.boundaries_seen() - seen;
    let effects = lab.count().await? - before;
    lab.check_gated(boundaries, effects)?;
    let answer = &learned.answers[0];
    if !answer.as_ref().is_some_and(success) || effects != 1 {
        let evidence = format!(
            "without any crash the request answered {} and count {effects:+}: expected a success and +1",
            shown(answer)
        );
        return Ok(Finding::new(GrayVerdict::Fail, evidence));
    }
    let statements = learned.released.len();
    if statements == 0 {
        return Ok(Finding::new(
            GrayVerdict::NotApplicable,
            "the request sent nothing through the gates".into(),
        ));
    }
    let mut diverged = Vec::new();
    let mut passed = learned.passed.clone();
    for (n, at) in crash_points(statements).into_iter().enumerate() {
        let key = options.key(check, n + 1);
        match crash_once(lab, options, &learned.released, at, &key, &mut passed).await? {
            Crashed::Judged(None) => {}
            Crashed::Judged(Some(mut failure)) => {
                failure.evidence = with_passed(std::mem::take(&mut failure.evidence), &passed);
                return Ok(*failure);
            }
            Crashed::Diverged(why) => diverged.push(why),
        }
    }
    let evidence = format!(
        "{} crashes ({statements} statements, before and after each): every retry resolved with one effect",
        2 * statements - diverged.len()
    );
    if let Some(first) = diverged.first() {
        let evidence = format!(
            "{evidence}; {} crash points not reached ({first})",
            diverged.len()
        );
        return Ok(Finding::new(
            GrayVerdict::Incomplete,
            with_passed(evidence, &passed),
        ));
    }
    Ok(Finding::new(
        GrayVerdict::Pass,
        with_passed(evidence, &passed),
    ))
}

/// The evidence, then what passed unheld in the check's runs (the learning run and the crash runs).
fn with_passed(evidence: String, passed: &Passed) -> String {
    match passed.summary() {
        Some(summary) => format!("{evidence}; {summary}"),
        None => evidence,
    }
}

/// Every step of the one learned request, before and after.
fn crash_points(statements: usize) -> Vec<CrashAt> {
    let at = |statement, when| CrashAt {
        request: 0,
        statement,
        when,
    };
    (0..statements)
        .flat_map(|s| [at(s, When::Before), at(s, When::After)])
        .collect()
}

pub(super) enum Crashed {
    /// The crash happened; a failure if the retry shows one.
    Judged(Option<Box<Finding>>),
    /// The service took another path before the crash point.
    Diverged(String),
}

/// Crash one request at its step `at` (as the learned steps number them), restart, retry until resolved,
/// judge the effects. What passed unheld in the crash run is added to `passed`.
pub(super) async fn crash_once(
    lab: &mut Lab,
    options: &CheckOptions,
    learned: &[Released],
    at: CrashAt,
    key: &str,
    passed: &mut Passed,
) -> Result<Crashed, LabError> {
    let request = lab.request(key);
    let before = lab.fresh_count().await?;
    let plan = Plan {
        prefix: &[],
        crash: Some(at),
        expected: Some(learned),
    };
    let outcome = run_schedule(lab, std::slice::from_ref(&request), plan).await?;
    passed.add(&outcome.passed);
    if !outcome.crashed || outcome.divergence.is_some() {
        if outcome.crashed {
            lab.crash_and_restart().await?;
        }
        let why = outcome.divergence.unwrap_or_else(|| {
            format!("the request finished before statement {}", at.statement + 1)
        });
        return Ok(Crashed::Diverged(why));
    }
    lab.crash_and_restart().await?;
    let resolution = retry_until_resolved(lab, &request, options.resolve_within).await?;
    let effects = lab.count().await? - before;
    let steps = steps_of(learned, at.request);
    let place = crash_place(&steps, at.statement, at.when);
    let Some(evidence) = judge_crash(&place, &resolution, effects) else {
        return Ok(Crashed::Judged(None));
    };
    let crash = CrashPoint {
        request: at.request,
        statement: at.statement,
        when: at.when,
        text: steps[at.statement].text.clone(),
    };
    let saved = schedule(
        lab,
        GrayCheck::CrashAtEveryStatement,
        vec![key.to_string()],
        learned.to_vec(),
        Some(crash),
        &evidence,
    );
    Ok(Crashed::Judged(Some(Box::new(Finding {
        verdict: GrayVerdict::Fail,
        evidence,
        schedule: Some(saved),
    }))))
}

/// One request's steps, in order.
fn steps_of(learned: &[Released], request: u32) -> Vec<Released> {
    learned
        .iter()
        .filter(|r| r.request == request)
        .cloned()
        .collect()
}

/// "killed after "INSERT ..." committed (statement 2 of 5)", `learned` being one request's steps.
fn crash_place(learned: &[Released], at: usize, when: When) -> String {
    let text = &learned[at].text;
    let of = format!("(statement {} of {})", at + 1, learned.len());
    match when {
        When::Before => format!("killed before \"{text}\" {of}"),
        When::After if committed_after(learned, at) => {
            format!("killed after \"{text}\" committed {of}")
        }
        When::After => format!("killed after \"{text}\" ran {of}"),
    }
}

/// Whether PostgreSQL work was durable once `learned[at]` ran: a `COMMIT`, or a statement outside any
/// transaction the request opened (autocommit). The gate says whether a transaction was open once it ran
/// (a bare `BEGIN` is no step, so the texts alone cannot); the texts' own `BEGIN`s count too, for schedules
/// saved before it said.
fn committed_after(learned: &[Released], at: usize) -> bool {
    if learned[at].wire != Wire::Postgres || learned[at].in_transaction {
        return false;
    }
    let mut open = false;
    let mut last = "";
    for boundary in &learned[..=at] {
        if boundary.wire != Wire::Postgres {
            continue;
        }
        for statement in boundary.text.split("; ") {
            let word = statement
                .split_whitespace()
                .next()
                .unwrap_or("")
                .to_ascii_uppercase();
            last = match word.as_str() {
                "BEGIN" | "START" => {
                    open = true;
                    "begin"
                }
                "COMMIT" | "END" => {
                    open = false;
                    "commit"
                }
                "ROLLBACK" | "ABORT" => {
                    open = false;
                    "rollback"
                }
                _ => "statement",
            };
        }
    }
    !open && (last == "commit" || last == "statement")
}

/// How the retries after a crash ended.
struct Resolution {
    /// The final answer, if one came within the bound.
    answer: Option<HttpResponse>,
    /// The last non-final answer (a status or why none came).
    last: String,
    waited: Duration,
}

/// The same request again (gates passing) until a final answer or `within`; pauses grow 50 ms to 500 ms.
async fn retry_until_resolved(
    lab: &mut Lab,
    request: &crate::stack::http::HttpRequest,
    within: Duration,
) -> Result<Resolution, LabError> {
    let started = Instant::now();
    let mut pause = Duration::from_millis(50);
    let mut last = String::from("nothing");
    loop {
        match lab.send_passing(request).await? {
            Ok(response) if is_final(response.status) => {
                return Ok(Resolution {
                    answer: Some(response),
                    last,
                    waited: started.elapsed(),
                })
            }
            Ok(response) => last = response.status.to_string(),
            Err(error) => last = format!("no answer ({error})"),
        }
        let left = within.saturating_sub(started.elapsed());
        if left.is_zero() {
            return Ok(Resolution {
                answer: None,
                last,
                waited: started.elapsed(),
            });
        }
        tokio::time::sleep(pause.min(left)).await;
        pause = (pause * 2).min(Duration::from_millis(500));
    }
}

/// The failure's evidence, or None when the crash was survived.
fn judge_crash(place: &str, resolution: &Resolution, effects: i64) -> Option<String> {
    if effects > 1 {
        return Some(format!("{effects} effects: {place}; the retry paid again"));
    }
    match &resolution.answer {
        None => Some(format!(
            "stuck: {place}; retries answered {} for {} s",
            resolution.last,
            resolution.waited.as_secs()
        )),
        Some(answer) if (200..300).contains(&answer.status) && effects == 0 => Some(format!(
            "success with no effect: {place}; the retry answered {} and count +0",
            answer.status
        )),
        Some(_) => None,
    }
}

/// "request 1 `BEGIN`, request 2 `BEGIN`, ...".
pub(super) fn order(released: &[Released]) -> String {
    let steps: Vec<String> = released
        .iter()
        .map(|r| format!("request {} `{}`", r.request + 1, r.text))
        .collect();
    steps.join(", ")
}

async fn interleaved_same_key(lab: &mut Lab, options: &CheckOptions) -> Result<Finding, LabError> {
    let check = GrayCheck::InterleavedSameKey;
    let mut explorer = Explorer::new(options.bounds);
    let mut run = 0;
    let mut unearned = Unearned::default();
    let mut waits = Waits::default();
    while let Some(prefix) = explorer.next_prefix() {
        run += 1;
        let key = options.key(check, run);
        let requests = vec![lab.request(&key); options.clients];
        let before = lab.fresh_count().await?;
        let plan = Plan {
            prefix: &prefix,
            ..Plan::default()
        };
        let seen = lab.gates.boundaries_seen();
        let outcome = run_schedule(lab, &requests, plan).await?;
        let boundaries = lab.gates.boundaries_seen() - seen;
        explorer.record(&outcome.points);
        waits.store += outcome.store_waits;
        waits.timer += outcome.timer_waits;
        let effects = lab.count().await? - before;
        lab.check_gated(boundaries, effects)?;
        unearned.note(&outcome.answers, effects);
        if effects > 1 {
            let evidence = format!(
                "{effects} effects: {} requests with one key, schedule {run}, released in this order: {}; {}",
                options.clients,
                order(&outcome.released),
                waits.said()
            );
            let saved = schedule(
                lab,
                check,
                vec![key; options.clients],
                outcome.released,
                None,
                &evidence,
            );
            return Ok(Finding {
                verdict: GrayVerdict::Fail,
                evidence,
                schedule: Some(saved),
            });
        }
    }
    if let Some(vacuous) = unearned.finding(explorer.schedules()) {
        return Ok(vacuous);
    }
    if explorer.contested_points() == 0 {
        let mut finding = unchosen_finding(explorer.schedules(), options, lab.config.instances);
        finding.evidence = format!("{}; {}", finding.evidence, waits.said());
        return Ok(finding);
    }
    let mut finding = coverage_finding(explorer.schedules(), explorer.coverage(), options);
    finding.evidence = format!(
        "{}{}; {}",
        finding.evidence,
        unearned.remark(),
        waits.said()
    );
    Ok(finding)
}

/// Schedules that proved nothing: no request succeeded (each was refused: a CHECK constraint, a wrong body),
/// or the count never moved (a `--count-sql` that counts nothing the request does). A search made only of such
/// schedules is no pass, however many orders it ran.
#[derive(Debug, Default)]
struct Unearned {
    no_success: usize,
    no_effect: usize,
    /// The answers of the first schedule with no success ("500, 500").
    refused: Option<String>,
}

impl Unearned {
    fn note(&mut self, answers: &[Option<Result<HttpResponse, String>>], effects: i64) {
        if !answers.iter().any(|a| a.as_ref().is_some_and(success)) {
            self.no_success += 1;
            let shown: Vec<String> = answers.iter().map(shown).collect();
            self.refused.get_or_insert(shown.join(", "));
        } else if effects == 0 {
            self.no_effect += 1;
        }
    }

    /// `n/a` when every schedule proved nothing.
    fn finding(&self, schedules: usize) -> Option<Finding> {
        let evidence = if self.no_success == schedules {
            format!(
                "no request succeeded in any of the {schedules} schedule(s) (the first answered {}): an order in \
                 which nothing is done proves nothing about doing it twice",
                self.refused.as_deref().unwrap_or("nothing")
            )
        } else if self.no_success + self.no_effect == schedules {
            format!(
                "the count never moved in the {schedules} schedule(s) although requests succeeded: the count \
                 (--count-sql or --count-url) does not see this request's effect, so a second one would not be \
                 seen either"
            )
        } else {
            return None;
        };
        Some(Finding::new(GrayVerdict::NotApplicable, evidence))
    }

    /// "; 3 schedules proved nothing (...)" when some did.
    fn remark(&self) -> String {
        match self.no_success + self.no_effect {
            0 => String::new(),
            n => format!(
                "; {n} schedule(s) proved nothing ({} with no success, {} with no effect counted)",
                self.no_success, self.no_effect
            ),
        }
    }
}

/// Released statements seen waiting on a lock at a decision point, over a check's schedules, by who said so.
#[derive(Clone, Copy, Debug, Default)]
struct Waits {
    store: usize,
    timer: usize,
}

impl Waits {
    /// How blocking was decided, for the evidence. The timer's count is named only when it decided any: it
    /// depends on the machine's speed, the store's does not.
    fn said(&self) -> String {
        let store = format!(
            "blocking decided by PostgreSQL (pg_blocking_pids): {} waits seen",
            self.store
        );
        match self.timer {
            0 => store,
            timer => format!(
                "{store}, {timer} more by the --blocked-ms timer (Redis blocking commands, backends not known)"
            ),
        }
    }
}

/// No run ever had two requests waiting at a statement together: nothing was interleaved by the probe, so a
/// pass would be vacuous. Said as n/a, with what ran.
fn unchosen_finding(schedules: usize, options: &CheckOptions, instances: usize) -> Finding {
    // One process's shared connection or lock serialises its requests; requests to other instances are not.
    let hint = if instances < options.clients {
        format!(
            "; try --instances {}: services run as several copies, and theirs are not serialised",
            options.clients
        )
    } else {
        String::new()
    };
    Finding::new(
        GrayVerdict::NotApplicable,
        format!(
            "no order to choose: in {schedules} schedule(s) the {} requests never waited at a statement together (the \
             service serialised them before its stores, e.g. on one shared connection or a lock of its own), so \
             nothing says their interleavings are safe; at most one effect in what ran{hint}",
            options.clients
        ),
    )
}

fn coverage_finding(schedules: usize, coverage: Coverage, options: &CheckOptions) -> Finding {
    let clients = options.clients;
    match coverage {
        Coverage::Complete => Finding::new(
            GrayVerdict::Pass,
            format!("{schedules} schedules, every order of the {clients} requests' boundaries: at most one effect each"),
        ),
        Coverage::WithinPreemptions { pruned } => Finding::new(
            GrayVerdict::Pass,
            format!(
                "{schedules} schedules, every order within {} preemptions ({pruned} with more not run): at most one effect each",
                options.bounds.preemptions_max
            ),
        ),
        Coverage::Incomplete { explored } => Finding::new(
            GrayVerdict::Incomplete,
            format!(
                "--schedules-max {} cut the search after {explored} schedules (none had a second effect)",
                options.bounds.schedules_max
            ),
        ),
    }
}

pub(super) async fn lost_response(
    lab: &mut Lab,
    options: &CheckOptions,
) -> Result<Finding, LabError> {
    let check = GrayCheck::LostResponse;
    let key = options.key(check, 1);
    let request = lab.request(&key);
    let before = lab.fresh_count().await?;
    let seen = lab.gates.boundaries_seen();
    // The first answer is read, then treated as lost: the client knows nothing and retries with the same key.
    let lost = lab.send_passing(&request).await?;
    let retry = lab.send_passing(&request).await?;
    let boundaries = lab.gates.boundaries_seen() - seen;
    let effects = lab.count().await? - before;
    lab.check_gated(boundaries, effects)?;
    let (lost, retry) = match (lost, retry) {
        (Ok(lost), Ok(retry)) => (lost, retry),
        (lost, retry) => {
            let evidence = format!(
                "no answer to compare: first {}, retry {}",
                shown(&Some(lost)),
                shown(&Some(retry))
            );
            return Ok(fail(lab, check, key, evidence));
        }
    };
    if !(200..300).contains(&lost.status) {
        let evidence = format!(
            "the first request answered {}: nothing to lose",
            lost.status
        );
        return Ok(Finding::new(GrayVerdict::NotApplicable, evidence));
    }
    // A replay may answer 200 where the original answered 201 (docs/src/domain.md section 3: completed -> 200 with the stored
    // response), as the black-box probe's replay-after-completion allows: the same body, a success.
    // Compared as JSON values where both are JSON: a jsonb column gives the stored object's keys back in its
    // own order, and that is the same answer.
    let sameness = answer::compare(&lost.body, &retry.body);
    let same = (200..300).contains(&retry.status) && sameness.same();
    let evidence = match (same, effects) {
        (true, 1) => {
            let evidence = format!(
                "the retry got the stored answer ({}, same body); count +1{}",
                retry.status,
                sameness.note()
            );
            return Ok(Finding::new(GrayVerdict::Pass, evidence));
        }
        (_, e) if e > 1 => format!(
            "{e} effects: the lost answer was {}, the retry paid again",
            lost.status
        ),
        (true, e) => format!("the retry got the same answer but count {e:+}"),
        (false, e) => format!(
            "the retry answered {} {}, the lost answer was {} {}; count {e:+}",
            retry.status,
            clip(&retry.body),
            lost.status,
            clip(&lost.body)
        ),
    };
    Ok(fail(lab, check, key, evidence))
}

fn fail(lab: &Lab, check: GrayCheck, key: String, evidence: String) -> Finding {
    let saved = schedule(lab, check, vec![key], Vec::new(), None, &evidence);
    Finding {
        verdict: GrayVerdict::Fail,
        evidence,
        schedule: Some(saved),
    }
}

/// A body for evidence: at most 80 characters.
fn clip(body: &str) -> String {
    let body = body.trim();
    match body.char_indices().nth(80) {
        Some((at, _)) => format!("{}...", &body[..at]),
        None => body.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pg(text: &str) -> Released {
        Released {
            request: 0,
            wire: Wire::Postgres,
            text: text.into(),
            in_transaction: false,
        }
    }

    #[test]
    fn the_gate_says_when_work_is_in_an_open_transaction() {
        // The steps as the gate gives them now: no bare BEGIN, each marked with its connection's state.
        let inside = |text: &str| Released {
            in_transaction: true,
            ..pg(text)
        };
        let learned = vec![
            inside("INSERT INTO idempotency_keys (key) VALUES (?) ON CONFLICT DO NOTHING"),
            inside("INSERT INTO payments (amount) VALUES (?)"),
            pg("COMMIT"),
            pg("UPDATE keys SET done = true WHERE key = ?"),
        ];
        assert!(crash_place(&learned, 1, When::After).contains("\" ran (statement 2 of 4)"));
        assert!(crash_place(&learned, 2, When::After).contains("committed (statement 3 of 4)"));
        assert!(crash_place(&learned, 3, When::After).contains("committed (statement 4 of 4)"));
        assert!(!committed_after(&[pg("ROLLBACK")], 0));
    }

    #[test]
    fn the_crash_place_says_committed_only_when_the_work_was_durable() {
        let learned = vec![
            pg("SELECT status FROM idempotency_keys WHERE key = ?"),
            pg("INSERT INTO idempotency_keys (key) VALUES (?) ON CONFLICT DO NOTHING"),
            pg("BEGIN"),
            pg("INSERT INTO payments (amount) VALUES (?)"),
            pg("COMMIT"),
        ];
        assert_eq!(
            crash_place(&learned, 1, When::After),
            "killed after \"INSERT INTO idempotency_keys (key) VALUES (?) ON CONFLICT DO NOTHING\" committed (statement 2 of 5)"
        );
        assert!(crash_place(&learned, 3, When::After).contains("\" ran (statement 4 of 5)"));
        assert!(crash_place(&learned, 4, When::After).contains("committed (statement 5 of 5)"));
        assert!(crash_place(&learned, 3, When::Before)
            .starts_with("killed before \"INSERT INTO payments"));
        let redis = [Released {
            request: 0,
            wire: Wire::Redis,
            text: "SET ? ? NX".into(),
            in_transaction: false,
        }];
        assert!(crash_place(&redis, 0, When::After).contains("ran (statement 1 of 1)"));
        assert_eq!(crash_points(2).len(), 4);
    }

    fn resolution(status: Option<u16>, last: &str) -> Resolution {
        Resolution {
            answer: status.map(|status| HttpResponse {
                status,
                headers: Vec::new(),
                body: String::new(),
            }),
            last: last.into(),
            waited: Duration::from_secs(3),
        }
    }

    #[test]
    fn a_second_effect_a_stuck_key_and_an_empty_success_fail() {
        let place = "killed before \"COMMIT\" (statement 5 of 5)";
        assert_eq!(judge_crash(place, &resolution(Some(201), "409"), 1), None);
        assert_eq!(judge_crash(place, &resolution(Some(422), "409"), 0), None);
        let twice = judge_crash(place, &resolution(Some(201), "nothing"), 2).unwrap();
        assert!(
            twice.starts_with("2 effects: killed before")
                && twice.ends_with("the retry paid again"),
            "{twice}"
        );
        let stuck = judge_crash(place, &resolution(None, "409"), 0).unwrap();
        assert_eq!(
            stuck,
            format!("stuck: {place}; retries answered 409 for 3 s")
        );
        let empty = judge_crash(place, &resolution(Some(200), "nothing"), 0).unwrap();
        assert!(empty.starts_with("success with no effect"), "{empty}");
        assert!(
            is_final(201) && is_final(422) && !is_final(409) && !is_final(429) && !is_final(503)
        );
    }

    fn answered(status: u16) -> Option<Result<HttpResponse, String>> {
        Some(Ok(HttpResponse {
            status,
            headers: Vec::new(),
            body: String::new(),
        }))
    }

    #[test]
    fn schedules_with_no_success_or_no_effect_are_no_pass() {
        let mut refused = Unearned::default();
        refused.note(&[answered(500), answered(500)], 0);
        refused.note(&[answered(500), None], 0);
        let finding = refused.finding(2).expect("nothing was earned");
        assert_eq!(finding.verdict, GrayVerdict::NotApplicable);
        assert!(
            finding
                .evidence
                .contains("no request succeeded in any of the 2"),
            "{}",
            finding.evidence
        );
        assert!(
            finding.evidence.contains("answered 500, 500"),
            "{}",
            finding.evidence
        );
        let mut uncounted = Unearned::default();
        uncounted.note(&[answered(201), answered(409)], 0);
        let finding = uncounted.finding(1).expect("nothing was counted");
        assert!(
            finding.evidence.contains("count never moved"),
            "{}",
            finding.evidence
        );
        // One schedule that succeeded and counted +1 earns the search its verdict; the others are remarked.
        let mut mixed = Unearned::default();
        mixed.note(&[answered(500), answered(500)], 0);
        mixed.note(&[answered(201), answered(200)], 1);
        assert!(mixed.finding(2).is_none());
        assert!(
            mixed
                .remark()
                .contains("1 schedule(s) proved nothing (1 with no success"),
            "{}",
            mixed.remark()
        );
        assert_eq!(Unearned::default().remark(), "");
    }

    #[test]
    fn a_cut_search_is_incomplete_never_a_pass() {
        let options = CheckOptions {
            clients: 2,
            bounds: Bounds {
                schedules_max: 5,
                preemptions_max: 2,
            },
            resolve_within: Duration::from_secs(1),
            run_id: "t".into(),
        };
        let cut = coverage_finding(5, Coverage::Incomplete { explored: 5 }, &options);
        assert_eq!(cut.verdict, GrayVerdict::Incomplete);
        assert!(
            cut.evidence.contains("--schedules-max 5"),
            "{}",
            cut.evidence
        );
        assert_eq!(
            coverage_finding(3, Coverage::Complete, &options).verdict,
            GrayVerdict::Pass
        );
        let bounded = coverage_finding(4, Coverage::WithinPreemptions { pruned: 2 }, &options);
        assert!(
            bounded.evidence.contains("within 2 preemptions"),
            "{}",
            bounded.evidence
        );
        assert_eq!(clip(&"x".repeat(100)).len(), 83);
    }
}
