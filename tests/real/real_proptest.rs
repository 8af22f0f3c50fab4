//! proptest: fingerprint normalisation, and random fault schedules of the library's article handler
//! (`handler::designs::article`) driven step by step against the in-memory store and real SQLite.
//!
//! Every runner is seeded (no OS entropy) and persists nothing, so the same cases run every time.

use proptest::prelude::*;
use proptest::test_runner::{TestError, TestRunner};
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use retrylab::handler::designs::{article, ArticleKnobs};
use retrylab::handler::{Answer, Call, Clock, Handler, Reply, Request, Store, StoreResult};
use retrylab::protocol::{canonical_json, fingerprint, status, Claim, FingerprintPolicy, Lease};
use retrylab::real::{MemoryStore, StdLock, Tables};
use retrylab::runner::stepped::is_transaction_end;
use retrylab::runner::{run_now, Stepped};
use retrylab::stores::sqlite::SqliteStore;
use serde_json::{json, Map, Value};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use crate::model_support;
use model_support::seeded_runner;

const RUNNER_SEED: &[u8; 32] = b"retrylab real_proptest seed 0001";

fn runner(cases: u32) -> TestRunner {
    seeded_runner(RUNNER_SEED, cases)
}

// ---------------------------------------------------------------------------------------------------------------
// Fingerprints

fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        "\\PC{0,6}".prop_map(Value::String),
    ];
    leaf.prop_recursive(4, 48, 5, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..5).prop_map(Value::Array),
            prop::collection::btree_map("[a-z]{1,4}", inner, 0..5)
                .prop_map(|entries| Value::Object(entries.into_iter().collect::<Map<_, _>>())),
        ]
    })
}

/// A request body: a non-empty JSON object.
fn json_body() -> impl Strategy<Value = Value> {
    prop::collection::btree_map("[a-z]{1,4}", json_value(), 1..5)
        .prop_map(|entries| Value::Object(entries.into_iter().collect::<Map<_, _>>()))
}

