//! The queue models against a real broker: for each `models/queue-*.toml`, the checker's shortest counterexample
//! of each violated property (or, for a model that holds, the example path of each scenario it must reach) is
//! driven against nats-server (a stream with a duplicate window of seconds, a pull consumer whose ack wait is
//! the visibility timeout) and a real database (the consumer's inbox and effect, the producer's outbox), in
//! lockstep with the model (`queue_real::drive`). The real outcome (the event duplicated, lost, or its second
//! delivery absorbed) is computed from the real effects and acks and must be the model's; a violated property
//! must show for real; each model that holds has a broken twin whose violation shows for real.

use retrylab::builtin::{Action, DedupKey, Inbox, ProducerDedup, Provider, World, WorldProperty};
use retrylab::check::{Model as _, Verdict};
use retrylab::experiments::dedup_window::Place;
use retrylab::handler::Clock;
use retrylab::queue_real::broker::Broker;
use retrylab::queue_real::broker::QueueOptions;
use retrylab::queue_real::consumer::{consume, ConsumerDesign, EFFECTS};
use retrylab::queue_real::drive::{self, EventOutcome, QueueRun, Timing};
use retrylab::queue_real::relay::{self, Failpoint};
use retrylab::queue_real::window::{self, RealConfig};
use retrylab::runner::lockstep::{Backend, PostgresBackend, SqliteBackend};
use retrylab::servers::nats::TempNats;
use retrylab::servers::postgres::TempPostgres;
use retrylab::spec::{self, ModelFile};
use retrylab::stores::sqlite::SqliteStore;
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::MutexGuard;

// The tests against the broker run one at a time: they measure against the broker's wall-clock window (a copy
// republished after 3 windows must be stored), and a parallel test's load once delayed an original past that
// margin (23 of 24 copies forwarded). Each test holds this for its whole run: the binary's one lock, so no
// gray-box probe runs beside it either.
use crate::ONE_AT_A_TIME as BROKER_TESTS;

fn one_at_a_time() -> MutexGuard<'static, ()> {
    BROKER_TESTS
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Bound on each model's search (their shortest paths are found far below it).
const SEARCH_STATES_MAX: u64 = 2_000_000;

/// Models whose broker mechanism JetStream does not have natively, each with the reason; the book's "Queues on a
/// real broker" (docs/src/experiments.md) lists the same. They are driven all the same, on an emulation the
/// reason states.
const EMULATED: [(&str, &str); 2] = [
    (
        "queue-kafka-session-inbox.toml",
        "Kafka's idempotent producer dedups per producer session; JetStream dedups by message id within a window, so the session is a message id that names it (a restart's new session, a new id) and the window outlasts the trace",
    ),
    (
        "queue-kafka-session-restart.toml",
        "the same: a producer session emulated by a message id that names it",
    ),
];

/// Each model that holds and its broken twin: the shipped model that turns the knob the holding one relies on.
const TWINS: [(&str, &str); 5] = [
    (
        "queue-inbox-same-transaction.toml",
        "queue-inbox-after-effect.toml",
    ),
    (
        "queue-email-idempotency-key.toml",
        "queue-exactly-once-email.toml",
    ),
    (
        "queue-kafka-session-inbox.toml",
        "queue-kafka-session-restart.toml",
    ),
    (
        "queue-outbox-relay-inbox.toml",
        "queue-outbox-relay-no-inbox.toml",
    ),
    (
        "queue-window-plus-inbox.toml",
        "queue-window-expired-no-inbox.toml",
    ),
];

fn queue_models() -> Vec<ModelFile> {
    let folder = Path::new(env!("CARGO_MANIFEST_DIR")).join("models");
    spec::model_files(&folder)
        .expect("models/ lists")
        .into_iter()
        .filter(|file| {
            file.file_name()
                .is_some_and(|name| name.to_string_lossy().starts_with("queue-"))
        })
        .map(|file| spec::load_model(&file).unwrap_or_else(|e| panic!("{}: {e}", file.display())))
        .collect()
}

