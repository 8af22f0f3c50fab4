//! Background workers and `scan`: a worker is woken by changes and only by them, a crash restarts it, its work
//! counts for the operation of the record it read (so a completer's second charge is caught), and the
//! `no-stuck-key` declaration tells a design that leaves a claim forever from one whose completer finishes it.

use crate::check::{Model, Verdict};
use crate::handler::sim::{Committed, Txn};
use crate::handler::world::{HandlerAction, HandlerState};
use crate::handler::*;

const BODY: &str = "{\"amount\":500}";

/// Claims the key (the record keeps the body), charges at the provider, records the charge.
struct ClaimThenCharge {
    derived: bool,
}

/// Finishes every claim left in progress: charges again and records.
struct Completer {
    derived: bool,
}

fn provider_key(key: &str, derived: bool) -> Option<String> {
    derived.then(|| format!("charge/{key}"))
}

impl Handler for ClaimThenCharge {
    async fn handle<S: Store>(&self, db: &mut S, request: &Request) -> Reply {
        let key = format!("{}/{}", request.client, request.key);
        let run = async {
            let claim = format!("claimed|{}", request.body);
            db.begin().await?;
            let claimed = db.insert_if_absent("keys", &key, &claim).await?;
            let row = db.get("keys", &key).await?;
            db.commit().await?;
            if !claimed {
                return Ok(match row {
                    Some(done) if done.starts_with('{') => Reply::new(200, done),
                    _ => Reply::new(409, "{}"),
                });
            }
            let charge = db
                .provider_charge(provider_key(&key, self.derived).as_deref(), &request.body)
                .await?;
            let done = format!("{{\"charge\":\"{charge}\"}}");
            match db.update("keys", &key, &done, Some(&claim)).await? {
                true => Ok(Reply::new(201, done)),
                false => Ok(Reply::new(
                    200,
                    db.get("keys", &key).await?.unwrap_or_default(),
                )),
            }
        };
        run.await
            .unwrap_or_else(|_: StoreError| Reply::new(500, "{}"))
    }
}

impl Worker for Completer {
    async fn run<S: Store>(&self, db: &mut S) {
        let Ok(keys) = db.scan("keys").await else {
            return;
        };
        for key in keys {
            let Ok(Some(row)) = db.get("keys", &key).await else {
                continue;
            };
            let Some(body) = row.strip_prefix("claimed|") else {
                continue;
            };
            let derived = provider_key(&key, self.derived);
            let Ok(charge) = db.provider_charge(derived.as_deref(), body).await else {
                return;
            };
            let done = format!("{{\"charge\":\"{charge}\"}}");
            let _ = db.update("keys", &key, &done, Some(&row)).await;
        }
    }
}

fn claimed(value: &str, _now_ms: u64) -> bool {
    value.starts_with("claimed")
}

fn crash() -> HandlerFaults {
    HandlerFaults {
        crashes: 1,
        ..HandlerFaults::default()
    }
}

fn world(derived: bool) -> HandlerWorld<ClaimThenCharge> {
    HandlerWorld::new(ClaimThenCharge { derived }, 1, BODY)
        .faults(crash())
        .records(RecordsIn::Table("keys".into()), claimed)
}

#[test]
fn without_a_completer_a_crash_after_the_claim_leaves_the_key_stuck() {
    let report = world(true).checker().bfs();
    assert!(report.complete);
    assert_eq!(report.verdict("no-stuck-key"), Verdict::Violated);
    assert!(report.reached("crash-after-claim"));
    assert_eq!(report.verdict("no-duplicate-effect"), Verdict::Holds);
}

#[test]
fn a_completer_with_the_derived_key_finishes_the_claim_and_charges_once() {
    let completed = world(true).worker(Completer { derived: true }, 1);
    let report = completed.checker().bfs();
    assert!(report.complete);
    assert_eq!(report.verdict("no-stuck-key"), Verdict::Holds);
    assert_eq!(report.verdict("no-duplicate-effect"), Verdict::Holds);
    // The completer called the provider again for the operation: its work was counted for it.
    assert!(report.reached("provider-retried"));
    assert!(report.reached("crash-after-claim"));
}

