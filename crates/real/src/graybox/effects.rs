//! Effects counted and the slate wiped, before and after every schedule: `--count-sql` on the real database
//! (directly, never through a gate, so counting is no boundary) or `--count-url` on the service; `--reset-sql`
//! (a file run with `batch_execute` on the real database: it may TRUNCATE) or `--reset-cmd` (see `reset_cmd`). The probe's own
//! connection is built from the checked `--postgres` parts only, so it reaches nothing else.

use super::urls::PostgresTarget;
use crate::stack::http::Url;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// How effects are counted.
#[derive(Clone, Debug)]
pub enum CountBy {
    Sql(String),
    Url(Url),
}

/// How the slate is wiped before a schedule.
#[derive(Clone, Debug)]
pub enum ResetBy {
    /// The statements of `--reset-sql`'s file.
    Sql(String),
    /// `sh -c` (its exit status must be 0).
    Cmd(String),
}

/// The server's own message when there is one (the client's `Display` says only "db error").
fn database_error(error: &postgres::Error) -> String {
    match error.as_db_error() {
        Some(db) => format!("{} {}: {}", db.severity(), db.code().code(), db.message()),
        None => error.to_string(),
    }
}

/// Counting and resetting, with one connection to the real database kept open.
pub struct Effects {
    target: PostgresTarget,
    client: Arc<Mutex<Option<postgres::Client>>>,
    count: CountBy,
    reset: Option<ResetBy>,
    timeout: Duration,
}

impl Effects {
    pub fn new(
        target: PostgresTarget,
        count: CountBy,
        reset: Option<ResetBy>,
        timeout: Duration,
    ) -> Effects {
        Effects {
            target,
            client: Arc::new(Mutex::new(None)),
            count,
            reset,
            timeout,
        }
    }

    /// Run `work` on the real database's connection (opened on first use), off the runtime's threads (the
    /// `postgres` client blocks).
    async fn on_database<T: Send + 'static>(
        &self,
        work: impl FnOnce(&mut postgres::Client) -> Result<T, postgres::Error> + Send + 'static,
    ) -> Result<T, String> {
        let client = Arc::clone(&self.client);
        let config = self.target.direct_config();
        let address = self.target.address;
        tokio::task::spawn_blocking(move || {
            let mut slot = client.lock().expect("the database connection's lock");
            if slot.is_none() {
                let opened = config
                    .connect(postgres::NoTls)
                    .map_err(|e| format!("the database at {address}: {}", database_error(&e)))?;
                *slot = Some(opened);
            }
            let result = work(slot.as_mut().expect("opened above"));
            if result.is_err() {
                // A broken connection is opened again next time.
                *slot = None;
            }
            result.map_err(|e| format!("the database at {address}: {}", database_error(&e)))
        })
        .await
        .map_err(|e| format!("the database task: {e}"))?
    }

    /// The effects now.
    pub async fn count(&self) -> Result<i64, String> {
        match &self.count {
            CountBy::Sql(sql) => {
                let sql = sql.clone();
                let value = self
                    .on_database(move |client| {
                        let row = client.query_one(sql.as_str(), &[])?;
                        Ok(row
                            .try_get::<_, i64>(0)
                            .or_else(|_| row.try_get::<_, i32>(0).map(i64::from)))
                    })
                    .await
                    .map_err(|e| format!("--count-sql: {e}"))?;
                value.map_err(|e| format!("--count-sql: the first column is not an integer: {e}"))
            }
            CountBy::Url(url) => self.count_by_url(url).await,
        }
    }

    async fn count_by_url(&self, url: &Url) -> Result<i64, String> {
        let failed = |why: String| format!("--count-url {}: {why}", url.to_text());
        let count = crate::stack::probe::count_at(url, self.timeout)
            .await
            .map_err(failed)?;
        i64::try_from(count).map_err(|_| failed(format!("{count} is too large")))
    }

    /// Close the connection to the real database (also done on drop).
    fn close(&mut self) {
        let client = self
            .client
            .lock()
            .map(|mut slot| slot.take())
            .unwrap_or_default();
        if let Some(client) = client {
            // The synchronous client owns a runtime of its own, which may not be dropped inside the probe's
            // asynchronous code (tokio panics): it is dropped on a thread of its own.
            let _ = std::thread::spawn(move || drop(client)).join();
        }
    }

    /// Wipe the slate (nothing without `--reset-sql`/`--reset-cmd`).
    pub async fn reset(&self) -> Result<(), String> {
        match &self.reset {
            None => Ok(()),
            Some(ResetBy::Sql(sql)) => {
                let sql = sql.clone();
                self.on_database(move |client| client.batch_execute(&sql))
                    .await
                    .map_err(|e| format!("--reset-sql: {e}"))
            }
            Some(ResetBy::Cmd(command)) => {
                let command = command.clone();
                tokio::task::spawn_blocking(move || {
                    super::reset_cmd::run(&command, super::reset_cmd::RESET_CMD_TIMEOUT)
                })
                .await
                .map_err(|e| format!("--reset-cmd: {e}"))?
            }
        }
    }
}

impl Drop for Effects {
    fn drop(&mut self) {
        self.close();
    }
}
