//! The catalogue as handlers: each design written once as async Rust over the store interface, checked in a
//! world of retrying clients, a lossy network and crashing, pausing processes (and, for the completer designs,
//! a background worker), with the verdicts it declares.
//! `cargo run --release --example handlers [-- --json]` (exit 0: every design as declared);
//! `-- --explore DESIGN 127.0.0.1:0` walks one design by hand in the browser (its handler's steps, the store's
//! rows, the clients and the network at each step).
//! Its tests are `tests/handlers/` (`cargo test --example handlers`), built into this example's test target.

#[path = "article.rs"]
mod article;
// Moved into the library (`retrylab::handler::designs`) so that `retrylab serve` runs the same code.
use retrylab::handler::designs::{common, select_then_insert, separate_kv};
#[path = "completer.rs"]
mod completer;
#[path = "idempot_js_182.rs"]
mod idempot_js_182;
#[path = "idempotent_217.rs"]
mod idempotent_217;
#[path = "lease_fenced.rs"]
pub mod lease_fenced;
#[path = "medusa_16292.rs"]
mod medusa_16292;
#[path = "powertools_2944.rs"]
mod powertools_2944;
#[path = "powertools_5714.rs"]
mod powertools_5714;
#[path = "powertools_java_1281.rs"]
pub mod powertools_java_1281;
#[path = "provider.rs"]
mod provider;
#[path = "requests.rs"]
pub mod requests;
#[path = "stroppy_167.rs"]
mod stroppy_167;
#[path = "sweeper.rs"]
mod sweeper;
#[path = "time_designs.rs"]
mod time_designs;
#[path = "visibility_timeout.rs"]
mod visibility_timeout;

use retrylab::check::{Expected, Model, Report, Verdict};
use retrylab::handler::{CallFault, Handler, HandlerFaults, HandlerWorld, RecordsIn, Worker};
use serde::Serialize;
use std::collections::BTreeMap;
use std::time::Instant;

const BODY: &str = "{\"amount\":500,\"currency\":\"RUB\"}";
const HOLDS: Verdict = Verdict::Holds;
const VIOLATED: Verdict = Verdict::Violated;

/// One line per design, in the `retrylab check --json` schema's fields.
#[derive(Serialize)]
struct Line {
    complete: bool,
    counterexample_len: Option<usize>,
    counterexample_lens: BTreeMap<String, usize>,
    depth: u32,
    elapsed_ms: u64,
    expected: BTreeMap<String, String>,
    matches: bool,
    missing_scenarios: Vec<String>,
    model: String,
    /// Scenarios a complete search never met (not a failure unless declared wanted: `missing_scenarios`).
    not_reached: Vec<String>,
    properties: BTreeMap<String, String>,
    reached: Vec<String>,
    states: u64,
    transitions: u64,
    /// The timelines of the counterexamples that contradict a declared verdict (printed, not serialised).
    #[serde(skip)]
    unexpected: Vec<(String, Vec<String>)>,
}

fn faults(f: impl FnOnce(&mut HandlerFaults)) -> HandlerFaults {
    let mut faults = HandlerFaults::default();
    f(&mut faults);
    faults
}

/// What is done with each design of the catalogue.
pub trait Visit {
    fn design<H: Handler + Send + 'static, W: Worker + Send + 'static>(
        &mut self,
        name: &str,
        world: HandlerWorld<H, W>,
        declared: &[(&str, Verdict)],
        reached: &[&str],
    );
}

/// What a design declares, for `Report::compare`.
pub fn expected(declared: &[(&str, Verdict)], reached: &[&str]) -> Expected {
    Expected {
        verdicts: declared.iter().map(|(n, v)| (n.to_string(), *v)).collect(),
        reached: reached.iter().map(|n| n.to_string()).collect(),
    }
}

/// Checks each design into a line.
struct Lines(Vec<Line>);

impl Visit for Lines {
    fn design<H: Handler + Send + 'static, W: Worker + Send + 'static>(
        &mut self,
        name: &str,
        world: HandlerWorld<H, W>,
        declared: &[(&str, Verdict)],
        reached: &[&str],
    ) {
        self.0.push(check(name, world, declared, reached));
    }
}

