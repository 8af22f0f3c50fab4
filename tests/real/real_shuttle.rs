//! shuttle: the article's scenario, 5 threads running the library's article handler (`handler::designs`) on one
//! key of the in-memory store, under shuttle's random and PCT schedulers (seeded, so every run explores the same
//! schedules). The select-then-insert handler is the negative control: shuttle must find its duplicate, print
//! the failing schedule, and `shuttle::replay` must reproduce it.

use retrylab::handler::designs::{article, ArticleKnobs};
use retrylab::handler::{Clock, Handler, Reply, Request};
use retrylab::protocol::{status, Claim, FingerprintPolicy, Lease, OnError, ProtocolConfig};
use retrylab::real::{Lock, MemoryStore, Tables};
use retrylab::runner::run_now;
use shuttle::scheduler::{PctScheduler, RandomScheduler, Scheduler};
use shuttle::{Config, Runner};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

/// shuttle's mutex and condition variable as the store's lock.
struct ShuttleLock<T> {
    value: shuttle::sync::Mutex<T>,
    changed: shuttle::sync::Condvar,
}

impl<T: Send> Lock<T> for ShuttleLock<T> {
    fn new(value: T) -> Self {
        ShuttleLock {
            value: shuttle::sync::Mutex::new(value),
            changed: shuttle::sync::Condvar::new(),
        }
    }

    fn with<R>(&self, f: impl FnOnce(&mut T) -> R) -> R {
        self.with_when(|_| true, f)
    }

    fn with_when<R>(&self, ready: impl Fn(&T) -> bool, f: impl FnOnce(&mut T) -> R) -> R {
        let mut guard = self.value.lock().expect("shuttle mutex poisoned");
        while !ready(&guard) {
            guard = self.changed.wait(guard).expect("shuttle mutex poisoned");
        }
        let result = f(&mut guard);
        drop(guard);
        self.changed.notify_all();
        result
    }
}

type Store = MemoryStore<ShuttleLock<Tables>>;

const THREAD_COUNT: usize = 5;
const ITERATIONS: usize = 10_000;
/// PCT's bug depth: the select-then-insert duplicate needs one well-placed preemption; 3 leaves room.
const PCT_DEPTH: usize = 3;
const SEED: u64 = 0x5eed_0042;

fn knobs(claim: Claim) -> ArticleKnobs {
    ArticleKnobs {
        protocol: ProtocolConfig {
            claim,
            lease: Lease::None,
            fencing: false,
            fingerprint: FingerprintPolicy::Normalized,
        },
        on_error: OnError::KeepInProgress,
    }
}