fn file_name(model: &ModelFile) -> String {
    Path::new(&model.path)
        .file_name()
        .expect("a model file")
        .to_string_lossy()
        .into_owned()
}

/// Bound on a healed continuation (the models' runs end in a few dozen steps).
const HEAL_STEPS_MAX: usize = 200;

/// `path` continued without faults to a state where only faults are enabled: each next action is the first
/// enabled one that is not a fault (the model's fixed order), so the run's outcome is final (the holding models
/// resolve every event). Among deliveries, the broker's order: a stream hands out its messages in sequence, so
/// the original before a republished copy (the model may deliver either first).
fn healed(world: &World, path: &[Action]) -> Vec<Action> {
    let mut state = world.init_state();
    for action in path {
        world.apply(&mut state, action);
    }
    let mut actions = path.to_vec();
    let mut enabled = Vec::new();
    for _ in 0..HEAL_STEPS_MAX {
        world.actions(&state, &mut enabled);
        let Some(mut next) = enabled
            .iter()
            .find(|action| !world.is_fault(&state, action))
            .copied()
        else {
            return actions;
        };
        if let Action::DeliverRequest { .. } = next {
            next = *enabled
                .iter()
                .filter(|action| matches!(action, Action::DeliverRequest { .. }))
                .min_by_key(|action| match action {
                    Action::DeliverRequest { request, .. } => request.copy,
                    _ => unreachable!(),
                })
                .expect("a delivery is enabled");
        }
        world.apply(&mut state, &next);
        actions.push(next);
    }
    panic!("no rest within {HEAL_STEPS_MAX} steps")
}

/// One trace to drive: the property it violates, or the scenario it reaches.
struct Trace {
    model: String,
    what: String,
    verdict: Verdict,
    actions: Vec<Action>,
}

/// The traces of every queue model, found by the checker in-process.
fn traces(models: &[ModelFile]) -> Vec<(Trace, World)> {
    let mut traces = Vec::new();
    for model in models {
        let report = model.world.checker().states_max(SEARCH_STATES_MAX).bfs();
        let violated: Vec<WorldProperty> = model
            .expected
            .iter()
            .filter(|(_, verdict)| **verdict == Verdict::Violated)
            .map(|(property, _)| *property)
            .collect();
        for property in &violated {
            let actions = report.counterexample(property.name()).unwrap_or_else(|| {
                panic!("{}: no counterexample of {}", model.path, property.name())
            });
            traces.push((
                Trace {
                    model: file_name(model),
                    what: property.name().to_string(),
                    verdict: Verdict::Violated,
                    actions: actions.to_vec(),
                },
                model.world.clone(),
            ));
        }
        if violated.is_empty() {
            assert!(
                !model.reached.is_empty(),
                "{}: a holding model lists what it reaches",
                model.path
            );
            for scenario in &model.reached {
                let actions = report.example(scenario.scenario_name()).unwrap_or_else(|| {
                    panic!("{}: {} not reached", model.path, scenario.scenario_name())
                });
                traces.push((
                    Trace {
                        model: file_name(model),
                        what: format!("reached {}, healed", scenario.scenario_name()),
                        verdict: Verdict::Holds,
                        actions: healed(&model.world, actions),
                    },
                    model.world.clone(),
                ));
            }
        }
    }
    traces
}

fn violating(outcome: EventOutcome) -> bool {
    matches!(outcome, EventOutcome::Duplicated | EventOutcome::Lost)
}

/// Drive every trace on stores `backend_for` makes (one fresh database per trace); the runs by trace.
fn drive_all<B: Backend>(
    broker: &Broker,
    traces: &[(Trace, World)],
    store_name: &str,
    mut backend_for: impl FnMut(usize) -> B,
) -> Vec<QueueRun> {
    let mut runs = Vec::new();
    for (index, (trace, world)) in traces.iter().enumerate() {
        let queue_world = world.queue().expect("a queue model");
        let backend = backend_for(index);
        let started = std::time::Instant::now();
        let run = drive::drive(
            queue_world,
            &backend,
            broker,
            &format!("Q{index}"),
            &trace.actions,
            Timing::default(),
        )
        .unwrap_or_else(|error| panic!("{} {} on {store_name}: {error}", trace.model, trace.what));
        println!(
            "{} {} on {store_name}: {} steps, window {:?}, {:.1} s: real {}, model {}",
            trace.model,
            trace.what,
            trace.actions.len(),
            run.window,
            started.elapsed().as_secs_f64(),
            run.real.name(),
            run.model.name()
        );
        for line in &run.log {
            println!("    {line}");
        }
        runs.push(run);
    }
    runs
}