/// Check one design and compare with what it declares.
fn check<H: Handler, W: Worker>(
    name: &str,
    world: HandlerWorld<H, W>,
    declared: &[(&str, Verdict)],
    reached: &[&str],
) -> Line {
    let started = Instant::now();
    let report: Report<HandlerWorld<H, W>> = world.checker().bfs();
    let elapsed_ms = started.elapsed().as_millis() as u64;
    let comparison = report.compare(&expected(declared, reached));
    let sometimes = retrylab::check::Kind::Sometimes;
    let unexpected = comparison
        .mismatched
        .iter()
        .filter_map(|name| {
            let path = report.counterexample(name)?;
            let run = retrylab::check::timeline(&world, path).expect("a found path replays");
            Some((
                name.clone(),
                run.steps
                    .into_iter()
                    .map(|step| format!("{}. {}", step.step, step.text))
                    .collect(),
            ))
        })
        .collect();
    Line {
        complete: report.complete,
        counterexample_len: report.shortest_counterexample(),
        counterexample_lens: report
            .counterexamples()
            .map(|(p, path)| (p.name.clone(), path.len()))
            .collect(),
        depth: report.depth,
        elapsed_ms,
        expected: declared
            .iter()
            .map(|(n, v)| (n.to_string(), v.name().to_string()))
            .collect(),
        matches: comparison.matches,
        missing_scenarios: comparison.missing_scenarios,
        model: name.to_string(),
        not_reached: report
            .properties
            .iter()
            .filter(|p| p.kind == sometimes && p.verdict != HOLDS)
            .map(|p| p.name.clone())
            .collect(),
        properties: report
            .properties
            .iter()
            .filter(|p| p.kind != sometimes)
            .map(|p| (p.name.clone(), p.verdict.name().to_string()))
            .collect(),
        reached: report
            .properties
            .iter()
            .filter(|p| p.kind == sometimes && p.verdict == HOLDS)
            .map(|p| p.name.clone())
            .collect(),
        states: report.states,
        transitions: report.transitions,
        unexpected,
    }
}

/// Serves the design named `name` for walking by hand (`serve` returns only if the server fails).
#[cfg(feature = "cli")]
struct Explore {
    name: String,
    listen: std::net::SocketAddr,
    names: Vec<String>,
    served: Option<Result<(), String>>,
}

#[cfg(feature = "cli")]
impl Visit for Explore {
    fn design<H: Handler + Send + 'static, W: Worker + Send + 'static>(
        &mut self,
        name: &str,
        world: HandlerWorld<H, W>,
        _declared: &[(&str, Verdict)],
        _reached: &[&str],
    ) {
        use retrylab::report::explore_server::{serve, Explorer};
        self.names.push(name.to_string());
        if name != self.name || self.served.is_some() {
            return;
        }
        let title = format!("retrylab handlers: {name}");
        let subtitle =
            "the design's handler, run step by step among retrying clients, a lossy network and \
                        crashing processes";
        let explorer = Explorer::new(world, &title, subtitle);
        self.served = Some(serve(explorer, self.listen, |url| {
            println!("listening on {url}")
        }));
    }
}

/// `--explore DESIGN ADDR`: the exit code.
#[cfg(feature = "cli")]
fn explore(name: &str, listen: &str) -> i32 {
    let listen = match retrylab::loopback::loopback_address(listen) {
        Ok(listen) => listen,
        Err(error) => {
            eprintln!("error: --explore {name} {listen}: {error}");
            return 2;
        }
    };
    let mut explore = Explore {
        name: name.to_string(),
        listen,
        names: Vec::new(),
        served: None,
    };
    catalogue(&mut explore);
    match explore.served {
        Some(Ok(())) => 0,
        Some(Err(error)) => {
            eprintln!("error: {error}");
            2
        }
        None => {
            eprintln!(
                "error: --explore: no design '{name}', expected one of: {}",
                explore.names.join(", ")
            );
            2
        }
    }
}

