//! The handler machinery on its own: a handler run call by call against the simulated store gives what running it
//! straight through would; a crash loses the open transaction; a handler that is not deterministic is caught.

use crate::handler::sim::{Committed, Txn};
use crate::handler::*;
use std::sync::atomic::{AtomicU64, Ordering};

/// The article's design in miniature: claim the key in its own transaction, then the effect and the completion
/// in a second one.
struct Article;

impl Handler for Article {
    async fn handle<S: Store>(&self, store: &mut S, request: &Request) -> Reply {
        let key = format!("{}/{}", request.client, request.key);
        let claimed = async {
            store.begin().await?;
            let claimed = store.insert_if_absent("keys", &key, "in_progress").await?;
            let row = store.get("keys", &key).await?;
            store.commit().await?;
            Ok::<_, StoreError>((claimed, row))
        };
        let (claimed, row) = match claimed.await {
            Ok(found) => found,
            Err(_) => return Reply::new(500, "{}"),
        };
        if !claimed {
            return match row.as_deref() {
                Some("in_progress") | None => Reply::new(409, "{}"),
                Some(done) => Reply::new(200, done),
            };
        }
        let effect = async {
            store.begin().await?;
            let id = store.insert_effect("payments", &request.body).await?;
            let done = format!("{{\"payment\":{id}}}");
            store.update("keys", &key, &done, None).await?;
            store.commit().await?;
            Ok::<_, StoreError>(done)
        };
        match effect.await {
            Ok(done) => Reply::new(201, done),
            Err(_) => Reply::new(500, "{}"),
        }
    }
}

fn request() -> Request {
    Request::new("c1", "k1", "{\"amount\":500}")
}

/// Run one process's handler to its reply, call by call (or until `crash_after` calls).
fn run(store: &mut Committed, proc: u8, crash_after: Option<usize>) -> Option<Reply> {
    let mut answered = Vec::new();
    let mut txn: Option<Txn> = None;
    loop {
        match next_step(&Article, &request(), &answered).unwrap() {
            Next::Reply(reply) => return Some(reply),
            Next::Call(call) => {
                if crash_after == Some(answered.len()) {
                    store.crashed(proc);
                    return None;
                }
                assert!(store.enabled(proc, &call, txn.as_ref()));
                let answer = store.execute(proc, 0, &call, &mut txn);
                answered.push((call, answer));
            }
        }
    }
}

#[test]
fn a_handler_runs_call_by_call_and_a_retry_is_replayed() {
    let mut store = Committed::default();
    assert_eq!(
        run(&mut store, 0, None),
        Some(Reply::new(201, "{\"payment\":1}"))
    );
    assert_eq!(store.effects_of(0), 1);
    // The retry finds the completed key.
    assert_eq!(
        run(&mut store, 1, None),
        Some(Reply::new(200, "{\"payment\":1}"))
    );
    assert_eq!(store.effects.len(), 1);
}

#[test]
fn a_crash_inside_the_effect_transaction_loses_it_and_leaves_the_key_stuck() {
    let mut store = Committed::default();
    // Calls: begin, insert, get, commit | begin, insert-effect, ...: crash after the effect was written.
    assert_eq!(run(&mut store, 0, Some(6)), None);
    assert_eq!(store.effects.len(), 0, "the open transaction died with it");
    assert_eq!(store.writer, None, "and so did the write lock");
    assert_eq!(
        run(&mut store, 1, None),
        Some(Reply::new(409, "{}")),
        "the key stays in_progress"
    );
}

#[test]
fn a_second_writer_waits_for_the_first() {
    let mut store = Committed::default();
    let mut txn = None;
    store.execute(0, 0, &Call::Begin, &mut txn);
    assert!(!store.enabled(1, &Call::Begin, None));
    assert!(store.enabled(1, &Call::Now, None));
    store.execute(0, 0, &Call::Commit, &mut txn);
    assert!(store.enabled(1, &Call::Begin, None));
}

/// Reads a global counter: different calls on replay.
struct Forgetful;

static CALLS: AtomicU64 = AtomicU64::new(0);

impl Handler for Forgetful {
    async fn handle<S: Store>(&self, store: &mut S, _request: &Request) -> Reply {
        let nonce = CALLS.fetch_add(1, Ordering::Relaxed);
        let _ = store.kv_get(&format!("nonce-{nonce}")).await;
        let _ = store.now_ms().await;
        Reply::new(200, "{}")
    }
}

