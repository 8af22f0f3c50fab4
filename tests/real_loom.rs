//! loom: every interleaving (up to a preemption bound) of 2-3 real threads on one key of the in-memory store.
//!
//! Runs in plain `cargo test` (no `--cfg loom`): the store is generic over its lock and is given loom's mutex
//! directly, so only the store's own synchronisation is explored.

use retrylab::protocol::{status, Claim, FingerprintPolicy, Lease, ProtocolConfig};
use retrylab::real::{
    handle, Claimed, Completion, KeyStore, Lock, MemoryStore, Reply, Request, Tables,
};
use serde_json::json;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Mutex as StdMutex;

/// loom's mutex as the store's lock.
struct LoomLock<T>(loom::sync::Mutex<T>);

impl<T: Send> Lock<T> for LoomLock<T> {
    fn new(value: T) -> Self {
        LoomLock(loom::sync::Mutex::new(value))
    }

    fn with<R>(&self, f: impl FnOnce(&mut T) -> R) -> R {
        f(&mut self.0.lock().expect("loom mutex poisoned"))
    }
}

type Store = MemoryStore<LoomLock<Tables>>;

/// Enough preemptions for every bug below (each needs one), few enough to finish in seconds.
const PREEMPTION_BOUND: usize = 3;

fn builder() -> loom::model::Builder {
    let mut builder = loom::model::Builder::new();
    builder.preemption_bound = Some(PREEMPTION_BOUND);
    builder
}

fn config(claim: Claim, lease: Lease, fencing: bool) -> ProtocolConfig {
    ProtocolConfig {
        claim,
        lease,
        fencing,
        fingerprint: FingerprintPolicy::Normalized,
    }
}

fn pay() -> Request {
    Request::new("shop-1", "k-42", json!({"amount": 500, "currency": "RUB"}))
}

/// `thread_count` handlers (one on loom's main thread) send the same request at the same instant.
fn run_parallel(store: &loom::sync::Arc<Store>, thread_count: usize) -> Vec<Reply> {
    let handles: Vec<_> = (1..thread_count)
        .map(|_| {
            let store = store.clone();
            loom::thread::spawn(move || handle(&*store, &pay(), 0).expect("memory store"))
        })
        .collect();
    let mut replies = vec![handle(&**store, &pay(), 0).expect("memory store")];
    replies.extend(
        handles
            .into_iter()
            .map(|h| h.join().expect("handler thread")),
    );
    replies
}

#[test]
fn three_threads_one_key_exactly_one_effect() {
    static EXECUTIONS: AtomicUsize = AtomicUsize::new(0);
    // Which non-owner answers occurred in some interleaving: each must be reached, or the check is vacuous.
    static SEEN_CONFLICT: AtomicBool = AtomicBool::new(false);
    static SEEN_REPLAY: AtomicBool = AtomicBool::new(false);
    builder().check(|| {
        EXECUTIONS.fetch_add(1, Ordering::Relaxed);
        let store =
            loom::sync::Arc::new(Store::new(config(Claim::UniqueIndex, Lease::None, false)));
        let replies = run_parallel(&store, 3);
        let payments = store.payments().unwrap();
        assert_eq!(
            payments.len(),
            1,
            "one effect, got {payments:?} with {replies:?}"
        );
        let owners: Vec<&Reply> = replies
            .iter()
            .filter(|r| r.status == status::CREATED)
            .collect();
        assert_eq!(owners.len(), 1, "one 201, got {replies:?}");
        for reply in &replies {
            match reply.status {
                status::CREATED => {}
                status::CONFLICT_IN_PROGRESS => SEEN_CONFLICT.store(true, Ordering::Relaxed),
                status::OK_REPLAY => {
                    assert_eq!(
                        reply.body, owners[0].body,
                        "a replay repeats the 201's body"
                    );
                    SEEN_REPLAY.store(true, Ordering::Relaxed);
                }
                other => panic!("unexpected status {other} in {replies:?}"),
            }
        }
    });
    let executions = EXECUTIONS.load(Ordering::Relaxed);
    println!("loom, 3 threads, unique index: {executions} executions, preemption bound {PREEMPTION_BOUND}");
    assert!(
        SEEN_CONFLICT.load(Ordering::Relaxed),
        "no interleaving produced a 409"
    );
    assert!(
        SEEN_REPLAY.load(Ordering::Relaxed),
        "no interleaving produced a 200 replay"
    );
}

