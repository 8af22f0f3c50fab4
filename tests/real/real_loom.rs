//! loom: every interleaving (up to a preemption bound) of 2-3 real threads running the library's article handler
//! (`handler::designs::article`) on one key of the in-memory store.
//!
//! Runs in plain `cargo test` (no `--cfg loom`): the store is generic over its lock and is given loom's mutex
//! directly, so only the store's own synchronisation is explored. Every store call is one critical section, so
//! loom may switch threads at each of the handler's calls.

use retrylab::handler::designs::article::{self, ArticleKnobs, ClaimOutcome};
use retrylab::handler::designs::Article;
use retrylab::handler::{Clock, Handler, Reply, Request};
use retrylab::protocol::{status, Claim, Lease};
use retrylab::real::{Lock, MemoryStore, Tables};
use retrylab::runner::run_now;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex as StdMutex};

/// loom's mutex and condition variable as the store's lock.
struct LoomLock<T> {
    value: loom::sync::Mutex<T>,
    changed: loom::sync::Condvar,
}

impl<T: Send> Lock<T> for LoomLock<T> {
    fn new(value: T) -> Self {
        LoomLock {
            value: loom::sync::Mutex::new(value),
            changed: loom::sync::Condvar::new(),
        }
    }

    fn with<R>(&self, f: impl FnOnce(&mut T) -> R) -> R {
        self.with_when(|_| true, f)
    }

    fn with_when<R>(&self, ready: impl Fn(&T) -> bool, f: impl FnOnce(&mut T) -> R) -> R {
        let mut guard = self.value.lock().expect("loom mutex poisoned");
        while !ready(&guard) {
            guard = self.changed.wait(guard).expect("loom mutex poisoned");
        }
        let result = f(&mut guard);
        drop(guard);
        self.changed.notify_all();
        result
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

fn knobs(claim: Claim, lease: Lease, fencing: bool) -> ArticleKnobs {
    ArticleKnobs::claim_lease_fencing(claim, lease, fencing)
}

fn pay() -> Request {
    Request::new("shop-1", "k-42", r#"{"amount":500,"currency":"RUB"}"#)
}

/// `thread_count` handlers (one on loom's main thread) send the same request at the same instant.
fn run_parallel<H: Handler + Copy + Send + 'static>(
    store: &Arc<Store>,
    handler: H,
    thread_count: usize,
) -> Vec<Reply> {
    let handles: Vec<_> = (1..thread_count)
        .map(|_| {
            let store = Arc::clone(store);
            loom::thread::spawn(move || run_now(handler.handle(&mut store.connect(), &pay())))
        })
        .collect();
    let mut replies = vec![run_now(handler.handle(&mut store.connect(), &pay()))];
    replies.extend(
        handles
            .into_iter()
            .map(|h| h.join().expect("handler thread")),
    );
    replies
}

fn payments(store: &Store) -> usize {
    store.effects(article::PAYMENTS).len()
}

#[test]
fn three_threads_one_key_exactly_one_effect() {
    static EXECUTIONS: AtomicUsize = AtomicUsize::new(0);
    // Which non-owner answers occurred in some interleaving: each must be reached, or the check is vacuous.
    static SEEN_CONFLICT: AtomicBool = AtomicBool::new(false);
    static SEEN_REPLAY: AtomicBool = AtomicBool::new(false);
    builder().check(|| {
        EXECUTIONS.fetch_add(1, Ordering::Relaxed);
        let store = Arc::new(Store::new(Clock::default()));
        let replies = run_parallel(&store, Article, 3);
        assert_eq!(payments(&store), 1, "one effect, with {replies:?}");
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
        let store = Arc::new(Store::new(Clock::default()));
        let replies = run_parallel(
            &store,
            knobs(Claim::SelectThenInsert, Lease::None, false),
            2,
        );
        let count = payments(&store);
        if count > 1 {
            DUPLICATES.fetch_add(1, Ordering::Relaxed);
            let mut first = FIRST.lock().unwrap();
            first.get_or_insert_with(|| format!("{replies:?}, {count} payments"));
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
fn slow_owner_and_take_over(fencing: bool) -> (usize, usize, usize) {
    static EXECUTIONS: AtomicUsize = AtomicUsize::new(0);
    static DUPLICATES: AtomicUsize = AtomicUsize::new(0);
    static REFUSED: AtomicUsize = AtomicUsize::new(0);
    EXECUTIONS.store(0, Ordering::Relaxed);
    DUPLICATES.store(0, Ordering::Relaxed);
    REFUSED.store(0, Ordering::Relaxed);
    let lease_ms = 1_000;
    let knobs = knobs(Claim::UniqueIndex, Lease::Ms(lease_ms), fencing);
    builder().check(move || {
        EXECUTIONS.fetch_add(1, Ordering::Relaxed);
        let store = Arc::new(Store::new(Clock::default()));
        let mut slow = store.connect();
        let ClaimOutcome::Owner(claimed, _) =
            run_now(article::claim(&mut slow, &pay(), &knobs)).unwrap()
        else {
            panic!("the first claim owns the key");
        };
        // The lease runs out while the first owner is still working.
        store.clock().set_ms(lease_ms);
        let late = loom::thread::spawn(move || {
            run_now(article::complete(&mut slow, &pay(), &claimed, &knobs)).unwrap()
        });
        let retry = run_now(knobs.handle(&mut store.connect(), &pay()));
        let late = late.join().unwrap();
        if late.is_none() {
            assert!(fencing, "only fencing refuses");
            REFUSED.fetch_add(1, Ordering::Relaxed);
        }
        let count = payments(&store);
        if fencing {
            assert_eq!(count, 1, "fenced: one effect, got {retry:?} and {late:?}");
        }
        if count > 1 {
            DUPLICATES.fetch_add(1, Ordering::Relaxed);
        }
    });
    (
        EXECUTIONS.load(Ordering::Relaxed),
        DUPLICATES.load(Ordering::Relaxed),
        REFUSED.load(Ordering::Relaxed),
    )
}

#[test]
fn lease_take_over_needs_fencing() {
    let (executions, duplicates, refused) = slow_owner_and_take_over(true);
    println!("loom, lease + fencing: {executions} executions, {duplicates} duplicates, {refused} refused");
    assert_eq!(duplicates, 0);
    assert!(
        refused > 0,
        "no interleaving took the key over before the stale owner completed"
    );
    let (executions, duplicates, _) = slow_owner_and_take_over(false);
    println!("loom, lease without fencing: {executions} executions, {duplicates} duplicates");
    assert!(
        duplicates > 0,
        "loom did not find the stale owner's second effect"
    );
}