/// The checks every store's runs must pass, and the table of outcomes.
fn judge(traces: &[(Trace, World)], runs: &[QueueRun], store_name: &str) {
    let mut by_model: BTreeMap<&str, Vec<EventOutcome>> = BTreeMap::new();
    println!("| model | trace | verdict | model outcome | real outcome ({store_name}) |");
    println!("|---|---|---|---|---|");
    for ((trace, _), run) in traces.iter().zip(runs) {
        println!(
            "| {} | {} | {} | {} | {} |",
            trace.model,
            trace.what,
            trace.verdict.name(),
            run.model.name(),
            run.real.name()
        );
        assert_eq!(
            run.real, run.model,
            "{} {}: real and model outcomes",
            trace.model, trace.what
        );
        match (trace.verdict, trace.what.as_str()) {
            (Verdict::Violated, "no-duplicate-effect") => {
                assert_eq!(run.real, EventOutcome::Duplicated, "{}", trace.model)
            }
            (Verdict::Violated, "no-lost-effect") => {
                assert_eq!(run.real, EventOutcome::Lost, "{}", trace.model)
            }
            (Verdict::Violated, other) => panic!("{}: no real outcome for {other}", trace.model),
            _ => {
                assert!(
                    !violating(run.real),
                    "{} {}: {:?}",
                    trace.model,
                    trace.what,
                    run.real
                );
                // Healed: the event took effect, once, for real.
                assert_eq!(
                    run.effects_per_step.last(),
                    Some(&1),
                    "{} {}",
                    trace.model,
                    trace.what
                );
            }
        }
        by_model.entry(&trace.model).or_default().push(run.real);
    }
    for (holds, twin) in TWINS {
        let holding = &by_model[holds];
        // Evidence that the holding model's danger was presented to the real consumer and absorbed.
        assert!(
            holding.contains(&EventOutcome::Absorbed),
            "{holds}: nothing absorbed for real"
        );
        assert!(
            holding.iter().all(|outcome| !violating(*outcome)),
            "{holds}"
        );
        assert!(
            by_model[twin].iter().any(|outcome| violating(*outcome)),
            "{twin}: the broken twin of {holds} is not caught for real"
        );
    }
}

#[test]
fn every_queue_model_reproduces_on_nats_and_sqlite() {
    let _one_at_a_time = one_at_a_time();
    let Some(nats) = TempNats::start() else {
        return;
    };
    let broker = Broker::connect(&nats.url()).expect("a client connects");
    let models = queue_models();
    assert_eq!(models.len(), 13, "the catalogue's queue models");
    let traces = traces(&models);
    let folder = tempfile::tempdir().unwrap();
    let runs = drive_all(&broker, &traces, "sqlite", |index| {
        SqliteBackend::create(&folder.path().join(format!("queue-{index}.db"))).unwrap()
    });
    judge(&traces, &runs, "sqlite");
}

#[test]
fn every_queue_model_reproduces_on_nats_and_postgres() {
    let _one_at_a_time = one_at_a_time();
    let Some(nats) = TempNats::start() else {
        return;
    };
    let Some(postgres) = TempPostgres::start() else {
        return;
    };
    let broker = Broker::connect(&nats.url()).expect("a client connects");
    let traces = traces(&queue_models());
    let mut admin = postgres::Client::connect(&postgres.params(), postgres::NoTls).unwrap();
    let runs = drive_all(&broker, &traces, "postgres", |index| {
        admin
            .batch_execute(&format!("CREATE DATABASE queue_{index}"))
            .unwrap();
        let params = format!(
            "host=127.0.0.1 port={} user=postgres dbname=queue_{index}",
            postgres.port
        );
        PostgresBackend::create(&params).unwrap()
    });
    judge(&traces, &runs, "postgres");
}