/// The article's five parallel requests, then the protocol's safety checks (panics on a violation).
fn five_requests(claim: Claim) -> Vec<Reply> {
    let store = Arc::new(Store::new(Clock::default()));
    let knobs = knobs(claim);
    let handlers: Vec<_> = (0..THREAD_COUNT)
        .map(|_| {
            let store = Arc::clone(&store);
            shuttle::thread::spawn(move || {
                let request = Request::new("shop-1", "k-42", r#"{"amount":500,"currency":"RUB"}"#);
                run_now(knobs.handle(&mut store.connect(), &request))
            })
        })
        .collect();
    let replies: Vec<Reply> = handlers.into_iter().map(|h| h.join().unwrap()).collect();
    let payments = store.effects(article::PAYMENTS).len();
    assert_eq!(
        payments, 1,
        "duplicate effect: {payments} payments, replies {replies:?}"
    );
    let created: Vec<&Reply> = replies
        .iter()
        .filter(|r| r.status == status::CREATED)
        .collect();
    assert_eq!(created.len(), 1, "exactly one 201: {replies:?}");
    for reply in &replies {
        assert!(
            reply.status == status::CONFLICT_IN_PROGRESS
                || (reply.status == status::OK_REPLAY && reply.body == created[0].body)
                || reply.status == status::CREATED,
            "unexpected reply {reply:?}"
        );
    }
    replies
}

/// Iterations of the correct scenario in which some request got a 409, and in which some got a 200 replay: both
/// must be reached, or the safety check is vacuous.
static SEEN_CONFLICT: AtomicUsize = AtomicUsize::new(0);
static SEEN_REPLAY: AtomicUsize = AtomicUsize::new(0);

fn correct() {
    let replies = five_requests(Claim::UniqueIndex);
    if replies
        .iter()
        .any(|r| r.status == status::CONFLICT_IN_PROGRESS)
    {
        SEEN_CONFLICT.fetch_add(1, Ordering::Relaxed);
    }
    if replies.iter().any(|r| r.status == status::OK_REPLAY) {
        SEEN_REPLAY.fetch_add(1, Ordering::Relaxed);
    }
}

/// Executions of the broken scenario so far (to report how soon shuttle finds the duplicate).
static BROKEN_EXECUTIONS: AtomicUsize = AtomicUsize::new(0);

fn select_then_insert() {
    BROKEN_EXECUTIONS.fetch_add(1, Ordering::Relaxed);
    five_requests(Claim::SelectThenInsert);
}

fn run_with(scheduler: impl Scheduler + 'static, scenario: fn()) -> usize {
    Runner::new(scheduler, Config::new()).run(scenario)
}

#[test]
fn five_threads_one_key_random_and_pct() {
    let random = run_with(RandomScheduler::new_from_seed(SEED, ITERATIONS), correct);
    let pct = run_with(
        PctScheduler::new_from_seed(SEED, PCT_DEPTH, ITERATIONS),
        correct,
    );
    let (conflicts, replays) = (
        SEEN_CONFLICT.load(Ordering::Relaxed),
        SEEN_REPLAY.load(Ordering::Relaxed),
    );
    println!(
        "shuttle, 5 threads, unique index: {random} random + {pct} PCT iterations, no violation; \
         {conflicts} had a 409, {replays} a 200 replay"
    );
    assert_eq!((random, pct), (ITERATIONS, ITERATIONS));
    assert!(
        conflicts > 0 && replays > 0,
        "the schedules never overlapped the requests"
    );
}

/// The schedule shuttle puts in a failure's panic message, between the quotes after "failing schedule:".
fn failing_schedule(payload: &(dyn std::any::Any + Send)) -> Option<String> {
    let message = panic_message(payload)?;
    let after = message.split("failing schedule:").nth(1)?;
    let schedule = after.split('"').nth(1)?;
    Some(schedule.trim().to_string())
}

fn panic_message(payload: &(dyn std::any::Any + Send)) -> Option<String> {
    payload
        .downcast_ref::<String>()
        .cloned()
        .or_else(|| payload.downcast_ref::<&str>().map(|s| s.to_string()))
}

fn find_and_replay(name: &str, scheduler: impl Scheduler + 'static) {
    BROKEN_EXECUTIONS.store(0, Ordering::Relaxed);
    let payload = catch_unwind(AssertUnwindSafe(|| run_with(scheduler, select_then_insert)))
        .expect_err("negative control: shuttle must find the select-then-insert duplicate");
    let executions = BROKEN_EXECUTIONS.load(Ordering::Relaxed);
    let schedule = failing_schedule(&*payload).expect("shuttle's failure names its schedule");
    println!(
        "{name} found the duplicate in execution {executions}; replay it with:\n    \
         shuttle::replay(select_then_insert, \"{schedule}\");"
    );
    let replayed = catch_unwind(|| shuttle::replay(select_then_insert, &schedule))
        .expect_err("replaying the printed schedule must fail");
    let message = panic_message(&*replayed).unwrap_or_default();
    assert!(
        message.contains("duplicate effect"),
        "the replay failed differently: {message}"
    );
}

#[test]
fn shuttle_finds_replays_the_select_then_insert_duplicate() {
    find_and_replay("random", RandomScheduler::new_from_seed(SEED, ITERATIONS));
    find_and_replay(
        "PCT",
        PctScheduler::new_from_seed(SEED, PCT_DEPTH, ITERATIONS),
    );
}