#[test]
fn a_completer_without_the_derived_key_charges_twice_and_the_timeline_names_it() {
    let broken = world(false).worker(Completer { derived: false }, 1);
    let report = broken.checker().bfs();
    assert_eq!(report.verdict("no-duplicate-effect"), Verdict::Violated);
    let path = report.counterexample("no-duplicate-effect").unwrap();
    let run = crate::check::timeline(&broken, path).unwrap();
    let text: Vec<&str> = run.steps.iter().map(|step| step.text.as_str()).collect();
    assert!(
        text.iter()
            .any(|line| line.starts_with("W1 (worker) begins")),
        "{text:#?}"
    );
    assert!(
        text.iter()
            .any(|line| line.starts_with("W1 provider-charge")),
        "{text:#?}"
    );
    assert!(
        text.last().unwrap().contains("DUPLICATE EFFECT"),
        "{text:#?}"
    );
    // With two completers and no request racing them, they still charge twice.
    let two = world(false).worker(Completer { derived: false }, 2);
    assert_eq!(
        two.checker().bfs().verdict("no-duplicate-effect"),
        Verdict::Violated
    );
}

/// Run process `proc`'s next step (the action as a trace records it).
fn step<H: Handler, W: Worker>(world: &HandlerWorld<H, W>, state: &mut HandlerState, proc: u8) {
    let action = world.step_action(state, proc).expect("a busy process");
    apply(world, state, action);
}

/// Apply `action`, which must be enabled.
fn apply<M: Model>(model: &M, state: &mut M::State, action: M::Action) {
    let mut enabled = Vec::new();
    model.actions(state, &mut enabled);
    assert!(enabled.contains(&action), "{action:?} not in {enabled:?}");
    model.apply(state, &action);
}

fn can_wake(world: &HandlerWorld<ClaimThenCharge, Completer>, state: &HandlerState) -> bool {
    let mut enabled = Vec::new();
    world.actions(state, &mut enabled);
    enabled.contains(&HandlerAction::Wake { worker: 0 })
}

/// Run process `proc` until it has no next call (its run ended or its reply was sent).
fn finish(world: &HandlerWorld<ClaimThenCharge, Completer>, state: &mut HandlerState, proc: u8) {
    while state.procs[proc as usize].is_some() {
        step(world, state, proc);
    }
}

#[test]
fn a_worker_is_woken_by_changes_only_and_a_crash_restarts_it() {
    let world = world(true).worker(Completer { derived: true }, 1);
    let mut state = world.init_state();
    let worker_proc = 1;
    assert!(can_wake(&world, &state), "a worker runs once at the start");
    apply(&world, &mut state, HandlerAction::Wake { worker: 0 });
    finish(&world, &mut state, worker_proc);
    assert!(
        !can_wake(&world, &state),
        "nothing changed since its run began"
    );
    // A request claims the key: the completer has something new to see.
    apply(&world, &mut state, HandlerAction::Send { client: 0 });
    let message = state.network.keys().next().unwrap().clone();
    apply(
        &world,
        &mut state,
        HandlerAction::DeliverRequest { message, proc: 0 },
    );
    for _ in 0..4 {
        step(&world, &mut state, 0); // begin, insert, get, commit
    }
    assert!(can_wake(&world, &state));
    apply(&world, &mut state, HandlerAction::Wake { worker: 0 });
    step(&world, &mut state, worker_proc); // scan
    assert!(!can_wake(&world, &state), "busy: one run at a time");
    apply(
        &world,
        &mut state,
        HandlerAction::Crash { proc: worker_proc },
    );
    assert!(state.procs[worker_proc as usize].is_none());
    assert!(can_wake(&world, &state), "restarted, it runs again");
}

