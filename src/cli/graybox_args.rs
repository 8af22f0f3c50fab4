//! `retrylab probe URL --exec CMD --postgres PGURL ...`: the gray-box probe's flags (flattened into `probe`'s),
//! checked into a `GrayConfig`, and its run: results as the probe's table or JSON lines, a replay's verdict,
//! Ctrl-C and SIGTERM ending it with the service killed (exit 130, 143). Exit 0 all passed (or a replay did not
//! reproduce), 1 a check failed (or a replay reproduced), 2 bad input or a service that would not run.

use super::auto_stores::AutoStores;
use super::probe_cmd::{ProbeArgs, EXPLORE, OUTPUT, SERVICE, STORES};
use super::{EXIT_BAD_INPUT, EXIT_MISMATCH, EXIT_OK};
use retrylab::graybox::bounded_read::{read_regular, RESET_SQL_MAX};
use retrylab::graybox::checks::CheckOptions;
use retrylab::graybox::effects::{CountBy, ResetBy};
use retrylab::graybox::explore::Bounds;
use retrylab::graybox::lab::{EnvNames, LabConfig};
use retrylab::graybox::probe::{run_checks, run_replay, GrayConfig};
use retrylab::graybox::replay::Replayed;
use retrylab::graybox::report::{exit_code, table, GrayCheck};
use retrylab::graybox::schedule::{shell_quote, Schedule};
use retrylab::graybox::urls::{parse_postgres, parse_redis};
use retrylab::stack::http::Url;
use std::path::PathBuf;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// The most copies of the service `--instances` starts (each is a process group with its own pool).
const INSTANCES_MAX: usize = 8;

/// The longest lease a service may declare: the retries after a crash wait up to twice it.
const LEASE_MS_MAX: u64 = 3_600_000;

/// `--clients`' value when not given (the black-box probe's default pair).
const CLIENTS_UNSET: &str = "probe-a,probe-b";

