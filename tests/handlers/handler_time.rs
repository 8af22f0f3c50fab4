//! Time at rest and fairness in the handler world (`retrylab::handler::world::time`): a crashed owner's lease
//! runs out when time passes at rest (a step of its own, printed), so `no-stuck-key` means stuck for ever;
//! `eventually-resolves` is judged under weak fairness of the clock and of retries, and a test shows the
//! verdict differing without it; the lease design holds every property in a world of two clients, two
//! processes, a crash, a pause, a lost response and an early timeout.

use super::super as handlers;

use handlers::lease_fenced::{self, LeaseFenced};
use handlers::powertools_java_1281::{self as java_1281, InProgressExpiry};
use retrylab::check::{timeline, Kind, Model, Verdict};
use retrylab::handler::designs::common::IN_PROGRESS;
use retrylab::handler::{Handler, HandlerFaults, HandlerWorld, RecordsIn, Worker};

const BODY: &str = "{\"amount\":500,\"currency\":\"RUB\"}";

fn keys() -> RecordsIn {
    RecordsIn::Table("keys".to_string())
}

/// The timeline of `property`'s counterexample, one line per step.
fn counterexample<H: Handler, W: Worker>(
    world: &HandlerWorld<H, W>,
    property: &str,
) -> Vec<String> {
    let report = world.checker().bfs();
    let path = report.counterexample(property).expect("a counterexample");
    let run = timeline(world, path).expect("a found path replays");
    run.steps.into_iter().map(|step| step.text).collect()
}

/// A lease-fenced claim is unfinished while it is in progress, whatever its lease: only a take-over (or its
/// owner) finishes it, so `no-stuck-key` asks that one does.
fn claim_unfinished(value: &str, _now_ms: u64) -> bool {
    value.starts_with(IN_PROGRESS)
}

/// One client, a crash: the crashed owner's claim is taken over once its lease ran out, which needs time to
/// pass at rest (the clients' attempts are spent on 409s long before). Declared leases, a fair client: every
/// property holds, and the timeline of the take-over shows time passing as a step naming the lease.
#[test]
fn a_lease_runs_out_at_rest_and_the_step_is_printed() {
    let world = |seconds: bool| {
        HandlerWorld::new(InProgressExpiry { seconds }, 1, BODY)
            .faults(HandlerFaults {
                crashes: 1,
                ..HandlerFaults::default()
            })
            .records(keys(), java_1281::in_progress)
            .expiries(keys(), java_1281::expiry_ms)
    };
    let fixed = world(false).checker().bfs();
    for property in ["no-duplicate-effect", "eventually-resolves", "no-stuck-key"] {
        assert_eq!(fixed.verdict(property), Verdict::Holds, "{property}");
    }
    // The broken twin (seconds compared with milliseconds): stuck for ever, and the timeline says why.
    let steps = counterexample(&world(true), "no-stuck-key");
    let text = steps.join("\n");
    assert!(
        text.contains("time passes at rest: the clock moves from 0 to 30000 ms (the lease in keys[c0/k0] runs out); C1 will ask again"),
        "{text}"
    );
    assert!(text.contains("P1 CRASHES"), "{text}");
}

/// Without the lease declared, time never passes at rest: the same correct design reads as stuck (the twin
/// showing the declaration is what `no-stuck-key` is judged with).
#[test]
fn without_declared_leases_time_stands_still_and_the_claim_reads_stuck() {
    let world = HandlerWorld::new(InProgressExpiry { seconds: false }, 1, BODY)
        .faults(HandlerFaults {
            crashes: 1,
            ..HandlerFaults::default()
        })
        .records(keys(), java_1281::in_progress);
    let report = world.checker().bfs();
    assert_eq!(report.verdict("no-stuck-key"), Verdict::Violated);
    // The patient client still polls, but the clock never moves: no lease runs out.
    let steps = counterexample(&world, "no-stuck-key").join("\n");
    assert!(
        steps.contains("time passes at rest (nothing left to expire)"),
        "{steps}"
    );
    assert!(!steps.contains("runs out"), "{steps}");
}

/// Lease-fenced without Retry-After, two processes, one early timeout: the client spends its attempts on 409s
/// while the owner is still working. Unfair, it gives up (`eventually-resolves` violated); under fairness it
/// asks again once the owner is done, and every operation resolves.
#[test]
fn fairness_decides_whether_a_client_told_409_resolves() {
    let world = |fair: bool| {
        HandlerWorld::new(LeaseFenced, 1, BODY)
            .processes(2)
            .faults(HandlerFaults {
                early_timeouts: 1,
                ..HandlerFaults::default()
            })
            .expiries(keys(), lease_fenced::lease_expiry)
            .fair(fair)
    };
    let fair = world(true).checker().bfs();
    assert_eq!(fair.verdict("eventually-resolves"), Verdict::Holds);
    assert_eq!(fair.verdict("no-duplicate-effect"), Verdict::Holds);
    let unfair = world(false).checker().bfs();
    assert_eq!(unfair.verdict("eventually-resolves"), Verdict::Violated);
    let steps = counterexample(&world(false), "eventually-resolves").join("\n");
    assert!(steps.contains("C1 times out"), "{steps}");
    assert!(steps.contains("network delivers 409"), "{steps}");
    // Fairness only adds polls after a client would have given up: the fair world has more states.
    assert!(
        fair.states > unfair.states,
        "{} vs {}",
        fair.states,
        unfair.states
    );
}

/// Issue 33's target: lease-fenced's handler twin holds every property with two clients, two processes, one
/// crash, one pause, one lost response and an early timeout (time at rest lets a crashed owner's lease run
/// out; fairness keeps a client told 409 asking).
#[test]
fn the_lease_design_holds_every_property_in_the_two_by_two_world() {
    let world = || {
        HandlerWorld::new(LeaseFenced, 2, BODY)
            .processes(2)
            .faults(HandlerFaults {
                crashes: 1,
                pauses: 1,
                drop_responses: 1,
                early_timeouts: 1,
                ..HandlerFaults::default()
            })
            .records(keys(), claim_unfinished)
            .expiries(keys(), lease_fenced::lease_expiry)
    };
    let report = world().checker().bfs();
    assert!(report.complete);
    for property in report
        .properties
        .iter()
        .filter(|p| p.kind != Kind::Sometimes)
    {
        assert_eq!(property.verdict, Verdict::Holds, "{}", property.name);
    }
    // The green is not vacuous: the world's dangerous scenarios were reached.
    for scenario in [
        "crash-after-claim",
        "slow-owner",
        "parallel-retry",
        "lost-response",
    ] {
        assert!(report.reached(scenario), "{scenario} not reached");
    }
    println!("2x2 lease-fenced: {} states", report.states);
    // Its twin: the same world without fairness, where a client told 409 after its last attempt gives up.
    let unfair = world().fair(false).checker().bfs();
    assert_eq!(unfair.verdict("eventually-resolves"), Verdict::Violated);
}
