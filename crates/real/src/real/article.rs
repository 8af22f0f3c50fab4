//! The article's script against real SQLite with the library's article handler: five parallel requests with one
//! key, then a repeat, then a changed body. Used by `examples/article_sqlite.rs` (which prints it) and by
//! `tests/real/real_sqlite.rs` (which checks it).

use crate::handler::designs::article::{self, ArticleKnobs, ClaimOutcome};
use crate::handler::{Clock, Reply, Request, StoreResult};
use crate::runner::run_now;
use crate::stores::sqlite::SqliteStore;
use std::path::Path;
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

/// How many requests the article sends in parallel.
pub const PARALLEL_REQUEST_COUNT: usize = 5;

/// The longest the owner holds its claim open waiting for the others to be answered. Only a safety net so that a
/// broken handler (two owners, so fewer answers than expected) cannot hang the run; the correct one never hits it.
const OWNER_WAIT_MAX: Duration = Duration::from_secs(10);

/// What the article prints.
#[derive(Clone, Debug, PartialEq)]
pub struct ArticleRun {
    /// The parallel requests' status codes, sorted.
    pub parallel_codes: Vec<u16>,
    pub parallel_replies: Vec<Reply>,
    /// The same request again, after the parallel ones finished.
    pub repeat: Reply,
    /// The same key with a different body.
    pub changed_body: Reply,
    pub payment_count: usize,
}

/// The article's request: shop-1, key k-42, 500 RUB.
pub fn article_request() -> Request {
    request_with_body(r#"{"amount":500,"currency":"RUB"}"#)
}

fn request_with_body(body: &str) -> Request {
    Request::new("shop-1", "k-42", body)
}

/// Run the article's script on a new database at `db_path` with the article's handler under `knobs`.
///
/// Why a rendezvous instead of the article's `time.sleep(0.05)`: the 409s need the owner to still be in flight
/// when the other four requests arrive. A sleep makes that likely, not certain: on a loaded two-core machine a
/// handler thread can start after the owner has already completed, and then it gets a 200 replay instead. Here
/// the owner, once its claim has committed, waits until every other request has been answered before it runs the
/// payment and the completion (the handler's two phases, `article::claim` and `article::complete`, which
/// `article::handle` runs back to back), so its in-flight window covers all of them by construction. Who becomes
/// the owner, and what the others are answered, is still decided by the real `BEGIN IMMEDIATE; INSERT OR IGNORE`
/// race.
pub fn run_article(db_path: &Path, knobs: ArticleKnobs) -> StoreResult<ArticleRun> {
    SqliteStore::create(db_path)?;
    let clock = Clock::default();
    let answered = Arc::new((Mutex::new(0usize), Condvar::new()));
    let handlers: Vec<_> = (0..PARALLEL_REQUEST_COUNT)
        .map(|_| {
            let (db_path, clock) = (db_path.to_path_buf(), clock.clone());
            let answered = Arc::clone(&answered);
            std::thread::spawn(move || -> StoreResult<Reply> {
                // One connection per handler, as the article's create_payment opens one per call.
                let mut db = SqliteStore::open(&db_path, clock)?;
                let request = article_request();
                match run_now(article::claim(&mut db, &request, &knobs))? {
                    ClaimOutcome::Owner(claimed, _) => {
                        let (count, changed) = &*answered;
                        let guard = count.lock().unwrap_or_else(|e| e.into_inner());
                        let _guard = changed
                            .wait_timeout_while(guard, OWNER_WAIT_MAX, |count| {
                                *count < PARALLEL_REQUEST_COUNT - 1
                            })
                            .unwrap_or_else(|e| e.into_inner());
                        match run_now(article::complete(&mut db, &request, &claimed, &knobs))? {
                            Some(reply) => Ok(reply),
                            // Taken over (only possible with a lease): start again, as the handler does.
                            None => Ok(run_now(article::handle(&mut db, &request, &knobs))),
                        }
                    }
                    ClaimOutcome::Answered(reply) => {
                        let (count, changed) = &*answered;
                        *count.lock().unwrap_or_else(|e| e.into_inner()) += 1;
                        changed.notify_all();
                        Ok(reply)
                    }
                }
            })
        })
        .collect();
    let mut parallel_replies = Vec::with_capacity(PARALLEL_REQUEST_COUNT);
    for handler in handlers {
        parallel_replies.push(handler.join().expect("a request handler panicked")?);
    }
    let mut parallel_codes: Vec<u16> = parallel_replies.iter().map(|r| r.status).collect();
    parallel_codes.sort_unstable();

    let mut db = SqliteStore::open(db_path, clock)?;
    let repeat = run_now(article::handle(&mut db, &article_request(), &knobs));
    let changed = request_with_body(r#"{"amount":900,"currency":"RUB"}"#);
    let changed_body = run_now(article::handle(&mut db, &changed, &knobs));
    Ok(ArticleRun {
        parallel_codes,
        parallel_replies,
        repeat,
        changed_body,
        payment_count: db.effects(article::PAYMENTS)?.len(),
    })
}
