//! Per-attempt requests and reactions (`retrylab::handler::world::requests`): each mechanism caught where the
//! design is broken and holding where it is fixed, each fixed twin reaching the scenario that makes it
//! dangerous, and counterexamples that read as the real bug (the rotated key, the fixed body, the minted key on
//! the send lines). The designs are `examples/handlers/requests.rs`'s.

use super::super as handlers;

use handlers::requests::*;
use retrylab::check::{timeline, Model, Report, Verdict};
use retrylab::handler::designs::Article;
use retrylab::handler::world::Op;
use retrylab::handler::{Handler, HandlerFaults, HandlerWorld, Reaction, Request, Worker};

const BODY: &str = FIXED_BODY;

fn lost_response() -> HandlerFaults {
    HandlerFaults {
        drop_responses: 1,
        ..HandlerFaults::default()
    }
}

/// The shortest counterexample of `property`, one line a step.
fn steps<H: Handler, W: Worker>(
    world: &HandlerWorld<H, W>,
    report: &Report<HandlerWorld<H, W>>,
    property: &str,
) -> Vec<String> {
    let path = report.counterexample(property).expect("a counterexample");
    let run = timeline(world, path).expect("a found path replays");
    run.steps.into_iter().map(|step| step.text).collect()
}

fn reached<M: Model>(report: &Report<M>, scenario: &str) -> bool {
    report.verdict(scenario) == Verdict::Holds
}

#[test]
fn a_rotated_api_key_pays_twice_where_records_are_scoped_by_the_key_and_once_by_its_account() {
    let world = |by_principal| {
        HandlerWorld::new(ScopedByCredential { by_principal }, 1, BODY)
            .requests(rotating_api_key)
            .faults(lost_response())
    };
    let broken = world(false);
    let report = broken.checker().bfs();
    assert_eq!(report.verdict("no-duplicate-effect"), Verdict::Violated);
    let text = steps(&broken, &report, "no-duplicate-effect").join("\n");
    // The trace names the rotation: the retry carries the new key.
    assert!(
        text.contains("sends attempt 1 (key k0, authorization: acct-0.v1)"),
        "{text}"
    );
    assert!(
        text.contains("C1 times out and sends attempt 2 (key k0, authorization: acct-0.v2)"),
        "{text}"
    );
    assert!(text.ends_with("<-- DUPLICATE EFFECT"), "{text}");
    let fixed = world(true).checker().bfs();
    assert_eq!(fixed.verdict("no-duplicate-effect"), Verdict::Holds);
    assert!(
        reached(&fixed, "request-changed"),
        "the retry with the rotated key was served"
    );
    assert!(reached(&fixed, "replay"));
}

#[test]
fn a_400_retried_with_a_fixed_body_never_resolves_where_the_400_is_cached_and_pays_once_where_it_is_not(
) {
    let world = |cache_rejections| {
        HandlerWorld::new(Validates { cache_rejections }, 1, INVALID_BODY)
            .requests(fix_after_400)
            .react(|code| match code {
                400 => Reaction::Retry,
                other => Reaction::default_for(other),
            })
            .faults(lost_response())
    };
    let broken = world(true);
    let report = broken.checker().bfs();
    assert_eq!(report.verdict("eventually-resolves"), Verdict::Violated);
    let text = steps(&broken, &report, "eventually-resolves").join("\n");
    assert!(
        text.contains(&format!("sends attempt 2 (key k0, body {FIXED_BODY})")),
        "{text}"
    );
    assert!(text.contains("network delivers 400"), "{text}");
    let fixed = world(false).checker().bfs();
    for property in [
        "eventually-resolves",
        "no-duplicate-effect",
        "no-lost-effect",
    ] {
        assert_eq!(fixed.verdict(property), Verdict::Holds, "{property}");
    }
    for scenario in [
        "client-error-retried",
        "request-changed",
        "lost-response",
        "replay",
    ] {
        assert!(reached(&fixed, scenario), "{scenario}");
    }
}

