//! `retrylab serve`'s HTTP service: `POST /payments` runs the chosen design's handler with the request's
//! `Idempotency-Key` and client identity, `GET /payments/count` answers the number of payment effects (for
//! probes, tests and `retrylab load`). Handlers are synchronous on their connection (the handler module's
//! stores complete each call at once), so each request runs on tokio's blocking pool with a connection taken
//! from a small pool; the runtime's threads only move bytes.

use super::connection::{Connection, Database, Keys};
use super::crash_at::CrashAt;
use super::design::Design;
use crate::handler::{Clock, Request, StoreError};
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::Router;
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::{SystemTime, UNIX_EPOCH};

/// What the service runs.
#[derive(Clone, Debug)]
pub struct ServiceConfig {
    pub design: Design,
    pub database: Database,
    pub keys: Keys,
    /// The header carrying the idempotency key (`Idempotency-Key`).
    pub key_header: String,
    /// The header naming the client (`X-Client-Id`): the key's scope. Absent: the client `anonymous`.
    pub client_header: String,
    pub crash_at: Option<CrashAt>,
    /// lease-fenced's lease and separate-kv's claim TTL.
    pub lease_ms: u64,
}

/// The default lease: the catalogue's (`handler::designs::common::LEASE_MS`).
pub const LEASE_MS_DEFAULT: u64 = crate::handler::designs::common::LEASE_MS;
/// The longest lease or claim TTL `serve` takes (a day): a claim held longer is a key stuck for good, and the
/// stores add it to the clock.
pub const LEASE_MS_MAX: u64 = 86_400_000;
/// Idle connections kept for reuse at most.
const POOL_IDLE_MAX: usize = 64;
/// Connections opened before the first request: a real service starts with a warm pool, and a burst of
/// concurrent requests must not be staggered by connection set-up (a PostgreSQL backend takes milliseconds to
/// start), which would hide the races the burst is there to show.
pub const POOL_WARM: usize = 32;
/// What a 409 tells the client to wait (seconds), as the catalogue's clients do with a lease.
const RETRY_AFTER_S: &str = "1";

struct Service {
    config: ServiceConfig,
    clock: Clock,
    idle: Mutex<Vec<Connection>>,
    /// Store connections in use at most: a burst larger than this queues here instead of opening a connection
    /// per request (PostgreSQL refuses beyond its `max_connections`, 100 by default, and each is a descriptor).
    in_use: tokio::sync::Semaphore,
}

/// Store connections in use at once at most (see `Service::in_use`).
const STORE_CONNECTIONS_MAX: usize = 64;

impl Service {
    fn connection(&self) -> Result<Connection, StoreError> {
        let reused = self.idle.lock().expect("the pool's lock").pop();
        match reused {
            Some(connection) => Ok(connection),
            None => Connection::open(
                &self.config.database,
                &self.config.keys,
                self.clock.clone(),
                self.config.crash_at.clone(),
            ),
        }
    }

    fn give_back(&self, connection: Connection) {
        let mut idle = self.idle.lock().expect("the pool's lock");
        if idle.len() < POOL_IDLE_MAX {
            idle.push(connection);
        }
    }

    /// The service's time: the wall clock (the service is not explored; leases and TTLs run in real time).
    fn tick(&self) {
        let now_ms = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |since| since.as_millis() as u64);
        self.clock.set_ms(now_ms);
    }
}

impl Drop for Service {
    fn drop(&mut self) {
        // The PostgreSQL client blocks on its own runtime when dropped, which panics on a thread that drives
        // this one: the last connections go on a plain thread.
        let idle = std::mem::take(&mut *self.idle.lock().expect("the pool's lock"));
        let _ = std::thread::spawn(move || drop(idle)).join();
    }
}

/// Create the tables and check that a connection opens (a bad `--store` or `--keys` is found before listening).
pub fn prepare(config: &ServiceConfig) -> Result<(), String> {
    config
        .database
        .create()
        .map_err(|error| format!("--store: {error}"))?;
    Connection::open(&config.database, &config.keys, Clock::default(), None)
        .map(drop)
        .map_err(|error| format!("cannot connect: {error}"))
}

/// The routes, with `POOL_WARM` connections opened (blocking: call it before serving).
pub fn router(config: ServiceConfig) -> Result<Router, String> {
    let clock = Clock::default();
    let mut idle = Vec::new();
    for _ in 0..POOL_WARM {
        let connection = Connection::open(
            &config.database,
            &config.keys,
            clock.clone(),
            config.crash_at.clone(),
        )
        .map_err(|error| format!("cannot connect: {error}"))?;
        idle.push(connection);
    }
    let service = Arc::new(Service {
        config,
        clock,
        idle: Mutex::new(idle),
        in_use: tokio::sync::Semaphore::new(STORE_CONNECTIONS_MAX),
    });
    Ok(Router::new()
        .route("/payments", post(create_payment))
        .route("/payments/count", get(count))
        .with_state(service))
}

