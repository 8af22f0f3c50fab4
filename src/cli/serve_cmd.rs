//! `retrylab serve`: one handler design behind `POST /payments` (with `Idempotency-Key`) and
//! `GET /payments/count`, on SQLite (default, a temporary file unless `--store sqlite:PATH`) or PostgreSQL, keys
//! in the database or in Redis. Loopback only: the service is for tests and probes. The bound address is the
//! first stdout line; Ctrl-C or SIGTERM stops it after the requests in flight.

use super::{EXIT_BAD_INPUT, EXIT_OK};
use retrylab::loopback::{check_postgres_url, check_redis_url};
use retrylab::stack::connection::{Database, Keys};
use retrylab::stack::crash_at::CrashAt;
use retrylab::stack::design::Design;
use retrylab::stack::http::loopback_address;
use retrylab::stack::service::{
    prepare, router, serve, ServiceConfig, LEASE_MS_DEFAULT, LEASE_MS_MAX,
};
use std::path::PathBuf;

#[derive(clap::Args, Debug)]
pub struct ServeArgs {
    /// The handler design: article, lease-fenced (correct); select-then-insert, ignores-key, global-key-scope,
    /// raw-fingerprint, separate-kv (broken).
    #[arg(long, default_value = "article")]
    pub design: String,
    /// `sqlite:PATH`, or `postgres://USER@127.0.0.1:PORT/DB`. Default: SQLite in a temporary file, deleted at exit.
    #[arg(long)]
    pub store: Option<String>,
    /// Where key-value calls go (separate-kv's keys): `same-database` or `redis://127.0.0.1:PORT`.
    #[arg(long, default_value = "same-database")]
    pub keys: String,
    /// A loopback address and port; port 0 picks a free one. The address is the first line printed.
    #[arg(long, default_value = "127.0.0.1:8080", value_name = "ADDR:PORT")]
    pub listen: String,
    /// The header carrying the idempotency key.
    #[arg(long, default_value = "Idempotency-Key")]
    pub key_header: String,
    /// The header naming the client (the key's scope).
    #[arg(long, default_value = "X-Client-Id")]
    pub client_header: String,
    /// Exit (code 3) at this step boundary of a request: N (after its N-th store call) or CALL[:N] (after the
    /// N-th call named CALL, e.g. commit:2, kv-set).
    #[arg(long, value_name = "STEP")]
    pub crash_at: Option<String>,
    /// lease-fenced's lease and separate-kv's claim TTL, in milliseconds (at most a day, 86400000).
    #[arg(long, default_value_t = LEASE_MS_DEFAULT)]
    pub lease_ms: u64,
}

fn config(args: &ServeArgs) -> Result<(ServiceConfig, Option<tempfile::TempDir>), String> {
    let design = Design::from_name(&args.design).map_err(|e| format!("--design: {e}"))?;
    let (database, temporary) = match args.store.as_deref() {
        None => {
            let dir =
                tempfile::tempdir().map_err(|e| format!("--store: no temporary directory: {e}"))?;
            (
                Database::Sqlite(dir.path().join("payments.sqlite")),
                Some(dir),
            )
        }
        Some(text) => match text.strip_prefix("sqlite:") {
            Some(path) if !path.is_empty() => (Database::Sqlite(PathBuf::from(path)), None),
            _ if text.starts_with("postgres://") || text.starts_with("postgresql://") => {
                check_postgres_url(text).map_err(|why| format!("--store {why}"))?;
                (Database::Postgres(text.to_string()), None)
            }
            _ => {
                return Err(format!(
                    "--store {text}: expected sqlite:PATH or postgres://..."
                ))
            }
        },
    };
    let keys = match args.keys.as_str() {
        "same-database" => Keys::SameDatabase,
        url if url.starts_with("redis://") => {
            check_redis_url(url).map_err(|why| format!("--keys {why}"))?;
            if !design.uses_key_value_store() {
                return Err(format!(
                    "--keys {url}: the design {} keeps no keys in a key-value store (separate-kv does)",
                    design.name()
                ));
            }
            Keys::Redis(url.to_string())
        }
        other => {
            return Err(format!(
                "--keys {other}: expected same-database or redis://HOST:PORT"
            ))
        }
    };
    let crash_at = match &args.crash_at {
        Some(step) => Some(CrashAt::parse(step).map_err(|e| format!("--crash-at: {e}"))?),
        None => None,
    };
    for (flag, name) in [
        ("--key-header", &args.key_header),
        ("--client-header", &args.client_header),
    ] {
        if !is_header_name(name) {
            return Err(format!(
                "{flag} {name:?}: not an HTTP header name (letters, digits and !#$%&'*+-.^_`|~ only)"
            ));
        }
    }
    if args.lease_ms == 0 || args.lease_ms > LEASE_MS_MAX {
        return Err(format!("--lease-ms: must be in 1..={LEASE_MS_MAX}"));
    }
    let config = ServiceConfig {
        design,
        database,
        keys,
        key_header: args.key_header.clone(),
        client_header: args.client_header.clone(),
        crash_at,
        lease_ms: args.lease_ms,
    };
    Ok((config, temporary))
}

