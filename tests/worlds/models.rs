//! Every model file in models/ gets the verdicts it declares, with its dangerous scenarios reached; and for the
//! designs that hold, the broken twin (one knob turned) is caught.

use retrylab::builtin::{Event, WorldProperty};
use retrylab::check::{Model as _, Verdict};
use retrylab::protocol::Claim;
use retrylab::spec::{load_model, model_files};
use std::path::Path;

use crate::model_support;
use model_support::*;

#[test]
fn every_model_gets_its_declared_verdicts_and_reaches_its_scenarios() {
    let files = model_files(&Path::new(env!("CARGO_MANIFEST_DIR")).join("models")).unwrap();
    assert!(files.len() >= 4, "models/ should hold the catalogue");
    let mut failures = Vec::new();
    for file in files {
        let model = load_model(&file).unwrap();
        let report = search(&model);
        // The one comparison of declared against found verdicts, as `retrylab check` makes it.
        let comparison = report.compare(&model.expected());
        for name in &comparison.mismatched {
            failures.push(format!(
                "{}: {name} is {:?}, declared {:?}",
                model.path,
                report.verdict(name),
                model.expected().verdicts[name]
            ));
        }
        for name in &comparison.missing_scenarios {
            failures.push(format!("{}: scenario {name} never reached", model.path));
        }
        // A model that declares `holds` must say how it was not vacuous.
        if model
            .expected
            .values()
            .any(|verdict| *verdict == Verdict::Holds)
        {
            assert!(
                !model.reached.is_empty(),
                "{}: declares holds but no `reached` scenario",
                model.path
            );
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn the_article_design_holds_and_its_select_then_insert_twin_duplicates() {
    let model = load("article-sqlite.toml");
    let report = search(&model);
    assert_eq!(
        report.verdict(WorldProperty::NoDuplicateEffect.name()),
        Verdict::Holds
    );
    assert!(
        report.reached(Event::ParallelRetry.scenario_name())
            && report.reached(Event::DuplicatedRequest.scenario_name())
    );
    let twin = model
        .world
        .to_builder()
        .claim(Claim::SelectThenInsert)
        .build()
        .unwrap();
    assert_eq!(
        twin_verdict(&twin, WorldProperty::NoDuplicateEffect),
        Verdict::Violated
    );
}

#[test]
fn lease_and_fencing_hold_and_the_unfenced_twin_duplicates() {
    let model = load("lease-fenced.toml");
    let report = search(&model);
    assert_eq!(
        report.verdict(WorldProperty::NoDuplicateEffect.name()),
        Verdict::Holds
    );
    assert!(
        report.reached(Event::SlowOwner.scenario_name())
            && report.reached(Event::FencedCompletion.scenario_name())
    );
    let twin = model.world.to_builder().fencing(false).build().unwrap();
    assert_eq!(
        twin_verdict(&twin, WorldProperty::NoDuplicateEffect),
        Verdict::Violated
    );
}

#[test]
fn a_lease_unsticks_the_key_that_the_article_design_leaves_stuck() {
    let model = load("article-sqlite.toml");
    assert_eq!(
        verdict(&model.world, WorldProperty::NoStuckKey),
        Verdict::Violated
    );
    let twin = model
        .world
        .to_builder()
        .lease(retrylab::protocol::Lease::Ms(30_000))
        .build()
        .unwrap();
    assert_eq!(verdict(&twin, WorldProperty::NoStuckKey), Verdict::Holds);
}

#[test]
fn a_search_cut_short_is_incomplete_never_holds() {
    let model = load("article-sqlite.toml");
    let report = model.world.checker().states_max(1000).bfs();
    assert!(!report.complete);
    assert_eq!(
        report.verdict(WorldProperty::NoDuplicateEffect.name()),
        Verdict::Incomplete
    );
    let report = model.world.checker().depth_max(5).bfs();
    assert!(!report.complete);
    assert_eq!(
        report.verdict(WorldProperty::NoDuplicateEffect.name()),
        Verdict::Incomplete
    );
}

#[test]
fn counterexamples_are_shortest() {
    // new-key-per-attempt: send, deliver, claim, effect, commit, answer, lose the answer, time out and retry,
    // deliver, claim, effect, commit = 12 steps; nothing shorter can commit two payments.
    let model = load("new-key-per-attempt.toml");
    let report = search(&model);
    let path = report
        .counterexample(WorldProperty::NoDuplicateEffect.name())
        .unwrap();
    assert_eq!(path.len(), 12, "{path:?}");
}