/// The dedup-window experiment's question on the real broker, a small grid: no dedup duplicates every copy, the
/// window stops a copy inside it and not one after it, the inbox in the effect's transaction never duplicates
/// (through crashes and lost acks too), and every cell agrees with the simulation at the same settings.
#[test]
fn the_dedup_window_grid_on_nats_agrees_with_the_simulation() {
    let _one_at_a_time = one_at_a_time();
    let Some(nats) = TempNats::start() else {
        return;
    };
    // A 2 s window and copies at 0.2 or 3 windows: a copy inside is due at most 0.6 s after its original, so it
    // takes a 1.4 s delay (the cell's one thread held up in a commit, say) to push it out. With a 1 s window and
    // 0.3, 0.55 s was enough, and a full run once saw a copy forwarded.
    let config = RealConfig {
        window: std::time::Duration::from_secs(2),
        ratios: vec![0.2, 3.0],
        places: vec![
            Place::None,
            Place::BrokerWindow,
            Place::InboxSameTransaction,
        ],
        events_per_cell: 24,
        crash_probability: 0.1,
        ack_loss_probability: 0.1,
        ..RealConfig::default()
    };
    let folder = tempfile::tempdir().unwrap();
    let real = window::run_grid(&nats.url(), folder.path(), &config)
        .unwrap_or_else(|e| panic!("the grid runs: {e}\nnats-server's log:\n{}", nats.log()));
    let rows = window::compare(&config, &real, &window::simulated(&config, 2000));
    let cell = |place: Place, ratio: f64| {
        real.iter()
            .find(|cell| cell.place == place && cell.ratio == ratio)
            .expect("a cell")
    };
    for ratio in [0.2, 3.0] {
        assert_eq!(cell(Place::None, ratio).duplicates, config.events_per_cell);
        assert_eq!(cell(Place::InboxSameTransaction, ratio).duplicates, 0);
        assert_eq!(
            cell(Place::InboxSameTransaction, ratio).copies_forwarded,
            config.events_per_cell
        );
    }
    // Inside the window the broker stores no copy; after it, every one. Inside is measured, not drawn: a copy
    // counts when its publish was answered within the window from its original's (a stalled machine can push a
    // copy drawn inside past it; CI once stalled a broker call for over 5 s). Most must be inside, or the cell
    // tells nothing.
    let early = cell(Place::BrokerWindow, 0.2);
    assert!(
        early.copies_inside_window * 2 >= config.events_per_cell,
        "{early:?}"
    );
    assert!(
        early.copies_forwarded <= config.events_per_cell - early.copies_inside_window,
        "a copy inside the window was stored: {early:?}"
    );
    assert_eq!(cell(Place::BrokerWindow, 3.0).copies_inside_window, 0);
    assert_eq!(
        cell(Place::BrokerWindow, 3.0).copies_forwarded,
        config.events_per_cell
    );
    assert_eq!(
        cell(Place::BrokerWindow, 3.0).duplicates,
        config.events_per_cell
    );
    // The simulation draws no stall: a cell whose early copies were not all inside is not its twin.
    let stalled = early.copies_inside_window < config.events_per_cell;
    for row in &rows {
        if stalled && row.place == Place::BrokerWindow.name() && row.delay_over_window < 1.0 {
            eprintln!("not compared (copies pushed out of the window by a stall): {row:?}");
            continue;
        }
        assert!(row.agrees, "{row:?}");
    }
}