/// The reaction is what makes the 400 retried: by default a 400 ends the operation (resolved, as a definite
/// failure), and the client never sends the fixed body.
#[test]
fn without_a_reaction_a_400_ends_the_operation() {
    let world = HandlerWorld::new(
        Validates {
            cache_rejections: true,
        },
        1,
        INVALID_BODY,
    )
    .requests(fix_after_400)
    .faults(lost_response());
    let report = world.checker().bfs();
    assert_eq!(report.verdict("eventually-resolves"), Verdict::Holds);
    assert!(!reached(&report, "request-changed"));
    assert!(report
        .properties
        .iter()
        .all(|p| p.name != "client-error-retried"));
}

/// A hook sees every status the operation's attempts were answered with: after a timeout that followed the
/// fix, the body stays fixed.
#[test]
fn the_hook_sees_the_statuses_before_its_attempt() {
    let world = HandlerWorld::new(Article, 1, INVALID_BODY).requests(fix_after_400);
    let op = Op { client: 0, op: 0 };
    assert_eq!(world.request_after(op, 1, None, &[]).body, INVALID_BODY);
    assert_eq!(
        world.request_after(op, 2, Some(400), &[400]).body,
        FIXED_BODY
    );
    assert_eq!(world.request_after(op, 3, None, &[400]).body, FIXED_BODY);
}

#[test]
fn an_agent_minting_a_key_per_call_pays_twice_and_one_keyed_by_its_plan_step_once() {
    let broken = HandlerWorld::new(Article, 1, BODY)
        .requests(agent_mints_key)
        .faults(lost_response());
    let report = broken.checker().bfs();
    assert_eq!(report.verdict("no-duplicate-effect"), Verdict::Violated);
    assert!(reached(&report, "request-changed"));
    let text = steps(&broken, &report, "no-duplicate-effect").join("\n");
    assert!(
        text.contains("C1 times out and sends attempt 2 (key tool-call-2)"),
        "{text}"
    );
    let fixed = HandlerWorld::new(Article, 1, BODY)
        .requests(agent_keys_plan_step)
        .faults(lost_response())
        .checker()
        .bfs();
    assert_eq!(fixed.verdict("no-duplicate-effect"), Verdict::Holds);
    assert!(reached(&fixed, "lost-response") && reached(&fixed, "replay"));
    assert!(
        !reached(&fixed, "request-changed"),
        "the plan step's key never changes"
    );
}

#[test]
fn a_key_the_server_ignores_pays_twice_and_one_it_keys_by_actor_once() {
    let broken = HandlerWorld::new(IgnoresIdempotencyKey, 1, BODY)
        .requests(with_actor)
        .faults(lost_response());
    assert_eq!(
        broken.checker().bfs().verdict("no-duplicate-effect"),
        Verdict::Violated
    );
    let fixed = HandlerWorld::new(KeyedByActor, 1, BODY)
        .requests(with_actor)
        .faults(lost_response())
        .checker()
        .bfs();
    assert_eq!(fixed.verdict("no-duplicate-effect"), Verdict::Holds);
    assert!(reached(&fixed, "lost-response") && reached(&fixed, "replay"));
}

/// Several operations, each with its own body and key: the article pays each once; a key per attempt pays
/// the one whose response was lost twice.
#[test]
fn several_operations_send_their_own_bodies() {
    let second = "{\"amount\":700,\"currency\":\"RUB\"}";
    let world = HandlerWorld::new(Article, 1, BODY)
        .bodies(&[BODY, second])
        .faults(lost_response());
    assert_eq!(world.request(0, 1, 1), Request::new("c0", "k1", second));
    let report = world.checker().bfs();
    for property in [
        "no-duplicate-effect",
        "no-lost-effect",
        "eventually-resolves",
    ] {
        assert_eq!(report.verdict(property), Verdict::Holds, "{property}");
    }
    let broken = HandlerWorld::new(Article, 1, BODY)
        .bodies(&[BODY, second])
        .key_per_attempt(true)
        .faults(lost_response());
    let report = broken.checker().bfs();
    assert_eq!(report.verdict("no-duplicate-effect"), Verdict::Violated);
}

