//! A design's own properties on a handler world (`always` / `sometimes` over the store's rows, the ledger, the
//! provider and the replies), `records` given a closure, honest reports (scenarios `reached` / `not reached`,
//! failing only when wanted) in text, JSON and HTML, and misspelt names refused before the search. Each check
//! has its twin: the broken variant caught, the dangerous scenario reached.

use super::super::idempotent_217::*;
use retrylab::handler::{
    Handler, HandlerFaults, HandlerWorld, Reach, RecordsIn, Reply, Request, Seen, Store,
};
use std::panic::{catch_unwind, AssertUnwindSafe};

const BODY: &str = r#"{"amount":500}"#;

/// Two clients sending the same key `k0`, one lost response, the design's own property and scenario.
fn same_key<H: Handler>(design: H) -> HandlerWorld<H> {
    let faults = HandlerFaults {
        drop_responses: 1,
        ..HandlerFaults::default()
    };
    HandlerWorld::new(design, 2, BODY)
        .faults(faults)
        .always(CROSS, no_cross_client_reply)
        .sometimes(BOTH, same_key_both_answered)
}

/// The panic message of `run`.
fn panic_of(run: impl FnOnce()) -> String {
    let error = catch_unwind(AssertUnwindSafe(run)).expect_err("it panics");
    (error.downcast_ref::<String>().cloned())
        .or_else(|| error.downcast_ref::<&str>().map(|text| text.to_string()))
        .unwrap_or_default()
}

#[test]
fn an_own_always_catches_another_clients_reply_and_holds_when_the_key_is_scoped() {
    let path = same_key(KeyOnly).assert_violated(CROSS);
    let world = same_key(KeyOnly);
    let text = world.report().text();
    assert!(
        text.contains("counterexample for no-cross-client-reply"),
        "{text}"
    );
    println!(
        "key-only scope: another client's reply in {} steps",
        path.len()
    );
    let fixed = same_key(CallerScoped);
    fixed.assert_holds(CROSS);
    // Neither passes vacuously: in both, both clients were told a success for the same key.
    fixed.assert_reached(BOTH);
    same_key(KeyOnly).assert_reached(BOTH);
}

#[test]
fn own_conditions_read_the_store_rows_and_the_ledger() {
    let faults = HandlerFaults {
        crashes: 1,
        ..HandlerFaults::default()
    };
    let world = |table: &'static str| {
        HandlerWorld::new(CallerScoped, 1, BODY)
            .faults(faults)
            .sometimes("a-record-completed", move |seen: &Seen| {
                seen.rows(table)
                    .any(|(_, value)| value.starts_with("completed"))
            })
            .always("one-payment-per-operation", |seen: &Seen| {
                seen.effects("payments").count() <= 1 && seen.charges().count() == 0
            })
    };
    let keys = world("keys");
    keys.assert_holds("one-payment-per-operation");
    keys.assert_reached("a-record-completed");
    // Its twin: the same condition over a table no design writes is never met (and not wanted: it passes).
    let nowhere = world("no-such-table");
    let checked = nowhere.report();
    let line = checked
        .scenarios()
        .into_iter()
        .find(|l| l.name == "a-record-completed");
    assert_eq!(line.map(|line| line.reach), Some(Reach::NotReached));
    let message = panic_of(|| {
        nowhere.assert_reached("a-record-completed");
    });
    assert!(
        message.contains("scenario a-record-completed is not reached"),
        "{message}"
    );
}

#[test]
fn records_take_a_closure_that_captures() {
    let faults = HandlerFaults {
        crashes: 1,
        ..HandlerFaults::default()
    };
    let world = |unfinished: &str| {
        let unfinished = unfinished.to_string();
        HandlerWorld::new(CallerScoped, 1, BODY)
            .faults(faults)
            .records(RecordsIn::Table("keys".into()), move |value, _| {
                value.starts_with(&unfinished)
            })
    };
    // The article's claim has no lease: a crash after it leaves the key in_progress for ever.
    world("in_progress").assert_violated("no-stuck-key");
    // Its twin: the captured prefix is what decides (no record starts with it, so none is stuck).
    world("never").assert_holds("no-stuck-key");
}

