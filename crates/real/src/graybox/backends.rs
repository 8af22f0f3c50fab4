//! The store's own word on the service's PostgreSQL backends, over the probe's direct connection to the real
//! database (never through a gate): which of them wait on a lock, and ending a killed service's backends.
//!
//! Why ask the store: a released statement with no answer yet may be running or waiting on a lock, and only
//! the store knows which. A timer ("no answer within N ms") reads a slow statement on a loaded machine as a
//! blocked one, so the decision points, and with them the schedules explored, changed from run to run.
//! `pg_blocking_pids(pid)` is read from the lock manager itself: non-empty exactly while the backend waits
//! for a heavyweight lock (a row's transaction lock behind `SELECT ... FOR UPDATE`, `UPDATE` or a unique
//! index's uncommitted key, a table lock, an advisory lock), whether the holder is a running statement or a
//! transaction whose next statement the gate holds. `pg_stat_activity.wait_event_type = 'Lock'` says the same
//! but is written by the waiting backend itself, so it lags behind a lock just granted: not used.
//!
//! The `postgres` client blocks, and owns a runtime that may not be dropped inside tokio's: it lives on a
//! thread of its own, opened on first use, asked over a channel.

use super::urls::PostgresTarget;
use std::collections::BTreeSet;
use std::sync::mpsc;
use std::time::{Duration, Instant};
use tokio::sync::oneshot;

/// How long a terminated backend may take to exit before the probe gives up on it.
pub const TERMINATE_WAIT: Duration = Duration::from_secs(10);
/// Between two looks at whether terminated backends are gone.
const GONE_POLL: Duration = Duration::from_millis(5);

type Reply<T> = oneshot::Sender<Result<T, String>>;

enum Ask {
    Waiting(Vec<i32>, Reply<BTreeSet<i32>>),
    Terminate(Vec<i32>, Reply<Terminated>),
}

/// What `terminate` did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Terminated {
    /// Backends that were still there and were told to end.
    pub ended: usize,
    /// Of them, still there after `TERMINATE_WAIT`.
    pub lingering: usize,
}

/// The thread that asks the store.
pub struct Backends {
    asks: Option<mpsc::Sender<Ask>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Backends {
    /// Start the thread; it connects when first asked.
    pub fn start(target: &PostgresTarget) -> Backends {
        let (asks, inbox) = mpsc::channel();
        let config = target.direct_config();
        let address = target.address;
        let thread = std::thread::Builder::new()
            .name("graybox-backends".into())
            .spawn(move || serve(config, address, inbox))
            .expect("a thread for the store's connection");
        Backends {
            asks: Some(asks),
            thread: Some(thread),
        }
    }

    async fn ask<T>(&self, ask: impl FnOnce(Reply<T>) -> Ask) -> Result<T, String> {
        let (reply, answer) = oneshot::channel();
        let sent = self.asks.as_ref().map(|asks| asks.send(ask(reply)));
        if !matches!(sent, Some(Ok(()))) {
            return Err("the store's connection thread is gone".into());
        }
        answer
            .await
            .map_err(|_| "the store's connection thread is gone".to_string())?
    }

    /// Which of `pids` wait on a lock now.
    pub async fn waiting(&self, pids: Vec<i32>) -> Result<BTreeSet<i32>, String> {
        if pids.is_empty() {
            return Ok(BTreeSet::new());
        }
        self.ask(|reply| Ask::Waiting(pids, reply)).await
    }

    /// End these backends (`pg_terminate_backend`) and wait until they are gone: their statements, open
    /// transactions and locks end now, not when each next reads its closed socket (a backend busy in a long
    /// statement or waiting on a lock reads nothing until it is done).
    pub async fn terminate(&self, pids: Vec<i32>) -> Result<Terminated, String> {
        if pids.is_empty() {
            return Ok(Terminated {
                ended: 0,
                lingering: 0,
            });
        }
        self.ask(|reply| Ask::Terminate(pids, reply)).await
    }
}

impl Drop for Backends {
    fn drop(&mut self) {
        // Closing the channel ends the thread, which drops its client there (not on the runtime).
        self.asks = None;
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// The server's own message when there is one (the client's `Display` says only "db error").
fn database_error(error: &postgres::Error) -> String {
    match error.as_db_error() {
        Some(db) => format!("{} {}: {}", db.severity(), db.code().code(), db.message()),
        None => error.to_string(),
    }
}

/// The thread: one connection, opened on first use and again after it broke.
fn serve(config: postgres::Config, address: std::net::SocketAddr, inbox: mpsc::Receiver<Ask>) {
    let mut client: Option<postgres::Client> = None;
    for ask in inbox {
        if client.is_none() {
            match config.connect(postgres::NoTls) {
                Ok(opened) => client = Some(opened),
                Err(error) => {
                    let why = format!("the database at {address}: {}", database_error(&error));
                    refuse(ask, why);
                    continue;
                }
            }
        }
        let connection = client.as_mut().expect("opened above");
        let broken = match ask {
            Ask::Waiting(pids, reply) => answer(reply, waiting(connection, &pids), address),
            Ask::Terminate(pids, reply) => answer(reply, terminate(connection, &pids), address),
        };
        if broken {
            client = None;
        }
    }
}

fn refuse(ask: Ask, why: String) {
    // The asker may have gone (the run ended): nobody to tell.
    match ask {
        Ask::Waiting(_, reply) => drop(reply.send(Err(why))),
        Ask::Terminate(_, reply) => drop(reply.send(Err(why))),
    }
}

/// Send the result; true when the connection should be opened again.
fn answer<T>(
    reply: Reply<T>,
    result: Result<T, postgres::Error>,
    address: std::net::SocketAddr,
) -> bool {
    let broken = result.is_err();
    let _ = reply
        .send(result.map_err(|e| format!("the database at {address}: {}", database_error(&e))));
    broken
}

fn waiting(client: &mut postgres::Client, pids: &[i32]) -> Result<BTreeSet<i32>, postgres::Error> {
    let rows = client.query(
        "SELECT pid FROM unnest($1::int4[]) AS pid WHERE cardinality(pg_blocking_pids(pid)) > 0",
        &[&pids],
    )?;
    Ok(rows.iter().map(|row| row.get::<_, i32>(0)).collect())
}

fn terminate(client: &mut postgres::Client, pids: &[i32]) -> Result<Terminated, postgres::Error> {
    // Never the probe's own backend, whatever the gate was told.
    let ended = client.query(
        "SELECT pid FROM unnest($1::int4[]) AS pid WHERE pid <> pg_backend_pid() AND pg_terminate_backend(pid)",
        &[&pids],
    )?;
    let ended: Vec<i32> = ended.iter().map(|row| row.get(0)).collect();
    let started = Instant::now();
    // pg_terminate_backend only signals: the backend rolls back and exits on its own, soon after.
    loop {
        let left: i64 = client
            .query_one(
                "SELECT count(*) FROM pg_stat_activity WHERE pid = ANY($1)",
                &[&ended],
            )?
            .get(0);
        if left == 0 || started.elapsed() >= TERMINATE_WAIT {
            return Ok(Terminated {
                ended: ended.len(),
                lingering: left as usize,
            });
        }
        std::thread::sleep(GONE_POLL);
    }
}