#[test]
fn headers_are_read_in_any_case() {
    let request = Request::new("c0", "k0", "{}").with_header("Authorization", "acct-0.v1");
    assert_eq!(request.header("authorization"), Some("acct-0.v1"));
    assert_eq!(request.header("AUTHORIZATION"), Some("acct-0.v1"));
    assert_eq!(request.header("x-actor"), None);
}

/// A world without hooks lists none of their scenarios (and records no statuses: see `world::requests`).
#[test]
fn hooks_add_their_scenarios_only_where_they_are_used() {
    let names = |properties: Vec<retrylab::check::Property<HandlerWorld<Article>>>| {
        properties
            .iter()
            .map(|p| p.name().to_string())
            .collect::<Vec<_>>()
    };
    let plain = names(HandlerWorld::new(Article, 1, BODY).properties());
    assert!(!plain
        .iter()
        .any(|n| n == "request-changed" || n == "client-error-retried"));
    let hooked = names(
        HandlerWorld::new(Article, 1, BODY)
            .requests(|a| a.request())
            .react(Reaction::default_for)
            .properties(),
    );
    assert!(hooked.iter().any(|n| n == "request-changed"));
    assert!(hooked.iter().any(|n| n == "client-error-retried"));
}

/// The fixes hold in a harder world too: two processes, a lost response, a duplicated request and an early
/// timeout (a retry racing its original), where the broken designs still pay twice.
#[test]
fn the_fixes_hold_with_a_retry_racing_its_original() {
    let faults = HandlerFaults {
        drop_responses: 1,
        duplicate_requests: 1,
        early_timeouts: 1,
        ..HandlerFaults::default()
    };
    fn verdicts<H: Handler>(world: HandlerWorld<H>) -> (Verdict, bool) {
        let report = world.processes(2).checker().bfs();
        assert!(report.complete);
        (
            report.verdict("no-duplicate-effect"),
            reached(&report, "parallel-retry"),
        )
    }
    let rotated = |by_principal| {
        HandlerWorld::new(ScopedByCredential { by_principal }, 1, BODY)
            .requests(rotating_api_key)
            .faults(faults)
    };
    assert_eq!(verdicts(rotated(false)).0, Verdict::Violated);
    assert_eq!(verdicts(rotated(true)), (Verdict::Holds, true));
    let agent = |hook: fn(&retrylab::handler::Attempt) -> Request| {
        HandlerWorld::new(Article, 1, BODY)
            .requests(hook)
            .faults(faults)
    };
    assert_eq!(verdicts(agent(agent_mints_key)).0, Verdict::Violated);
    assert_eq!(
        verdicts(agent(agent_keys_plan_step)),
        (Verdict::Holds, true)
    );
    let ignored = HandlerWorld::new(IgnoresIdempotencyKey, 1, BODY)
        .requests(with_actor)
        .faults(faults);
    assert_eq!(verdicts(ignored).0, Verdict::Violated);
    let keyed = HandlerWorld::new(KeyedByActor, 1, BODY)
        .requests(with_actor)
        .faults(faults);
    assert_eq!(verdicts(keyed), (Verdict::Holds, true));
    let fixing = HandlerWorld::new(
        Validates {
            cache_rejections: false,
        },
        1,
        INVALID_BODY,
    )
    .requests(fix_after_400)
    .react(|code| match code {
        400 => Reaction::Retry,
        other => Reaction::default_for(other),
    })
    .attempts_max(4)
    .faults(faults);
    assert_eq!(verdicts(fixing), (Verdict::Holds, true));
}