/// A handler that must never run: a name refused after a search would panic with its message instead.
struct MustNotRun;

impl Handler for MustNotRun {
    async fn handle<S: Store>(&self, _db: &mut S, _request: &Request) -> Reply {
        panic!("the search ran")
    }
}

#[test]
fn a_misspelt_name_is_refused_before_the_search() {
    let world = || HandlerWorld::new(MustNotRun, 1, BODY);
    let message = panic_of(|| {
        world().assert_holds("no-duplicate-efect");
    });
    assert!(
        message.contains("assert_holds: no property 'no-duplicate-efect'"),
        "{message}"
    );
    assert!(
        message.contains("no-duplicate-effect, no-lost-effect"),
        "{message}"
    );
    let message = panic_of(|| {
        world().assert_reached("no-duplicate-effect");
    });
    assert!(
        message.contains("is a property (not a scenario)"),
        "{message}"
    );
    let message = panic_of(|| {
        world().assert_violated("lost-response");
    });
    assert!(
        message.contains("is a scenario (use assert_reached)"),
        "{message}"
    );
    let message = panic_of(|| {
        world().wants(&["lost-respons"]);
    });
    assert!(
        message.contains("wants: no scenario 'lost-respons'"),
        "{message}"
    );
    // Its twin: a name spelt right gets as far as the search, which runs the handler.
    let message = panic_of(|| {
        world().assert_holds("no-duplicate-effect");
    });
    assert!(message.contains("the search ran"), "{message}");
}

#[test]
fn a_correct_designs_report_has_no_violated_line_in_text_json_or_html() {
    let fixed = same_key(CallerScoped).wants(&[BOTH, "lost-response"]);
    let checked = fixed.report();
    let text = checked.text();
    println!("{text}");
    assert!(!text.contains("violated"), "{text}");
    assert!(
        text.contains("crash-after-claim            not reached\n"),
        "{text}"
    );
    assert!(
        text.contains("lost-response                reached (wanted)"),
        "{text}"
    );
    assert!(text.ends_with("passed\n"), "{text}");
    let json = checked.json();
    assert_eq!(json["passed"], true);
    assert_eq!(json["properties"][CROSS], "holds");
    let not_reached = json["not_reached"].as_array().expect("a list");
    assert!(not_reached.contains(&"crash-after-claim".into()), "{json}");
    assert!(!json.to_string().contains("violated"), "{json}");
    let html = checked.html("idempotent-217 fixed");
    assert!(!html.contains("violated"), "{html}");
    assert!(
        html.contains("<code>crash-after-claim</code></td><td>not reached</td>"),
        "{html}"
    );
    fixed.assert_passes();
}

#[test]
fn a_report_fails_on_a_violated_property_or_a_wanted_scenario_not_reached() {
    let broken = same_key(KeyOnly);
    let checked = broken.report();
    let text = checked.text();
    assert!(
        text.contains("no-cross-client-reply        violated ("),
        "{text}"
    );
    let outcome = text.lines().last().unwrap_or_default();
    assert!(outcome.starts_with("FAILED: "), "{text}");
    assert!(
        outcome.contains("no-cross-client-reply is violated"),
        "{text}"
    );
    assert_eq!(checked.json()["properties"][CROSS], "violated");
    assert!(checked
        .html("broken")
        .contains("Counterexample: no-cross-client-reply"));
    // The fixed design, wanting a scenario its world cannot reach (no crash is enabled): it fails on that alone.
    let wanting = same_key(CallerScoped).wants(&["crash-after-claim"]);
    let checked = wanting.report();
    assert_eq!(
        checked.failures(),
        vec!["wanted scenario crash-after-claim is not reached".to_string()]
    );
    assert!(checked
        .text()
        .contains("crash-after-claim            not reached (WANTED)"));
    assert_eq!(checked.json()["passed"], false);
    let message = panic_of(|| {
        wanting.assert_passes();
    });
    assert!(
        message.contains("FAILED: wanted scenario crash-after-claim"),
        "{message}"
    );
}