/// Beyond the catalogue: the outbox relay sets `Nats-Msg-Id`, so a relay that restarts inside the stream's window
/// is deduplicated by JetStream even without an inbox (the model agrees: with no other fault, no-duplicate-effect
/// holds), and one that restarts after it duplicates. Both checked by the model first, then driven for real.
#[test]
fn an_outbox_relay_restarting_inside_the_window_is_absorbed_by_the_broker() {
    let _one_at_a_time = one_at_a_time();
    let Some(nats) = TempNats::start() else {
        return;
    };
    let broker = Broker::connect(&nats.url()).expect("a client connects");
    let model = queue_models()
        .into_iter()
        .find(|model| file_name(model) == "queue-outbox-relay-no-inbox.toml")
        .expect("the shipped model");
    let mut config = model
        .world
        .queue()
        .expect("a queue model")
        .server()
        .config();
    config.producer_dedup = ProducerDedup::Window;
    // Only the relay's republish: a lost ack would be a redelivery, which no producer dedup sees.
    let mut faults = model.world.faults();
    faults.drop_responses = 0;
    let inside = model
        .world
        .to_builder()
        .queue(config)
        .faults(faults)
        .build()
        .unwrap();
    let report = inside.checker().states_max(SEARCH_STATES_MAX).bfs();
    assert_eq!(
        report.verdict(WorldProperty::NoDuplicateEffect.name()),
        Verdict::Holds
    );
    let example = healed(
        &inside,
        report.example("producer-deduplicated").expect("reached"),
    );
    let folder = tempfile::tempdir().unwrap();
    let backend = SqliteBackend::create(&folder.path().join("inside.db")).unwrap();
    let world = inside.queue().unwrap();
    let run = drive::drive(
        world,
        &backend,
        &broker,
        "INSIDE",
        &example,
        Timing::default(),
    )
    .unwrap();
    assert_eq!(
        (run.real, run.model),
        (EventOutcome::Absorbed, EventOutcome::Absorbed)
    );
    assert_eq!(run.effects_per_step.last(), Some(&1));
    // The same relay restarting after the window.
    let mut faults = inside.faults();
    faults.window_expiries = 1;
    let after = inside.to_builder().faults(faults).build().unwrap();
    let report = after.checker().states_max(SEARCH_STATES_MAX).bfs();
    let actions = report
        .counterexample(WorldProperty::NoDuplicateEffect.name())
        .expect("a republish after the window duplicates");
    let backend = SqliteBackend::create(&folder.path().join("after.db")).unwrap();
    let world = after.queue().unwrap();
    let run = drive::drive(
        world,
        &backend,
        &broker,
        "AFTER",
        actions,
        Timing::default(),
    )
    .unwrap();
    for line in &run.log {
        println!("    {line}");
    }
    assert_eq!(
        (run.real, run.model),
        (EventOutcome::Duplicated, EventOutcome::Duplicated)
    );
}

/// The production path, no model: producers commit outbox rows, the relay publishes them (crashing once after a
/// publish), the restarted relay publishes the unsent row again, and a consumer loop with the inbox in the
/// effect's transaction takes each event once and absorbs the copy.
#[test]
fn outbox_relay_and_consumer_loop_take_each_event_once() {
    let _one_at_a_time = one_at_a_time();
    let Some(nats) = TempNats::start() else {
        return;
    };
    let broker = Broker::connect(&nats.url()).expect("a client connects");
    let options = QueueOptions {
        duplicate_window: std::time::Duration::from_millis(100),
        ack_wait: std::time::Duration::from_millis(500),
        max_deliver: 3,
    };
    let mut queue = broker.queue("PROD", options).unwrap();
    let folder = tempfile::tempdir().unwrap();
    let path = folder.path().join("prod.db");
    SqliteStore::create(&path).unwrap();
    let connect = || SqliteStore::open(&path, Clock::default());
    let mut producer = connect().unwrap();
    for event in ["order-1", "order-2", "order-3"] {
        assert!(relay::enqueue(&mut producer, event, "{}").unwrap());
    }
    let crashed =
        relay::relay_once(&mut producer, &mut queue, Failpoint::CrashAfterPublish).unwrap();
    assert!(crashed.crashed && crashed.published.len() == 1);
    // The restarted relay, after the 100 ms window: all three rows are unsent, order-1 among them again.
    std::thread::sleep(std::time::Duration::from_millis(300));
    let restarted =
        relay::relay_once(&mut connect().unwrap(), &mut queue, Failpoint::None).unwrap();
    assert_eq!(restarted.published.len(), 3);
    assert!(restarted
        .published
        .iter()
        .all(|(_, published)| !published.duplicate));
    assert!(
        relay::relay_once(&mut connect().unwrap(), &mut queue, Failpoint::None)
            .unwrap()
            .published
            .is_empty()
    );
    let design = ConsumerDesign {
        inbox: Inbox::SameTransaction,
        dedup_key: DedupKey::EventId,
        provider: Provider::None,
    };
    let replies = consume(
        &queue,
        design,
        connect,
        std::time::Duration::from_millis(300),
    )
    .unwrap();
    let statuses: Vec<u16> = replies.iter().map(|reply| reply.status).collect();
    assert_eq!(
        statuses,
        [201, 200, 201, 201],
        "order-1, its copy, order-2, order-3"
    );
    let mut effects = connect().unwrap().effects(EFFECTS).unwrap();
    effects.sort();
    assert_eq!(effects, ["order-1", "order-2", "order-3"]);
}

