//! The model checker's counterexamples replayed against real code: the library's article handler
//! (`handler::designs::article`) with each model's knobs, on the in-memory store and on real SQLite. Every model
//! in `models/` that expects `no-duplicate-effect` to be violated is explored, its shortest counterexample goes
//! through the versioned JSON trace format, and the trace is driven step by step: the same duplicate payment must
//! appear at the same step. Random walks over every model then check that real code and model agree step by step
//! (payments, records, answers, handler steps) on the correct designs too.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use retrylab::builtin::{Action, Event, HttpWorld, WorldProperty};
use retrylab::check::{self, Model as _, Verdict};
use retrylab::real::drive::{self, DriveReport, Driver};
use retrylab::real::{MemoryBackend, StdLock, Tables};
use retrylab::runner::lockstep::SqliteBackend;
use retrylab::spec::{self, ModelFile};
use std::path::Path;

/// The models in `models/` that the article's handler implements (keys in the effect's database, no provider);
/// the others are listed as skipped.
fn models() -> Vec<ModelFile> {
    let folder = Path::new(env!("CARGO_MANIFEST_DIR")).join("models");
    let files = spec::model_files(&folder).expect("models/ lists");
    let mut supported = Vec::new();
    for file in files {
        let model = spec::load_model(&file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        match drive::unsupported(&model.world) {
            Some(reason) => println!(
                "skipped {}: the article's handler lacks {reason}",
                model.path
            ),
            None => supported.push(model),
        }
    }
    supported
}

fn drive_memory(world: &HttpWorld, actions: &[Action]) -> DriveReport {
    let backend = MemoryBackend::<StdLock<Tables>>::new();
    Driver::new(world, &backend)
        .and_then(|driver| driver.drive_all(actions))
        .unwrap_or_else(|e| panic!("memory store: {e}"))
}

fn drive_sqlite(world: &HttpWorld, actions: &[Action]) -> DriveReport {
    let folder = tempfile::tempdir().unwrap();
    // One connection per server process, as each process of a service has its own.
    let backend = SqliteBackend::create(&folder.path().join("idem.db")).unwrap();
    Driver::new(world, &backend)
        .and_then(|driver| driver.drive_all(actions))
        .unwrap_or_else(|e| panic!("sqlite store: {e}"))
}

/// The checker's search is bounded so the test stays in seconds: the shortest counterexamples of these small
/// models are found long before the bound (a property not found within it is simply not driven).
const SEARCH_STATES_MAX: u64 = 200_000;

#[test]
fn every_counterexample_replays_on_real_code_and_duplicates_duplicate() {
    let mut driven = Vec::new();
    for model in models() {
        // A model that declares every property to hold has no counterexample to drive (the walks cover it).
        if !model
            .expected
            .values()
            .any(|verdict| *verdict == Verdict::Violated)
        {
            continue;
        }
        let report = model.world.checker().states_max(SEARCH_STATES_MAX).bfs();
        if model.expected.get(&WorldProperty::NoDuplicateEffect) == Some(&Verdict::Violated) {
            assert!(
                report
                    .counterexample(WorldProperty::NoDuplicateEffect.name())
                    .is_some(),
                "{}: the checker found no duplicate",
                model.path
            );
        }
        for (found, actions) in report.counterexamples() {
            let property = &WorldProperty::by_name(&found.name).unwrap();
            // Through the versioned trace format: what `retrylab check` saves is what gets driven.
            let steps = check::timeline(&model.world, actions)
                .expect("a found path replays")
                .steps;
            let trace = spec::new_trace(&model, &found.name, "bfs", None, steps);
            let trace = spec::parse_trace("memory", &trace.to_json()).expect("trace round trip");
            let model_of_trace = spec::parse_model(&trace.model, &trace.model_source).unwrap();
            let world = model_of_trace.world.http().expect("an HTTP world");
            let actions: Vec<Action> = trace.steps.iter().map(|step| step.action).collect();
            for (store_name, report) in [
                ("memory", drive_memory(world, &actions)),
                ("sqlite", drive_sqlite(world, &actions)),
            ] {
                println!(
                    "{} {} against {store_name}, {} steps in lockstep:",
                    model.path,
                    property.name(),
                    actions.len()
                );
                for line in &report.log {
                    println!("    {line}");
                }
                assert_eq!(
                    report.real_duplicate_at, report.model_duplicate_at,
                    "{} ({store_name}): the real duplicate must appear at the model's step",
                    model.path
                );
                if *property == WorldProperty::NoDuplicateEffect {
                    assert!(report.model_duplicate_at.is_some());
                    assert!(report.real_payments_per_op.values().any(|count| *count > 1));
                }
            }
            driven.push(format!("{} {}", model.path, property.name()));
        }
    }
    println!("driven: {driven:#?}");
    let duplicates = driven
        .iter()
        .filter(|name| name.ends_with(" no-duplicate-effect"))
        .count();
    // The three broken designs in models/ today; a new one is picked up by the loop above.
    assert!(
        duplicates >= 3,
        "expected the duplicate-effect models, drove {driven:?}"
    );
}

/// Seeded random walks over every model, driven in lockstep against the in-memory store (and a few against
/// SQLite): any difference between real code and model in payments, answers or handler steps fails the test.
#[test]
fn random_walks_agree_step_by_step_on_every_model() {
    const WALK_COUNT: u64 = 40;
    const SQLITE_WALK_COUNT: u64 = 4;
    const WALK_DEPTH_MAX: usize = 80;
    let mut enabled = Vec::new();
    for model in models() {
        let world = model.world.http().expect("models() keeps HTTP worlds");
        let (mut duplicates, mut steps_total) = (0, 0);
        let (mut rolled_back, mut fenced, mut take_overs) = (0, 0, 0);
        let (mut handler_errors, mut key_expiries) = (0, 0);
        for seed in 0..WALK_COUNT {
            let mut rng = ChaCha8Rng::seed_from_u64(seed);
            let mut state = world.init_state();
            let mut actions = Vec::new();
            while actions.len() < WALK_DEPTH_MAX {
                world.actions(&state, &mut enabled);
                if enabled.is_empty() {
                    break;
                }
                let action = enabled[rng.random_range(0..enabled.len())];
                let (next, events) = world.next_state(&state, &action);
                take_overs += usize::from(events.has(Event::LeaseTakeover));
                handler_errors += usize::from(matches!(action, Action::Fail { .. }));
                key_expiries += usize::from(matches!(action, Action::ExpireKey { .. }));
                state = next;
                actions.push(action);
            }
            steps_total += actions.len();
            let report = drive_memory(world, &actions);
            duplicates += usize::from(report.real_duplicate_at.is_some());
            rolled_back += report.rolled_back_crashes;
            fenced += report.fenced_refusals;
            assert_eq!(
                report.real_duplicate_at, report.model_duplicate_at,
                "{} seed {seed}",
                model.path
            );
            if seed < SQLITE_WALK_COUNT {
                let sqlite = drive_sqlite(world, &actions);
                assert_eq!(sqlite.real_payments_per_op, report.real_payments_per_op);
            }
        }
        println!(
            "{}: {WALK_COUNT} walks, {steps_total} steps in lockstep, {duplicates} with a real duplicate; \
             {take_overs} take-overs, {fenced} fenced completions, {rolled_back} rolled-back crashes, \
             {handler_errors} handler errors, {key_expiries} key expiries",
            model.path
        );
        // No vacuous agreement: the walks must reach the scenarios the model is about.
        if world.faults().crashes > 0 {
            assert!(
                rolled_back > 0,
                "{}: no crash inside an effect transaction",
                model.path
            );
        }
        if world.server().protocol().lease.is_some() {
            assert!(take_overs > 0, "{}: no lease take-over", model.path);
        }
        if world.faults().handler_errors > 0 {
            assert!(handler_errors > 0, "{}: no handler error", model.path);
        }
        if world.faults().key_expiries > 0 {
            assert!(key_expiries > 0, "{}: no key expiry", model.path);
        }
        // Fencing only refuses an owner that is alive after its lease expired: that needs a pause.
        if world.server().protocol().fencing && world.faults().pauses > 0 {
            assert!(fenced > 0, "{}: no fenced completion", model.path);
        }
    }
}