#[test]
fn a_handler_that_is_not_deterministic_is_caught_and_named() {
    let first = next_step(&Forgetful, &request(), &[]).unwrap();
    let Next::Call(call) = first else {
        panic!("a call first")
    };
    let answered = vec![(call, Answer::Row(None))];
    let error = next_step(&Forgetful, &request(), &answered).unwrap_err();
    assert_eq!(error.call, 1);
    assert!(error.to_string().contains("not deterministic"), "{error}");
}

#[test]
fn the_provider_charges_once_per_idempotency_key() {
    let mut store = Committed::default();
    let mut txn = None;
    let charge = |key: Option<&str>| Call::ProviderCharge {
        idempotency_key: key.map(str::to_string),
        body: "{}".into(),
    };
    let first = store.execute(0, 7, &charge(Some("k")), &mut txn);
    let again = store.execute(0, 7, &charge(Some("k")), &mut txn);
    assert_eq!(first, again);
    assert_eq!(store.charges_of(7), 1);
    store.execute(0, 7, &charge(None), &mut txn);
    assert_eq!(store.charges_of(7), 2);
}

#[test]
fn kv_keys_expire_with_the_clock() {
    let mut store = Committed::default();
    let mut txn = None;
    let set = Call::KvSet {
        key: "k".into(),
        value: "v".into(),
        mode: SetMode {
            if_absent: true,
            ttl_ms: Some(100),
        },
    };
    assert_eq!(store.execute(0, 0, &set, &mut txn), Answer::Flag(true));
    assert_eq!(store.execute(0, 0, &set, &mut txn), Answer::Flag(false));
    store.now_ms = 100;
    assert_eq!(store.execute(0, 0, &set, &mut txn), Answer::Flag(true));
}

mod on_sqlite {
    use super::*;
    use crate::runner::stepped::is_effect;
    use crate::runner::{run_to_reply, Stepped};
    use crate::stores::sqlite::SqliteStore;

    #[test]
    fn the_same_handler_runs_on_sqlite_and_replays_the_completed_key() {
        let folder = tempfile::tempdir().unwrap();
        let path = folder.path().join("handler.db");
        SqliteStore::create(&path).unwrap();
        let mut store = SqliteStore::open(&path, Clock::default()).unwrap();
        assert_eq!(
            run_to_reply(&Article, &mut store, &request()),
            Reply::new(201, "{\"payment\":1}")
        );
        let mut other = SqliteStore::open(&path, Clock::default()).unwrap();
        assert_eq!(
            run_to_reply(&Article, &mut other, &request()),
            Reply::new(200, "{\"payment\":1}")
        );
        assert_eq!(store.effects("payments").unwrap().len(), 1);
    }

    #[test]
    fn a_crash_is_a_dropped_connection_and_sqlite_rolls_the_effect_back() {
        let folder = tempfile::tempdir().unwrap();
        let path = folder.path().join("handler.db");
        SqliteStore::create(&path).unwrap();
        {
            let store = SqliteStore::open(&path, Clock::default()).unwrap();
            let mut running = Stepped::new(Article, store, request());
            // begin, insert, get, commit, begin, insert-effect: then the process dies.
            for _ in 0..6 {
                assert!(running.step().is_ok());
            }
            assert_eq!(running.answered().len(), 6);
        }
        let mut store = SqliteStore::open(&path, Clock::default()).unwrap();
        assert_eq!(store.effects("payments").unwrap().len(), 0);
        assert_eq!(
            run_to_reply(&Article, &mut store, &request()),
            Reply::new(409, "{}"),
            "the key stays in_progress, as in the simulated store"
        );
    }
    /// Runs `Article` on a new connection up to its payment's commit, then makes that commit fail (`lost`:
    /// made, its answer lost; else not made); the run, answered (its connection still open).
    fn fail_the_payment_commit(
        path: &std::path::Path,
        lost: bool,
    ) -> Stepped<Article, SqliteStore> {
        let store = SqliteStore::open(path, Clock::default()).unwrap();
        let mut running = Stepped::new(Article, store, request());
        running.run_until(is_effect).unwrap();
        while running.next() != Next::Call(Call::Commit) {
            running.step().unwrap();
        }
        assert!(if lost {
            running.lose_next_answer()
        } else {
            running.fail_next()
        });
        assert_eq!(running.run_to_reply(), Reply::new(500, "{}"));
        running
    }