fn main() {
    #[cfg(feature = "cli")]
    {
        let args: Vec<String> = std::env::args().skip(1).collect();
        if let [flag, name, listen] = args.as_slice() {
            if flag == "--explore" {
                std::process::exit(explore(name, listen));
            }
        }
    }
    let json = std::env::args().any(|arg| arg == "--json");
    let mut lines = Lines(Vec::new());
    catalogue(&mut lines);
    let lines = lines.0;
    for line in &lines {
        if json {
            println!(
                "{}",
                serde_json::to_string(line).expect("a line serialises")
            );
        } else {
            let verdict = if line.matches {
                "as declared"
            } else {
                "MISMATCH"
            };
            println!(
                "{:<40} {:>8} states {:>6} ms  {verdict}",
                line.model, line.states, line.elapsed_ms
            );
            for (property, found) in &line.properties {
                let declared = line.expected.get(property).map_or("-", String::as_str);
                println!("    {property:<26} {found:<10} declared {declared}");
            }
            println!(
                "    scenarios reached: {}; not reached: {}",
                listed(&line.reached),
                listed(&line.not_reached)
            );
            for (property, steps) in &line.unexpected {
                println!("  counterexample for {property} (unexpected):");
                steps.iter().for_each(|step| println!("      {step}"));
            }
        }
    }
    std::process::exit(if lines.iter().all(|line| line.matches) {
        0
    } else {
        1
    });
}

fn listed(names: &[String]) -> String {
    if names.is_empty() {
        "none".to_string()
    } else {
        names.join(", ")
    }
}

/// A client told 409 waits out the lease (Retry-After) and has attempts enough to outlast one crash.
fn lease<H: Handler, W: Worker>(world: HandlerWorld<H, W>) -> HandlerWorld<H, W> {
    world.retry_after_ms(common::LEASE_MS).attempts_max(5)
}

/// The records of the designs that keep them in the `keys` table, for `no-stuck-key`: a claim is unfinished,
/// whatever its lease (time passes at rest, so a lease-fenced claim whose lease ran out must still be taken
/// over and finished by a patient client's next request: `world::time`).
fn keys_in_progress(value: &str, _now_ms: u64) -> bool {
    value.starts_with(common::IN_PROGRESS)
}

/// Records in the key-value store: a claim without a TTL (one with a TTL expires).
fn kv_in_progress(value: &str, _now_ms: u64) -> bool {
    value == common::IN_PROGRESS
}

