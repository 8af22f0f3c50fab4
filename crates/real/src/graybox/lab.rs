//! The bench the checks run on: the gates in front of the real stores, the service started behind them with
//! its environment pointing at the gates, and the effect counter. Also what every check needs around a
//! schedule: the request with a key, a request sent while the gates pass everything, and the crash (kill the
//! service's group, end its PostgreSQL backends and drop the gates' connections so the stores roll back, start
//! it again).

use super::backends::Backends;
use super::effects::Effects;
use super::gate::{Decision, Event, Gates, Mode, Wire};
use super::service::{Service, ServiceError, ServiceSpec};
use super::urls::{PostgresTarget, RedisTarget};
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
    /// Copies of the service run side by side (`--instances`), each with its own process group, port and
    /// store connections; a schedule's requests go to them in turn.
    pub instances: usize,
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
    #[error("the store was reached without the gate: the count moved {effects:+} while no statement came through \
             the gates (a hard-coded URL, or a variable other than {env} the service reads its store from: give it \
             the gate's URL from {env})")]
    Bypassed { effects: i64, env: String },
    #[error("{0}")]
    Store(String),
    #[error("the gates: {0}")]
    Gates(std::io::Error),
}

pub struct Lab {
    pub gates: Gates,
    /// The instances, in order; request `i` of a schedule goes to `services[i % len]`.
    pub services: Vec<Service>,
    /// Each instance's URL (the first is `config.url`).
    pub urls: Vec<Url>,
    /// Requests sent while the gates pass (retries, lost-response), spread over the instances in turn.
    passing_sent: usize,

    pub effects: Effects,
    /// The store's word on the service's backends (direct connection, like `effects`').
    pub backends: Backends,
    pub config: LabConfig,
}

/// The inherited variables the service must not see: every libpq variable (`PGHOSTADDR`, `PGSERVICE`,
/// `PGSERVICEFILE`, `PGOPTIONS`, `PGSSLMODE`, `PGPASSFILE` ... all begin with `PG`), any of which could send it
/// around the gate or past its plain TCP, and the store URL variables the probe does not set (a `REDIS_URL` of
/// the user's shell would take the service to a Redis with no gate in front). Those the probe sets replace them.
pub fn service_env_removed(
    config: &LabConfig,
    inherited: impl Iterator<Item = String>,
) -> Vec<String> {
    let set = service_env_names(config);
    inherited
        .filter(|name| {
            name.starts_with("PG")
                || *name == config.env_names.redis_url
                || *name == config.env_names.database_url
                || name == "JDBC_DATABASE_URL"
        })
        .filter(|name| !set.contains(name))
        .collect()
}

fn service_env_names(config: &LabConfig) -> Vec<String> {
    let mut names = vec![
        config.env_names.database_url.clone(),
        "JDBC_DATABASE_URL".to_string(),
    ];
    names.extend(
        [
            "PGHOST",
            "PGPORT",
            "PGUSER",
            "PGDATABASE",
            "PGSSLMODE",
            "PGGSSENCMODE",
        ]
        .map(String::from),
    );
    if config.postgres.password.is_some() {
        names.push("PGPASSWORD".into());
    }
    if config.redis.is_some() {
        names.push(config.env_names.redis_url.clone());
    }
    names
}

/// The first instance at `url`, each other one at a free loopback port, same path.
fn instance_urls(url: &Url, instances: usize) -> Result<Vec<Url>, LabError> {
    let mut urls = vec![url.clone()];
    for _ in 1..instances.max(1) {
        let port = std::net::TcpListener::bind((std::net::Ipv4Addr::LOCALHOST, 0))
            .and_then(|listener| listener.local_addr())
            .map_err(LabError::Gates)?
            .port();
        let mut other = url.clone();
        other.address.set_port(port);
        other.authority = other.address.to_string();
        urls.push(other);
    }
    Ok(urls)
}