#[derive(clap::Args, Debug)]
pub struct GrayboxArgs {
    /// Gray-box checks (crash-at-every-statement, interleaved-same-key, lost-response): the probe starts the
    /// service itself with `sh -c CMD` (own process group, the probe's cwd), env PORT, DATABASE_URL, REDIS_URL
    /// pointing at its loopback gates (also PGHOST/PGPORT/PGUSER/PGDATABASE, JDBC_DATABASE_URL). URL's port 0
    /// (or none): a free one. With it, `--clients N` is the number of same-key requests (2 or 3).
    #[arg(long, value_name = "CMD", help_heading = SERVICE)]
    pub exec: Option<String>,
    /// The real PostgreSQL (loopback only; every host in the URL is checked, several hosts refused), or `auto`: a
    /// throwaway server from the installed binaries, stopped at the end. The service reaches it only through
    /// the gate (its DATABASE_URL keeps this URL's scheme: give postgresql:// to SQLAlchemy); the probe counts
    /// and resets on it directly.
    #[arg(long, value_name = "PGURL|auto", requires = "exec", help_heading = STORES)]
    pub postgres: Option<String>,
    /// The real Redis (loopback only), or `auto` (a throwaway server), reached by the service only through the
    /// gate.
    #[arg(long, value_name = "REDISURL|auto", requires = "exec", help_heading = STORES)]
    pub redis: Option<String>,
    /// Counts the effects on the real database, e.g. "SELECT count(*) FROM payments" (or use --count-url).
    #[arg(help_heading = STORES,
        long,
        value_name = "SQL",
        requires = "exec",
        conflicts_with = "count_url"
    )]
    pub count_sql: Option<String>,
    /// A file of SQL run on the real database before every schedule. It may TRUNCATE tables: it runs only on
    /// the --postgres URL given, never anywhere else.
    #[arg(help_heading = STORES,
        long,
        value_name = "FILE",
        requires = "exec",
        conflicts_with = "reset_cmd"
    )]
    pub reset_sql: Option<PathBuf>,
    /// A command (`sh -c`) run before every schedule instead of --reset-sql; it must exit 0.
    #[arg(long, value_name = "CMD", requires = "exec", help_heading = STORES)]
    pub reset_cmd: Option<String>,
    /// The environment variable that gives the service its HTTP port.
    #[arg(long, default_value = "PORT", value_name = "NAME", help_heading = SERVICE)]
    pub port_env: String,
    /// The environment variable that gives the service its PostgreSQL URL (the gate's, not --postgres's); PGHOST,
    /// PGPORT, PGUSER, PGDATABASE and JDBC_DATABASE_URL point at the gate too.
    #[arg(long, default_value = "DATABASE_URL", value_name = "NAME", help_heading = STORES)]
    pub database_url_env: String,
    /// The environment variable that gives the service its Redis URL (the gate's, not --redis's).
    #[arg(long, default_value = "REDIS_URL", value_name = "NAME", help_heading = STORES)]
    pub redis_url_env: String,
    /// interleaved-same-key: schedules at most (more: the result is `incomplete`).
    #[arg(long, default_value_t = 500, help_heading = EXPLORE)]
    pub schedules_max: usize,
    /// interleaved-same-key: switches away from a request that could go on, at most (CHESS's bound).
    #[arg(long, default_value_t = 2, help_heading = EXPLORE)]
    pub preemptions: usize,
    /// Only where the store cannot say whether a statement waits: a Redis blocking command (BLPOP, XREAD
    /// BLOCK, WAIT ...) or a request with no statement seen yet, with no answer within it, is taken as waiting
    /// (the others go on). A released PostgreSQL statement is blocked exactly while PostgreSQL says it waits on
    /// a lock (pg_blocking_pids); other Redis commands always answer.
    #[arg(long, default_value_t = 200, help_heading = EXPLORE)]
    pub blocked_ms: u64,
    /// After a crash, retries must get a final answer within it (default 2x --lease-ms, or 30).
    #[arg(long, value_name = "S", help_heading = EXPLORE)]
    pub resolve_within_s: Option<u64>,
    /// The service's declared lease or TTL of a claimed key.
    #[arg(long, value_name = "MS", help_heading = SERVICE)]
    pub lease_ms: Option<u64>,
    /// How long the service may take to answer HTTP after each start (at most 600).
    #[arg(long, default_value_t = 30, value_name = "S", help_heading = SERVICE)]
    pub start_timeout_s: u64,
    /// Where failing schedules are saved (`<check>-<n>.json`).
    #[arg(long, default_value = "retrylab-schedules", value_name = "DIR", help_heading = OUTPUT)]
    pub schedule_dir: PathBuf,
    /// Run a saved schedule again: `reproduced` (exit 1) or `not reproduced: ...` (exit 0).
    #[arg(long, value_name = "FILE", requires = "exec", help_heading = EXPLORE)]
    pub replay: Option<PathBuf>,
    /// Copies of the service run side by side, each its own process group, port (the first at URL's) and store
    /// connections: a schedule's requests go to them in turn, retries to the next. A shared client connection or
    /// an in-process lock serialises one process's requests; two instances, as services run, do not. A crash
    /// kills and restarts them all.
    #[arg(long, default_value_t = 1, value_name = "N", requires = "exec", help_heading = SERVICE)]
    pub instances: usize,
    /// Exit 1 when a check is `incomplete` or `n/a` too (it proved nothing), not only on `fail`.
    #[arg(long, requires = "exec", help_heading = OUTPUT)]
    pub strict: bool,
}

/// URL with its port; port 0 or none: a free loopback port, chosen now.
fn service_url(text: &str) -> Result<Url, String> {
    let Some(rest) = text.strip_prefix("http://") else {
        return Url::parse(text);
    };
    let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    let bare = authority.strip_suffix(":0").unwrap_or(authority);
    let has_port = bare.rsplit_once(':').is_some_and(|(host, port)| {
        !port.is_empty()
            && port.bytes().all(|b| b.is_ascii_digit())
            && (!host.starts_with('[') || host.ends_with(']'))
    });
    if has_port && bare == authority {
        return Url::parse(text);
    }
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .map_err(|e| format!("no free loopback port: {e}"))?
        .port();
    let path = if path.is_empty() { "/" } else { path };
    Url::parse(&format!("http://{bare}:{port}{path}"))
}

