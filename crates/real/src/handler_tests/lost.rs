//! Named call faults: a call made whose answer is lost took effect (a commit is durable, a webhook was sent), a
//! call not made did not; each fault fires only on the calls it names and within its own budget; a lost answer
//! is never offered for a statement inside an open transaction; the handler sees the same error either way.

use crate::builtin::Events;
use crate::check::{Model, Verdict};
use crate::handler::lost::CallFault;
use crate::handler::world::{HandlerAction, HandlerState, Message, Op};
use crate::handler::*;

const BODY: &str = "{\"amount\":500}";

/// Sends a webhook for the operation; on an error, sends it once more. `keyed`: with the request's key as the
/// receiver's deduplication key (an event id), else without one.
struct Webhook {
    keyed: bool,
}

impl Handler for Webhook {
    async fn handle<S: Store>(&self, db: &mut S, request: &Request) -> Reply {
        let key = self
            .keyed
            .then(|| format!("{}/{}", request.client, request.key));
        for _ in 0..2 {
            if let Ok(id) = db
                .external_call("webhook", key.as_deref(), &request.body)
                .await
            {
                return Reply::new(201, format!("{{\"webhook\":\"{id}\"}}"));
            }
        }
        Reply::new(500, "{}")
    }
}

/// Pays in one transaction; a store error is a 500.
struct PayInOneTransaction;

impl Handler for PayInOneTransaction {
    async fn handle<S: Store>(&self, db: &mut S, request: &Request) -> Reply {
        let pay = async {
            db.begin().await?;
            let id = db.insert_effect("payments", &request.body).await?;
            db.commit().await?;
            Ok::<_, StoreError>(Reply::new(201, format!("{{\"payment\":{id}}}")))
        };
        pay.await.unwrap_or_else(|_| Reply::new(500, "{}"))
    }
}

#[test]
fn a_webhook_sent_whose_answer_is_lost_is_sent_twice_without_a_key_and_once_with_one() {
    let world = |keyed: bool| {
        HandlerWorld::new(Webhook { keyed }, 1, BODY)
            .call_faults([CallFault::answer_lost("webhook", 1)])
    };
    let keyless = world(false).checker().bfs();
    assert_eq!(keyless.verdict("no-duplicate-effect"), Verdict::Violated);
    let keyed = world(true).checker().bfs();
    assert_eq!(keyed.verdict("no-duplicate-effect"), Verdict::Holds);
    assert_eq!(keyed.verdict("eventually-resolves"), Verdict::Holds);
    // The twin met the danger: the answer was lost and the receiver was called again.
    assert!(keyed.reached("answer-lost") && keyed.reached("provider-retried"));
}

#[test]
fn a_call_not_made_is_harmless_to_retry_with_no_key_at_all() {
    let world = HandlerWorld::new(Webhook { keyed: false }, 1, BODY)
        .call_faults([CallFault::not_made("webhook", 2)]);
    let report = world.checker().bfs();
    assert_eq!(report.verdict("no-duplicate-effect"), Verdict::Holds);
    assert!(report.reached("handler-error"));
    // Twice not made: both tries failed, the client retries and the next attempt sends it.
    assert_eq!(report.verdict("eventually-resolves"), Verdict::Holds);
}

#[test]
fn a_fault_fires_only_on_the_calls_it_names() {
    let plain = HandlerWorld::new(Webhook { keyed: false }, 1, BODY)
        .checker()
        .bfs();
    let refund = HandlerWorld::new(Webhook { keyed: false }, 1, BODY)
        .call_faults([CallFault::answer_lost("refund", 1)])
        .checker()
        .bfs();
    assert_eq!(refund.states, plain.states);
    assert!(!refund.reached("answer-lost"));
    assert_eq!(refund.verdict("no-duplicate-effect"), Verdict::Holds);
}

/// Call faults are named in timelines and budget panels as the call, then how it fails.
#[test]
fn a_call_fault_is_named_by_its_call_and_its_failure() {
    assert_eq!(
        CallFault::answer_lost("capture", 1).name(),
        "capture answer-lost"
    );
    assert_eq!(CallFault::not_made("COMMIT", 2).name(), "COMMIT not-made");
}

/// The world's state with process 1 about to commit its payment.
fn before_commit<W: Worker>(world: &HandlerWorld<PayInOneTransaction, W>) -> HandlerState {
    let mut state = world.init_state();
    apply(world, &mut state, HandlerAction::Send { client: 0 });
    let message = Message::Request {
        from: Op { client: 0, op: 0 },
        attempt: 1,
    };
    apply(
        world,
        &mut state,
        HandlerAction::DeliverRequest { message, proc: 0 },
    );
    let step = world.step_action(&state, 0).expect("P1 is busy");
    apply(world, &mut state, step); // BEGIN
    let mut enabled = Vec::new();
    world.actions(&state, &mut enabled);
    let lost = |action: &HandlerAction| matches!(action, HandlerAction::CallFault { .. });
    assert!(
        !enabled.iter().any(lost),
        "a statement inside an open transaction never loses its answer alone: {enabled:?}"
    );
    let step = world.step_action(&state, 0).expect("P1 is busy");
    apply(world, &mut state, step); // insert-effect
    state
}

