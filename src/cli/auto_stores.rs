//! `--postgres auto` and `--redis auto`: throwaway servers from the installed binaries (a temporary directory,
//! a free loopback port), started before the service and stopped when the probe ends, Ctrl-C and SIGTERM
//! included (they are dropped on every way out of `graybox_args::run`). A newcomer checks a service with one
//! command and no scratch database to set up; without the binaries, one line naming the package.

use retrylab::servers::postgres::TempPostgres;
use retrylab::servers::redis::TempRedis;

/// The word that asks for a throwaway server.
pub const AUTO: &str = "auto";

/// The servers started for this run (None: the user gave a URL, or no such store).
#[derive(Default)]
pub struct AutoStores {
    postgres: Option<TempPostgres>,
    redis: Option<TempRedis>,
}

impl AutoStores {
    /// Start what `auto` asks for.
    pub fn start(postgres: Option<&str>, redis: Option<&str>) -> Result<AutoStores, String> {
        let mut stores = AutoStores::default();
        if postgres == Some(AUTO) {
            stores.postgres =
                Some(TempPostgres::launch().map_err(|e| format!("--postgres auto: {e}"))?);
        }
        if redis == Some(AUTO) {
            stores.redis = Some(TempRedis::launch().map_err(|e| format!("--redis auto: {e}"))?);
        }
        Ok(stores)
    }

    /// The URL to use for `--postgres` as given.
    pub fn postgres_url(&self, given: Option<&str>) -> Option<String> {
        match &self.postgres {
            Some(server) => Some(server.url()),
            None => given.map(str::to_string),
        }
    }

    /// The URL to use for `--redis` as given.
    pub fn redis_url(&self, given: Option<&str>) -> Option<String> {
        match &self.redis {
            Some(server) => Some(server.url()),
            None => given.map(str::to_string),
        }
    }
}