    #[test]
    fn a_failed_commit_loses_the_transaction_and_a_lost_answer_does_not() {
        let folder = tempfile::tempdir().unwrap();
        let path = folder.path().join("handler.db");
        SqliteStore::create(&path).unwrap();
        let _failed = fail_the_payment_commit(&path, false);
        let mut other = SqliteStore::open(&path, Clock::default()).unwrap();
        assert_eq!(other.effects("payments").unwrap().len(), 0);
        // The failed commit's write lock is gone with its transaction: another writer goes on at once.
        let second = Request {
            key: "k2".into(),
            ..request()
        };
        assert_eq!(run_to_reply(&Article, &mut other, &second).status, 201);

        let folder = tempfile::tempdir().unwrap();
        let path = folder.path().join("handler.db");
        SqliteStore::create(&path).unwrap();
        let _lost = fail_the_payment_commit(&path, true);
        let other = SqliteStore::open(&path, Clock::default()).unwrap();
        assert_eq!(
            other.effects("payments").unwrap().len(),
            1,
            "the commit was made; only its answer was lost"
        );
    }
}

mod on_postgres {
    use super::*;
    use crate::runner::{run_to_reply, Stepped};
    use crate::servers::postgres::TempPostgres;
    use crate::stores::postgres::PostgresStore;

    #[test]
    fn the_same_handler_runs_on_postgres_and_a_dropped_connection_rolls_back() {
        let Some(server) = TempPostgres::start() else {
            return;
        };
        PostgresStore::create(&server.params()).unwrap();
        let connect = || PostgresStore::connect(&server.params(), Clock::default()).unwrap();
        let mut store = connect();
        assert_eq!(
            run_to_reply(&Article, &mut store, &request()),
            Reply::new(201, "{\"payment\":1}")
        );
        let mut other = connect();
        assert_eq!(
            run_to_reply(&Article, &mut other, &request()),
            Reply::new(200, "{\"payment\":1}")
        );
        // A second operation whose process dies inside its effect transaction.
        let second = Request {
            key: "k2".into(),
            ..request()
        };
        {
            let mut running = Stepped::new(Article, connect(), second.clone());
            for _ in 0..6 {
                assert!(running.step().is_ok());
            }
        }
        assert_eq!(store.effects("payments").unwrap().len(), 1);
        assert_eq!(
            run_to_reply(&Article, &mut store, &second),
            Reply::new(409, "{}")
        );
    }
}

mod in_the_checker {
    use super::*;
    use crate::check::{Model, Verdict};

    /// SELECT, then INSERT in a later transaction (docs/src/domain.md mistake 1): two processes both find nothing.
    struct SelectThenInsert;

    impl Handler for SelectThenInsert {
        async fn handle<S: Store>(&self, store: &mut S, request: &Request) -> Reply {
            let key = format!("{}/{}", request.client, request.key);
            let Ok(row) = store.get("keys", &key).await else {
                return Reply::new(500, "{}");
            };
            if let Some(done) = row {
                return Reply::new(200, done);
            }
            let effect = async {
                store.begin().await?;
                let id = store.insert_effect("payments", &request.body).await?;
                let done = format!("{{\"payment\":{id}}}");
                store.delete("keys", &key).await?;
                store.insert_if_absent("keys", &key, &done).await?;
                store.commit().await?;
                Ok::<_, StoreError>(done)
            };
            match effect.await {
                Ok(done) => Reply::new(201, done),
                Err(_) => Reply::new(500, "{}"),
            }
        }
    }

    fn faults() -> HandlerFaults {
        HandlerFaults {
            drop_responses: 1,
            duplicate_requests: 1,
            crashes: 1,
            ..HandlerFaults::default()
        }
    }