/// `value` as JSON text with the keys of every object in a random order and random spacing.
fn write_shuffled(value: &Value, rng: &mut ChaCha8Rng, out: &mut String) {
    let separator = |rng: &mut ChaCha8Rng| if rng.random_bool(0.5) { ", " } else { "," };
    match value {
        Value::Object(map) => {
            let mut entries: Vec<(&String, &Value)> = map.iter().collect();
            entries.shuffle(rng);
            out.push('{');
            for (index, (key, item)) in entries.into_iter().enumerate() {
                if index > 0 {
                    out.push_str(separator(rng));
                }
                out.push_str(&Value::String(key.clone()).to_string());
                out.push_str(": ");
                write_shuffled(item, rng, out);
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (index, item) in items.iter().enumerate() {
                if index > 0 {
                    out.push_str(separator(rng));
                }
                write_shuffled(item, rng, out);
            }
            out.push(']');
        }
        scalar => out.push_str(&scalar.to_string()),
    }
}

/// Whether `value` is a leaf: a scalar or an empty container.
fn is_leaf(value: &Value) -> bool {
    match value {
        Value::Object(map) => map.is_empty(),
        Value::Array(items) => items.is_empty(),
        _ => true,
    }
}

fn leaf_count(value: &Value) -> usize {
    match value {
        _ if is_leaf(value) => 1,
        Value::Object(map) => map.values().map(leaf_count).sum(),
        Value::Array(items) => items.iter().map(leaf_count).sum(),
        _ => unreachable!("scalars are leaves"),
    }
}

/// Replace the `remaining`-th leaf (depth first) with a different value; true once done.
fn change_leaf(value: &mut Value, remaining: &mut usize) -> bool {
    if is_leaf(value) {
        if *remaining > 0 {
            *remaining -= 1;
            return false;
        }
        *value = match &*value {
            Value::Null => json!(0),
            Value::Bool(b) => json!(!b),
            Value::Number(n) => json!(n.as_i64().unwrap_or(0).wrapping_add(1)),
            Value::String(s) => json!(format!("{s}x")),
            Value::Array(_) => json!([null]),
            Value::Object(_) => json!({"x": null}),
        };
        return true;
    }
    match value {
        Value::Object(map) => map.values_mut().any(|v| change_leaf(v, remaining)),
        Value::Array(items) => items.iter_mut().any(|v| change_leaf(v, remaining)),
        _ => false,
    }
}

/// `body` with its `leaf_index`-th leaf (modulo the leaf count) replaced by a different value.
fn mutate(body: &Value, leaf_index: usize) -> Value {
    let mut changed = body.clone();
    let mut remaining = leaf_index % leaf_count(body);
    assert!(change_leaf(&mut changed, &mut remaining));
    changed
}

fn normalized(raw: &[u8], parsed: &Value) -> retrylab::protocol::Fingerprint {
    fingerprint(FingerprintPolicy::Normalized, raw, parsed)
}

#[test]
fn any_key_order_at_any_depth_gives_the_same_fingerprint() {
    let raw_differed = AtomicUsize::new(0);
    runner(512)
        .run(&(json_body(), any::<u64>()), |(body, shuffle_seed)| {
            let mut text = String::new();
            write_shuffled(
                &body,
                &mut ChaCha8Rng::seed_from_u64(shuffle_seed),
                &mut text,
            );
            let parsed: Value = serde_json::from_str(&text).expect("the shuffled text is JSON");
            prop_assert_eq!(&parsed, &body);
            let canonical = canonical_json(&body);
            prop_assert_eq!(
                normalized(text.as_bytes(), &parsed),
                normalized(canonical.as_bytes(), &body)
            );
            if text != canonical {
                raw_differed.fetch_add(1, Ordering::Relaxed);
                prop_assert_ne!(
                    fingerprint(FingerprintPolicy::Raw, text.as_bytes(), &parsed),
                    fingerprint(FingerprintPolicy::Raw, canonical.as_bytes(), &body)
                );
            }
            Ok(())
        })
        .unwrap();
    assert!(
        raw_differed.load(Ordering::Relaxed) > 0,
        "the shuffle never changed the text"
    );
}

/// A changed value anywhere gives another fingerprint, and the store answers the changed body with 422 and a
/// reordered copy of the original with the 200 replay.
#[test]
fn a_changed_value_gives_another_fingerprint_and_a_422() {
    runner(256)
        .run(
            &(json_body(), any::<usize>(), any::<u64>()),
            |(body, leaf, seed)| {
                let changed = mutate(&body, leaf);
                prop_assert_ne!(&changed, &body);
                prop_assert_ne!(normalized(b"", &changed), normalized(b"", &body));

                let store = Arc::new(MemoryStore::<StdLock<Tables>>::new(Clock::default()));
                let send = |body: String| {
                    let request = Request::new("c", "k", body);
                    run_now(article::Article.handle(&mut store.connect(), &request))
                };
                let first = send(body.to_string());
                prop_assert_eq!(first.status, status::CREATED);
                let mismatch = send(changed.to_string());
                prop_assert_eq!(mismatch.status, status::UNPROCESSABLE_BODY_MISMATCH);
                let mut text = String::new();
                write_shuffled(&body, &mut ChaCha8Rng::seed_from_u64(seed), &mut text);
                let replay = send(text);
                prop_assert_eq!(replay.status, status::OK_REPLAY);
                prop_assert_eq!(replay.body, first.body);
                Ok(())
            },
        )
        .unwrap();
}

// ---------------------------------------------------------------------------------------------------------------
// Fault schedules

const HANDLER_COUNT: u8 = 3;
const LEASE_MS: u64 = 1_000;
/// How far one `Tick` moves the clock: two ticks expire a lease.
const TICK_MS: u64 = LEASE_MS / 2;

/// One event of a schedule. Three handlers serve retries of the same request (one key, one body).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Op {
    /// Handler h runs its next transaction (a new attempt starts first): the claim, select-then-insert's INSERT,
    /// the payment and the completion. A handler that then answers is done; its next step is the client's retry.
    Step(u8),
    /// Handler h dies (between transactions): whatever it claimed stays claimed; its next step is the retry.
    Crash(u8),
    /// The clock moves by `TICK_MS`.
    Tick,
}

fn schedules() -> impl Strategy<Value = Vec<Op>> {
    let op = prop_oneof![
        6 => (0..HANDLER_COUNT).prop_map(Op::Step),
        1 => (0..HANDLER_COUNT).prop_map(Op::Crash),
        1 => Just(Op::Tick),
    ];
    prop::collection::vec(op, 0..32)
}

#[derive(Debug, Default)]
struct Outcome {
    replies: Vec<Reply>,
    payment_count: usize,
    take_overs: usize,
    /// Completions the handler's fencing refused (a stale owner's payment rolled back).
    refused_completions: usize,
}

fn request() -> Request {
    retrylab::real::article::article_request()
}

