//! The bench the checks run on: the gates in front of the real stores, the service started behind them with
//! its environment pointing at the gates, and the effect counter. Also what every check needs around a
//! schedule: the request with a key, a request sent while the gates pass everything, and the crash (kill the
//! service's group, end its PostgreSQL backends and drop the gates' connections so the stores roll back, start
//! it again).

use super::backends::Backends;
use super::effects::Effects;
use super::gate::{Decision, Event, Gates, Mode, Wire};
use super::service::{Service, ServiceError, ServiceSpec};
use super::urls::{percent_decode, PostgresTarget, RedisTarget};
use crate::stack::http::{exchange, HttpRequest, HttpResponse, Url};
use std::time::Duration;

/// Names of the service's environment variables (`--port-env`, `--database-url-env`, `--redis-url-env`).
#[derive(Clone, Debug)]
pub struct EnvNames {
    pub port: String,
    pub database_url: String,
    pub redis_url: String,
}

/// What the bench is built from.
#[derive(Clone, Debug)]
pub struct LabConfig {
    pub command: String,
    pub url: Url,
    pub env_names: EnvNames,
    pub postgres: PostgresTarget,
    pub redis: Option<RedisTarget>,
    pub start_timeout: Duration,
    pub key_header: String,
    pub headers: Vec<(String, String)>,
    pub body: String,
    pub request_timeout: Duration,
    /// Where the store cannot say whether a statement waits (a Redis blocking command, a request with no
    /// boundary seen yet): no answer within it counts as waiting. PostgreSQL statements ask the store.
    pub blocked: Duration,
}

/// Why the probe cannot go on (exit 2).
#[derive(Debug, thiserror::Error)]
pub enum LabError {
    #[error(transparent)]
    Service(#[from] ServiceError),
    #[error("the {wire:?} gate met a protocol message it does not understand: {what} (connection closed; nothing is passed through unseen)")]
    Unsupported { wire: Wire, what: String },
    #[error("the real {wire:?} store failed: {error}")]
    Upstream { wire: Wire, error: String },
    #[error("no progress for {seconds} s: {state}")]
    NoProgress { seconds: u64, state: String },
    #[error("{0}")]
    Store(String),
    #[error("the gates: {0}")]
    Gates(std::io::Error),
}

pub struct Lab {
    pub gates: Gates,
    pub service: Service,
    pub effects: Effects,
    /// The store's word on the service's backends (direct connection, like `effects`').
    pub backends: Backends,
    pub config: LabConfig,
}

/// The service's environment: the port, the gates' URLs, libpq's variables and a JDBC URL.
pub fn service_env(
    config: &LabConfig,
    postgres_gate: std::net::SocketAddr,
    redis_gate: Option<std::net::SocketAddr>,
) -> Vec<(String, String)> {
    let pg = &config.postgres;
    let mut env = vec![
        (
            config.env_names.port.clone(),
            config.url.address.port().to_string(),
        ),
        (
            config.env_names.database_url.clone(),
            pg.gate_url(postgres_gate),
        ),
        ("PGHOST".into(), postgres_gate.ip().to_string()),
        ("PGPORT".into(), postgres_gate.port().to_string()),
        ("PGUSER".into(), percent_decode(&pg.user)),
        ("PGDATABASE".into(), percent_decode(&pg.database)),
        ("PGSSLMODE".into(), "disable".into()),
        ("JDBC_DATABASE_URL".into(), pg.jdbc_url(postgres_gate)),
    ];
    if let Some(password) = &pg.password {
        env.push(("PGPASSWORD".into(), percent_decode(password)));
    }
    if let (Some(redis), Some(gate)) = (&config.redis, redis_gate) {
        env.push((config.env_names.redis_url.clone(), redis.gate_url(gate)));
    }
    env
}

impl Lab {
    /// Gates up, service started (in pass mode) and answering.
    pub async fn start(config: LabConfig, effects: Effects) -> Result<Lab, LabError> {
        let redis_upstream = config.redis.as_ref().map(|r| r.address);
        let gates = Gates::start(Some(config.postgres.address), redis_upstream)
            .await
            .map_err(LabError::Gates)?;
        gates.set_mode(Mode::Pass);
        let postgres_gate = gates
            .postgres_address()
            .expect("the PostgreSQL gate was asked for");
        let env = service_env(&config, postgres_gate, gates.redis_address());
        let spec = ServiceSpec {
            command: config.command.clone(),
            env,
            url: config.url.clone(),
            start_timeout: config.start_timeout,
        };
        let service = Service::start(spec).await?;
        let backends = Backends::start(&config.postgres);
        let mut lab = Lab {
            gates,
            service,
            effects,
            backends,
            config,
        };
        lab.settle().await?;
        Ok(lab)
    }

