//! The accept loop of `retrylab serve`, with the limits `axum::serve` does not have: a slow or half-sent request
//! is cut off (`header_timeout` for the head, also the idle time allowed between requests on a kept-alive
//! connection; `body_timeout` for the body), at most `connections_max` connections are served at once (the
//! rest wait in the listen backlog: queued, never failed at random when file descriptors run out), and a
//! shutdown waits for requests in flight at most `shutdown_grace`, so a client that never finishes its request
//! cannot hold a SIGTERM.

use axum::body::Body;
use axum::extract::Request;
use axum::http::StatusCode;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::Router;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{watch, Semaphore};
use tokio::task::JoinSet;

/// The server's limits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// To receive a request's head (and, between requests, the idle time allowed).
    pub header_timeout: Duration,
    /// To receive a request's body once its head is in.
    pub body_timeout: Duration,
    /// The largest body read (a larger one gets 413).
    pub body_bytes_max: usize,
    /// Connections served at once; more wait in the backlog until one closes.
    pub connections_max: usize,
    /// How long a shutdown waits for the connections still open.
    pub shutdown_grace: Duration,
}

impl Limits {
    /// `retrylab serve`'s: generous for any honest client on loopback. 256 connections at once keeps the
    /// descriptors of the connections and of the store's pool within a default `ulimit -n` of 1024.
    pub const SERVE: Limits = Limits {
        header_timeout: Duration::from_secs(10),
        body_timeout: Duration::from_secs(10),
        body_bytes_max: 1 << 20,
        connections_max: 256,
        shutdown_grace: Duration::from_secs(5),
    };
}

/// Serve `router` on `listener` within `limits` until `shutdown` resolves.
pub async fn serve_limited(
    listener: tokio::net::TcpListener,
    router: Router,
    shutdown: impl Future<Output = ()> + Send + 'static,
    limits: Limits,
) -> std::io::Result<()> {
    let router = router.layer(axum::middleware::from_fn(move |request, next| {
        body_within(limits, request, next)
    }));
    let slots = Arc::new(Semaphore::new(limits.connections_max));
    let (stop, stopping) = watch::channel(false);
    let mut connections = JoinSet::new();
    tokio::pin!(shutdown);
    loop {
        let slot = tokio::select! {
            slot = slots.clone().acquire_owned() => slot.expect("the semaphore is never closed"),
            () = &mut shutdown => break,
        };
        let stream = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => stream,
                // Out of descriptors (or a connection reset before it was taken): wait and accept again; the
                // waiting clients stay queued in the backlog.
                Err(_) => {
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            () = &mut shutdown => break,
        };
        let service = TowerToHyperService::new(router.clone());
        let stopping = stopping.clone();
        connections.spawn(async move {
            let _slot = slot;
            serve_connection(stream, service, limits, stopping).await;
        });
        while connections.try_join_next().is_some() {}
    }
    let _ = stop.send(true);
    let drained = async { while connections.join_next().await.is_some() {} };
    // What is still open after the grace period is dropped with the JoinSet (its tasks aborted).
    let _ = tokio::time::timeout(limits.shutdown_grace, drained).await;
    Ok(())
}

/// One connection: HTTP/1.1 with the head timeout; on shutdown, finish the request in flight and close.
async fn serve_connection(
    stream: tokio::net::TcpStream,
    service: TowerToHyperService<Router>,
    limits: Limits,
    mut stopping: watch::Receiver<bool>,
) {
    let connection = hyper::server::conn::http1::Builder::new()
        .timer(TokioTimer::new())
        .header_read_timeout(limits.header_timeout)
        .serve_connection(TokioIo::new(stream), service);
    tokio::pin!(connection);
    tokio::select! {
        _ = connection.as_mut() => {}
        _ = async { stopping.wait_for(|stop| *stop).await.map(drop) } => {
            connection.as_mut().graceful_shutdown();
            let _ = connection.await;
        }
    }
}

/// The body read within `body_timeout` and `body_bytes_max` before any route sees it (408 or 413 otherwise),
/// so no handler waits on a client that stopped sending.
async fn body_within(limits: Limits, request: Request, next: Next) -> Response {
    let (parts, body) = request.into_parts();
    let read = axum::body::to_bytes(body, limits.body_bytes_max);
    match tokio::time::timeout(limits.body_timeout, read).await {
        Ok(Ok(bytes)) => {
            next.run(Request::from_parts(parts, Body::from(bytes)))
                .await
        }
        Ok(Err(_)) => (
            StatusCode::PAYLOAD_TOO_LARGE,
            format!("the body is larger than {} bytes", limits.body_bytes_max),
        )
            .into_response(),
        Err(_) => (
            StatusCode::REQUEST_TIMEOUT,
            format!("the body did not arrive within {:?}", limits.body_timeout),
        )
            .into_response(),
    }
}
