//! Timelines say what happened at the decisive step, and steps carry a structured kind that the report draws
//! from (issue 14, item 9).

use retrylab::builtin::{Action, DescribedStep, Faults, Party, StepKind, World, WorldProperty};
use retrylab::check::{timeline, Model as _};
use retrylab::spec::load_model;
use std::path::Path;

fn world(name: &str) -> World {
    load_model(
        &Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("models")
            .join(name),
    )
    .unwrap()
    .world
}

/// The shortest counterexample to `property` in `name`, described, and the world's state at its end.
fn counterexample(name: &str, property: WorldProperty) -> (World, Vec<DescribedStep>, String) {
    let world = world(name);
    let report = world.checker().bfs();
    let actions = report
        .counterexample(property.name())
        .expect("a violation")
        .to_vec();
    let run = timeline(&world, &actions).unwrap();
    let culprit = world
        .liveness_culprit(property, run.last_state())
        .unwrap_or_default();
    let steps = world.described_steps(&run);
    // The timeline's lines are the described steps, violations appended.
    let lines: Vec<String> = steps.iter().map(DescribedStep::line).collect();
    let texts: Vec<String> = run.steps.iter().map(|step| step.text.clone()).collect();
    assert_eq!(lines, texts, "{name}");
    (world, steps, culprit)
}

fn any_text(steps: &[DescribedStep], needle: &str) -> bool {
    steps.iter().any(|step| step.text.contains(needle))
}

#[test]
fn a_crash_between_the_commit_and_the_key_store_says_so() {
    let (_, steps, _) = counterexample(
        "redis-separate-store.toml",
        WorldProperty::NoDuplicateEffect,
    );
    assert!(
        any_text(&steps, "CRASHES after committing the payment, before marking key k1 of C1 completed in the key store"),
        "{steps:#?}"
    );
}

#[test]
fn a_duplicate_at_the_provider_counts_charges_not_payments() {
    let (_, steps, _) = counterexample(
        "provider-not-idempotent.toml",
        WorldProperty::NoDuplicateEffect,
    );
    let last = steps.last().unwrap();
    assert_eq!(
        last.violations,
        ["DUPLICATE EFFECT: the provider has now charged this operation twice (one payment row, two charges)"]
    );
    assert_eq!(
        last.kind,
        StepKind::Handler {
            proc: 0,
            with: Party::Provider
        }
    );
}

#[test]
fn a_write_over_a_completed_record_is_an_overwrite() {
    let (_, steps, _) = counterexample("select-then-insert.toml", WorldProperty::NoDuplicateEffect);
    assert!(
        any_text(&steps, "OVERWRITING its completed record"),
        "{steps:#?}"
    );
}

#[test]
fn a_liveness_violation_names_what_stays_unresolved() {
    let (_, _, stuck) = counterexample("article-sqlite.toml", WorldProperty::NoStuckKey);
    assert_eq!(stuck, "key k1 of C1 stays in_progress");
    let (_, steps, unresolved) =
        counterexample("article-sqlite.toml", WorldProperty::EventuallyResolves);
    assert!(
        unresolved.starts_with("C1.op1 never resolves: "),
        "{unresolved}"
    );
    assert_eq!(
        world("article-sqlite.toml").liveness_culprit(
            WorldProperty::NoDuplicateEffect,
            &world("article-sqlite.toml").init_state()
        ),
        None
    );
    assert!(!steps.is_empty());
}

/// The actions `pick` chooses, one at a time, among those enabled.
fn path(world: &World, picks: &[&dyn Fn(&Action) -> bool]) -> Vec<Action> {
    let mut state = world.init_state();
    let mut enabled = Vec::new();
    let mut taken = Vec::new();
    for pick in picks {
        world.actions(&state, &mut enabled);
        let action = *enabled.iter().find(|action| pick(action)).expect("enabled");
        world.apply(&mut state, &action);
        taken.push(action);
    }
    taken
}

#[test]
fn kinds_say_what_the_report_used_to_read_from_the_english() {
    // One attempt, its request lost: the client retries on a timeout with attempts left (a Send, drawn as an
    // arrow) and gives up without (a GiveUp, drawn as a note), whatever the words say.
    for (attempts, expected) in [
        (2, StepKind::Send { client: 0 }),
        (1, StepKind::GiveUp { client: 0 }),
    ] {
        let base = world("article-sqlite.toml");
        let faults = Faults {
            drop_requests: 1,
            ..Faults::default()
        };
        let lossy = base
            .to_builder()
            .attempts_max(attempts)
            .faults(faults)
            .build()
            .unwrap();
        let actions = path(
            &lossy,
            &[
                &|action| matches!(action, Action::Send { .. }),
                &|action| matches!(action, Action::Drop { .. }),
                &|action| matches!(action, Action::Timeout { .. }),
            ],
        );
        let run = timeline(&lossy, &actions).unwrap();
        let steps = lossy.described_steps(&run);
        assert_eq!(steps[2].kind, expected, "{}", steps[2].text);
        assert_eq!(steps[1].kind, StepKind::NetworkFault);
    }
    // A consumer's ack goes to the broker (the network lane), not to the store.
    let (_, steps, _) = counterexample(
        "queue-inbox-before-effect.toml",
        WorldProperty::NoLostEffect,
    );
    let ack = steps
        .iter()
        .find(|step| step.text.contains("acks"))
        .expect("an ack");
    assert!(
        matches!(
            ack.kind,
            StepKind::Handler {
                with: Party::Network,
                ..
            }
        ),
        "{ack:?}"
    );
}