/// A store the schedules run on: a connection per handler attempt, the shared clock, the payments.
trait Backend {
    type Connection: Store;
    fn connect(&self) -> StoreResult<Self::Connection>;
    fn clock(&self) -> &Clock;
    fn payments(&self) -> StoreResult<usize>;
}

/// Count what a finished transaction did: a take-over (the claim's conditional update of an in_progress
/// record), or a fenced completion (a rollback after the payment's insert).
fn classify(answered: &[(Call, Answer)], outcome: &mut Outcome) {
    let Some((last, _)) = answered.last() else {
        return;
    };
    let in_this_transaction = answered
        .iter()
        .rev()
        .skip(1)
        .take_while(|(call, _)| *call != Call::Begin);
    for (call, answer) in in_this_transaction {
        match call {
            Call::Update {
                value,
                expected: Some(_),
                ..
            } if value.starts_with("in_progress") && *answer == Answer::Flag(true) => {
                outcome.take_overs += 1
            }
            Call::InsertEffect { .. } if *last == Call::Rollback => {
                outcome.refused_completions += 1
            }
            _ => {}
        }
    }
}

/// Run `ops` with the article's handler under `knobs` on `backend`.
fn run_schedule<B: Backend>(backend: &B, knobs: ArticleKnobs, ops: &[Op]) -> StoreResult<Outcome> {
    let mut handlers: Vec<Option<Stepped<ArticleKnobs, B::Connection>>> =
        (0..HANDLER_COUNT).map(|_| None).collect();
    let mut outcome = Outcome::default();
    for op in ops {
        match *op {
            Op::Tick => backend.clock().set_ms(backend.clock().now_ms() + TICK_MS),
            Op::Crash(h) => handlers[h as usize] = None,
            Op::Step(h) => {
                let slot = &mut handlers[h as usize];
                if slot.is_none() {
                    *slot = Some(Stepped::new(knobs, backend.connect()?, request()));
                }
                let run = slot.as_mut().expect("just started");
                let _ = run.run_until(is_transaction_end);
                classify(run.answered(), &mut outcome);
                if let retrylab::handler::Next::Reply(reply) = run.next() {
                    outcome.replies.push(reply);
                    *slot = None;
                }
            }
        }
    }
    outcome.payment_count = backend.payments()?;
    Ok(outcome)
}

/// The protocol's safety: at most one effect; every success for the key carries the same response; a 422 never
/// answers the unchanged body.
fn check_safety(outcome: &Outcome) -> Result<(), TestCaseError> {
    prop_assert!(
        outcome.payment_count <= 1,
        "duplicate effect: {} payments",
        outcome.payment_count
    );
    let successes: Vec<&Reply> = outcome
        .replies
        .iter()
        .filter(|r| status::is_success(r.status))
        .collect();
    for success in &successes {
        prop_assert_eq!(
            &success.body,
            &successes[0].body,
            "two different success responses"
        );
    }
    for reply in &outcome.replies {
        prop_assert_ne!(reply.status, status::UNPROCESSABLE_BODY_MISMATCH);
    }
    Ok(())
}

fn config(claim: Claim, lease: Lease, fencing: bool) -> ArticleKnobs {
    ArticleKnobs::claim_lease_fencing(claim, lease, fencing)
}

struct Memory(Arc<MemoryStore<StdLock<Tables>>>);

impl Backend for Memory {
    type Connection = retrylab::real::MemoryConnection<StdLock<Tables>>;
    fn connect(&self) -> StoreResult<Self::Connection> {
        Ok(self.0.connect())
    }
    fn clock(&self) -> &Clock {
        self.0.clock()
    }
    fn payments(&self) -> StoreResult<usize> {
        Ok(self.0.effects(article::PAYMENTS).len())
    }
}

struct Sqlite {
    _folder: tempfile::TempDir,
    path: std::path::PathBuf,
    clock: Clock,
}

impl Backend for Sqlite {
    type Connection = SqliteStore;
    fn connect(&self) -> StoreResult<SqliteStore> {
        SqliteStore::open(&self.path, self.clock.clone())
    }
    fn clock(&self) -> &Clock {
        &self.clock
    }
    fn payments(&self) -> StoreResult<usize> {
        Ok(self.connect()?.effects(article::PAYMENTS)?.len())
    }
}

fn run_memory(knobs: ArticleKnobs, ops: &[Op]) -> StoreResult<Outcome> {
    let backend = Memory(Arc::new(MemoryStore::new(Clock::default())));
    run_schedule(&backend, knobs, ops)
}