/// The service's environment: the port, the gates' URLs, libpq's variables and a JDBC URL.
pub fn service_env(
    config: &LabConfig,
    port: u16,
    postgres_gate: std::net::SocketAddr,
    redis_gate: Option<std::net::SocketAddr>,
) -> Vec<(String, String)> {
    let pg = &config.postgres;
    let mut env = vec![
        (config.env_names.port.clone(), port.to_string()),
        (
            config.env_names.database_url.clone(),
            pg.gate_url(postgres_gate),
        ),
        ("PGHOST".into(), postgres_gate.ip().to_string()),
        ("PGPORT".into(), postgres_gate.port().to_string()),
        ("PGUSER".into(), pg.user.clone()),
        ("PGDATABASE".into(), pg.database.clone()),
        ("PGSSLMODE".into(), "disable".into()),
        // libpq tries GSSAPI encryption before TLS when it has credentials: the gate speaks neither.
        ("PGGSSENCMODE".into(), "disable".into()),
        ("JDBC_DATABASE_URL".into(), pg.jdbc_url(postgres_gate)),
    ];
    if let Some(password) = &pg.password {
        env.push(("PGPASSWORD".into(), password.clone()));
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
        gates.learn_background();
        let postgres_gate = gates
            .postgres_address()
            .expect("the PostgreSQL gate was asked for");
        let urls = instance_urls(&config.url, config.instances)?;
        let mut services = Vec::new();
        for url in &urls {
            let port = url.address.port();
            let env = service_env(&config, port, postgres_gate, gates.redis_address());
            let inherited = std::env::vars_os().filter_map(|(name, _)| name.into_string().ok());
            let spec = ServiceSpec {
                command: config.command.clone(),
                env_removed: service_env_removed(&config, inherited),
                env,
                url: url.clone(),
                start_timeout: config.start_timeout,
            };
            services.push(Service::start(spec).await?);
        }
        let backends = Backends::start(&config.postgres);
        let mut lab = Lab {
            gates,
            services,
            urls,
            passing_sent: 0,
            effects,
            backends,
            config,
        };
        lab.settle().await?;
        Ok(lab)
    }

    /// Where request `index` of a schedule goes: the instances in turn.
    pub fn url_of(&self, index: usize) -> &Url {
        &self.urls[index % self.urls.len()]
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
        let _busy = self.gates.busy();
        // A retry lands on another instance, as behind a load balancer.
        let url = self.url_of(self.passing_sent).clone();
        self.passing_sent += 1;
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
        // Every instance: the gate does not yet tell one instance's store connections from another's, and
        // closing them all under a live instance would hand its pool dead connections.
        for service in &mut self.services {
            service.kill();
        }
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
        for service in &mut self.services {
            service.restart().await?;
        }
        self.settle().await
    }

    /// Reset, then the effects counted (before a schedule), in pass mode.
    pub async fn fresh_count(&mut self) -> Result<i64, LabError> {
        self.gates.set_mode(Mode::Pass);
        self.settle().await?;
        self.effects.reset().await.map_err(LabError::Store)?;
        self.count().await
    }

    /// An error when the count moved by `effects` while the gates saw no boundary (`boundaries`: how many they
    /// saw while the requests ran, taken before counting, as a count URL goes through the gates too).
    pub fn check_gated(&self, boundaries: u64, effects: i64) -> Result<(), LabError> {
        if effects != 0 && boundaries == 0 {
            return Err(LabError::Bypassed {
                effects,
                env: self.config.env_names.database_url.clone(),
            });
        }
        Ok(())
    }

    /// The effects now.
    pub async fn count(&mut self) -> Result<i64, LabError> {
        // A count URL is answered by the service: its statements are no background job's.
        let _busy = self.gates.busy();
        self.gates.set_mode(Mode::Pass);
        let count = self.effects.count().await.map_err(LabError::Store);
        self.settle().await?;
        count
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::graybox::urls::{parse_postgres, parse_redis};

    fn config(redis: bool) -> LabConfig {
        LabConfig {
            command: "true".into(),
            url: Url::parse("http://127.0.0.1:8080/payments").unwrap(),
            env_names: EnvNames {
                port: "PORT".into(),
                database_url: "DATABASE_URL".into(),
                redis_url: "REDIS_URL".into(),
            },
            postgres: parse_postgres("postgresql://app:pw@127.0.0.1:5432/db").unwrap(),
            redis: redis.then(|| parse_redis("redis://127.0.0.1:6379").unwrap()),
            start_timeout: Duration::from_secs(1),
            key_header: "Idempotency-Key".into(),
            headers: Vec::new(),
            body: "{}".into(),
            request_timeout: Duration::from_secs(1),
            blocked: Duration::from_millis(100),
            instances: 1,
        }
    }

    #[test]
    fn every_inherited_libpq_variable_and_unset_store_url_is_taken_out() {
        let inherited = [
            "PATH",
            "PGHOSTADDR",
            "PGSERVICE",
            "PGSERVICEFILE",
            "PGOPTIONS",
            "PGHOST",
            "REDIS_URL",
            "DATABASE_URL",
            "HOME",
            "PGPASSWORD",
        ]
        .map(String::from);
        let removed = service_env_removed(&config(false), inherited.clone().into_iter());
        assert_eq!(
            removed,
            [
                "PGHOSTADDR",
                "PGSERVICE",
                "PGSERVICEFILE",
                "PGOPTIONS",
                "REDIS_URL"
            ]
        );
        // With a Redis gate, REDIS_URL is the probe's own: replaced, not removed.
        let removed = service_env_removed(&config(true), inherited.into_iter());
        assert!(!removed.contains(&"REDIS_URL".to_string()), "{removed:?}");
        let env = service_env(
            &config(true),
            8080,
            "127.0.0.1:7000".parse().unwrap(),
            Some("127.0.0.1:7001".parse().unwrap()),
        );
        let url = env.iter().find(|(name, _)| name == "DATABASE_URL").unwrap();
        assert_eq!(
            url.1,
            "postgresql://app:pw@127.0.0.1:7000/db?sslmode=disable"
        );
        for (name, _) in &env {
            assert!(!service_env_removed(&config(true), [name.clone()].into_iter()).contains(name));
        }
    }
}