fn lab_config(
    probe: &ProbeArgs,
    gray: &GrayboxArgs,
    command: &str,
    auto: &AutoStores,
) -> Result<LabConfig, String> {
    let url = service_url(&probe.url)?;
    let postgres = parse_postgres(
        &auto
            .postgres_url(gray.postgres.as_deref())
            .ok_or("--postgres PGURL (or auto) is needed with --exec")?,
    )?;
    let redis = auto
        .redis_url(gray.redis.as_deref())
        .as_deref()
        .map(parse_redis)
        .transpose()?;
    let mut headers = Vec::new();
    for header in &probe.headers {
        if header.contains(['\r', '\n']) {
            // A line break would end the header and start another (or a second request).
            return Err(format!(
                "--header {header:?}: a header may not contain CR or LF"
            ));
        }
        match header.split_once(':') {
            Some((name, value)) if !name.trim().is_empty() => {
                headers.push((name.trim().to_string(), value.trim().to_string()))
            }
            _ => return Err(format!("--header {header}: expected NAME:VALUE")),
        }
    }
    if !matches!(
        serde_json::from_str(&probe.body),
        Ok(serde_json::Value::Object(_))
    ) {
        return Err(format!("--body: '{}' is not a JSON object", probe.body));
    }
    if probe.timeout_ms == 0 || probe.timeout_ms > 60_000 {
        return Err("--timeout-ms: must be in 1..=60000".into());
    }
    if gray.blocked_ms == 0 || gray.blocked_ms > 60_000 {
        return Err("--blocked-ms: must be in 1..=60000".into());
    }
    if !(1..=INSTANCES_MAX).contains(&gray.instances) {
        return Err(format!(
            "--instances {}: must be in 1..={INSTANCES_MAX}",
            gray.instances
        ));
    }
    if gray.start_timeout_s == 0 || gray.start_timeout_s > 600 {
        return Err("--start-timeout-s: must be in 1..=600".into());
    }
    Ok(LabConfig {
        command: command.to_string(),
        url,
        env_names: EnvNames {
            port: gray.port_env.clone(),
            database_url: gray.database_url_env.clone(),
            redis_url: gray.redis_url_env.clone(),
        },
        postgres,
        redis,
        start_timeout: Duration::from_secs(gray.start_timeout_s),
        key_header: probe.key_header.clone(),
        headers,
        body: probe.body.clone(),
        request_timeout: Duration::from_millis(probe.timeout_ms),
        blocked: Duration::from_millis(gray.blocked_ms),
        instances: gray.instances,
    })
}

fn count_and_reset(
    probe: &ProbeArgs,
    gray: &GrayboxArgs,
    url: &Url,
) -> Result<(CountBy, Option<ResetBy>), String> {
    let count = match (&gray.count_sql, &probe.count_url) {
        (Some(sql), _) => CountBy::Sql(sql.clone()),
        (None, Some(path)) if path.starts_with('/') => CountBy::Url(url.with_path(path)),
        (None, Some(text)) => {
            CountBy::Url(Url::parse(text).map_err(|e| format!("--count-url: {e}"))?)
        }
        (None, None) => return Err(
            "--count-sql SQL or --count-url URL is needed with --exec (the checks count effects)"
                .into(),
        ),
    };
    let reset = match (&gray.reset_sql, &gray.reset_cmd) {
        (Some(file), _) => {
            let sql = read_regular("--reset-sql", file, RESET_SQL_MAX)?;
            Some(ResetBy::Sql(sql))
        }
        (None, Some(command)) => Some(ResetBy::Cmd(command.clone())),
        (None, None) => None,
    };
    Ok((count, reset))
}

