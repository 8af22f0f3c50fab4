//! The handler catalogue (`examples/handlers`): every design gets the verdicts it declares, and every
//! counterexample the checker finds is driven in lockstep against real SQLite and real PostgreSQL with the same
//! handler code: the same effect rows and provider charges after every step, the same replies, the same
//! duplicate at the same step. Background workers (the completer designs) run on their own connections.

use super::super as handlers;
#[cfg(feature = "cli")]
use super::explore_support;

use handlers::Visit;
use retrylab::check::{Model, Verdict};
use retrylab::handler::{Handler, HandlerWorld, Worker};
use retrylab::runner::lockstep::{drive, Backend, Lockstep, PostgresBackend, SqliteBackend};
use retrylab::servers::postgres::TempPostgres;

struct Replay {
    postgres: Option<TempPostgres>,
    driven: Vec<String>,
}

impl Replay {
    fn on<H: Handler, W: Worker, B: Backend>(
        &self,
        name: &str,
        world: &HandlerWorld<H, W>,
        backend: &B,
        path: &[retrylab::handler::world::HandlerAction],
    ) -> Lockstep {
        drive(world, backend, path).unwrap_or_else(|error| panic!("{name}: {error}"))
    }
}

impl Visit for Replay {
    fn design<H: Handler + Send + 'static, W: Worker + Send + 'static>(
        &mut self,
        name: &str,
        world: HandlerWorld<H, W>,
        declared: &[(&str, Verdict)],
        reached: &[&str],
    ) {
        let report = world.checker().bfs();
        let comparison = report.compare(&handlers::expected(declared, reached));
        assert!(comparison.matches, "{name}: {comparison:?}");
        for (property, path) in report.counterexamples() {
            let folder = tempfile::tempdir().unwrap();
            let sqlite = SqliteBackend::create(&folder.path().join("replay.db")).unwrap();
            let on_sqlite = self.on(name, &world, &sqlite, path);
            if property.name == "no-duplicate-effect" {
                assert_eq!(
                    on_sqlite.model_duplicate_at,
                    Some(path.len()),
                    "{name}: the duplicate at the model's last step"
                );
                // ... and for real: the last step added an effect row, a provider charge or an external call.
                let grew = |per_step: &[usize]| {
                    per_step[per_step.len() - 1] > per_step[per_step.len() - 2]
                };
                assert!(
                    grew(&on_sqlite.effects_per_step)
                        || grew(&on_sqlite.charges_per_step)
                        || grew(&on_sqlite.calls_per_step),
                    "{name}: {on_sqlite:?}"
                );
            }
            if let Some(server) = &self.postgres {
                // A fresh database per trace: the catalogue's tables are dropped and made again.
                let params = server.params();
                let mut client = postgres::Client::connect(&params, postgres::NoTls).unwrap();
                client
                    .batch_execute("DROP TABLE IF EXISTS handler_rows, handler_effects, handler_kv, handler_charges, handler_calls")
                    .unwrap();
                let backend = PostgresBackend::create(&params).unwrap();
                assert_eq!(
                    self.on(name, &world, &backend, path),
                    on_sqlite,
                    "{name}: PostgreSQL as SQLite"
                );
            }
            self.driven.push(format!("{name} {}", property.name));
        }
    }
}

#[test]
fn every_design_as_declared_and_every_counterexample_the_same_on_sqlite_and_postgres() {
    let mut replay = Replay {
        postgres: TempPostgres::start(),
        driven: Vec::new(),
    };
    handlers::catalogue(&mut replay);
    println!("driven: {:#?}", replay.driven);
    let duplicates = replay
        .driven
        .iter()
        .filter(|name| name.ends_with(" no-duplicate-effect"))
        .count();
    assert!(
        duplicates >= 8,
        "the catalogue's broken designs: {:#?}",
        replay.driven
    );
    // A trace with a background worker's steps in it, on both databases.
    assert!(replay
        .driven
        .contains(&"completer-without-derived-key no-duplicate-effect".to_string()));
    // Traces with a call made and its answer lost (a provider capture, a commit), on both databases.
    for name in [
        "medusa-16292-capture-fresh-key",
        "stroppy-167-commit-retried",
    ] {
        let driven = format!("{name} no-duplicate-effect");
        assert!(replay.driven.contains(&driven), "{:#?}", replay.driven);
    }
}