#[test]
fn scan_lists_keys_in_byte_order_and_sees_its_own_transaction() {
    let mut store = Committed::default();
    let mut txn: Option<Txn> = None;
    let call =
        |store: &mut Committed, txn: &mut Option<Txn>, call: Call| store.execute(0, 0, &call, txn);
    for key in ["b", "B", "a/1"] {
        let insert = Call::InsertIfAbsent {
            table: "t".into(),
            key: key.into(),
            value: "v".into(),
        };
        call(&mut store, &mut txn, insert);
    }
    let other = Call::InsertIfAbsent {
        table: "u".into(),
        key: "z".into(),
        value: "v".into(),
    };
    call(&mut store, &mut txn, other);
    let scan = || Call::Scan { table: "t".into() };
    let keys = |list: &[&str]| Answer::Keys(list.iter().map(|key| key.to_string()).collect());
    assert_eq!(call(&mut store, &mut txn, scan()), keys(&["B", "a/1", "b"]));
    call(&mut store, &mut txn, Call::Begin);
    let insert = Call::InsertIfAbsent {
        table: "t".into(),
        key: "a".into(),
        value: "v".into(),
    };
    call(&mut store, &mut txn, insert);
    let delete = Call::Delete {
        table: "t".into(),
        key: "b".into(),
    };
    call(&mut store, &mut txn, delete);
    assert_eq!(call(&mut store, &mut txn, scan()), keys(&["B", "a", "a/1"]));
    call(&mut store, &mut txn, Call::Rollback);
    assert_eq!(call(&mut store, &mut txn, scan()), keys(&["B", "a/1", "b"]));
}

/// Inserts keys whose byte order differs from a dictionary's, then lists them: the same list on every store.
struct ListKeys;

impl Handler for ListKeys {
    async fn handle<S: Store>(&self, db: &mut S, _request: &Request) -> Reply {
        for key in ["b", "B", "a/1", "a", "A", "_x"] {
            db.insert_if_absent("t", key, "v").await.unwrap();
        }
        db.insert_if_absent("other", "0", "v").await.unwrap();
        Reply::new(200, db.scan("t").await.unwrap().join(" "))
    }
}

const BYTE_ORDER: &str = "A B _x a a/1 b";

fn request() -> Request {
    Request::new("c1", "k1", BODY)
}

#[test]
fn scan_gives_byte_order_on_sqlite() {
    use crate::runner::run_to_reply;
    use crate::stores::sqlite::SqliteStore;
    let folder = tempfile::tempdir().unwrap();
    let path = folder.path().join("scan.db");
    SqliteStore::create(&path).unwrap();
    let mut store = SqliteStore::open(&path, Clock::default()).unwrap();
    let reply = run_to_reply(&ListKeys, &mut store, &request());
    assert_eq!(reply.body, BYTE_ORDER);
}

/// The query orders with `COLLATE "C"`, since a cluster initialised with a dictionary locale would put `a` before
/// `B`. (This machine has only C locales, so the test server's own collation is bytewise too.)
#[test]
fn scan_gives_byte_order_on_postgres() {
    use crate::runner::run_to_reply;
    use crate::stores::postgres::PostgresStore;
    let Some(server) = crate::servers::postgres::TempPostgres::start() else {
        return;
    };
    PostgresStore::create(&server.params()).unwrap();
    let mut store = PostgresStore::connect(&server.params(), Clock::default()).unwrap();
    let reply = run_to_reply(&ListKeys, &mut store, &request());
    assert_eq!(reply.body, BYTE_ORDER);
}

#[test]
fn scan_gives_byte_order_in_the_checker() {
    // The simulated store, through the replaying machinery: the handler's one reply after its calls.
    struct Lists;
    impl Handler for Lists {
        async fn handle<S: Store>(&self, db: &mut S, _request: &Request) -> Reply {
            for key in ["b", "B", "a/1", "a", "A", "_x"] {
                let _ = db.insert_if_absent("t", key, "v").await;
            }
            Reply::new(200, db.scan("t").await.unwrap_or_default().join(" "))
        }
    }
    let world = HandlerWorld::new(Lists, 1, BODY);
    let mut state = world.init_state();
    apply(&world, &mut state, HandlerAction::Send { client: 0 });
    let message = state.network.keys().next().unwrap().clone();
    apply(
        &world,
        &mut state,
        HandlerAction::DeliverRequest { message, proc: 0 },
    );
    for _ in 0..7 {
        step(&world, &mut state, 0);
    }
    match &state.procs[0].as_ref().unwrap().next() {
        Next::Reply(reply) => assert_eq!(reply.body, "A B _x a a/1 b"),
        other => panic!("{other:?}"),
    }
}