/// RFC 9110's token: what a header's name may be made of.
fn is_header_name(name: &str) -> bool {
    !name.is_empty()
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
}

pub fn run(args: &ServeArgs) -> i32 {
    let address = match loopback_address(&args.listen) {
        Ok(address) => address,
        Err(message) => {
            errln!("error: --listen {}: {message}", args.listen);
            return EXIT_BAD_INPUT;
        }
    };
    let (config, temporary, routes) = match ready(args) {
        Ok(ready) => ready,
        Err(message) => {
            errln!("error: {message}");
            return EXIT_BAD_INPUT;
        }
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .thread_keep_alive(std::time::Duration::from_secs(600))
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => {
            errln!("error: cannot start the server's runtime: {error}");
            return EXIT_BAD_INPUT;
        }
    };
    let code = runtime.block_on(listen_and_serve(
        address,
        &config,
        temporary.is_some(),
        routes,
    ));
    drop(temporary);
    code
}

/// The design's configuration, its store prepared, and its routes: everything checked before a port is bound.
fn ready(
    args: &ServeArgs,
) -> Result<(ServiceConfig, Option<tempfile::TempDir>, axum::Router), String> {
    let (config, temporary) = config(args)?;
    prepare(&config)?;
    let routes = router(config.clone())?;
    Ok((config, temporary, routes))
}

/// Binds, prints the address (the line a test or a script waits for), and serves until a signal.
async fn listen_and_serve(
    address: std::net::SocketAddr,
    config: &ServiceConfig,
    temporary: bool,
    routes: axum::Router,
) -> i32 {
    let listener = match tokio::net::TcpListener::bind(address).await {
        Ok(listener) => listener,
        Err(error) => {
            errln!("error: --listen {address}: cannot listen: {error}");
            return EXIT_BAD_INPUT;
        }
    };
    let shutdown = match shutdown_signal() {
        Ok(shutdown) => shutdown,
        Err(error) => {
            errln!("error: cannot handle signals: {error}");
            return EXIT_BAD_INPUT;
        }
    };
    let bound = listener.local_addr().unwrap_or(address);
    outln!("listening on http://{bound}");
    let store = match &config.database {
        Database::Sqlite(path) if temporary => {
            format!("sqlite:{} (temporary, deleted at exit)", path.display())
        }
        Database::Sqlite(path) => format!("sqlite:{}", path.display()),
        Database::Postgres(url) => url.clone(),
    };
    errln!(
        "serving design {} on {store}: POST /payments ({}), GET /payments/count; stop with Ctrl-C",
        config.design.name(),
        config.key_header
    );
    match serve(listener, routes, shutdown).await {
        Ok(()) => EXIT_OK,
        Err(error) => {
            errln!("error: the server stopped: {error}");
            EXIT_BAD_INPUT
        }
    }
}

/// Ctrl-C or SIGTERM. The handlers are installed now (before the address is printed, so a signal sent as soon
/// as the address is read is not missed); the future resolves on the first signal.
pub fn shutdown_signal() -> std::io::Result<impl std::future::Future<Output = ()> + Send + 'static>
{
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        let mut interrupt = signal(SignalKind::interrupt())?;
        let mut terminate = signal(SignalKind::terminate())?;
        Ok(async move {
            tokio::select! {
                _ = interrupt.recv() => {}
                _ = terminate.recv() => {}
            }
        })
    }
    #[cfg(not(unix))]
    {
        Ok(async {
            let _ = tokio::signal::ctrl_c().await;
        })
    }
}