/// The shortest double capture of medusa #16292 reads as the bug report: the capture is made under the first
/// fresh key, its answer is lost, the row is deleted and the retry captures again under a second key. With the
/// capture only ever not made (no lost answer) the same code holds: the lost answer is the bug's cause.
#[test]
fn medusa_capture_is_made_its_answer_lost_and_captured_again_under_a_fresh_key() {
    use retrylab::handler::CallFault;
    let world = || {
        HandlerWorld::new(
            handlers::medusa_16292::FreshCaptureKey,
            1,
            "{\"amount\":500}",
        )
    };
    let lost = world().call_faults([CallFault::answer_lost("capture", 1)]);
    let report = lost.checker().bfs();
    let path = report.counterexample("no-duplicate-effect").expect("found");
    let run = retrylab::check::timeline(&lost, path).expect("a found path replays");
    let text: Vec<String> = run.steps.into_iter().map(|step| step.text).collect();
    let at = |needle: &str| text.iter().position(|line| line.contains(needle));
    let made = at("capture {\"amount\":500} with key capt_1: made, its ANSWER IS LOST");
    let deleted = at("delete captures[capt_1]");
    let again = at("capture {\"amount\":500} with key capt_2   <-- DUPLICATE EFFECT");
    assert!(
        made.is_some() && deleted.is_some() && again.is_some(),
        "{text:#?}"
    );
    assert!(made < deleted && deleted < again, "{text:#?}");
    assert_eq!(
        again,
        Some(text.len() - 1),
        "the duplicate is the last step"
    );
    // Not made, however often: a fresh key is harmless when the first capture never happened.
    let not_made = world().call_faults([CallFault::not_made("capture", 2)]);
    let report = not_made.checker().bfs();
    assert_eq!(report.verdict("no-duplicate-effect"), Verdict::Holds);
    assert!(report.reached("handler-error"), "the failure was reached");
}

/// A handler design walked by hand in the explorer's server (`--example handlers -- --explore DESIGN ADDR`): the
/// handler world's actions are not serialisable, the page names them by index. Select-then-insert's shortest
/// duplicate, taken choice by choice as the page takes it, breaks no-duplicate-effect at its last step and not
/// before; a choice past the enabled ones is refused.
#[cfg(feature = "cli")]
#[test]
fn a_handler_design_is_walked_by_hand_in_the_explorer() {
    use retrylab::report::explore_server::{choices_of, Explorer};
    use serde_json::json;

    struct ServeOne(Option<(String, Vec<usize>)>);

    impl Visit for ServeOne {
        fn design<H: Handler + Send + 'static, W: Worker + Send + 'static>(
            &mut self,
            name: &str,
            world: HandlerWorld<H, W>,
            _: &[(&str, Verdict)],
            _: &[&str],
        ) {
            if name != "select-then-insert" {
                return;
            }
            let report = world.checker().bfs();
            let path = report.counterexample("no-duplicate-effect").expect("found");
            let choices = choices_of(&world, path).expect("a found path runs");
            let host = explore_support::start(Explorer::new(world, name, ""));
            self.0 = Some((host, choices));
        }
    }

    let mut serve = ServeOne(None);
    handlers::catalogue(&mut serve);
    let (host, choices) = serve.0.expect("the catalogue has select-then-insert");
    // Served without a trace store: the page hides its save and open controls.
    let (_, page) = explore_support::request(&host, "GET", "/", &json!(null));
    assert!(page.contains("<div id=\"traces\" hidden>"), "{page}");
    let violated = explore_support::violated_per_step(&host, &choices);
    assert_eq!(violated.len(), choices.len());
    let (last, before) = violated.split_last().unwrap();
    assert_eq!(last, &json!(["no-duplicate-effect"]));
    assert!(before.iter().all(|step| step == &json!([])), "{violated:?}");
    let mut past = choices.clone();
    past.push(usize::MAX >> 1);
    let (status, text) =
        explore_support::request(&host, "POST", "/api/path", &json!({ "actions": past }));
    assert_eq!(status, 400);
    let expected = format!("step {} is not enabled", past.len());
    assert!(text.contains(&expected), "{text}");
}