/// The lockstep comparison bites: the holding model's inbox-conflict trace, driven with a real consumer whose
/// inbox row comes after the effect, parts from the model at the step where the two designs first differ.
#[test]
fn a_real_consumer_unlike_the_model_is_caught() {
    let _one_at_a_time = one_at_a_time();
    let Some(nats) = TempNats::start() else {
        return;
    };
    let broker = Broker::connect(&nats.url()).expect("a client connects");
    let model = queue_models()
        .into_iter()
        .find(|model| file_name(model) == "queue-inbox-same-transaction.toml")
        .expect("the shipped model");
    let world = model.world.queue().expect("a queue model");
    let report = model.world.checker().states_max(SEARCH_STATES_MAX).bfs();
    let actions = report.example("inbox-conflict").expect("reached");
    let mut design = drive::design_of(world);
    design.inbox = Inbox::AfterEffect;
    let folder = tempfile::tempdir().unwrap();
    let backend = SqliteBackend::create(&folder.path().join("unlike.db")).unwrap();
    let error = drive::drive_with(
        world,
        design,
        &backend,
        &broker,
        "UNLIKE",
        actions,
        Timing::default(),
    )
    .expect_err("the real consumer differs from the model's");
    println!("{error}");
    // Caught in lockstep (after the effect's commit the real consumer still owes its inbox row), not at the end.
    assert!(
        error.starts_with("step ") && error.contains("model"),
        "{error}"
    );
    // The same trace with the model's own design agrees.
    let backend = SqliteBackend::create(&folder.path().join("like.db")).unwrap();
    let run = drive::drive(world, &backend, &broker, "LIKE", actions, Timing::default()).unwrap();
    assert_eq!(run.real, run.model);
}

#[test]
fn the_emulated_models_are_the_session_ones_and_the_book_lists_them() {
    let session: Vec<String> = queue_models()
        .iter()
        .filter(|model| {
            let queue = model.world.queue().expect("a queue model");
            queue.server().config().producer_dedup == ProducerDedup::Session
                && model.world.faults().republishes > 0
        })
        .map(file_name)
        .collect();
    let listed: Vec<String> = EMULATED.iter().map(|(name, _)| name.to_string()).collect();
    assert_eq!(
        listed, session,
        "the models whose broker dedup JetStream emulates"
    );
    let chapter = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/src/experiments.md"),
    )
    .unwrap();
    let section = chapter
        .split("## Queues on a real broker")
        .nth(1)
        .expect("docs/src/experiments.md has a section \"Queues on a real broker\"");
    for (name, _) in EMULATED {
        assert!(
            section.contains(name),
            "docs/src/experiments.md's queue section lists {name}"
        );
    }
    // Every holding queue model has its twin in the table, and every twin is a violated model.
    let models = queue_models();
    for model in &models {
        let holds = model
            .expected
            .values()
            .all(|verdict| *verdict == Verdict::Holds);
        let name = file_name(model);
        assert_eq!(
            holds,
            TWINS.iter().any(|(holding, _)| *holding == name),
            "{name}: a holding model has a twin listed, and only those"
        );
    }
}