    #[test]
    fn the_article_handler_never_duplicates_and_a_crash_leaves_its_key_stuck() {
        let world = HandlerWorld::new(Article, 1, "{\"amount\":500}")
            .processes(2)
            .faults(faults());
        let report = world.checker().bfs();
        assert!(report.complete);
        assert_eq!(report.verdict("no-duplicate-effect"), Verdict::Holds);
        assert_eq!(report.verdict("no-lost-effect"), Verdict::Holds);
        assert_eq!(report.verdict("eventually-resolves"), Verdict::Violated);
        for scenario in [
            "crash-after-claim",
            "lost-response",
            "parallel-retry",
            "replay",
        ] {
            assert!(report.reached(scenario), "{scenario} not reached");
        }
        // Its counterexample (a crash after the claim) replays on SQLite: every step agrees, replies included.
        {
            use crate::runner::lockstep::{drive, SqliteBackend};
            let path = report.counterexample("eventually-resolves").unwrap();
            let folder = tempfile::tempdir().unwrap();
            let sqlite = SqliteBackend::create(&folder.path().join("lockstep.db")).unwrap();
            let real = drive(&world, &sqlite, path).unwrap();
            assert!(real.replies.iter().any(|(_, reply)| reply.status == 409));
        }
        // Same search on more threads: same states, same paths.
        let again = world.checker().threads(2).bfs();
        assert_eq!(report.states, again.states);
        assert_eq!(report.properties, again.properties);
    }

    #[test]
    fn select_then_insert_charges_twice_with_two_processes() {
        let world = HandlerWorld::new(SelectThenInsert, 1, "{\"amount\":500}")
            .processes(2)
            .faults(faults());
        let report = world.checker().bfs();
        assert_eq!(report.verdict("no-duplicate-effect"), Verdict::Violated);
        let path = report.counterexample("no-duplicate-effect").unwrap();
        let run = crate::check::timeline(&world, path).unwrap();
        let text: Vec<&str> = run.steps.iter().map(|step| step.text.as_str()).collect();
        assert!(
            text.last().unwrap().contains("DUPLICATE EFFECT"),
            "{text:#?}"
        );
        replays_the_duplicate_on_real_databases(&world, path);
        // With one process the race cannot happen.
        let one = HandlerWorld::new(SelectThenInsert, 1, "{\"amount\":500}").faults(faults());
        assert_eq!(
            one.checker().bfs().verdict("no-duplicate-effect"),
            Verdict::Holds
        );
    }

    /// The same handler code on real databases, driven in lockstep: the same duplicate at the same step.
    fn replays_the_duplicate_on_real_databases(
        world: &HandlerWorld<SelectThenInsert>,
        path: &[crate::handler::world::HandlerAction],
    ) {
        use crate::runner::lockstep::{drive, PostgresBackend, SqliteBackend};
        let folder = tempfile::tempdir().unwrap();
        let sqlite = SqliteBackend::create(&folder.path().join("lockstep.db")).unwrap();
        let real = drive(world, &sqlite, path).unwrap();
        assert_eq!(real.model_duplicate_at, Some(path.len()));
        assert_eq!(*real.effects_per_step.last().unwrap(), 2);
        if let Some(server) = crate::servers::postgres::TempPostgres::start() {
            let postgres = PostgresBackend::create(&server.params()).unwrap();
            assert_eq!(drive(world, &postgres, path).unwrap(), real);
        }
    }
}

/// A row call outside a transaction autocommits, as on SQLite and PostgreSQL (`Store`'s docs): committed at once
/// (a crash right after keeps it), waiting for the write lock like a `begin`. Its twin inside a transaction is
/// lost with the crash.
#[test]
fn a_row_call_outside_a_transaction_commits_at_once() {
    let insert = Call::InsertIfAbsent {
        table: "keys".into(),
        key: "k1".into(),
        value: "in_progress".into(),
    };
    let mut store = Committed::default();
    let mut txn: Option<Txn> = None;
    assert_eq!(store.execute(0, 0, &insert, &mut txn), Answer::Flag(true));
    assert!(txn.is_none() && store.writer.is_none());
    store.crashed(0);
    assert_eq!(
        store.row(None, "keys", "k1").map(|(value, _)| value),
        Some("in_progress".into())
    );
    // While P2 holds the write lock, P1's lone row call waits (its transaction of one needs the lock).
    let mut other: Option<Txn> = None;
    assert_eq!(store.execute(1, 0, &Call::Begin, &mut other), Answer::Done);
    assert!(!store.enabled(0, &insert, None));
    assert!(store.enabled(1, &insert, other.as_ref()));
    // The twin: inside P2's transaction, the same write is gone with the crash.
    let delete = Call::Delete {
        table: "keys".into(),
        key: "k1".into(),
    };
    assert_eq!(store.execute(1, 0, &delete, &mut other), Answer::Flag(true));
    store.crashed(1);
    assert!(
        store.row(None, "keys", "k1").is_some(),
        "the delete was never committed"
    );
}
