//! proptest: fingerprint normalisation, and random fault schedules driven step by step against the stores.
//!
//! Every runner is seeded (no OS entropy) and persists nothing, so the same cases run every time.

use proptest::prelude::*;
use proptest::test_runner::{TestError, TestRunner};
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use retrylab::protocol::{
    canonical_json, fingerprint, status, Claim, Decision, FingerprintPolicy, Lease, ProtocolConfig,
};
use retrylab::real::{
    handle, ClaimLookup, ClaimToken, Claimed, Completion, KeyStore, MemoryStore, Reply, Request,
    SqliteStore, StdLock, StoreError, Tables,
};
use serde_json::{json, Map, Value};
use std::sync::atomic::{AtomicUsize, Ordering};

mod model_support;
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

                let store = MemoryStore::<StdLock<Tables>>::new(ProtocolConfig::ARTICLE);
                let first = handle(&store, &Request::new("c", "k", body.clone()), 0).unwrap();
                prop_assert_eq!(first.status, status::CREATED);
                let mismatch = handle(&store, &Request::new("c", "k", changed), 1).unwrap();
                prop_assert_eq!(mismatch.status, status::UNPROCESSABLE_BODY_MISMATCH);
                let mut text = String::new();
                write_shuffled(&body, &mut ChaCha8Rng::seed_from_u64(seed), &mut text);
                let reordered = Request {
                    raw_body: text.into_bytes(),
                    ..Request::new("c", "k", body)
                };
                let replay = handle(&store, &reordered, 2).unwrap();
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
    /// Handler h takes its next step: a new attempt looks the key up, a looked-up one claims, an owner runs the
    /// effect and the completion. After an answer its next step is the client's retry.
    Step(u8),
    /// Handler h dies: whatever it claimed stays claimed; its next step is the client's retry.
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

#[derive(Clone, Debug)]
enum Phase {
    Idle,
    Looked(ClaimLookup),
    Owner(ClaimToken),
}

#[derive(Debug, Default)]
struct Outcome {
    replies: Vec<Reply>,
    payment_count: usize,
    take_overs: usize,
    /// Completions that `protocol::may_complete` refused (a fenced stale owner).
    refused_completions: usize,
}

fn request() -> Request {
    Request::new("shop-1", "k-42", json!({"amount": 500, "currency": "RUB"}))
}

/// Run `ops`; `stores[h]` is handler h's handle on the store (one SQLite connection each, or one shared store).
fn run_schedule(stores: &[&dyn KeyStore], ops: &[Op]) -> Result<Outcome, StoreError> {
    let mut phases = vec![Phase::Idle; stores.len()];
    let mut outcome = Outcome::default();
    let mut now_ms = 0;
    let request = request();
    for op in ops {
        match *op {
            Op::Tick => now_ms += TICK_MS,
            Op::Crash(h) => phases[h as usize] = Phase::Idle,
            Op::Step(h) => {
                let (store, phase) = (stores[h as usize], &mut phases[h as usize]);
                *phase = match std::mem::replace(phase, Phase::Idle) {
                    Phase::Idle => Phase::Looked(store.claim_lookup(&request, now_ms)?),
                    Phase::Looked(lookup) => match store.claim_finish(&request, lookup, now_ms)? {
                        Claimed::Owner { token, decision } => {
                            outcome.take_overs += usize::from(decision == Decision::TakeOver);
                            Phase::Owner(token)
                        }
                        Claimed::Answered(reply) => {
                            outcome.replies.push(reply);
                            Phase::Idle
                        }
                    },
                    Phase::Owner(token) => match store.complete(&request, token, now_ms)? {
                        Completion::Created(reply) => {
                            outcome.replies.push(reply);
                            Phase::Idle
                        }
                        // Fenced: the handler starts again from the claim (its next step looks again).
                        Completion::Refused => {
                            outcome.refused_completions += 1;
                            Phase::Idle
                        }
                    },
                };
            }
        }
    }
    outcome.payment_count = stores[0].payments()?.len();
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

fn config(claim: Claim, lease: Lease, fencing: bool) -> ProtocolConfig {
    ProtocolConfig {
        claim,
        lease,
        fencing,
        fingerprint: FingerprintPolicy::Normalized,
    }
}

fn run_memory(config: ProtocolConfig, ops: &[Op]) -> Result<Outcome, StoreError> {
    let store = MemoryStore::<StdLock<Tables>>::new(config);
    let stores: Vec<&dyn KeyStore> = (0..HANDLER_COUNT)
        .map(|_| &store as &dyn KeyStore)
        .collect();
    run_schedule(&stores, ops)
}

fn run_sqlite(config: ProtocolConfig, ops: &[Op]) -> Result<Outcome, StoreError> {
    let folder = tempfile::tempdir().expect("temporary folder");
    let path = folder.path().join("idem.db");
    SqliteStore::create(&path, config)?;
    let connections = (0..HANDLER_COUNT)
        .map(|_| SqliteStore::open(&path, config))
        .collect::<Result<Vec<_>, _>>()?;
    let stores: Vec<&dyn KeyStore> = connections.iter().map(|c| c as &dyn KeyStore).collect();
    run_schedule(&stores, ops)
}

type Runner = fn(ProtocolConfig, &[Op]) -> Result<Outcome, StoreError>;

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
        (ProtocolConfig::ARTICLE, 48, run_sqlite, "sqlite"),
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
        if config.lease.is_some() {
            assert!(
                reached.1 > 0 && reached.2 > 0,
                "no take-over or no fenced stale owner"
            );
        }
    }
}

/// proptest must find a failing schedule for each broken store and shrink it to a minimal one: removing any
/// single event from the shrunk schedule makes it pass.
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
        println!("{store_name} {config:?}: minimal failing schedule {minimal:?} ({reason})");
        assert!(fails(&minimal));
        for index in 0..minimal.len() {
            let mut shorter = minimal.clone();
            shorter.remove(index);
            assert!(!fails(&shorter), "not minimal: {shorter:?} still fails");
        }
    }
}