    /// The POST of every check, with its key.
    pub fn request(&self, key: &str) -> HttpRequest {
        let mut headers = self.config.headers.clone();
        headers.push((self.config.key_header.clone(), key.to_string()));
        HttpRequest::post(&self.config.url.path, headers, &self.config.body)
    }

    /// Events that came while nobody was deciding: anything held is released, a protocol the gates do not
    /// understand or a failed store is an error. Returns at once when none is waiting.
    pub async fn settle(&mut self) -> Result<(), LabError> {
        while let Some(event) = self.gates.next_event(Duration::ZERO).await {
            self.pass(event)?;
        }
        Ok(())
    }

    /// In pass mode: whatever is held (announced before the mode changed) goes on.
    fn pass(&mut self, event: Event) -> Result<(), LabError> {
        match event {
            Event::Boundary { boundary, held } => {
                if held {
                    self.gates.decide(boundary.id, Decision::Release);
                }
                Ok(())
            }
            Event::Unsupported { wire, what, .. } => Err(LabError::Unsupported { wire, what }),
            Event::UpstreamFailed { wire, error, .. } => Err(LabError::Upstream { wire, error }),
            _ => Ok(()),
        }
    }

    /// One request with the gates passing everything (the events it causes are consumed meanwhile).
    pub async fn send_passing(
        &mut self,
        request: &HttpRequest,
    ) -> Result<Result<HttpResponse, String>, LabError> {
        self.gates.set_mode(Mode::Pass);
        self.settle().await?;
        let url = self.config.url.clone();
        let timeout = self.config.request_timeout;
        let sending = exchange(&url, request, timeout);
        tokio::pin!(sending);
        loop {
            tokio::select! {
                biased;
                answer = &mut sending => {
                    self.settle().await?;
                    return Ok(answer.map_err(|e| e.to_string()));
                }
                event = self.gates.next_event(timeout) => {
                    if let Some(event) = event {
                        self.pass(event)?;
                    }
                }
            }
        }
    }

    /// The crash: `SIGKILL` the service's group, end every PostgreSQL backend it had (the store rolls back its
    /// open transactions and releases its locks at once, as when a dead machine's connections are closed) and
    /// close every gate connection, then start it again.
    pub async fn crash_and_restart(&mut self) -> Result<(), LabError> {
        // Read before the kill: each connection forgets its backend when the dead service's socket closes.
        let pids = self.gates.backend_pids();
        self.service.kill();
        let terminated = self
            .backends
            .terminate(pids)
            .await
            .map_err(LabError::Store)?;
        if terminated.lingering > 0 {
            return Err(LabError::Store(format!(
                "{} of the killed service's {} PostgreSQL backends were still there {} s after pg_terminate_backend",
                terminated.lingering,
                terminated.ended,
                super::backends::TERMINATE_WAIT.as_secs()
            )));
        }
        self.gates.close_all();
        self.gates.set_mode(Mode::Pass);
        self.settle().await?;
        self.service.restart().await?;
        self.settle().await
    }

    /// Reset, then the effects counted (before a schedule), in pass mode.
    pub async fn fresh_count(&mut self) -> Result<i64, LabError> {
        self.gates.set_mode(Mode::Pass);
        self.settle().await?;
        self.effects.reset().await.map_err(LabError::Store)?;
        self.count().await
    }

    /// The effects now.
    pub async fn count(&mut self) -> Result<i64, LabError> {
        self.gates.set_mode(Mode::Pass);
        let count = self.effects.count().await.map_err(LabError::Store);
        self.settle().await?;
        count
    }
}