/// Every design with its world and declared verdicts.
pub fn catalogue(visit: &mut impl Visit) {
    use article::Article;
    use lease_fenced::LeaseFenced;
    let (dup, lost, resolves, stuck) = (
        "no-duplicate-effect",
        "no-lost-effect",
        "eventually-resolves",
        "no-stuck-key",
    );
    let keys = || RecordsIn::Table("keys".to_string());
    let crash = faults(|f| (f.crashes, f.drop_responses, f.early_timeouts) = (1, 1, 1));
    let race = faults(|f| f.early_timeouts = 1);
    visit.design(
        "article",
        HandlerWorld::new(Article, 1, BODY)
            .processes(2)
            .faults(crash)
            .records(keys(), keys_in_progress),
        &[
            (dup, HOLDS),
            (lost, HOLDS),
            (resolves, VIOLATED),
            (stuck, VIOLATED),
        ],
        &["crash-after-claim", "lost-response", "replay"],
    );
    visit.design(
        "lease-fenced",
        lease(HandlerWorld::new(LeaseFenced, 1, BODY).processes(2))
            .faults(faults(|f| {
                (f.crashes, f.pauses, f.early_timeouts) = (1, 1, 1)
            }))
            .records(keys(), keys_in_progress)
            .expiries(keys(), lease_fenced::lease_expiry),
        &[
            (dup, HOLDS),
            (lost, HOLDS),
            (resolves, HOLDS),
            (stuck, HOLDS),
        ],
        &["crash-after-claim", "slow-owner", "parallel-retry"],
    );
    visit.design(
        "select-then-insert",
        HandlerWorld::new(select_then_insert::SelectThenInsert, 1, BODY)
            .processes(2)
            .faults(race),
        &[(dup, VIOLATED)],
        &[],
    );
    visit.design(
        "new-key-per-attempt",
        HandlerWorld::new(Article, 1, BODY)
            .key_per_attempt(true)
            .faults(faults(|f| f.drop_responses = 1)),
        &[(dup, VIOLATED)],
        &[],
    );
    visit.design(
        "separate-kv",
        lease(HandlerWorld::new(separate_kv::SeparateKv, 1, BODY))
            .faults(faults(|f| f.crashes = 1)),
        &[(dup, VIOLATED)],
        &[],
    );
    visit.design(
        "provider-not-idempotent",
        lease(HandlerWorld::new(provider::ProviderWithoutKey, 1, BODY))
            .faults(faults(|f| f.crashes = 1)),
        &[(dup, VIOLATED)],
        &[],
    );
    visit.design(
        "provider-derived-key",
        lease(HandlerWorld::new(provider::ProviderDerivedKey, 1, BODY))
            .faults(faults(|f| f.crashes = 1)),
        &[(dup, HOLDS), (resolves, HOLDS)],
        &["crash-after-claim", "provider-retried"],
    );
    visit.design(
        "powertools-2944-delete-after-commit",
        HandlerWorld::new(powertools_2944::DeleteAfterCommit, 1, BODY)
            .faults(faults(|f| f.call_failures = 1)),
        &[(dup, VIOLATED)],
        &[],
    );
    visit.design(
        "powertools-2944-delete-after-commit-fixed",
        HandlerWorld::new(powertools_2944::DeleteBeforeCommitOnly, 1, BODY)
            .faults(faults(|f| f.call_failures = 1)),
        &[(dup, HOLDS)],
        &["handler-error", "replay"],
    );
    visit.design(
        "powertools-5714-orphan-recovery",
        lease(HandlerWorld::new(powertools_5714::UnconditionalTakeOver, 1, BODY).processes(2))
            .faults(faults(|f| (f.pauses, f.early_timeouts) = (1, 1))),
        &[(dup, VIOLATED)],
        &[],
    );
    visit.design(
        "powertools-5714-orphan-recovery-fixed",
        lease(HandlerWorld::new(powertools_5714::ConditionalTakeOver, 1, BODY).processes(2))
            .faults(faults(|f| (f.pauses, f.early_timeouts) = (1, 1))),
        &[(dup, HOLDS)],
        &["slow-owner", "parallel-retry"],
    );
    visit.design(
        "redis-set-then-expire",
        lease(HandlerWorld::new(separate_kv::SetThenExpire, 1, BODY))
            .faults(faults(|f| f.crashes = 1))
            .records(RecordsIn::KeyValue, kv_in_progress),
        &[(resolves, VIOLATED), (stuck, VIOLATED)],
        &[],
    );
    visit.design(
        "redis-set-then-expire-fixed",
        lease(HandlerWorld::new(separate_kv::SeparateKv, 1, BODY))
            .faults(faults(|f| f.crashes = 1))
            .records(RecordsIn::KeyValue, kv_in_progress),
        &[(resolves, HOLDS), (stuck, HOLDS)],
        &["crash-after-claim"],
    );
    completers(visit);
    time_designs::designs(visit);
    overwrites(visit);
    requests::catalogue(visit);
    lost_answers(visit);
    own_properties(visit);
}

/// idempot-js #182: a claim by plain SET after a lookup overwrites a racing claim (the timeline prints the value
/// it replaced); its fix, SET NX PX.
fn overwrites(visit: &mut impl Visit) {
    use idempot_js_182::LookupThenClaim;
    let race = faults(|f| f.early_timeouts = 1);
    let world = |nx: bool| {
        HandlerWorld::new(LookupThenClaim { nx }, 1, BODY)
            .processes(2)
            .faults(race)
    };
    let dup = "no-duplicate-effect";
    visit.design(
        "idempot-js-182-setex-claim",
        world(false),
        &[(dup, VIOLATED)],
        &[],
    );
    visit.design(
        "idempot-js-182-setex-claim-fixed",
        world(true),
        &[(dup, HOLDS)],
        &["parallel-retry", "conflict"],
    );
}