/// The negative control: loom must find the interleaving where both handlers pass the SELECT before either
/// INSERTs. The model records the duplicate in a flag instead of panicking, so loom explores every interleaving
/// and the test fails if none duplicates.
#[test]
fn loom_finds_the_select_then_insert_duplicate() {
    static EXECUTIONS: AtomicUsize = AtomicUsize::new(0);
    static DUPLICATES: AtomicUsize = AtomicUsize::new(0);
    static FIRST: StdMutex<Option<String>> = StdMutex::new(None);
    builder().check(|| {
        EXECUTIONS.fetch_add(1, Ordering::Relaxed);
        let store = loom::sync::Arc::new(Store::new(config(
            Claim::SelectThenInsert,
            Lease::None,
            false,
        )));
        let replies = run_parallel(&store, 2);
        let payments = store.payments().unwrap();
        if payments.len() > 1 {
            DUPLICATES.fetch_add(1, Ordering::Relaxed);
            let mut first = FIRST.lock().unwrap();
            first.get_or_insert_with(|| format!("{replies:?}, {} payments", payments.len()));
        }
    });
    let executions = EXECUTIONS.load(Ordering::Relaxed);
    let duplicates = DUPLICATES.load(Ordering::Relaxed);
    println!(
        "loom, 2 threads, select-then-insert: {duplicates} of {executions} executions duplicate the effect; first: {:?}",
        FIRST.lock().unwrap()
    );
    assert!(
        duplicates > 0,
        "loom did not find the select-then-insert duplicate"
    );
    assert!(
        duplicates < executions,
        "the duplicate needs a specific interleaving, not every one"
    );
}

/// A slow owner whose lease expired: a retry takes the key over while the first owner is still about to complete.
/// With fencing the stale completion is refused (one effect in every interleaving); without, loom finds two.
fn slow_owner_and_take_over(fencing: bool) -> (usize, usize) {
    static EXECUTIONS: AtomicUsize = AtomicUsize::new(0);
    static DUPLICATES: AtomicUsize = AtomicUsize::new(0);
    EXECUTIONS.store(0, Ordering::Relaxed);
    DUPLICATES.store(0, Ordering::Relaxed);
    let lease_ms = 1_000;
    builder().check(move || {
        EXECUTIONS.fetch_add(1, Ordering::Relaxed);
        let store = loom::sync::Arc::new(Store::new(config(
            Claim::UniqueIndex,
            Lease::Ms(lease_ms),
            fencing,
        )));
        let Claimed::Owner { token, .. } = store.claim(&pay(), 0).unwrap() else {
            panic!("the first claim owns the key");
        };
        let slow = {
            let store = store.clone();
            // The first owner completes late, at lease_ms + 1.
            loom::thread::spawn(move || store.complete(&pay(), token, lease_ms + 1).unwrap())
        };
        let retry = handle(&*store, &pay(), lease_ms).unwrap();
        let late = slow.join().unwrap();
        if !fencing {
            assert_ne!(late, Completion::Refused, "only fencing refuses");
        }
        let payments = store.payments().unwrap().len();
        if fencing {
            assert_eq!(
                payments, 1,
                "fenced: one effect, got {retry:?} and {late:?}"
            );
        }
        if payments > 1 {
            DUPLICATES.fetch_add(1, Ordering::Relaxed);
        }
    });
    (
        EXECUTIONS.load(Ordering::Relaxed),
        DUPLICATES.load(Ordering::Relaxed),
    )
}

#[test]
fn lease_take_over_needs_fencing() {
    let (executions, duplicates) = slow_owner_and_take_over(true);
    println!("loom, lease + fencing: {executions} executions, {duplicates} duplicates");
    assert_eq!(duplicates, 0);
    let (executions, duplicates) = slow_owner_and_take_over(false);
    println!("loom, lease without fencing: {executions} executions, {duplicates} duplicates");
    assert!(
        duplicates > 0,
        "loom did not find the stale owner's second effect"
    );
}