fn check_options(probe: &ProbeArgs, gray: &GrayboxArgs) -> Result<CheckOptions, String> {
    let clients = if probe.clients == CLIENTS_UNSET {
        2
    } else {
        match probe.clients.parse::<usize>() {
            Ok(n @ 2..=3) => n,
            _ => {
                return Err(format!(
                    "--clients {}: with --exec, the number of same-key requests (2 or 3)",
                    probe.clients
                ))
            }
        }
    };
    if gray.schedules_max == 0 {
        return Err("--schedules-max: at least 1".into());
    }
    if gray.lease_ms.is_some_and(|ms| ms == 0 || ms > LEASE_MS_MAX) {
        return Err(format!(
            "--lease-ms: {} is not in 1..={LEASE_MS_MAX} (an hour)",
            gray.lease_ms.unwrap_or_default()
        ));
    }
    let resolve_within_s = match (gray.resolve_within_s, gray.lease_ms) {
        (Some(seconds), _) => seconds,
        (None, Some(lease_ms)) => (2 * lease_ms).div_ceil(1000),
        (None, None) => 30,
    };
    if resolve_within_s == 0 || resolve_within_s > 3600 {
        return Err(format!(
            "--resolve-within-s: {resolve_within_s} is not in 1..=3600"
        ));
    }
    let run_id = probe.run_id.clone().unwrap_or_else(|| {
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        format!("{:x}", nanos & 0xffff_ffff_ffff)
    });
    Ok(CheckOptions {
        clients,
        bounds: Bounds {
            schedules_max: gray.schedules_max,
            preemptions_max: gray.preemptions,
        },
        resolve_within: Duration::from_secs(resolve_within_s),
        run_id,
    })
}

/// The command that runs the probe the same way (the replay command is it plus `--replay FILE`).
fn command_line(probe: &ProbeArgs, gray: &GrayboxArgs) -> String {
    let mut words = vec![
        "retrylab".to_string(),
        "probe".into(),
        shell_quote(&probe.url),
    ];
    let mut flag = |name: &str, value: &str| {
        words.push(name.to_string());
        words.push(shell_quote(value));
    };
    flag("--exec", gray.exec.as_deref().unwrap_or_default());
    flag("--postgres", gray.postgres.as_deref().unwrap_or_default());
    let optional = [
        ("--redis", gray.redis.clone()),
        ("--count-sql", gray.count_sql.clone()),
        ("--count-url", probe.count_url.clone()),
        (
            "--reset-sql",
            gray.reset_sql.as_ref().map(|p| p.display().to_string()),
        ),
        ("--reset-cmd", gray.reset_cmd.clone()),
        ("--lease-ms", gray.lease_ms.map(|ms| ms.to_string())),
        (
            "--resolve-within-s",
            gray.resolve_within_s.map(|s| s.to_string()),
        ),
        (
            "--port-env",
            Some(gray.port_env.clone()).filter(|n| n != "PORT"),
        ),
        (
            "--database-url-env",
            Some(gray.database_url_env.clone()).filter(|n| n != "DATABASE_URL"),
        ),
        (
            "--redis-url-env",
            Some(gray.redis_url_env.clone()).filter(|n| n != "REDIS_URL"),
        ),
        (
            "--key-header",
            Some(probe.key_header.clone()).filter(|n| n != "Idempotency-Key"),
        ),
        (
            "--blocked-ms",
            Some(gray.blocked_ms.to_string()).filter(|n| n != "200"),
        ),
        (
            "--instances",
            Some(gray.instances.to_string()).filter(|n| n != "1"),
        ),
    ];
    for (name, value) in optional {
        if let Some(value) = value {
            flag(name, &value);
        }
    }
    for header in &probe.headers {
        flag("--header", header);
    }
    words.join(" ")
}