/// Serve `router` on `listener` until `shutdown` resolves; requests in flight then finish (graceful shutdown,
/// at most `Limits::SERVE.shutdown_grace`), with its timeouts and connection limit (`server::serve_limited`).
pub async fn serve(
    listener: tokio::net::TcpListener,
    router: Router,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    // Start the blocking pool's threads now (they stay for the runtime's keep-alive), for the warm pool's reason.
    let warming: Vec<_> = (0..POOL_WARM)
        .map(|_| {
            tokio::task::spawn_blocking(|| std::thread::sleep(std::time::Duration::from_millis(20)))
        })
        .collect();
    for thread in warming {
        let _ = thread.await;
    }
    super::server::serve_limited(listener, router, shutdown, super::server::Limits::SERVE).await
}

fn json_response(status: u16, body: String) -> Response {
    let status = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let mut response = (status, body).into_response();
    let headers = response.headers_mut();
    headers.insert("content-type", HeaderValue::from_static("application/json"));
    if status == StatusCode::CONFLICT {
        headers.insert("retry-after", HeaderValue::from_static(RETRY_AFTER_S));
    }
    response
}

fn error(status: u16, message: &str) -> Response {
    json_response(status, serde_json::json!({ "error": message }).to_string())
}

fn header(headers: &HeaderMap, name: &str) -> Option<String> {
    headers
        .get(name)
        .and_then(|value| value.to_str().ok())
        .map(str::to_string)
}

/// A payment is a JSON object. Anything else is refused with 400 (malformed), before any key is claimed: the
/// designs fingerprint the parsed JSON, and 422 is what a client reads as "this key was used with another
/// body" (the draft's Error Scenarios), which a body that is not JSON at all is not.
pub fn payment_body(body: &str) -> Result<(), String> {
    match serde_json::from_str::<serde_json::Value>(body) {
        // `{}` is no payment: an amount says what is paid.
        Ok(serde_json::Value::Object(fields))
            if !fields.get("amount").is_some_and(|a| a.is_number()) =>
        {
            Err("the payment needs a numeric amount ({\"amount\": 500})".into())
        }
        Ok(serde_json::Value::Object(_)) => Ok(()),
        Ok(_) => Err("the body must be a JSON object (a payment)".into()),
        Err(error) => Err(format!("the body is not JSON: {error}")),
    }
}

async fn create_payment(
    State(service): State<Arc<Service>>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let key = match headers
        .get(&service.config.key_header)
        .map(|v| std::str::from_utf8(v.as_bytes()))
    {
        Some(Ok(key)) if !key.is_empty() => key.to_string(),
        // A key in UTF-8 beyond ASCII is a key (HeaderValue::to_str takes visible ASCII only).
        Some(Err(_)) => {
            let message = format!("the {} header is not UTF-8", service.config.key_header);
            return error(400, &message);
        }
        _ => {
            let message = format!("the {} header is required", service.config.key_header);
            return error(400, &message);
        }
    };
    let Ok(body) = String::from_utf8(body.to_vec()) else {
        return error(400, "the body is not UTF-8");
    };
    if let Err(why) = payment_body(&body) {
        return error(400, &why);
    }
    let client =
        header(&headers, &service.config.client_header).unwrap_or_else(|| "anonymous".to_string());
    let request = Request::new(client, key, body);
    let Ok(_store_slot) = service.in_use.acquire().await else {
        return error(503, "the service is stopping");
    };
    let service = service.clone();
    let ran = tokio::task::spawn_blocking(move || {
        let mut connection = service.connection()?;
        service.tick();
        connection.new_request();
        let reply = service
            .config
            .design
            .reply(&mut connection, &request, service.config.lease_ms);
        service.give_back(connection);
        Ok::<_, StoreError>(reply)
    })
    .await;
    match ran {
        Ok(Ok(reply)) => json_response(reply.status, reply.body),
        Ok(Err(store)) => error(503, &format!("store unavailable: {store}")),
        Err(_) => error(500, "the handler panicked"),
    }
}

async fn count(State(service): State<Arc<Service>>) -> Response {
    let Ok(_store_slot) = service.in_use.acquire().await else {
        return error(503, "the service is stopping");
    };
    let service = service.clone();
    let counted = tokio::task::spawn_blocking(move || {
        let mut connection = service.connection()?;
        let count = connection.effects_total();
        service.give_back(connection);
        count
    })
    .await;
    match counted {
        Ok(Ok(count)) => json_response(200, serde_json::json!({ "count": count }).to_string()),
        Ok(Err(store)) => error(503, &format!("store unavailable: {store}")),
        Err(_) => error(500, "counting panicked"),
    }
}