fn run_sqlite(knobs: ArticleKnobs, ops: &[Op]) -> StoreResult<Outcome> {
    let folder = tempfile::tempdir().expect("temporary folder");
    let path = folder.path().join("idem.db");
    SqliteStore::create(&path)?;
    let backend = Sqlite {
        _folder: folder,
        path,
        clock: Clock::default(),
    };
    run_schedule(&backend, knobs, ops)
}

type Runner = fn(ArticleKnobs, &[Op]) -> StoreResult<Outcome>;

#[test]
fn random_fault_schedules_never_break_the_correct_stores() {
    let correct = [
        (
            config(Claim::UniqueIndex, Lease::None, false),
            256,
            run_memory as Runner,
            "memory",
        ),
        (
            config(Claim::UniqueIndex, Lease::Ms(LEASE_MS), true),
            256,
            run_memory,
            "memory",
        ),
        (ArticleKnobs::ARTICLE, 48, run_sqlite, "sqlite"),
        (
            config(Claim::UniqueIndex, Lease::Ms(LEASE_MS), true),
            48,
            run_sqlite,
            "sqlite",
        ),
    ];
    for (config, cases, run, store_name) in correct {
        let (conflicts, take_overs, refused) = (
            AtomicUsize::new(0),
            AtomicUsize::new(0),
            AtomicUsize::new(0),
        );
        runner(cases)
            .run(&schedules(), |ops| {
                let outcome = run(config, &ops).expect("store error");
                check_safety(&outcome)?;
                let conflict = outcome
                    .replies
                    .iter()
                    .any(|r| r.status == status::CONFLICT_IN_PROGRESS);
                conflicts.fetch_add(usize::from(conflict), Ordering::Relaxed);
                take_overs.fetch_add(usize::from(outcome.take_overs > 0), Ordering::Relaxed);
                refused.fetch_add(
                    usize::from(outcome.refused_completions > 0),
                    Ordering::Relaxed,
                );
                Ok(())
            })
            .unwrap_or_else(|e| panic!("{store_name} {config:?}: {e}"));
        let reached = (
            conflicts.into_inner(),
            take_overs.into_inner(),
            refused.into_inner(),
        );
        println!("{store_name} {config:?}: {cases} schedules safe; cases with 409 / take-over / fenced: {reached:?}");
        // No vacuous pass: the dangerous situations were reached.
        assert!(reached.0 > 0, "no schedule produced a 409");
        if config.protocol.lease.is_some() {
            assert!(
                reached.1 > 0 && reached.2 > 0,
                "no take-over or no fenced stale owner"
            );
        }
    }
}

/// proptest must find a failing schedule for each broken store and shrink it; removing single events after that
/// gives a minimal one: removing any single event from it makes it pass.
#[test]
fn proptest_finds_and_shrinks_a_failing_schedule_on_the_broken_stores() {
    let broken = [
        (
            config(Claim::SelectThenInsert, Lease::None, false),
            run_memory as Runner,
            "memory",
        ),
        (
            config(Claim::UniqueIndex, Lease::Ms(LEASE_MS), false),
            run_memory,
            "memory",
        ),
        (
            config(Claim::SelectThenInsert, Lease::None, false),
            run_sqlite,
            "sqlite",
        ),
    ];
    for (config, run, store_name) in broken {
        let fails = |ops: &[Op]| check_safety(&run(config, ops).expect("store error")).is_err();
        let result = runner(256).run(&schedules(), |ops| {
            check_safety(&run(config, &ops).expect("store error"))
        });
        let Err(TestError::Fail(reason, minimal)) = result else {
            panic!(
                "negative control: proptest found no failing schedule for {store_name} {config:?}"
            );
        };
        assert!(fails(&minimal));
        // proptest's shrinking is greedy over its own moves (dropping runs of events, lowering a handler's
        // number), which can leave an event that is not needed: drop single events while it still fails.
        let shrunk_len = minimal.len();
        let mut minimal = minimal;
        while let Some(index) = (0..minimal.len()).find(|&index| {
            let mut shorter = minimal.clone();
            shorter.remove(index);
            fails(&shorter)
        }) {
            minimal.remove(index);
        }
        println!(
            "{store_name} {config:?}: minimal failing schedule {minimal:?} ({reason}; proptest shrank to {shrunk_len})"
        );
        for index in 0..minimal.len() {
            let mut shorter = minimal.clone();
            shorter.remove(index);
            assert!(!fails(&shorter), "not minimal: {shorter:?} still fails");
        }
    }
}