fn config(probe: &ProbeArgs, gray: &GrayboxArgs, auto: &AutoStores) -> Result<GrayConfig, String> {
    let command = gray.exec.clone().expect("run only with --exec");
    let lab = lab_config(probe, gray, &command, auto)?;
    let (count, reset) = count_and_reset(probe, gray, &lab.url)?;
    let checks = if probe.checks.is_empty() {
        GrayCheck::ALL.to_vec()
    } else {
        probe
            .checks
            .iter()
            .map(|name| GrayCheck::parse(name))
            .collect::<Result<_, _>>()?
    };
    Ok(GrayConfig {
        options: check_options(probe, gray)?,
        lab,
        count,
        reset,
        checks,
        schedule_dir: gray.schedule_dir.clone(),
        command_line: command_line(probe, gray),
    })
}

/// Run `work` until it ends or a signal comes (then it is dropped: the service's group is killed, the gates
/// closed): Ctrl-C 130, SIGTERM 143.
async fn until_signal<T>(work: impl std::future::Future<Output = T>) -> Result<T, i32> {
    use tokio::signal::unix::{signal, SignalKind};
    let mut terminate = signal(SignalKind::terminate()).map_err(|error| {
        errln!("error: cannot watch for SIGTERM: {error}");
        EXIT_BAD_INPUT
    })?;
    tokio::select! {
        done = work => Ok(done),
        _ = tokio::signal::ctrl_c() => Err(130),
        _ = terminate.recv() => Err(143),
    }
}

pub fn run(probe: &ProbeArgs, gray: &GrayboxArgs) -> i32 {
    let replay = match gray.replay.as_deref().map(Schedule::load).transpose() {
        Ok(replay) => replay,
        Err(message) => {
            errln!("error: {message}");
            return EXIT_BAD_INPUT;
        }
    };
    // Before the configuration: `auto` stores are started here and live (and are stopped) with this call.
    let auto = match AutoStores::start(gray.postgres.as_deref(), gray.redis.as_deref()) {
        Ok(auto) => auto,
        Err(message) => {
            errln!("error: {message}");
            return EXIT_BAD_INPUT;
        }
    };
    let config = match config(probe, gray, &auto) {
        Ok(config) => config,
        Err(message) => {
            errln!("error: {message}");
            return EXIT_BAD_INPUT;
        }
    };
    let runtime = match super::stack_runtime() {
        Ok(runtime) => runtime,
        Err(code) => return code,
    };
    if !probe.json {
        errln!(
            "gray-box probe: `{}` on {} (run {})",
            config.lab.command,
            config.lab.url.to_text(),
            config.options.run_id
        );
    }
    let code = match replay {
        Some(saved) => {
            runtime.block_on(until_signal(replay_and_print(&config, &saved, probe.json)))
        }
        None => runtime.block_on(until_signal(check_and_print(
            &config,
            probe.json,
            gray.strict,
        ))),
    };
    code.unwrap_or_else(|signal_code| {
        errln!("interrupted (exit {signal_code}): the service's process group was killed and the gates closed");
        signal_code
    })
}

async fn check_and_print(config: &GrayConfig, json: bool, strict: bool) -> i32 {
    let results = match run_checks(config).await {
        Ok(results) => results,
        Err(error) => {
            errln!("error: {error}");
            return EXIT_BAD_INPUT;
        }
    };
    super::probe_cmd::print_results(
        &results,
        json,
        &table(&results),
        exit_code(&results, strict) != 0,
    )
}

async fn replay_and_print(config: &GrayConfig, saved: &Schedule, json: bool) -> i32 {
    let replayed = match run_replay(config, saved).await {
        Ok(replayed) => replayed,
        Err(error) => {
            errln!("error: {error}");
            return EXIT_BAD_INPUT;
        }
    };
    let (result, detail, code) = match replayed {
        Replayed::Reproduced(evidence) => ("reproduced", evidence, EXIT_MISMATCH),
        Replayed::NotReproduced(why) => ("not reproduced", why, EXIT_OK),
    };
    if json {
        let line = serde_json::json!({"check": saved.check, "replay": result, "evidence": detail});
        outln!("{line}");
    } else {
        outln!("{result}: {detail}");
    }
    code
}