/// Calls made whose answers were lost (`CallFault`): a provider capture retried with a fresh key (medusa
/// #16292), a transaction body run again after its commit's answer was lost (stroppy #167); each next to its fix,
/// which also survives the call not being made at all.
fn lost_answers(visit: &mut impl Visit) {
    use medusa_16292::{FreshCaptureKey, ReservedCaptureKey};
    use stroppy_167::{RetryCommitBlindly, RetryCommitChecked};
    let (dup, lost, resolves) = (
        "no-duplicate-effect",
        "no-lost-effect",
        "eventually-resolves",
    );
    let capture_lost = || CallFault::answer_lost("capture", 1);
    visit.design(
        "medusa-16292-capture-fresh-key",
        HandlerWorld::new(FreshCaptureKey, 1, BODY).call_faults([capture_lost()]),
        &[(dup, VIOLATED)],
        &[],
    );
    visit.design(
        "medusa-16292-capture-fresh-key-fixed",
        HandlerWorld::new(ReservedCaptureKey, 1, BODY)
            .faults(faults(|f| f.drop_responses = 1))
            .call_faults([capture_lost(), CallFault::not_made("capture", 1)]),
        &[(dup, HOLDS), (lost, HOLDS), (resolves, HOLDS)],
        &[
            "answer-lost",
            "provider-retried",
            "handler-error",
            "lost-response",
        ],
    );
    let commit_lost = || CallFault::answer_lost("COMMIT", 1);
    visit.design(
        "stroppy-167-commit-retried",
        HandlerWorld::new(RetryCommitBlindly, 1, BODY).call_faults([commit_lost()]),
        &[(dup, VIOLATED)],
        &[],
    );
    visit.design(
        "stroppy-167-commit-retried-fixed",
        HandlerWorld::new(RetryCommitChecked, 1, BODY)
            .call_faults([commit_lost(), CallFault::not_made("COMMIT", 1)]),
        &[(dup, HOLDS), (lost, HOLDS), (resolves, HOLDS)],
        &["answer-lost", "handler-error", "replay"],
    );
}

/// Designs that state a property of their own (`HandlerWorld::always`, `sometimes`): arun0009/idempotent #217,
/// a response stored under the key alone and replayed to another client who sent the same key.
fn own_properties(visit: &mut impl Visit) {
    use idempotent_217::*;
    // Two clients sending the same key, one lost response.
    fn world<H: Handler>(design: HandlerWorld<H>) -> HandlerWorld<H> {
        design
            .faults(faults(|f| f.drop_responses = 1))
            .always(CROSS, no_cross_client_reply)
            .sometimes(BOTH, same_key_both_answered)
    }
    let (dup, resolves) = ("no-duplicate-effect", "eventually-resolves");
    visit.design(
        "idempotent-217-key-only-scope",
        world(HandlerWorld::new(KeyOnly, 2, BODY)),
        &[
            (CROSS, VIOLATED),
            (dup, HOLDS),
            ("no-lost-effect", VIOLATED),
        ],
        &[BOTH, "replay"],
    );
    visit.design(
        "idempotent-217-key-only-scope-fixed",
        world(HandlerWorld::new(CallerScoped, 2, BODY)),
        &[
            (CROSS, HOLDS),
            (dup, HOLDS),
            ("no-lost-effect", HOLDS),
            (resolves, HOLDS),
        ],
        &[BOTH, "replay", "lost-response"],
    );
}

/// rocket-rides: a background completer finishes rides whose handler crashed; without it a crash after the
/// claim leaves the ride unfinished forever.
fn completers(visit: &mut impl Visit) {
    use completer::{Completer, Ride, RIDES};
    let (dup, stuck) = ("no-duplicate-effect", "no-stuck-key");
    let rides = || RecordsIn::Table(RIDES.to_string());
    let world = |derived: bool| {
        HandlerWorld::new(Ride { derived }, 1, BODY)
            .faults(faults(|f| f.crashes = 1))
            .records(rides(), completer::in_progress)
    };
    visit.design(
        "rides-without-completer",
        world(true),
        &[(stuck, VIOLATED)],
        &["crash-after-claim"],
    );
    visit.design(
        "completer-without-derived-key",
        world(false).worker(Completer { derived: false }, 1),
        &[(dup, VIOLATED), (stuck, HOLDS)],
        &["crash-after-claim"],
    );
    visit.design(
        "completer-without-derived-key-fixed",
        world(true).worker(Completer { derived: true }, 1),
        &[(dup, HOLDS), (stuck, HOLDS)],
        &["crash-after-claim", "provider-retried", "replay"],
    );
}

#[cfg(test)]
#[path = "../../tests/handlers/mod.rs"]
mod tests;