#[test]
fn a_commit_whose_answer_is_lost_is_durable_and_one_not_made_is_not() {
    let world = |fault: CallFault| {
        HandlerWorld::new(PayInOneTransaction, 1, BODY)
            .call_faults([CallFault::answer_lost("insert-effect", 1), fault])
    };
    let fault = HandlerAction::CallFault { proc: 0, fault: 1 };
    let mut outcomes = Vec::new();
    for commit in [
        CallFault::answer_lost("commit", 1),
        CallFault::not_made("COMMIT", 1),
    ] {
        let world = world(commit);
        let mut state = before_commit(&world);
        let before = state.clone();
        let events = world.apply(&mut state, &fault);
        let line = world.describe_step(&before, &fault, &state, Events::default());
        let job = state.procs[0].as_ref().expect("still running");
        // Either way the handler was told the same thing and answers 500; the write lock is free.
        assert_eq!(job.next(), &Next::Reply(Reply::new(500, "{}")));
        assert!(job.txn.is_none() && state.store.writer.is_none());
        assert_eq!(state.call_budgets, [1, 0, 0, 0]);
        outcomes.push((state.store.effects.len(), events, line));
    }
    let (lost, not_made) = (&outcomes[0], &outcomes[1]);
    assert_eq!(lost.0, 1, "the lost answer's commit took effect");
    assert_eq!(not_made.0, 0, "the commit not made did not");
    assert!(lost.1.has(crate::builtin::Event::AnswerLost));
    assert!(not_made.1.has(crate::builtin::Event::HandlerError));
    assert_eq!(
        lost.2,
        "P1 COMMIT: made, its ANSWER IS LOST (the handler gets an error)"
    );
    assert_eq!(not_made.2, "P1 COMMIT: FAILS, not made");
}

/// Apply `action`, which must be enabled.
fn apply<M: Model>(model: &M, state: &mut M::State, action: M::Action) {
    let mut enabled = Vec::new();
    model.actions(state, &mut enabled);
    assert!(enabled.contains(&action), "{action:?} not in {enabled:?}");
    model.apply(state, &action);
}

#[test]
#[should_panic(expected = "at most 4 call faults")]
fn more_call_faults_than_the_state_keeps_are_refused() {
    let _ = HandlerWorld::new(PayInOneTransaction, 1, BODY)
        .call_faults((0..5).map(|_| CallFault::not_made("COMMIT", 1)));
}

/// Makes named calls in a fixed order and answers their ids, comma-separated.
struct NamedCalls;

const NAMED: [(&str, Option<&str>); 5] = [
    ("capture", Some("k1")),
    ("capture", Some("k1")),
    ("capture", None),
    ("webhook", Some("k1")),
    ("capture", Some("k2")),
];

impl Handler for NamedCalls {
    async fn handle<S: Store>(&self, db: &mut S, _request: &Request) -> Reply {
        let mut ids = Vec::new();
        for (call, key) in NAMED {
            ids.push(db.external_call(call, key, "{}").await.unwrap_or_default());
        }
        Reply::new(201, ids.join(","))
    }
}

/// The simulated store, SQLite and the in-memory store number a service's calls alike (a lockstep run compares
/// replies that carry these ids), and a repeat of a (name, key) is answered with its first call.
#[test]
fn every_store_numbers_named_calls_per_name_and_answers_a_repeated_key_with_the_first() {
    use crate::real::{MemoryStore, StdLock, Tables};
    let expected = "capture_1,capture_1,capture_2,webhook_1,capture_3";
    let mut committed = crate::handler::sim::Committed::default();
    let simulated: Vec<String> = NAMED
        .iter()
        .map(|(call, key)| {
            let call = Call::External {
                call: call.to_string(),
                idempotency_key: key.map(str::to_string),
                body: "{}".to_string(),
            };
            match committed.execute(0, 0, &call, &mut None) {
                Answer::Text(id) => id,
                other => panic!("{other:?}"),
            }
        })
        .collect();
    assert_eq!(simulated.join(","), expected);
    assert_eq!(committed.calls.len(), 4);
    let request = Request::new("c0", "k0", BODY);
    let folder = tempfile::tempdir().unwrap();
    let path = folder.path().join("calls.db");
    crate::stores::sqlite::SqliteStore::create(&path).unwrap();
    let mut sqlite = crate::stores::sqlite::SqliteStore::open(&path, Clock::default()).unwrap();
    let reply = crate::runner::run_to_reply(&NamedCalls, &mut sqlite, &request);
    assert_eq!(reply.body, expected);
    assert_eq!(sqlite.calls_total().unwrap(), 4);
    let memory = std::sync::Arc::new(MemoryStore::<StdLock<Tables>>::new(Clock::default()));
    let reply = crate::runner::run_to_reply(&NamedCalls, &mut memory.connect(), &request);
    assert_eq!(reply.body, expected);
    assert_eq!(memory.snapshot().calls.len(), 4);
}
